package transport

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// redundancyRun sends one 64-byte reliable message per tick for n ticks
// from a to b over sim(25, 2, loss) with the given redundancy budget, and
// returns the one-way delivery latencies and the wire bytes a sent per
// message. Deterministic from seed.
func redundancyRun(tb testing.TB, cfg Config, loss float64, n int, seed uint64) (lat []time.Duration, bytesPerMsg float64) {
	r := newRig(tb, seed, cfg, sim(25, 2, loss))
	sentAt := make([]time.Duration, n)
	r.b.onMessage = func(m Message) {
		lat = append(lat, r.now-sentAt[idOf(string(m.Payload))])
	}
	for i := 0; i < n; i++ {
		sentAt[i] = r.now
		if _, err := r.a.ch.SendReliable(1, payload(i, 64)); err != nil {
			tb.Fatal(err)
		}
		r.run(1)
	}
	r.settle(2000)
	if len(lat) != n {
		tb.Fatalf("delivered %d of %d", len(lat), n)
	}
	return lat, float64(r.a.ch.Stats().BytesSent) / float64(n)
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkRedundancy measures the latency/bandwidth trade of
// Config.Redundancy and RedundancyBytes on the simulated link: 64-byte reliable messages
// at 60 Hz over sim(25, 2, loss). It reports one-way p50/p99 delivery
// latency in milliseconds (latency is quantised to the 16.7 ms tick: a
// message is delivered at the receiver's next tick) and wire bytes sent per
// message. The figures are deterministic (fixed seed, virtual clock); ns/op
// is the simulation's CPU cost and not the point.
func BenchmarkRedundancy(b *testing.B) {
	for _, loss := range []float64{0, 0.05, 0.10, 0.20} {
		for _, c := range []struct {
			mode RedundancyMode
			red  int
		}{{RedundancyOff, 0}, {RedundancyAdaptive, 128}, {RedundancyAdaptive, 512}, {RedundancyEager, 512}, {RedundancyAlways, 128}, {RedundancyAlways, 512}} {
			name := fmt.Sprintf("loss=%g/mode=%v/redundancy=%d", loss*100, c.mode, c.red)
			b.Run(name, func(b *testing.B) {
				var lat []time.Duration
				var bpm float64
				for b.Loop() {
					lat, bpm = redundancyRun(b, Config{Redundancy: c.mode, RedundancyBytes: c.red}, loss, 3000, 42)
				}
				b.ReportMetric(float64(percentile(lat, 0.50))/1e6, "p50-ms")
				b.ReportMetric(float64(percentile(lat, 0.99))/1e6, "p99-ms")
				b.ReportMetric(bpm, "wire-B/msg")
			})
		}
	}
}
