package ackmap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// refTracker is a deliberately simple reference for SendTracker: absolute
// (unwrapped) sequence numbers, maps instead of rings, records as pointers.
// It states the verdict rules once more, plainly, so the property test can
// compare every event SendTracker produces against it.
type refTracker struct {
	cfg      Config
	first    wire.Seq // seq of absolute number 0
	next     int64
	oldest   int64 // lowest absolute number that may still be unresolved
	inflight map[int64]refSent
	rtt      RTT
	backoff  int
}

type refSent struct {
	at  time.Duration
	rec *refRecord
}

type refRecord struct {
	tag                       uint64
	unresolved, sent          int
	sealed, abandoned, closed bool
	last                      int64
	lastAt                    time.Duration
}

func newRefTracker(cfg Config, first wire.Seq) *refTracker {
	return &refTracker{cfg: cfg.withDefaults(), first: first, inflight: map[int64]refSent{}, backoff: 1}
}

func (r *refTracker) seqOf(abs int64) wire.Seq { return r.first + wire.Seq(abs) }

func (r *refTracker) send(now time.Duration, rec *refRecord) (wire.Seq, []Event) {
	var evs []Event
	if len(r.inflight) > 0 {
		low := r.lowest()
		if r.next-low >= int64(r.cfg.MaxInFlight) {
			evs = r.resolve(evs, low, false, CauseEvicted)
		}
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
	if len(r.inflight) > 0 {
		low := r.lowest()
		if r.next-low >= int64(r.cfg.MaxInFlight) {
			evs = r.resolve(evs, low, false, CauseEvicted)
		}
	}
	r.next++
	if len(r.inflight) == 0 {
		r.oldest = r.next
	}
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
	if s, ok := r.inflight[a]; ok {
		r.rtt.Sample(now - s.at)
		r.backoff = 1
	}
	var evs []Event
	for abs := r.oldest; abs <= a; abs++ {
		if !r.hasInflight(abs) {
			continue
		}
		d := a - abs
		switch {
		case d == 0 || d <= 32 && bits&(1<<(d-1)) != 0:
			evs = r.resolve(evs, abs, true, CauseNone)
		case d > 32:
			evs = r.resolve(evs, abs, false, CauseWindow)
		case d >= int64(r.cfg.ReorderThreshold):
			evs = r.resolve(evs, abs, false, CauseReorder)
		}
	}
	return evs, nil
}

func (r *refTracker) expire(now time.Duration) []Event {
	rto := r.cfg.InitialRTO
	if r.rtt.HasSample() {
		rto = r.rtt.Smoothed() + max(time.Millisecond, 4*r.rtt.Variance())
	}
	rto = min(max(rto, r.cfg.MinRTO), r.cfg.MaxRTO)
	rto = min(rto*time.Duration(r.backoff), r.cfg.MaxRTO)
	var evs []Event
	for abs := r.oldest; abs < r.next; abs++ {
		s, ok := r.inflight[abs]
		if !ok {
			continue
		}
		if now-s.at < rto {
			break
		}
		evs = r.resolve(evs, abs, false, CauseTimeout)
	}
	if len(evs) > 0 {
		r.backoff = min(r.backoff*2, 64)
	}
	return evs
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
// same random operations — sends in single- and multi-seq records, ack
// headers from a real RecvHistory through a lossy, duplicating, reordering
// path, forged headers, time-outs and in-flight pressure, across many seq
// wraps — and requires identical events after every operation. (S-B2, S-B3,
// S-B5, S-B6 and S-C4 as a property.)
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
			runProperty(t, cfg, uint64(ci+1), perConfig)
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
	}

	for op := 0; op < ops; op++ {
		if op%20000 == 0 { // a new phase of path conditions
			loss = []float64{0, 0.02, 0.1, 0.3, 0.9}[rng.IntN(5)]
			dup = []float64{0, 0.05, 0.3}[rng.IntN(3)]
			maxDelay = time.Duration(rng.IntN(80)) * ms
			quiet = rng.IntN(8) == 0
		}
		switch p := rng.IntN(100); {
		case p < 45: // send
			var seq wire.Seq
			var rev []Event
			tag := uint64(0)
			switch {
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
			case rng.IntN(12) == 0: // an ack-only datagram: a seq with no verdict
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
			now += time.Duration(rng.IntN(20)) * ms
		default:
			evs = tr.Expire(evs[:0], now)
			check("expire", evs, ref.expire(now))
		}
		if tr.RTO() != refRTO(ref) {
			t.Fatalf("op %d: RTO %v, reference %v", op, tr.RTO(), refRTO(ref))
		}
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
	if st.Sent < 65536 {
		t.Fatalf("only %d seqs sent: the run never wrapped the seq space", st.Sent)
	}
	t.Logf("sent %d: acked %d, lost %v (by cause), records %d confirmed / %d abandoned, %d forged headers refused",
		st.Sent, st.Acked, st.LostBy, st.RecordsConfirmed, st.RecordsAbandoned, st.AcksUnsent)
}

func refRTO(r *refTracker) time.Duration {
	rto := r.cfg.InitialRTO
	if r.rtt.HasSample() {
		rto = r.rtt.Smoothed() + max(time.Millisecond, 4*r.rtt.Variance())
	}
	rto = min(max(rto, r.cfg.MinRTO), r.cfg.MaxRTO)
	return min(rto*time.Duration(r.backoff), r.cfg.MaxRTO)
}
