//go:build !linux

package transport

import "time"

// threadCPU is the Linux thread CPU clock's stand-in elsewhere: it cannot
// tell.
func threadCPU() (time.Duration, bool) { return 0, false }
