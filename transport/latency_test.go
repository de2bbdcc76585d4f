package transport

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
)

// latencies sends one reliable message of size bytes per 60 Hz tick for n
// ticks from a to b over link and returns each message's delivery latency
// (queue to delivery), sorted.
func latencies(t *testing.T, seed uint64, cfg Config, link simlink.LinkConfig, size, n int, ca, cb loop) []time.Duration {
	t.Helper()
	r := newCadencedRig(t, seed, cfg, link, ca, cb)
	sentAt := make([]time.Duration, n)
	var lat []time.Duration
	r.b.onMessage = func(m Message) {
		if m.Delivery == Reliable && len(m.Payload) >= 4 {
			i := binary.LittleEndian.Uint32(m.Payload)
			lat = append(lat, r.now-sentAt[i])
		}
	}
	next := 0
	for tick := 0; next < n || len(lat) < n; tick++ {
		if tick > n+60*30 {
			t.Fatalf("%d of %d delivered after %d ticks", len(lat), n, tick)
		}
		if next < n {
			if _, err := r.a.ch.SendReliable(1, numbered(next, size)); err == nil {
				sentAt[next] = r.now
				next++
			}
		}
		r.runFor(tick60)
	}
	slices.Sort(lat)
	return lat
}

func pct(s []time.Duration, p float64) time.Duration { return s[min(len(s)-1, int(float64(len(s))*p))] }

// TestFewPieceMessagesRecoverLikeSingleOnes: issue 9 item 3 — a 1 KiB
// reliable message at MTU 576 (two pieces) recovers from loss about as fast
// as a single-datagram one: its p99 is within 2× the p99 of a 400 B message
// on the same link (on adabd8e, p50 416 ms at 10 % loss, four large
// messages in flight at most).
func TestFewPieceMessagesRecoverLikeSingleOnes(t *testing.T) {
	cfg := Config{MTU: 576}
	for _, loss := range []float64{0, 0.01, 0.10} {
		t.Run(fmt.Sprintf("loss%.0f%%", loss*100), func(t *testing.T) {
			link := simlink.LinkConfig{Delay: 25 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: loss}
			one := latencies(t, 11, cfg, link, 400, 600, at60Hz, at60Hz)
			two := latencies(t, 11, cfg, link, 1024, 600, at60Hz, at60Hz)
			t.Logf("loss %.0f%%: 400 B p50 %v p99 %v; 1 KiB p50 %v p99 %v", loss*100,
				pct(one, 0.5), pct(one, 0.99), pct(two, 0.5), pct(two, 0.99))
			if pct(two, 0.99) > 2*pct(one, 0.99) {
				t.Fatalf("1 KiB p99 %v above twice the single-datagram p99 %v", pct(two, 0.99), pct(one, 0.99))
			}
		})
	}
}
