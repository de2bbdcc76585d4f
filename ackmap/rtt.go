package ackmap

import "time"

// rtoGranularity is the clock granularity G of RFC 6298: the variance term
// of the retransmission time-out is never smaller than this.
const rtoGranularity = time.Millisecond

// RTT estimates a path's round-trip time from samples, in the style of
// RFC 6298: a smoothed RTT (gain 1/8), a mean deviation (gain 1/4), and from
// them a retransmission time-out. It also keeps the minimum and latest
// sample and an RFC 3550-style jitter: the smoothed (gain 1/16) absolute
// difference between consecutive samples.
//
// The zero value has no samples. Sample is a handful of integer operations;
// nothing allocates. Not safe for concurrent use.
type RTT struct {
	smoothed time.Duration
	variance time.Duration
	min      time.Duration
	latest   time.Duration
	jitter   time.Duration
	samples  uint64
}

// Sample folds one round-trip measurement into the estimate. Negative
// samples (a clock that went backwards) are ignored.
func (r *RTT) Sample(rtt time.Duration) {
	if rtt < 0 {
		return
	}
	if r.samples == 0 {
		r.smoothed = rtt
		r.variance = rtt / 2
		r.min = rtt
		r.latest = rtt
		r.samples = 1
		return
	}
	r.variance = (3*r.variance + absDuration(r.smoothed-rtt)) / 4
	r.smoothed = (7*r.smoothed + rtt) / 8
	r.jitter += (absDuration(rtt-r.latest) - r.jitter) / 16
	r.min = min(r.min, rtt)
	r.latest = rtt
	r.samples++
}

// HasSample reports whether at least one sample has been taken.
func (r *RTT) HasSample() bool { return r.samples > 0 }

// Samples returns how many samples have been taken.
func (r *RTT) Samples() uint64 { return r.samples }

// Smoothed returns the smoothed RTT, or 0 before the first sample.
func (r *RTT) Smoothed() time.Duration { return r.smoothed }

// Variance returns the mean deviation of the RTT (RFC 6298's RTTVAR).
func (r *RTT) Variance() time.Duration { return r.variance }

// Min returns the smallest sample seen, or 0 before the first sample.
func (r *RTT) Min() time.Duration { return r.min }

// Latest returns the most recent sample, or 0 before the first sample.
func (r *RTT) Latest() time.Duration { return r.latest }

// Jitter returns the smoothed difference between consecutive samples.
func (r *RTT) Jitter() time.Duration { return r.jitter }

// RTO returns the retransmission time-out SRTT + max(G, 4·RTTVAR) clamped
// to [minRTO, maxRTO], or initial before the first sample (also clamped).
func (r *RTT) RTO(initial, minRTO, maxRTO time.Duration) time.Duration {
	rto := initial
	if r.samples > 0 {
		rto = r.smoothed + max(rtoGranularity, 4*r.variance)
	}
	return min(max(rto, minRTO), maxRTO)
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
