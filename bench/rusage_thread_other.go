//go:build !linux

package bench

import "time"

// threadCPUMeasured reports whether threadCPU measures the calling
// thread's CPU time: not here (RUSAGE_THREAD is Linux-only), so the load
// row's server user and system figures read 0 and only its wall figure
// (ServerWallUsPerPeerTick) is measured.
const threadCPUMeasured = false

// threadCPU returns zeros: per-thread CPU time is not measured here.
func threadCPU() (user, sys time.Duration) { return 0, 0 }
