package bench

import (
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// cdfAt returns the CDF point at percentile p.
func cdfAt(t *testing.T, cdf []CDFPoint, p float64) float64 {
	t.Helper()
	for _, c := range cdf {
		if c.Percentile == p {
			return c.MS
		}
	}
	t.Fatalf("no CDF point at %v: %v", p, cdf)
	return 0
}

// checkCDF checks the invariants of latencyOf's CDF of a non-empty h.
func checkCDF(t *testing.T, h *hdrhistogram.Histogram, l Latency, cdf []CDFPoint) {
	t.Helper()
	if len(cdf) != len(cdfPercentiles) {
		t.Fatalf("%d points, want %d", len(cdf), len(cdfPercentiles))
	}
	for i, c := range cdf {
		if c.Percentile != cdfPercentiles[i] {
			t.Errorf("point %d at %v, want %v", i, c.Percentile, cdfPercentiles[i])
		}
		if i > 0 && (c.Percentile <= cdf[i-1].Percentile || c.MS < cdf[i-1].MS) {
			t.Errorf("not monotone at %d: %v after %v", i, c, cdf[i-1])
		}
	}
	if first, last := cdf[0], cdf[len(cdf)-1]; first.Percentile != 0 || first.MS != float64(h.Min())/1000 ||
		last.Percentile != 100 || last.MS != float64(h.Max())/1000 {
		t.Errorf("endpoints %v, %v; want min %d µs, max %d µs", first, last, h.Min(), h.Max())
	}
	// The summary and the distribution agree.
	for _, c := range []struct {
		p, ms float64
	}{{50, l.P50}, {90, l.P90}, {99, l.P99}, {99.9, l.P999}, {100, l.Max}} {
		if got := cdfAt(t, cdf, c.p); got != c.ms {
			t.Errorf("CDF at %v = %v ms, Latency says %v ms", c.p, got, c.ms)
		}
	}
}

func TestLatencyOfKnown(t *testing.T) {
	// 1 µs … 1000 µs once each: below 2048 the histogram is exact, so the
	// latency at percentile p is the rank p/100 × 1000 (rounded, at least
	// 1), in µs.
	h := hdrhistogram.New(histMin, histMax, histDigits)
	for v := int64(1); v <= 1000; v++ {
		h.RecordValue(v)
	}
	l, cdf := latencyOf(h)
	checkCDF(t, h, l, cdf)
	for _, c := range cdf {
		want := max(1, min(1000, int64(c.Percentile*10+0.5)))
		if c.MS != float64(want)/1000 {
			t.Errorf("p%v = %v ms, want %v ms", c.Percentile, c.MS, float64(want)/1000)
		}
	}
	if want := (Latency{P50: 0.5, P90: 0.9, P99: 0.99, P999: 0.999, Max: 1}); l != want {
		t.Errorf("latency %+v, want %+v", l, want)
	}
}

func TestLatencyOfShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string]func() int64{
		"one value": func() int64 { return 53_000 },
		// Echo-like: 50 ms body, a few retransmissions hundreds of ms out.
		"heavy tail": func() int64 {
			v := 50_000 + rng.Int64N(8_000)
			if rng.IntN(100) < 3 {
				v += 100_000 + rng.Int64N(400_000)
			}
			return v
		},
		"wide": func() int64 { return 1 + rng.Int64N(histMax) },
	}
	for name, gen := range cases {
		t.Run(name, func(t *testing.T) {
			h := hdrhistogram.New(histMin, histMax, histDigits)
			for range 5000 {
				if err := h.RecordValue(gen()); err != nil {
					t.Fatal(err)
				}
			}
			l, cdf := latencyOf(h)
			checkCDF(t, h, l, cdf)
		})
	}
}

func TestLatencyOfEmpty(t *testing.T) {
	l, cdf := latencyOf(hdrhistogram.New(histMin, histMax, histDigits))
	if l != (Latency{}) || cdf == nil || len(cdf) != 0 {
		t.Errorf("empty histogram: %+v, %#v; want zero and an empty non-nil CDF", l, cdf)
	}
}
