package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/transport/simlink"
)

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
			// The SRTT is the path's round trip (less its jitter at most):
			// samples keep coming.
			if int(rs.released) < c.released || br.o.nextID < 400 || st.SRTT < 2*(link.Delay-link.Jitter) || r.a.ch.Stalled() != nil || c.spanWait && st.SpanWaits == 0 {
				t.Errorf("an unreliable flood on a 500 ms round trip, window %d: %d reliable messages accepted, %d released (want ≥ %d), SRTT %v, %d acked of %d sent, %d lost, %d span waits (want some: %v); reproduce: go test ./transport -run 'TestUnreliableFloodKeepsAcks/window=%d$' -budget.seed=%d -v",
					c.window, br.o.nextID, rs.released, c.released, st.SRTT, st.Ack.Acked, st.Ack.Sent, st.Ack.Lost, st.SpanWaits, c.spanWait, c.window, seed)
			}
		})
	}
}

// TestUnreliableFlowsWithReturnPathDown: a one-way outage of the return
// path (nothing from b reaches a for 9 s; a→b is clean). a's unreliable
// stream to b keeps flowing — b can use it, and none of it needs an ack —
// so the span wait holds traffic only while acks arrive. (Waiting without
// acks, b got 355 and 1246 of 4320 at windows 16 and 64.)
func TestUnreliableFlowsWithReturnPathDown(t *testing.T) {
	for _, win := range []int{16, 64} {
		t.Run(fmt.Sprint(win), func(t *testing.T) {
			seed := *budgetSeed
			link := simlink.LinkConfig{MTU: MaxMTU, Delay: 50 * time.Millisecond, Jitter: time.Millisecond}
			r := newRig(t, seed, Config{Ack: ackmap.Config{MaxInFlight: win}}, link)
			buf := make([]byte, 1000)
			offered, got0 := 0, 0
			var next time.Duration
			for r.now < 12*time.Second {
				switch r.now {
				case 3 * time.Second:
					if err := r.net.SetLink(r.b.conn.LocalAddr(), r.a.conn.LocalAddr(), simlink.LinkConfig{MTU: MaxMTU, Loss: 1}); err != nil {
						t.Fatal(err)
					}
					got0 = len(r.b.got)
				}
				if r.now >= next {
					for range 8 {
						if r.a.ch.SendUnreliable(buf) == nil && r.now >= 3*time.Second {
							offered++
						}
					}
					next += tick60
				}
				r.a.eventStep(r.now)
				r.b.eventStep(r.now)
				r.now += time.Millisecond
				r.net.AdvanceTo(r.now)
			}
			got := len(r.b.got) - got0
			st := r.a.ch.Stats()
			if got < offered/2 {
				t.Errorf("window %d, seed %d: with the return path down 3-12 s, b got %d of %d unreliable messages a offered over a clean a→b path; span waits %d, shed %v; reproduce: go test ./transport -run 'TestUnreliableFlowsWithReturnPathDown/%d$' -budget.seed=%d -v",
					win, seed, got, offered, st.SpanWaits, st.Budget.Shed, win, seed)
			}
		})
	}
}

// TestSpanWaitShedsWithoutBudget: with the send budget off
// (NoSendBudget), a span wait still sheds unreliable messages older than
// UnreliableMaxAge, so what reaches the peer is fresh (before, shedding
// needed the budget: the oldest arrived 2.76 s after it was queued, and
// 1634 sends were refused ErrQueueFull).
func TestSpanWaitShedsWithoutBudget(t *testing.T) {
	seed := *budgetSeed
	link := simlink.LinkConfig{MTU: MaxMTU, Delay: 250 * time.Millisecond, Jitter: 2 * time.Millisecond}
	r := newRig(t, seed, Config{Ack: ackmap.Config{MaxInFlight: 16}, MaxSendRate: NoSendBudget}, link)
	buf := make([]byte, 1000)
	var maxAge time.Duration
	r.b.onMessage = func(m Message) {
		if m.Delivery == Unreliable && len(m.Payload) >= 8 {
			sent := time.Duration(binary.LittleEndian.Uint64(m.Payload))
			maxAge = max(maxAge, r.now-sent-link.Delay-link.Jitter)
		}
	}
	full := 0
	var next time.Duration
	for r.now < 8*time.Second {
		if r.now >= next {
			for range 6 {
				binary.LittleEndian.PutUint64(buf, uint64(r.now))
				if err := r.a.ch.SendUnreliable(buf); errors.Is(err, ErrQueueFull) {
					full++
				}
			}
			next += tick60
		}
		r.a.eventStep(r.now)
		r.b.eventStep(r.now)
		r.now += time.Millisecond
		r.net.AdvanceTo(r.now)
	}
	st := r.a.ch.Stats()
	t.Logf("span waits %d, queue-full refusals %d, oldest unreliable delivered %v after its send (beyond the path), default UnreliableMaxAge %v", st.SpanWaits, full, maxAge, DefaultUnreliableMaxAge)
	if st.SpanWaits == 0 || maxAge > DefaultUnreliableMaxAge+tick60 || st.Budget.Shed[ShedExpired] == 0 {
		t.Errorf("NoSendBudget: span waits %d, an unreliable message left %v after it was queued (want ≤ UnreliableMaxAge %v + a tick), %d shed as expired, %d refused ErrQueueFull; reproduce: go test ./transport -run TestSpanWaitShedsWithoutBudget -budget.seed=%d -v",
			st.SpanWaits, maxAge, DefaultUnreliableMaxAge, st.Budget.Shed[ShedExpired], full, seed)
	}
}

// TestSlowLargeMessageIsNotStalled: a large reliable message whose pieces
// are acked one by one on a slow path is progress, not a stall. 300 KB
// through a 16 KB/s bottleneck takes about 19 s, with StallWarning 2 s
// and StallTimeout 4 s: no stall is counted, Stalled stays nil, and the
// message arrives. (Before, only a whole message released counted:
// conformance seed 5021 ended its session as stalled this way, behind a
// send budget at its floor.)
func TestSlowLargeMessageIsNotStalled(t *testing.T) {
	seed := *budgetSeed
	link := simlink.LinkConfig{MTU: MaxMTU, Delay: 20 * time.Millisecond, Bandwidth: 16 << 10, QueueLimit: 16 << 10}
	r := newRig(t, seed, Config{StallWarning: 2 * time.Second, StallTimeout: 4 * time.Second}, link)
	if _, err := r.a.ch.SendReliable(1, make([]byte, 280<<10)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40*60 && len(r.b.got) == 0; i++ {
		r.run(1)
		if err := r.a.ch.Stalled(); err != nil {
			t.Fatalf("at %v, with %d of the message's pieces acked: %v; reproduce: go test ./transport -run TestSlowLargeMessageIsNotStalled -budget.seed=%d -v",
				r.now, r.a.ch.reliable[1].progress, err, seed)
		}
	}
	st := r.a.ch.Stats()
	t.Logf("delivered after %v; stalls %d; budget rate %d B/s", r.now, st.Stalls, st.Budget.Rate)
	if len(r.b.got) != 1 || st.Stalls != 0 || r.now < 10*time.Second {
		t.Errorf("a 280 KB message through 16 KB/s: %d delivered after %v (want 1, after ≥ 10 s), %d stalls counted (want 0); reproduce: go test ./transport -run TestSlowLargeMessageIsNotStalled -budget.seed=%d -v",
			len(r.b.got), r.now, st.Stalls, seed)
	}
}
