package ackmap

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// refTracker is a deliberately simple reference for SendTracker: absolute
// (unwrapped) sequence numbers, maps instead of rings, records as pointers,
// a slice for the remembered losses. It states the verdict rules once
// more, plainly — per seq, without SendTracker's prefix shortcuts — so the
// property test can compare every event SendTracker produces against it.
type refTracker struct {
	cfg      Config
	span     int      // SpanLimit
	first    wire.Seq // seq of absolute number 0
	next     int64
	skipped  map[int64]bool // abs seqs handed out by skip
	oldest   int64          // lowest absolute number that may still be unresolved
	inflight map[int64]refSent
	rtt      RTT
	backoff  int

	largest     int64 // newest absolute number acked by a header, -1 none
	pkt         int   // effective packet threshold
	eighths     int   // effective time threshold, eighths of max(SRTT, latest)
	adaptedAt   time.Duration
	lost        []refLost // the last 64 loss verdicts, oldest first
	spurious    uint64
	spuriousBy  [numCauses]uint64
	evictByPend int // evictions because MaxInFlight seqs were pending
	evictBySpan int // evictions because the span was full
}

type refSent struct {
	at  time.Duration
	rec *refRecord
}

type refLost struct {
	abs                      int64
	at                       time.Duration
	cause                    Cause
	packet, timeRule, window bool // which rules declared it
	behind                   int64
	revealed                 bool
}

type refRecord struct {
	tag                       uint64
	unresolved, sent          int
	sealed, abandoned, closed bool
	last                      int64
	lastAt                    time.Duration
}

func newRefTracker(cfg Config, first wire.Seq) *refTracker {
	cfg = cfg.WithDefaults()
	span := 1
	for span < 4*cfg.MaxInFlight && span < 32768 {
		span *= 2
	}
	return &refTracker{cfg: cfg, span: span, first: first, inflight: map[int64]refSent{}, backoff: 1,
		largest: -1, pkt: cfg.ReorderThreshold, eighths: 9}
}

func (r *refTracker) seqOf(abs int64) wire.Seq { return r.first + wire.Seq(abs) }

// spanNow is the number of seqs from the oldest pending one to the newest
// handed out, or 0 with none pending.
func (r *refTracker) spanNow() int {
	if len(r.inflight) == 0 {
		return 0
	}
	return int(r.next - r.lowest())
}

func (r *refTracker) room() int {
	return min(r.cfg.MaxInFlight-len(r.inflight), r.span-r.spanNow())
}

func (r *refTracker) send(now time.Duration, rec *refRecord) (wire.Seq, []Event) {
	var evs []Event
	switch {
	case len(r.inflight) >= r.cfg.MaxInFlight:
		r.evictByPend++
		evs = r.lose(evs, r.lowest(), CauseEvicted, 0, false, false, false)
	case r.spanNow() >= r.span:
		r.evictBySpan++
		evs = r.lose(evs, r.lowest(), CauseEvicted, 0, false, false, false)
	}
	if rec != nil {
		rec.unresolved++
		rec.sent++
		rec.last, rec.lastAt = r.next, now
	}
	r.inflight[r.next] = refSent{at: now, rec: rec}
	r.next++
	return r.seqOf(r.next - 1), evs
}

func (r *refTracker) skip() (wire.Seq, []Event) {
	var evs []Event
	if r.spanNow() >= r.span {
		r.evictBySpan++
		evs = r.lose(evs, r.lowest(), CauseEvicted, 0, false, false, false)
	}
	if r.skipped == nil {
		r.skipped = map[int64]bool{}
	}
	r.skipped[r.next] = true
	r.next++
	return r.seqOf(r.next - 1), evs
}

func (r *refTracker) lowest() int64 {
	for !r.hasInflight(r.oldest) {
		r.oldest++
	}
	return r.oldest
}

func (r *refTracker) hasInflight(abs int64) bool { _, ok := r.inflight[abs]; return ok }

func (r *refTracker) seal(rec *refRecord) []Event {
	rec.sealed = true
	if rec.unresolved > 0 {
		return nil
	}
	rec.closed = true
	switch {
	case rec.abandoned:
		return nil
	case rec.sent == 0:
		return []Event{{Kind: RecordAbandoned, Tag: rec.tag}}
	}
	return []Event{{Kind: RecordConfirmed, Tag: rec.tag, Seq: r.seqOf(rec.last), SentAt: rec.lastAt}}
}

// base is max(SRTT, latest RTT), or the initial RTO before any sample.
func (r *refTracker) base() time.Duration {
	if !r.rtt.HasSample() {
		return r.cfg.InitialRTO
	}
	return max(r.rtt.Smoothed(), r.rtt.Latest())
}

func (r *refTracker) lossDelay() time.Duration {
	return max(r.base()*time.Duration(r.eighths)/8, time.Millisecond)
}

// decay: after max(16 SRTT, 1 s) without a raise or a step, each raised
// threshold steps one toward its base.
func (r *refTracker) decay(now time.Duration) {
	if r.pkt == r.cfg.ReorderThreshold && r.eighths == 9 {
		return
	}
	if now-r.adaptedAt >= max(16*r.rtt.Smoothed(), time.Second) {
		r.pkt = max(r.pkt-1, r.cfg.ReorderThreshold)
		r.eighths = max(r.eighths-1, 9)
		r.adaptedAt = now
	}
}

func (r *refTracker) onAck(now time.Duration, ack wire.Seq, bits uint32) ([]Event, error) {
	if r.next == 0 {
		return nil, ErrAckUnsent
	}
	last := r.next - 1
	back := int64(uint16(r.seqOf(last) - ack)) // how far ack is behind the newest send, mod 2^16
	if back > 32768 {
		return nil, ErrAckUnsent // that is, ack is ahead of the newest send
	}
	a := last - back
	// Remembered losses the header names were spurious; newest first.
	for i := len(r.lost) - 1; i >= 0; i-- {
		e := &r.lost[i]
		d := a - e.abs
		if e.revealed || d < 0 || d > 32 || d > 0 && bits&(1<<(d-1)) == 0 {
			continue
		}
		e.revealed = true
		r.spurious++
		r.spuriousBy[e.cause]++
		if e.packet {
			r.pkt = max(r.pkt, min(33, max(r.pkt+1, int(min(e.behind, 255))+1)))
		}
		if e.window {
			r.pkt = 34 // past the ack window: no count declares a loss
		}
		if e.timeRule {
			b := r.base()
			need := int(math.Ceil(float64(8*(now-e.at))/float64(b))) + 1
			r.eighths = min(16, max(r.eighths+1, need))
		}
		if e.packet || e.timeRule || e.window {
			r.adaptedAt = now
		}
		r.rtt.Sample(now - e.at) // a valid RTT sample: the seq was never re-sent
		r.backoff = 1
	}
	r.decay(now)
	r.largest = max(r.largest, a)
	delay := r.lossDelay()
	var evs []Event
	// Samples from a header whose newest seq is in flight or a recent skip.
	_, sampling := r.inflight[a]
	sampling = sampling || r.skipped[a] && r.next-1-a < 64
	for abs := r.oldest; abs <= max(a, r.largest); abs++ {
		s, ok := r.inflight[abs]
		if !ok {
			continue
		}
		d := a - abs
		behind := r.largest - abs
		old := behind > 0 && now-s.at >= delay
		switch {
		case d == 0 || d > 0 && d <= 32 && bits&(1<<(d-1)) != 0:
			if sampling {
				r.rtt.Sample(now - s.at) // every newly acked seq is an RTT sample
			}
			r.backoff = 1
			evs = r.resolve(evs, abs, true, CauseNone)
		case behind > 32 && r.pkt <= 33:
			evs = r.lose(evs, abs, CauseWindow, behind, false, false, true)
		case behind >= int64(r.pkt) && behind <= 32:
			evs = r.lose(evs, abs, CauseReorder, behind, true, old, false)
		case old:
			evs = r.lose(evs, abs, CauseReorderTime, behind, false, true, false)
		}
	}
	return evs, nil
}

func (r *refTracker) expire(now time.Duration) []Event {
	r.decay(now)
	var evs []Event
	delay := r.lossDelay()
	for abs := r.oldest; abs < r.largest; abs++ {
		s, ok := r.inflight[abs]
		if !ok {
			continue
		}
		if now-s.at < delay {
			break
		}
		evs = r.lose(evs, abs, CauseReorderTime, r.largest-abs, false, true, false)
	}
	rto := refRTO(r)
	timedOut := false
	for abs := r.oldest; abs < r.next; abs++ {
		s, ok := r.inflight[abs]
		if !ok {
			continue
		}
		if now-s.at < rto {
			break
		}
		evs = r.lose(evs, abs, CauseTimeout, 0, false, false, false)
		timedOut = true
	}
	if timedOut {
		r.backoff = min(r.backoff*2, 64)
	}
	return evs
}

func (r *refTracker) lose(evs []Event, abs int64, cause Cause, behind int64, packet, timeRule, window bool) []Event {
	r.lost = append(r.lost, refLost{abs: abs, at: r.inflight[abs].at, cause: cause, packet: packet, timeRule: timeRule, window: window, behind: behind})
	if len(r.lost) > 64 {
		r.lost = r.lost[1:]
	}
	return r.resolve(evs, abs, false, cause)
}

func (r *refTracker) resolve(evs []Event, abs int64, acked bool, cause Cause) []Event {
	s := r.inflight[abs]
	delete(r.inflight, abs)
	kind := SeqAcked
	if !acked {
		kind = SeqLost
	}
	ev := Event{Kind: kind, Cause: cause, Seq: r.seqOf(abs), SentAt: s.at}
	if s.rec == nil {
		return append(evs, ev)
	}
	rec := s.rec
	ev.Tag = rec.tag
	evs = append(evs, ev)
	rec.unresolved--
	if !acked && !rec.abandoned {
		rec.abandoned = true
		ev.Kind = RecordAbandoned
		evs = append(evs, ev)
	} else if acked && !rec.abandoned && rec.sealed && rec.unresolved == 0 {
		ev.Kind = RecordConfirmed
		evs = append(evs, ev)
	}
	if rec.sealed && rec.unresolved == 0 {
		rec.closed = true
	}
	return evs
}

// sameEvents compares events field by field, except that record identity is
// compared through tags (the two implementations number records
// differently; every record in the test has a unique tag).
func sameEvents(got, want []Event) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d events, reference %d\n got  %v\n want %v", len(got), len(want), kinds(got), kinds(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.Cause != w.Cause || g.Seq != w.Seq || g.SentAt != w.SentAt || g.Tag != w.Tag {
			return fmt.Errorf("event %d: got %+v, reference %+v\n got  %v\n want %v", i, g, w, kinds(got), kinds(want))
		}
		if (g.Record == NoRecord) != (w.Tag == 0) {
			return fmt.Errorf("event %d: record %#x with tag %d", i, g.Record, w.Tag)
		}
	}
	return nil
}

// ledger checks the invariants independently of both implementations:
// each seq exactly one verdict, each record exactly one verdict, and a
// record confirmed only if every one of its seqs was acked.
type ledger struct {
	pending   map[wire.Seq]uint64 // seq → tag of its record (0 none)
	recSeqs   map[uint64]int      // tag → seqs sent
	recAcked  map[uint64]int      // tag → seqs acked
	recDone   map[uint64]bool
	seqEvents int
}

func newLedger() *ledger {
	return &ledger{pending: map[wire.Seq]uint64{}, recSeqs: map[uint64]int{}, recAcked: map[uint64]int{}, recDone: map[uint64]bool{}}
}

func (l *ledger) sent(seq wire.Seq, tag uint64) error {
	if _, dup := l.pending[seq]; dup {
		return fmt.Errorf("seq %d handed out while still pending", seq)
	}
	l.pending[seq] = tag
	if tag != 0 {
		l.recSeqs[tag]++
	}
	return nil
}

func (l *ledger) apply(evs []Event) error {
	for _, e := range evs {
		switch e.Kind {
		case SeqAcked, SeqLost:
			tag, ok := l.pending[e.Seq]
			if !ok {
				return fmt.Errorf("verdict %s for seq %d which is not pending", e.Kind, e.Seq)
			}
			if tag != e.Tag {
				return fmt.Errorf("seq %d reported with tag %d, sent with %d", e.Seq, e.Tag, tag)
			}
			delete(l.pending, e.Seq)
			l.seqEvents++
			if e.Kind == SeqAcked && tag != 0 {
				l.recAcked[tag]++
			}
		case RecordConfirmed, RecordAbandoned:
			if l.recDone[e.Tag] {
				return fmt.Errorf("second verdict %s for record %d", e.Kind, e.Tag)
			}
			l.recDone[e.Tag] = true
			if e.Kind == RecordConfirmed && l.recAcked[e.Tag] != l.recSeqs[e.Tag] {
				return fmt.Errorf("record %d confirmed with %d of %d seqs acked", e.Tag, l.recAcked[e.Tag], l.recSeqs[e.Tag])
			}
		default:
			return fmt.Errorf("bad event kind %d", e.Kind)
		}
	}
	return nil
}

// propertyOps is the number of random operations the property test runs in
// total across its configurations.
const propertyOps = 1_200_000

// TestSendTrackerMatchesReference drives SendTracker and refTracker with the
// same random operations — sends in single- and multi-seq records, skipped
// seqs (ack-only datagrams) interleaved with them, in phases from rare to
// nine in ten, ack headers from a real RecvHistory through a lossy,
// duplicating, reordering path, forged headers, time-outs, and eviction by
// both bounds (MaxInFlight pending, SpanLimit span), across many seq wraps
// — and requires identical events, span, room, RTO, spurious-loss counts
// and adaptive thresholds after every operation. (S-B2, S-B3, S-B5, S-B6
// and S-C4 as a property.)
func TestSendTrackerMatchesReference(t *testing.T) {
	configs := []Config{
		{},
		{MaxInFlight: 8, ReorderThreshold: 1},
		{MaxInFlight: 256, ReorderThreshold: AckWindow},
		{MaxInFlight: 33, ReorderThreshold: 5, MinRTO: 5 * ms, InitialRTO: 40 * ms, MaxRTO: 200 * ms},
	}
	perConfig := propertyOps / len(configs)
	for ci, cfg := range configs {
		t.Run(fmt.Sprintf("config%d", ci), func(t *testing.T) {
			seed := testSeed(uint64(ci + 1))
			defer func() {
				if t.Failed() {
					t.Logf("reproduce: %s", repro(t.Name(), seed))
				}
			}()
			runProperty(t, cfg, seed, perConfig)
		})
	}
}

type headerInFlight struct {
	at   time.Duration
	ack  wire.Seq
	bits uint32
}

type seqInFlight struct {
	at  time.Duration
	seq wire.Seq
}

func runProperty(t *testing.T, cfg Config, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	first := wire.Seq(rng.IntN(65536))
	tr := newTracker(t, cfg, first)
	ref := newRefTracker(cfg, first)
	led := newLedger()

	var peer RecvHistory
	var toPeer []seqInFlight  // datagrams on their way to the peer
	var toUs []headerInFlight // ack headers on their way back
	var now time.Duration     // our clock
	var evs []Event           // reused event buffer
	var openID RecordID       // a multi-seq record being sent, if any
	var openRef *refRecord    //
	var openLeft int          // seqs still to send into it
	var openTag uint64        //
	var nextTag uint64 = 1    //
	loss, dup := 0.1, 0.05    // current path conditions; they change in phases
	maxDelay := 30 * ms       //
	quiet := false            // peer's acks are all lost while quiet
	skipRate := 1.0 / 12      // fraction of sends that are ack-only (Skip)
	step := 20                // time passes by up to step−1 ms at a time
	var raised, decayed, timeRaised bool
	prevStats := tr.Stats()
	check := func(op string, got, want []Event) {
		t.Helper()
		if err := sameEvents(got, want); err != nil {
			t.Fatalf("op %s at %v: %v", op, now, err)
		}
		if err := led.apply(got); err != nil {
			t.Fatalf("op %s at %v: ledger: %v", op, now, err)
		}
		if tr.PendingCount() != len(ref.inflight) || tr.PendingCount() != len(led.pending) {
			t.Fatalf("op %s: pending %d, reference %d, ledger %d", op, tr.PendingCount(), len(ref.inflight), len(led.pending))
		}
		if tr.Span() != ref.spanNow() || tr.InFlightRoom() != ref.room() || tr.Span() > tr.SpanLimit() || tr.PendingCount() > tr.Config().MaxInFlight {
			t.Fatalf("op %s: span %d room %d (limit %d), reference span %d room %d", op, tr.Span(), tr.InFlightRoom(), tr.SpanLimit(), ref.spanNow(), ref.room())
		}
	}

	for op := 0; op < ops; op++ {
		if op%5000 == 0 { // a new phase of path conditions
			loss = []float64{0, 0.02, 0.1, 0.3, 0.9}[rng.IntN(5)]
			dup = []float64{0, 0.05, 0.3}[rng.IntN(3)]
			maxDelay = time.Duration(rng.IntN(80)) * ms
			quiet = rng.IntN(8) == 0
			skipRate = []float64{1.0 / 12, 0.5, 0.9}[rng.IntN(3)]
			step = 20
			if rng.IntN(8) == 0 {
				// A channel sending standalone acks at a fast cadence
				// while its data waits for acks that do not come: the
				// span fills while few seqs are pending.
				quiet, skipRate, step = true, 0.97, 2
			}
		}
		switch p := rng.IntN(100); {
		case p < 45: // send
			var seq wire.Seq
			var rev []Event
			tag := uint64(0)
			switch {
			case rng.Float64() < skipRate: // an ack-only datagram: a seq with no verdict
				seq, evs = tr.Skip(evs[:0])
				seq2, rev2 := ref.skip()
				if seq != seq2 {
					t.Fatalf("skip: seq %d, reference %d", seq, seq2)
				}
				check("skip", evs, rev2)
				if rng.Float64() >= loss {
					toPeer = append(toPeer, seqInFlight{at: now + time.Duration(rng.Int64N(int64(maxDelay)+1)), seq: seq})
				}
				continue
			case openLeft > 0:
				seq, evs = tr.Send(evs[:0], now, openID)
				var seq2 wire.Seq
				seq2, rev = ref.send(now, openRef)
				tag = openTag
				if seq != seq2 {
					t.Fatalf("seq %d, reference %d", seq, seq2)
				}
				openLeft--
			case rng.IntN(10) == 0:
				seq, evs = tr.Send(evs[:0], now, NoRecord)
				_, rev = ref.send(now, nil)
			case rng.IntN(6) == 0:
				openTag, nextTag = nextTag, nextTag+1
				openID = tr.Open(openTag)
				openRef = &refRecord{tag: openTag}
				openLeft = 1 + rng.IntN(12)
				seq, evs = tr.Send(evs[:0], now, openID)
				_, rev = ref.send(now, openRef)
				tag = openTag
				openLeft--
			default:
				tag, nextTag = nextTag, nextTag+1
				seq, _, evs = tr.SendOne(evs[:0], now, tag)
				rr := &refRecord{tag: tag}
				_, rev = ref.send(now, rr)
				rev = append(rev, ref.seal(rr)...)
			}
			if err := led.sent(seq, tag); err != nil {
				t.Fatal(err)
			}
			// Events from eviction refer to older seqs, so the ledger takes
			// the send first and then the events.
			check("send", evs, rev)
			if openID != NoRecord && openLeft == 0 {
				evs = tr.Seal(evs[:0], openID)
				check("seal", evs, ref.seal(openRef))
				openID, openRef = NoRecord, nil
			}
			if rng.Float64() >= loss {
				toPeer = append(toPeer, seqInFlight{at: now + time.Duration(rng.Int64N(int64(maxDelay)+1)), seq: seq})
				if rng.Float64() < dup {
					toPeer = append(toPeer, seqInFlight{at: now + time.Duration(rng.Int64N(int64(maxDelay)+1)), seq: seq})
				}
			}
		case p < 60: // deliver due datagrams to the peer, which may answer
			kept := toPeer[:0]
			for _, d := range toPeer {
				if d.at <= now {
					peer.Record(d.seq)
				} else {
					kept = append(kept, d)
				}
			}
			toPeer = kept
			if ack, bits, ok := peer.Ack(); ok && !quiet && rng.Float64() >= loss {
				toUs = append(toUs, headerInFlight{at: now + time.Duration(rng.Int64N(int64(maxDelay)+1)), ack: ack, bits: bits})
				if rng.Float64() < dup {
					toUs = append(toUs, headerInFlight{at: now + time.Duration(rng.Int64N(int64(maxDelay)+1)), ack: ack, bits: bits})
				}
			}
		case p < 80: // receive due ack headers, in random order
			rng.Shuffle(len(toUs), func(i, j int) { toUs[i], toUs[j] = toUs[j], toUs[i] })
			kept := toUs[:0]
			for _, h := range toUs {
				if h.at > now {
					kept = append(kept, h)
					continue
				}
				var err error
				evs, err = tr.OnAck(evs[:0], now, h.ack, h.bits)
				rev, rerr := ref.onAck(now, h.ack, h.bits)
				if err != nil || rerr != nil {
					t.Fatalf("valid header refused: %v / %v", err, rerr)
				}
				check("ack", evs, rev)
			}
			toUs = kept
		case p < 82: // a forged or corrupt header
			ack, bits := wire.Seq(rng.IntN(65536)), rng.Uint32()
			var err error
			evs, err = tr.OnAck(evs[:0], now, ack, bits)
			rev, rerr := ref.onAck(now, ack, bits)
			if !errors.Is(err, ErrAckUnsent) != !errors.Is(rerr, ErrAckUnsent) || (err != nil) != (rerr != nil) {
				t.Fatalf("forged header (%d, %x): err %v, reference %v", ack, bits, err, rerr)
			}
			check("forged", evs, rev)
		case p < 92: // time passes
			now += time.Duration(rng.IntN(step)) * ms
		default:
			evs = tr.Expire(evs[:0], now)
			check("expire", evs, ref.expire(now))
		}
		if tr.RTO() != refRTO(ref) {
			t.Fatalf("op %d: RTO %v, reference %v", op, tr.RTO(), refRTO(ref))
		}
		st := tr.Stats()
		if st.ReorderThreshold != ref.pkt || st.TimeThreshold != float64(ref.eighths)/8 || st.LossDelay != ref.lossDelay() ||
			st.SpuriousLosses != ref.spurious || st.spuriousBy != ref.spuriousBy {
			t.Fatalf("op %d at %v: thresholds %d / %v / %v, spurious %d %v; reference %d / %v / %v, spurious %d %v", op, now,
				st.ReorderThreshold, st.TimeThreshold, st.LossDelay, st.SpuriousLosses, st.spuriousBy,
				ref.pkt, float64(ref.eighths)/8, ref.lossDelay(), ref.spurious, ref.spuriousBy)
		}
		raised = raised || st.ReorderThreshold > prevStats.ReorderThreshold
		timeRaised = timeRaised || st.TimeThreshold > prevStats.TimeThreshold
		decayed = decayed || st.ReorderThreshold < prevStats.ReorderThreshold || st.TimeThreshold < prevStats.TimeThreshold
		prevStats = st
	}

	// Settle: finish any open record, then let time pass until every seq
	// has its verdict. PendingCount must return to 0 and every record must
	// have had exactly one verdict.
	if openID != NoRecord {
		evs = tr.Seal(evs[:0], openID)
		check("seal", evs, ref.seal(openRef))
	}
	for i := 0; i < 100 && tr.PendingCount() > 0; i++ {
		now += time.Second
		evs = tr.Expire(evs[:0], now)
		check("settle", evs, ref.expire(now))
	}
	if tr.PendingCount() != 0 || tr.PendingRecords() != 0 {
		t.Fatalf("after settling: %d seqs and %d records pending", tr.PendingCount(), tr.PendingRecords())
	}
	for tag := uint64(1); tag < nextTag; tag++ {
		if !led.recDone[tag] {
			t.Fatalf("record %d never got a verdict", tag)
		}
	}
	st := tr.Stats()
	if st.Skipped == 0 {
		t.Fatal("no skipped seqs exercised")
	}
	if st.Sent != st.Acked+st.Lost || int(st.Sent) != led.seqEvents {
		t.Fatalf("stats %+v, ledger saw %d seq verdicts", st, led.seqEvents)
	}
	if st.Sent+st.Skipped < 2*65536 {
		t.Fatalf("only %d seqs handed out: the run never wrapped the seq space twice", st.Sent+st.Skipped)
	}
	// The run must have exercised what it claims to: eviction by each
	// bound, spurious losses, and thresholds that rose and fell back.
	if ref.evictByPend == 0 || ref.evictBySpan == 0 {
		t.Fatalf("evictions: %d by MaxInFlight, %d by span: a bound never exercised", ref.evictByPend, ref.evictBySpan)
	}
	if st.SpuriousLosses == 0 || !timeRaised || !decayed || (!raised && cfg.WithDefaults().ReorderThreshold < AckWindow) {
		t.Fatalf("adaptation not exercised: %d spurious, packet threshold raised %v, time threshold raised %v, decayed %v",
			st.SpuriousLosses, raised, timeRaised, decayed)
	}
	t.Logf("sent %d, skipped %d: acked %d, lost %v (by cause), spurious %d %v, evicted %d by pending / %d by span, records %d confirmed / %d abandoned, %d forged headers refused",
		st.Sent, st.Skipped, st.Acked, st.lostBy, st.SpuriousLosses, st.spuriousBy, ref.evictByPend, ref.evictBySpan,
		st.RecordsConfirmed, st.RecordsAbandoned, st.AcksUnsent)
}

func refRTO(r *refTracker) time.Duration {
	rto := r.cfg.InitialRTO
	if r.rtt.HasSample() {
		rto = max(r.rtt.Smoothed()+max(time.Millisecond, 4*r.rtt.Variance()), r.lossDelay())
	}
	rto = min(max(rto, r.cfg.MinRTO), r.cfg.MaxRTO)
	return min(rto*time.Duration(r.backoff), r.cfg.MaxRTO)
}
