//go:build !unix

package bench

import "time"

// cpuTime returns 0: getrusage is Unix-only, so CPU seconds read 0 here.
func cpuTime() time.Duration { return 0 }

// peakRSS returns 0: getrusage is Unix-only.
func peakRSS() int64 { return 0 }
