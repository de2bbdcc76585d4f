//go:build linux

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPUMeasured reports whether threadCPU measures the calling
// thread's CPU time (getrusage RUSAGE_THREAD, Linux only).
const threadCPUMeasured = true

// threadCPU returns the calling OS thread's user and system CPU time so
// far (getrusage RUSAGE_THREAD), or zeros if the call fails. The caller
// must be locked to its thread (runtime.LockOSThread) for two readings to
// measure one goroutine. One system call.
func threadCPU() (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
