//go:build linux

package transport

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling thread has used
// (CLOCK_THREAD_CPUTIME_ID), and false where it cannot tell. Benchmarks
// on a shared machine read it around the code they measure, with the
// goroutine locked to its thread: unlike the wall clock, it does not
// count the time the thread waited for a core.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
