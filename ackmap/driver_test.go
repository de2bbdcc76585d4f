package ackmap

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// seedFlag overrides the seed of the randomized tests here; a failure
// prints the command line that reproduces it.
var seedFlag = flag.Uint64("seed", 0, "seed for the randomized ackmap tests (0: each test's own)")

// testSeed returns -seed if given, else def.
func testSeed(def uint64) uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return def
}

// repro is the command line that reruns test name (a t.Name(), subtests
// included) with seed.
func repro(name string, seed uint64) string {
	return fmt.Sprintf("go test ./ackmap -run '^%s$' -seed=%d", strings.ReplaceAll(name, "/", "$/^"), seed)
}

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

	// Timing ground truth, indexed by absolute send number.
	now        time.Duration   // the driver's clock, for take
	sentAt     []time.Duration // when each datagram was sent
	verdictAt  []time.Duration // when its verdict came
	newerAckAt []time.Duration // first arrival of a header whose ack is a later seq (-1 none yet)
	seqIndex   []int64         // its index among all seqs handed out (sends and skips)
	seqs       int64           // seqs handed out so far
	lastSeq    wire.Seq        // the newest of them
	newerNext  int64           // datagrams before this one have newerAckAt set
	skips      int             // ack-only datagrams sent (Skip)
}

func newEnd(t testing.TB, cfg Config, first wire.Seq, out *path) *end {
	return &end{
		tr: newTracker(t, cfg, first), out: out,
		sentID: map[wire.Seq]int64{}, received: map[int64]bool{},
		acked: map[int64]bool{}, lost: map[int64]Cause{},
	}
}

func (e *end) send(t testing.TB, now time.Duration) {
	e.now = now
	seq, evs := e.tr.Send(e.events[:0], now, NoRecord)
	e.take(t, evs)
	e.sentID[seq] = e.nextID
	d := datagram{seq: seq, id: e.nextID}
	d.ack, d.bits, d.hasAck = e.hist.Ack()
	e.nextID++
	e.sentAt = append(e.sentAt, now)
	e.verdictAt = append(e.verdictAt, -1)
	e.newerAckAt = append(e.newerAckAt, -1)
	e.seqIndex = append(e.seqIndex, e.seqs)
	e.seqs++
	e.lastSeq = seq
	e.out.send(now, d)
}

// skip sends an ack-only datagram: a seq that expects no verdict. The
// peer records its seq (so its acks may name it) but it carries no data.
func (e *end) skip(t testing.TB, now time.Duration) {
	e.now = now
	seq, evs := e.tr.Skip(e.events[:0])
	e.take(t, evs)
	d := datagram{seq: seq, id: -1}
	d.ack, d.bits, d.hasAck = e.hist.Ack()
	e.seqs++
	e.lastSeq = seq
	e.skips++
	e.out.send(now, d)
}

func (e *end) receive(t testing.TB, now time.Duration, d datagram) {
	e.now = now
	if e.hist.Record(d.seq) == RecvFresh {
		e.received[d.id] = true
	}
	if d.hasAck {
		// Every datagram sent before the seq the header's ack names now
		// has a later seq acked.
		acked := e.seqs - 1 - int64(uint16(e.lastSeq-d.ack))
		for ; e.newerNext < e.nextID && e.seqIndex[e.newerNext] < acked; e.newerNext++ {
			e.newerAckAt[e.newerNext] = now
		}
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
		e.verdictAt[id] = e.now
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
		a.now, b.now = now, now
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
		if cfg.ReorderThreshold == AckWindow && st.LostBy(CauseReorder) != 0 {
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
	if st := a.tr.Stats(); st.LostBy(CauseTimeout) != 0 {
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

// Issue 9 item 11: reordering must not read as loss. A lossless path with
// heavy jitter — every datagram delayed 20–80 ms independently, so
// datagrams overtake each other by up to 60 ms — and acks generated as a
// peer does (its newest seq and 32 bits, on every datagram it sends). After
// the first second, fewer than 2 % of the verdicts may be spurious losses
// (declared lost, yet the peer got them). Before the time threshold, the
// adaptive thresholds and per-seq RTT samples, 40–60 % were.
//
// The cadences keep the reordering depth (60 ms of sends) inside what one
// ack header can name (33 seqs); at 1 ms sends a third of the datagrams
// arrive more than 32 behind the newest and are dropped by the receiver
// (RecvTooOld): real losses no sender-side rule can avoid. The windows are
// sized so in-flight eviction plays no part.
func TestDriverJitterIsNotLoss(t *testing.T) {
	seed := testSeed(5)
	cases := []struct {
		name   string
		cfg    Config
		pa, pb int // send periods, ms
	}{
		{"2ms", Config{MaxInFlight: 256}, 2, 2},
		{"4ms", Config{}, 4, 4},
		{"60Hz", Config{}, 16, 16},
		{"60Hz-vs-2ms", Config{MaxInFlight: 256}, 16, 2},
		{"5ms-vs-2ms", Config{MaxInFlight: 256}, 5, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := newPair(t, c.cfg, seed, 50*ms, 30*ms, 0, 0)
			now := run(t, a, b, 20000, c.pa, c.pb, 0)
			adapted := [2]SendStats{a.tr.Stats(), b.tr.Stats()}
			// Datagrams sent in the last second may be acked only by
			// datagrams settle never lets the peer send.
			until := now - time.Second
			settle(t, a, b, now)
			for i, e := range []*end{a, b} {
				peer := []*end{b, a}[i]
				checkTruth(t, e, peer, true)
				var verdicts, spurious, tooOld int
				for id := range e.nextID {
					if e.sentAt[id] < time.Second || e.sentAt[id] >= until {
						continue
					}
					verdicts++
					if _, lost := e.lost[id]; lost && peer.received[id] {
						spurious++
					} else if lost {
						tooOld++
					}
				}
				st := e.tr.Stats()
				t.Logf("%s: %d verdicts after 1 s, %d spurious (%.2f%%), %d truly lost (arrived too old); tracker saw %d spurious %v; thresholds then: packet %d, time %.3f (%v)",
					"ab"[i:i+1], verdicts, spurious, 100*float64(spurious)/float64(verdicts), tooOld, st.SpuriousLosses, st.spuriousBy,
					adapted[i].ReorderThreshold, adapted[i].TimeThreshold, adapted[i].LossDelay)
				if float64(spurious) >= 0.02*float64(verdicts) {
					t.Errorf("%s: %d of %d verdicts after the first second are spurious losses (≥ 2 %%); reproduce: %s",
						"ab"[i:i+1], spurious, verdicts, repro("TestDriverJitterIsNotLoss", seed))
				}
				if st.SpuriousLosses == 0 || adapted[i].TimeThreshold == 9.0/8 && adapted[i].ReorderThreshold == DefaultReorderThreshold {
					t.Errorf("%s: the thresholds never adapted (%d spurious seen): the test exercises nothing", "ab"[i:i+1], st.SpuriousLosses)
				}
			}
		})
	}
}

// The other half of item 11: on a lossy path that does not reorder (10 %
// loss each way, 50 ms each way), every real loss is still declared within
// 1.25 round trips of its send — the round trip the sender sees: the
// path's plus the peer's ack interval, as the peer acks only when it sends
// — plus the 1 ms of the driver's Expire tick, or, when the acks that would
// show it were lost too, at the first header that acks a later seq; after
// the first second, once the RTT estimate has its samples. No loss
// is spurious except by time-out at the tail, so the thresholds never move;
// and when the peer acks at least every RTT/25, time-outs are spurious for
// at most 1 datagram in 1,000: the RTO is never below the time threshold,
// whose RTT/8 margin covers three consecutive lost ack headers (four, at
// 10 % loss, come once in 10,000). (A datagram no later seq's ack ever
// reaches waits for the RTO; settle checks that it resolves.)
func TestDriverLossDetectedPromptly(t *testing.T) {
	seed := testSeed(9)
	const rtt = 100 * ms
	cases := []struct {
		name   string
		cfg    Config
		pa, pb int
	}{
		{"1ms", Config{MaxInFlight: 256}, 1, 1},
		{"2ms", Config{}, 2, 2},
		{"4ms", Config{}, 4, 4},
		{"60Hz", Config{}, 16, 16},
		{"1ms-vs-60Hz", Config{MaxInFlight: 256}, 1, 16},
		{"60Hz-vs-1ms", Config{}, 16, 1},
		{"30Hz", Config{}, 33, 33},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := newPair(t, c.cfg, seed, rtt/2, 0, 0.1, 0)
			now := run(t, a, b, 20000, c.pa, c.pb, 0)
			settle(t, a, b, now)
			// An acked datagram was received, always; a loss by the
			// thresholds never was. (A window or time-out verdict may be
			// for a datagram received whose every ack was lost or came
			// too late to name it: no sender can tell.)
			checkTruth(t, a, b, true)
			spuriousTimeouts := 0
			for id, cause := range a.lost {
				if b.received[id] && (cause == CauseReorder || cause == CauseReorderTime) {
					t.Fatalf("datagram %d declared lost (%s) on a path that does not reorder, but it was received; reproduce: %s",
						id, cause, repro("TestDriverLossDetectedPromptly", seed))
				}
				if b.received[id] && cause == CauseTimeout {
					spuriousTimeouts++
				}
			}
			if time.Duration(c.pb)*ms <= rtt/25 && int64(spuriousTimeouts)*1000 > a.nextID {
				t.Fatalf("%d of %d datagrams timed out although received, with acks every %d ms; reproduce: %s",
					spuriousTimeouts, a.nextID, c.pb, repro("TestDriverLossDetectedPromptly", seed))
			}
			var ratios []float64
			for id := range a.nextID {
				if _, lost := a.lost[id]; !lost || b.received[id] || a.newerAckAt[id] < 0 || a.sentAt[id] < time.Second {
					continue
				}
				took := a.verdictAt[id] - a.sentAt[id]
				ratios = append(ratios, float64(took)/float64(rtt))
				bound := max(a.sentAt[id]+(rtt+time.Duration(c.pb)*ms)*5/4, a.newerAckAt[id]) + ms
				if a.verdictAt[id] > bound {
					t.Fatalf("datagram %d sent at %v, lost, declared (%s) at %v: %v after its send, past %v (first later ack at %v); reproduce: %s",
						id, a.sentAt[id], a.lost[id], a.verdictAt[id], took, bound, a.newerAckAt[id], repro("TestDriverLossDetectedPromptly", seed))
				}
			}
			if len(ratios) < 30 {
				t.Fatalf("only %d real losses: the test exercises nothing", len(ratios))
			}
			slices.Sort(ratios)
			st := a.tr.Stats()
			t.Logf("%d real losses by %v: declared after p50 %.2f, p99 %.2f, max %.2f RTT; %d of %d time-outs spurious (tracker saw %v)",
				len(ratios), st.lostBy, ratios[len(ratios)/2], ratios[len(ratios)*99/100], ratios[len(ratios)-1],
				spuriousTimeouts, st.LostBy(CauseTimeout), st.spuriousBy)
			if st.SpuriousBy(CauseReorder)+st.SpuriousBy(CauseReorderTime)+st.SpuriousBy(CauseWindow) != 0 ||
				st.ReorderThreshold != DefaultReorderThreshold || st.TimeThreshold != 9.0/8 {
				t.Fatalf("a path that does not reorder moved the thresholds: %+v", st)
			}
		})
	}
}

// Issue 9 item 8: a channel with data in flight that Flushes every
// millisecond sends an ack-only datagram (Skip) whenever its peer has sent
// something since. On a long round trip those skipped seqs must not evict
// its own data as lost before the acks can return: MaxInFlight counts only
// pending seqs, and the span of seqs (skips included) has a ring four
// times larger. Each case sends 8 data datagrams at once, then one every
// 100 ms, on a lossless path; every one must be acked.
func TestDriverAckOnlyFlushesKeepData(t *testing.T) {
	cases := []struct {
		name          string
		rtt           time.Duration
		flush, peerMS int // our Flush period and the peer's send period, ms
		cfg           Config
	}{
		{"200ms-rtt-1ms-flush", 200 * ms, 1, 1, Config{}},
		{"400ms-rtt-5ms-flush", 400 * ms, 5, 5, Config{}},
		// Above the 1 s initial RTO, the first datagrams would time out
		// before the first ack; that is not what this test is about.
		{"1.2s-rtt-60Hz", 1200 * ms, 16, 16, Config{InitialRTO: 2 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ab := &path{rng: rand.New(rand.NewPCG(1, 1)), delay: c.rtt / 2}
			ba := &path{rng: rand.New(rand.NewPCG(1, 2)), delay: c.rtt / 2}
			a := newEnd(t, c.cfg, 100, ab)
			b := newEnd(t, Config{MaxInFlight: MaxInFlightLimit}, 200, ba) // b's own window is not under test
			var buf []datagram
			var now time.Duration
			toSend, dirty := 8, false
			maxSpan := 0
			step := func(i int, aSends, bSends bool) {
				now += ms
				for _, d := range b.out.due(now, buf[:0]) {
					a.receive(t, now, d)
					dirty = true
				}
				for _, d := range a.out.due(now, buf[:0]) {
					b.receive(t, now, d)
				}
				if aSends && i%c.flush == 0 {
					switch {
					case toSend > 0:
						for ; toSend > 0; toSend-- {
							a.send(t, now)
						}
					case dirty:
						a.skip(t, now) // a standalone ack
					}
					dirty = false
				}
				if bSends && i%c.peerMS == 0 {
					b.send(t, now)
				}
				if i%100 == 0 && aSends {
					toSend++
				}
				a.now, b.now = now, now
				a.take(t, a.tr.Expire(a.events[:0], now))
				b.take(t, b.tr.Expire(b.events[:0], now))
				maxSpan = max(maxSpan, a.tr.Span())
			}
			for i := range 5000 {
				step(i, true, true)
			}
			// a falls silent; b keeps sending (and acking) for two round trips.
			for i := range int(2 * c.rtt / ms) {
				step(i, false, true)
			}
			st := a.tr.Stats()
			t.Logf("a: %d data, %d ack-only, acked %d, lost %v; span up to %d of %d", a.nextID, a.skips, st.Acked, st.lostBy, maxSpan, a.tr.SpanLimit())
			if st.Lost != 0 || a.tr.PendingCount() != 0 || int64(st.Acked) != a.nextID {
				t.Fatalf("lossless path: %d of %d data datagrams acked, %d lost %v, %d pending", st.Acked, a.nextID, st.Lost, st.lostBy, a.tr.PendingCount())
			}
			if maxSpan <= a.tr.Config().MaxInFlight {
				t.Fatalf("span reached only %d: the skipped seqs never outnumbered MaxInFlight, the test exercises nothing", maxSpan)
			}
		})
	}
}
