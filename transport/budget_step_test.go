package transport

import (
	"fmt"
	"testing"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/transport/simlink"
)

// TestBudgetDelayStepIsNotQueue: the RTT of a path can rise for good
// without any queue — a route change to a longer path, or a jittery path
// that calms down (the base RTT, the smallest sample of the last 10 s,
// came from the jitter's low tail, and the RTT now sits at the middle of
// that spread). Either looks like a standing queue to a delay estimator,
// but one that sending less does not drain, while the acks keep up with
// what goes out. The budget must not sit at its floor for the base RTT's
// 10 s window: within 2 s of the step it carries the offered load again.
// (Conformance seed 5021 found it: a 290 KB message after a heal took 17 s
// at 16 KB/s, and the session ended as stalled.)
func TestBudgetDelayStepIsNotQueue(t *testing.T) {
	for _, c := range []struct {
		name          string
		before, after simlink.LinkConfig
	}{
		{"jitter-calms", simlink.LinkConfig{MTU: MaxMTU, Delay: 250 * time.Millisecond, Jitter: 77 * time.Millisecond},
			simlink.LinkConfig{MTU: MaxMTU, Delay: 250 * time.Millisecond}},
		{"route-longer", simlink.LinkConfig{MTU: MaxMTU, Delay: 30 * time.Millisecond, Jitter: time.Millisecond},
			simlink.LinkConfig{MTU: MaxMTU, Delay: 110 * time.Millisecond, Jitter: time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			seed := *budgetSeed
			repro := fmt.Sprintf("reproduce: go test ./transport -run 'TestBudgetDelayStepIsNotQueue/%s$' -budget.seed=%d -v", c.name, seed)
			br := newBudgetRun(t, seed, c.before)
			r := br.r
			setLinks := func(l simlink.LinkConfig) {
				for _, p := range [][2]*end{{r.a, r.b}, {r.b, r.a}} {
					if err := r.net.SetLink(p[0].conn.LocalAddr(), p[1].conn.LocalAddr(), l); err != nil {
						t.Fatal(err)
					}
				}
			}
			setLinks(c.before)
			br.run(8*time.Second, true)
			setLinks(c.after)
			step := r.now
			br.run(step+2*time.Second, true)
			sent0, off0 := r.a.ch.Stats().BytesSent, br.o.offeredBytes
			lowest := int64(1 << 62)
			for r.now < step+6*time.Second {
				br.run(r.now+100*time.Millisecond, true)
				lowest = min(lowest, r.a.ch.Stats().Budget.Rate)
			}
			st := r.a.ch.Stats()
			sent, offered := int64(st.BytesSent-sent0), br.o.offeredBytes-off0
			t.Logf("2–6 s after the step: sent %d B for %d B offered; lowest rate %d B/s; budget %+v; rates %v", sent, offered, lowest, st.Budget, br.rates)
			if sent < offered*8/10 || lowest < br.o.offeredRate()*8/10 {
				t.Errorf("%s: the budget read a delay step as a queue: 2–6 s after it, sent %d B for %d B offered (want ≥ 80 %%), lowest rate %d B/s for %d B/s offered; %s",
					c.name, sent, offered, lowest, br.o.offeredRate(), repro)
			}
		})
	}
}

// TestUnreliableFloodKeepsAcks: on a path whose round trip outlasts the
// in-flight window at the datagram rate the game sends (250 ms each way,
// the bottleneck tests' ~400 KB/s, mostly unreliable and sequenced), the
// datagrams that carry only unreliable frames must not evict the tracked
// ones before their acks return: the reliable stream keeps being acked
// and released, and RTT samples keep coming. With the default window
// (64) they go untracked near a full window; with a window of 16 its span
// of seqs (64) is full too, and they wait for acks (SpanWaits) rather
// than evict. (Before, every seq was evicted as lost, nothing was ever
// acked, and the reliable stream stalled with every message delivered.)
func TestUnreliableFloodKeepsAcks(t *testing.T) {
	for _, c := range []struct {
		window   int
		released int // of the 480 accepted, at least
		spanWait bool
	}{{64, 420, false}, {16, 240, true}} {
		t.Run(fmt.Sprintf("window=%d", c.window), func(t *testing.T) {
			seed := *budgetSeed
			link := simlink.LinkConfig{MTU: MaxMTU, Delay: 250 * time.Millisecond, Jitter: 2 * time.Millisecond}
			r := newRig(t, seed, Config{Ack: ackmap.Config{MaxInFlight: c.window}}, link)
			br := &budgetRun{r: r, o: newOffer(), delay: link.Delay, sentAt: map[uint64]time.Duration{}}
			br.run(8*time.Second, true)
			st := r.a.ch.Stats()
			rs := r.a.ch.reliable[1]
			t.Logf("accepted %d reliable, released %d, unacked %d; span waits %d; ack %+v; SRTT %v; budget %+v", br.o.nextID, rs.released, rs.unacked, st.SpanWaits, st.Ack, st.SRTT, st.Budget)
			// 8 s at 60 Hz offers 480; a round trip (500 ms) holds about 30.
			if int(rs.released) < c.released || br.o.nextID < 400 || st.SRTT < 500*time.Millisecond || r.a.ch.Stalled() != nil || c.spanWait && st.SpanWaits == 0 {
				t.Errorf("an unreliable flood on a 500 ms round trip, window %d: %d reliable messages accepted, %d released (want ≥ %d), SRTT %v, %d acked of %d sent, %d lost, %d span waits (want some: %v); reproduce: go test ./transport -run 'TestUnreliableFloodKeepsAcks/window=%d$' -budget.seed=%d -v",
					c.window, br.o.nextID, rs.released, c.released, st.SRTT, st.Ack.Acked, st.Ack.Sent, st.Ack.Lost, st.SpanWaits, c.spanWait, c.window, seed)
			}
		})
	}
}
