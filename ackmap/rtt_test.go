package ackmap

import (
	"testing"
	"time"
)

func TestRTTFirstSampleAndRFC6298Update(t *testing.T) {
	var r RTT
	if r.HasSample() || r.Smoothed() != 0 {
		t.Fatal("zero RTT has a sample")
	}
	if got := r.RTO(time.Second, 50*time.Millisecond, 2*time.Second); got != time.Second {
		t.Fatalf("RTO before samples = %v, want the initial 1s", got)
	}
	r.Sample(100 * time.Millisecond)
	if r.Smoothed() != 100*time.Millisecond || r.Variance() != 50*time.Millisecond || r.Min() != 100*time.Millisecond {
		t.Fatalf("after first sample: srtt=%v var=%v min=%v", r.Smoothed(), r.Variance(), r.Min())
	}
	// RTTVAR = 3/4·50 + 1/4·|100−60| = 47.5; SRTT = 7/8·100 + 1/8·60 = 95.
	r.Sample(60 * time.Millisecond)
	if r.Variance() != 47500*time.Microsecond || r.Smoothed() != 95*time.Millisecond {
		t.Fatalf("after second sample: srtt=%v var=%v, want 95ms 47.5ms", r.Smoothed(), r.Variance())
	}
	if r.Min() != 60*time.Millisecond || r.Latest() != 60*time.Millisecond || r.Samples() != 2 {
		t.Fatalf("min=%v latest=%v samples=%d", r.Min(), r.Latest(), r.Samples())
	}
	// Jitter: 0 + (|60−100| − 0)/16 = 2.5ms.
	if r.Jitter() != 2500*time.Microsecond {
		t.Fatalf("jitter = %v, want 2.5ms", r.Jitter())
	}
	// RTO = 95 + 4·47.5 = 285ms, inside the clamp.
	if got := r.RTO(time.Second, 50*time.Millisecond, 2*time.Second); got != 285*time.Millisecond {
		t.Fatalf("RTO = %v, want 285ms", got)
	}
	if got := r.RTO(time.Second, 300*time.Millisecond, 2*time.Second); got != 300*time.Millisecond {
		t.Fatalf("RTO clamped low = %v, want 300ms", got)
	}
	if got := r.RTO(time.Second, 50*time.Millisecond, 200*time.Millisecond); got != 200*time.Millisecond {
		t.Fatalf("RTO clamped high = %v, want 200ms", got)
	}
	r.Sample(-time.Millisecond)
	if r.Samples() != 2 {
		t.Fatal("negative sample was folded in")
	}
}

func TestRTTConvergesOnSteadyPath(t *testing.T) {
	var r RTT
	r.Sample(500 * time.Millisecond)
	for i := 0; i < 200; i++ {
		r.Sample(80 * time.Millisecond)
	}
	if d := r.Smoothed() - 80*time.Millisecond; d < 0 || d > time.Millisecond {
		t.Fatalf("srtt = %v after 200 samples of 80ms", r.Smoothed())
	}
	// The variance term floors at the clock granularity G.
	if got := r.RTO(0, time.Millisecond, time.Hour); got != r.Smoothed()+max(rtoGranularity, 4*r.Variance()) {
		t.Fatalf("RTO = %v", got)
	}
}
