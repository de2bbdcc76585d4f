//go:build ratio && !race

package bench

import (
	"context"
	"testing"
	"time"
)

// kcp-bulk, kcp-go's own throughput setup, must carry bulk at least 5×
// as fast as kcp-fast, the latency setup the bench used for bulk before:
// both at the default bulk row's settings (32 MiB, sending bounded by
// 1 s), run in the same process, interleaved — a ratio, not an absolute
// figure.
//
// Robustness: kcp-fast is bound by its 128-packet window and kcp's 10 ms
// update, kcp-bulk by CPU, so load from other processes lowers kcp-bulk
// alone (measured here at load average 5–12 on 2 cores: 56–98 MB/s, at
// 12 CPU s/GB, against 139 MB/s at 7.5 s/GB less loaded; kcp-fast 16–20
// either way: 3.5–4.8×), and a single row may be starved outright. Each
// peer therefore runs up to five times, and the ratio is of each peer's
// best so far — what the configuration can do on this machine, which
// load only lowers; the test stops once, after at least two attempts,
// that ratio reaches 5×. Even so it cannot pass on a box whose other
// processes take most of the CPU, so it is behind a build tag, run with
//
//	go test -tags ratio -run TestKCPBulkFasterThanKCPFast ./bench
//
// on a quiet machine; the race detector slows CPU-bound code several
// times over and would measure itself, so the file is not built with
// -race either.
func TestKCPBulkFasterThanKCPFast(t *testing.T) {
	const want, minAttempts, maxAttempts = 5.0, 2, 5
	ctx := context.Background()
	var bestFast, bestBulk float64
	for i := range maxAttempts {
		for _, tr := range []string{KCPFast, KCPBulk} {
			r, err := Run(ctx, Scenario{Profile: ProfileBulk, Transport: tr, Duration: time.Second, Drain: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r.Failed() || r.ThroughputMBPerS <= 0 {
				t.Fatalf("attempt %d: %s delivered %d of %d at %.1f MB/s", i, tr, r.Delivered, r.Sent, r.ThroughputMBPerS)
			}
			t.Logf("attempt %d: %s %.1f MB/s (%d chunks)", i, tr, r.ThroughputMBPerS, r.Delivered)
			if tr == KCPFast {
				bestFast = max(bestFast, r.ThroughputMBPerS)
			} else {
				bestBulk = max(bestBulk, r.ThroughputMBPerS)
			}
		}
		if i+1 >= minAttempts && bestBulk >= want*bestFast {
			break
		}
	}
	ratio := bestBulk / bestFast
	t.Logf("best kcp-bulk %.1f MB/s / best kcp-fast %.1f MB/s = %.1f×", bestBulk, bestFast, ratio)
	if ratio < want {
		t.Errorf("kcp-bulk's best %.1f MB/s is %.1f× kcp-fast's best %.1f MB/s, want at least %v×", bestBulk, ratio, bestFast, want)
	}
}
