package ackmap

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// This file is a tiny deterministic driver: two ends, each with a
// SendTracker and a RecvHistory, exchange datagrams (seq + ack header)
// through a seeded path that loses, duplicates, delays and reorders. It
// keeps the ground truth — which of each end's datagrams the other end
// actually received — so the tests can check every verdict against it.

type path struct {
	rng           *rand.Rand
	delay, jitter time.Duration
	loss, dup     float64
	queue         []datagram
	order         int
}

type datagram struct {
	at     time.Duration
	order  int // tie-break: same arrival time keeps send order
	seq    wire.Seq
	id     int64 // the sender's absolute send number (ground truth)
	hasAck bool
	ack    wire.Seq
	bits   uint32
}

func (p *path) send(now time.Duration, d datagram) {
	copies := 1
	if p.rng.Float64() < p.loss {
		copies = 0
	} else if p.rng.Float64() < p.dup {
		copies = 2
	}
	for range copies {
		d.at = now + p.delay
		if p.jitter > 0 {
			d.at += time.Duration(p.rng.Int64N(int64(2*p.jitter)+1)) - p.jitter
		}
		d.order = p.order
		p.order++
		p.queue = append(p.queue, d)
	}
}

// due removes and returns the datagrams that have arrived by now, in
// arrival order.
func (p *path) due(now time.Duration, out []datagram) []datagram {
	slices.SortFunc(p.queue, func(a, b datagram) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.order - b.order
	})
	n := 0
	for n < len(p.queue) && p.queue[n].at <= now {
		n++
	}
	out = append(out, p.queue[:n]...)
	p.queue = append(p.queue[:0], p.queue[n:]...)
	return out
}

type end struct {
	tr       *SendTracker
	hist     RecvHistory
	out      *path              // towards the other end
	sentID   map[wire.Seq]int64 // pending seq → absolute send number
	nextID   int64
	received map[int64]bool // absolute numbers of the OTHER end's datagrams we got
	events   []Event
	acked    map[int64]bool // our datagrams with an acked verdict
	lost     map[int64]Cause
	lateRecv int // datagrams the peer got after we had declared them lost (non-timeout)
}

func newEnd(t testing.TB, cfg Config, first wire.Seq, out *path) *end {
	return &end{
		tr: newTracker(t, cfg, first), out: out,
		sentID: map[wire.Seq]int64{}, received: map[int64]bool{},
		acked: map[int64]bool{}, lost: map[int64]Cause{},
	}
}

func (e *end) send(t testing.TB, now time.Duration) {
	seq, evs := e.tr.Send(e.events[:0], now, NoRecord)
	e.take(t, evs)
	e.sentID[seq] = e.nextID
	d := datagram{seq: seq, id: e.nextID}
	d.ack, d.bits, d.hasAck = e.hist.Ack()
	e.nextID++
	e.out.send(now, d)
}

func (e *end) receive(t testing.TB, now time.Duration, d datagram) {
	if e.hist.Record(d.seq) == RecvFresh {
		e.received[d.id] = true
	}
	if d.hasAck {
		evs, err := e.tr.OnAck(e.events[:0], now, d.ack, d.bits)
		if err != nil {
			t.Fatalf("valid header refused: %v", err)
		}
		e.take(t, evs)
	}
}

func (e *end) take(t testing.TB, evs []Event) {
	for _, ev := range evs {
		id, ok := e.sentID[ev.Seq]
		if !ok {
			t.Fatalf("verdict for seq %d that is not pending", ev.Seq)
		}
		delete(e.sentID, ev.Seq)
		if e.acked[id] || e.lost[id] != CauseNone {
			t.Fatalf("second verdict for datagram %d", id)
		}
		if ev.Kind == SeqAcked {
			e.acked[id] = true
		} else {
			e.lost[id] = ev.Cause
		}
	}
	e.events = evs
}

// run drives both ends for ticks milliseconds; each end sends on its own
// period (0 = never) and expires once per millisecond.
func run(t testing.TB, a, b *end, ticks int, periodA, periodB int, now time.Duration) time.Duration {
	var buf []datagram
	for i := 0; i < ticks; i++ {
		now += time.Millisecond
		buf = b.out.due(now, buf[:0]) // b → a
		for _, d := range buf {
			a.receive(t, now, d)
		}
		buf = a.out.due(now, buf[:0]) // a → b
		for _, d := range buf {
			b.receive(t, now, d)
		}
		if periodA > 0 && i%periodA == 0 {
			a.send(t, now)
		}
		if periodB > 0 && i%periodB == 0 {
			b.send(t, now)
		}
		a.take(t, a.tr.Expire(a.events[:0], now))
		b.take(t, b.tr.Expire(b.events[:0], now))
	}
	return now
}

// settle lets every in-flight verdict resolve: a goes quiet while b keeps
// sending (and so acking) for 200 ms, so a's last datagrams are acked; then
// both are quiet until b's last datagrams time out.
func settle(t testing.TB, a, b *end, now time.Duration) {
	now = run(t, a, b, 200, 0, 4, now)
	for i := 0; i < 20 && (a.tr.PendingCount() > 0 || b.tr.PendingCount() > 0); i++ {
		now = run(t, a, b, 500, 0, 0, now)
	}
	if a.tr.PendingCount() != 0 || b.tr.PendingCount() != 0 {
		t.Fatalf("pending after settle: a=%d b=%d", a.tr.PendingCount(), b.tr.PendingCount())
	}
}

// checkTruth verifies the verdicts of e's datagrams against what the peer
// actually received: an acked datagram was received, always. When the path
// cannot reorder, a datagram lost by ack bits or window was never received.
func checkTruth(t testing.TB, e, peer *end, reorders bool) {
	t.Helper()
	for id := range e.acked {
		if !peer.received[id] {
			t.Fatalf("datagram %d acked but never received", id)
		}
	}
	for id, cause := range e.lost {
		if peer.received[id] && cause != CauseTimeout && !reorders {
			t.Fatalf("datagram %d declared lost (%s) but it was received", id, cause)
		}
	}
	if got := int64(len(e.acked) + len(e.lost)); got != e.nextID {
		t.Fatalf("%d verdicts for %d datagrams", got, e.nextID)
	}
}

func newPair(t testing.TB, cfg Config, seed uint64, delay, jitter time.Duration, loss, dup float64) (*end, *end) {
	ab := &path{rng: rand.New(rand.NewPCG(seed, 1)), delay: delay, jitter: jitter, loss: loss, dup: dup}
	ba := &path{rng: rand.New(rand.NewPCG(seed, 2)), delay: delay, jitter: jitter, loss: loss, dup: dup}
	return newEnd(t, cfg, wire.Seq(seed*7919), ab), newEnd(t, cfg, wire.Seq(seed*104729), ba)
}

// S-B2: over a lossy, duplicating, reordering path, each seq gets exactly one
// verdict, an acked seq was really received, and with the reorder threshold
// off a seq is lost only after it falls more than 32 behind an ack.
func TestDriverVerdictsExactlyOnce(t *testing.T) {
	for _, cfg := range []Config{{}, {ReorderThreshold: AckWindow}} {
		a, b := newPair(t, cfg, 42, 20*ms, 10*ms, 0.15, 0.1)
		now := run(t, a, b, 20000, 16, 16, 0)
		settle(t, a, b, now)
		checkTruth(t, a, b, true)
		checkTruth(t, b, a, true)
		st := a.tr.Stats()
		if st.Lost == 0 || st.Acked == 0 {
			t.Fatalf("degenerate run: %+v", st)
		}
		if cfg.ReorderThreshold == AckWindow && st.LostBy[CauseReorder] != 0 {
			t.Fatalf("reorder losses with the threshold off: %+v", st)
		}
	}
}

// S-B3: sequence wrap over 200,000 datagrams keeps ack/loss exact: on an
// in-order lossy path every verdict matches the ground truth.
func TestDriverWrapExact(t *testing.T) {
	a, b := newPair(t, Config{}, 7, 10*ms, 0, 0.05, 0)
	// a sends every millisecond, b every 4: 200,000 datagrams from a, so a's
	// seqs wrap three times.
	now := run(t, a, b, 200000, 1, 4, 0)
	settle(t, a, b, now)
	checkTruth(t, a, b, false)
	checkTruth(t, b, a, false)
	if a.nextID < 200000 {
		t.Fatalf("a sent only %d", a.nextID)
	}
	if st := a.tr.Stats(); st.LostBy[CauseTimeout] != 0 {
		t.Fatalf("spurious time-outs on a steady path: %+v", st)
	}
}

// S-B7: on sim(40, 0, 0) — 40 ms each way, no jitter, no loss — the RTT
// estimate converges to within 10 % of the 80 ms round trip. Both ends send
// every 2 ms (40 datagrams in flight, inside the default window of 64), so
// an ack waits at most 2 ms for a datagram to ride on.
func TestDriverRTTConverges(t *testing.T) {
	a, b := newPair(t, Config{}, 3, 40*ms, 0, 0, 0)
	run(t, a, b, 3000, 2, 2, 0)
	for name, e := range map[string]*end{"a": a, "b": b} {
		srtt := e.tr.RTT().Smoothed()
		if srtt < 72*ms || srtt > 88*ms {
			t.Fatalf("%s: smoothed RTT %v, want 80ms ± 10%%", name, srtt)
		}
		if m := e.tr.RTT().Min(); m < 80*ms || m > 82*ms {
			t.Fatalf("%s: min RTT %v", name, m)
		}
	}
}

// A path that duplicates every datagram still gives one verdict per seq and
// the receiver reports each duplicate as such.
func TestDriverDuplication(t *testing.T) {
	a, b := newPair(t, Config{}, 11, 5*ms, 0, 0, 1)
	now := run(t, a, b, 2000, 2, 2, 0)
	settle(t, a, b, now)
	checkTruth(t, a, b, false)
	if st := a.tr.Stats(); st.Lost != 0 || st.Acked != uint64(a.nextID) {
		t.Fatalf("duplicating lossless path: %+v of %d", st, a.nextID)
	}
}
