package ackmap

import (
	"fmt"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// EventKind says what an Event reports.
type EventKind uint8

const (
	// SeqAcked: the peer received this seq.
	SeqAcked EventKind = iota + 1
	// SeqLost: this seq is presumed lost (see Cause). Any later ack of it is
	// ignored: a seq's verdict is final.
	SeqLost
	// RecordConfirmed: every seq of the record was acked. Reported when the
	// last seq resolves, or at Seal if they all resolved before it.
	RecordConfirmed
	// RecordAbandoned: a seq of the record was lost (or the record was sealed
	// with no seq). Reported at the first loss, even if sibling seqs are still
	// unresolved or were already acked; the record is then never confirmed.
	RecordAbandoned
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case SeqAcked:
		return "acked"
	case SeqLost:
		return "lost"
	case RecordConfirmed:
		return "confirmed"
	case RecordAbandoned:
		return "abandoned"
	}
	return "unknown"
}

// Cause says why a seq was declared lost.
type Cause uint8

const (
	// CauseNone: the event is not a loss.
	CauseNone Cause = iota
	// CauseReorder: an ack for a seq ReorderThreshold or more newer arrived
	// with this seq's ack bit clear.
	CauseReorder
	// CauseWindow: an ack arrived for a seq more than 32 newer, so this seq
	// fell out of the ack window unacked.
	CauseWindow
	// CauseEvicted: a send pushed the span of unresolved seqs past
	// MaxInFlight and this was the oldest.
	CauseEvicted
	// CauseTimeout: no verdict arrived within the retransmission time-out.
	CauseTimeout

	numCauses
)

// String returns the cause's name.
func (c Cause) String() string {
	switch c {
	case CauseNone:
		return "none"
	case CauseReorder:
		return "reorder"
	case CauseWindow:
		return "window"
	case CauseEvicted:
		return "evicted"
	case CauseTimeout:
		return "timeout"
	}
	return "unknown"
}

// RecordID names a pending record: a group of seqs that is confirmed only
// when all of them are acked. The zero RecordID is "no record".
type RecordID uint32

// NoRecord is the RecordID of a seq that belongs to no record.
const NoRecord RecordID = 0

// recordIndexBits is how many low bits of a RecordID hold the slab index+1;
// the rest hold a generation that catches use of a released record.
const recordIndexBits = 24

// Event is one verdict reported by a SendTracker.
//
// Every seq passed through Send gets exactly one SeqAcked or SeqLost event,
// and every record exactly one RecordConfirmed or RecordAbandoned event.
// Within one call, events come in ascending seq order, and a record's event
// follows immediately after the seq event that decided it.
type Event struct {
	Kind EventKind
	// Cause is why a SeqLost seq was lost, and for RecordAbandoned the cause
	// of the loss that abandoned it (CauseNone if it was sealed empty).
	Cause Cause
	// Seq is the seq the event is about; for record events, the seq whose
	// verdict decided the record (for a record decided at Seal, the last seq
	// it sent, or 0 if it sent none).
	Seq wire.Seq
	// Record is the record Seq belongs to, or NoRecord. After a record event
	// the RecordID is released and must not be used again.
	Record RecordID
	// SentAt is when Seq was sent, on the caller's clock (0 for a record
	// sealed empty).
	SentAt time.Duration
	// Tag is the caller's tag for Record (0 for NoRecord).
	Tag uint64
}

// SendStats are a SendTracker's counters. Reading them is a struct copy.
type SendStats struct {
	Sent             uint64            // seqs sent
	Acked            uint64            // seqs acked
	Lost             uint64            // seqs declared lost, all causes
	LostBy           [numCauses]uint64 // seqs declared lost, indexed by Cause
	RecordsConfirmed uint64
	RecordsAbandoned uint64
	Skipped          uint64  // seqs handed out by Skip (no verdict expected)
	AcksUnsent       uint64  // ack headers refused with ErrAckUnsent
	Timeouts         uint64  // Expire calls that declared at least one loss
	LossRate         float64 // exponentially weighted (gain 1/64) fraction of verdicts that were losses
}

// sentSeq is what the ring holds per unresolved seq.
type sentSeq struct {
	sentAt time.Duration
	record uint32 // slab index+1, 0 for none
}

// record is one pending record in the slab.
type record struct {
	tag       uint64
	unacked   int32         // seqs sent and not yet resolved
	sent      int32         // seqs sent in total
	last      wire.Seq      // newest seq sent into the record
	lastAt    time.Duration // when last was sent
	gen       uint8
	live      bool
	sealed    bool
	abandoned bool
}

// SendTracker is the sent side of a channel. It hands out seqs, remembers
// when each was sent and which pending record it belongs to, and turns ack
// headers, time and in-flight pressure into exactly one verdict per seq and
// one per record. It also keeps the RTT estimate.
//
// Loss is declared four ways: by the ack bits (a seq ReorderThreshold behind
// an acked seq with its bit clear), by window age-out (more than 32 behind an
// acked seq), by in-flight eviction (MaxInFlight), and by time-out (Expire),
// so a quiet link strands nothing.
//
// Storage is a ring of MaxInFlight slots (rounded up to a power of two) and a
// slab of records that grows only when more records are pending than ever
// before; in steady state no method allocates. Events are appended to a
// caller-supplied slice. Not safe for concurrent use: one goroutine owns a
// channel's tracker.
type SendTracker struct {
	cfg     Config
	ring    *SeqBuffer[sentSeq]
	next    wire.Seq // seq the next Send uses
	oldest  wire.Seq // oldest possibly-unresolved seq; == next when none is
	pending int      // unresolved seqs
	sentAny bool

	records  []record
	freeRecs []uint32 // slab indexes (not +1) ready for reuse

	rtt     RTT
	backoff int // multiplier on the RTO, 1..maxBackoff
	stats   SendStats
}

// NewSendTracker returns a tracker whose first seq is first. Pick first at
// random per session (it costs nothing and makes blind injection harder).
func NewSendTracker(cfg Config, first wire.Seq) (*SendTracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &SendTracker{
		cfg:     cfg,
		ring:    NewSeqBuffer[sentSeq](cfg.MaxInFlight),
		next:    first,
		oldest:  first,
		backoff: 1,
	}, nil
}

// Config returns the tracker's config with defaults applied.
func (t *SendTracker) Config() Config { return t.cfg }

// NextSeq returns the seq the next Send will use.
func (t *SendTracker) NextSeq() wire.Seq { return t.next }

// PendingCount returns how many sent seqs have no verdict yet. It is bounded
// by MaxInFlight and returns to 0 once traffic settles; a count that only
// grows is a leak.
func (t *SendTracker) PendingCount() int { return t.pending }

// PendingRecords returns how many records are open or awaiting a verdict.
func (t *SendTracker) PendingRecords() int { return len(t.records) - len(t.freeRecs) }

// Stats returns a copy of the counters.
func (t *SendTracker) Stats() SendStats { return t.stats }

// RTT returns the round-trip estimator. The pointer is owned by the tracker
// and valid for its lifetime; read it from the tracker's goroutine.
func (t *SendTracker) RTT() *RTT { return &t.rtt }

// RTO returns the current time-out, including any back-off.
func (t *SendTracker) RTO() time.Duration {
	return min(t.rtt.RTO(t.cfg.InitialRTO, t.cfg.MinRTO, t.cfg.MaxRTO)*time.Duration(t.backoff), t.cfg.MaxRTO)
}

// Open starts a pending record carrying the caller's tag (an action-stream
// frame end, a message id — ackmap never looks at it). Send seqs into it,
// then Seal it; it is confirmed only if every one of its seqs is acked.
// Amortised O(1); allocates only when more records are pending than ever
// before.
func (t *SendTracker) Open(tag uint64) RecordID {
	var idx uint32
	if n := len(t.freeRecs); n > 0 {
		idx = t.freeRecs[n-1]
		t.freeRecs = t.freeRecs[:n-1]
	} else {
		if len(t.records) >= 1<<recordIndexBits-1 {
			panic("ackmap: more than 2^24 pending records; records are not being sealed")
		}
		t.records = append(t.records, record{})
		idx = uint32(len(t.records) - 1)
	}
	r := &t.records[idx]
	gen := r.gen
	*r = record{tag: tag, gen: gen, live: true}
	return RecordID(uint32(gen)<<recordIndexBits | (idx + 1))
}

// Seal closes a record to further sends and appends its verdict to dst if
// every seq already resolved (a record sealed with no seq is abandoned).
// Otherwise the verdict comes with the last seq's. The RecordID must not be
// used after the record's verdict.
func (t *SendTracker) Seal(dst []Event, id RecordID) []Event {
	r := t.record(id)
	if r.sealed {
		panic("ackmap: record sealed twice")
	}
	r.sealed = true
	if r.unacked > 0 {
		return dst
	}
	// Every seq already has its verdict; only the record's is left to give.
	switch {
	case r.abandoned:
		// Reported with the loss that abandoned it.
	case r.sent == 0:
		t.stats.RecordsAbandoned++
		dst = append(dst, Event{Kind: RecordAbandoned, Record: id, Tag: r.tag})
	default:
		t.stats.RecordsConfirmed++
		dst = append(dst, Event{Kind: RecordConfirmed, Seq: r.last, SentAt: r.lastAt, Record: id, Tag: r.tag})
	}
	t.release(id)
	return dst
}

// Send assigns the next seq to a datagram sent at now, belonging to record
// id (NoRecord for none), and returns it. If the span of unresolved seqs is
// full, the oldest is first evicted as lost and its events appended to dst.
// now must not decrease from one call to the next. O(1), no allocation.
func (t *SendTracker) Send(dst []Event, now time.Duration, id RecordID) (wire.Seq, []Event) {
	var ri uint32
	if id != NoRecord {
		r := t.record(id)
		if r.sealed {
			panic("ackmap: Send into a sealed record")
		}
		r.unacked++
		r.sent++
		r.last, r.lastAt = t.next, now
		ri = uint32(id) & (1<<recordIndexBits - 1)
	}
	seq := t.next
	return seq, t.sendSeq(dst, now, ri)
}

// sendSeq puts the next seq in flight for record slab index+1 ri (0 for
// none), evicting the oldest unresolved seq first if the span is full.
func (t *SendTracker) sendSeq(dst []Event, now time.Duration, ri uint32) []Event {
	if int(t.next-t.oldest) >= t.cfg.MaxInFlight {
		dst = t.resolve(dst, t.oldest, false, CauseEvicted)
		t.advanceOldest()
	}
	*t.ring.Insert(t.next) = sentSeq{sentAt: now, record: ri}
	t.next++
	t.pending++
	t.sentAny = true
	t.stats.Sent++
	return dst
}

// Skip assigns the next seq to a datagram that expects no verdict — an
// ack-only datagram, which the peer does not ack (QUIC's non-ack-eliciting
// packet) — and returns it. The seq is never pending and never reported; an
// ack that names it is ignored. Like Send, it first evicts the oldest
// unresolved seq if the span is full, since the span still covers skipped
// seqs. O(1), no allocation.
func (t *SendTracker) Skip(dst []Event) (wire.Seq, []Event) {
	if int(t.next-t.oldest) >= t.cfg.MaxInFlight {
		dst = t.resolve(dst, t.oldest, false, CauseEvicted)
		t.advanceOldest()
	}
	seq := t.next
	t.next++
	t.sentAny = true
	t.stats.Skipped++
	if t.pending == 0 {
		t.oldest = t.next
	}
	return seq, dst
}

// InFlightRoom returns how many more seqs can be sent before the span of
// unresolved seqs reaches MaxInFlight and a send evicts the oldest. A
// sender that must not lose its own data to eviction (the pieces of a
// large message) paces itself by it.
func (t *SendTracker) InFlightRoom() int {
	return t.cfg.MaxInFlight - int(t.next-t.oldest)
}

// SendOne is Open, Send and Seal for a datagram that is a record by itself.
func (t *SendTracker) SendOne(dst []Event, now time.Duration, tag uint64) (wire.Seq, RecordID, []Event) {
	id := t.Open(tag)
	// Open returned a live, unsealed record: skip Send's and Seal's checks.
	r := &t.records[uint32(id)&(1<<recordIndexBits-1)-1]
	r.unacked, r.sent, r.sealed = 1, 1, true
	seq := t.next
	r.last, r.lastAt = seq, now
	return seq, id, t.sendSeq(dst, now, uint32(id)&(1<<recordIndexBits-1))
}

// OnAck applies an ack header from the peer — ack is the newest seq it
// received, bit i of bits says it received ack−1−i — at time now, and
// appends the resulting verdicts to dst. Seqs acked by the header are
// SeqAcked; unresolved seqs more than 32 behind ack, or ReorderThreshold or
// more behind it with their bit clear, are SeqLost. Seqs that already have a
// verdict are ignored, so stale, reordered and duplicated headers are safe.
// If ack itself is newly acked, its round trip is an RTT sample (seqs are
// never re-sent, so every sample is unambiguous: Karn's rule holds by
// construction) and any time-out back-off is reset.
//
// An ack newer than the newest seq sent returns ErrAckUnsent and changes
// nothing. Cost: O(seqs resolved) amortised, at most MaxInFlight; no
// allocation beyond dst's growth.
func (t *SendTracker) OnAck(dst []Event, now time.Duration, ack wire.Seq, bits uint32) ([]Event, error) {
	if !t.sentAny || ack.Newer(t.next-1) {
		t.stats.AcksUnsent++
		return dst, ErrAckUnsent
	}
	if s := t.ring.Get(ack); s != nil {
		t.rtt.Sample(now - s.sentAt)
		t.backoff = 1
	}
	if t.pending == 0 || ack.Sub(t.oldest) < 0 {
		return dst, nil // nothing unresolved at or before ack
	}
	threshold := t.cfg.ReorderThreshold
	for seq := t.oldest; ; seq++ {
		if slot := t.ring.Get(seq); slot != nil {
			back := ack.Sub(seq) // 0..32767: seq is not newer than ack
			switch {
			case back == 0 || back < AckWindow && bits&(1<<uint(back-1)) != 0:
				dst = t.resolveSlot(dst, seq, slot, true, CauseNone)
			case back >= AckWindow:
				dst = t.resolveSlot(dst, seq, slot, false, CauseWindow)
			case back >= threshold:
				dst = t.resolveSlot(dst, seq, slot, false, CauseReorder)
			}
		}
		if seq == ack {
			break
		}
	}
	t.advanceOldest()
	return dst, nil
}

// Expire declares lost every unresolved seq sent at least RTO ago and
// appends the verdicts to dst. Call it once per tick so a quiet link still
// resolves every seq. A call that declares any loss doubles the RTO
// back-off (up to 64×) until the next RTT sample, as RFC 6298 §5.5 does.
// Cost: O(seqs expired) amortised; no allocation beyond dst's growth.
func (t *SendTracker) Expire(dst []Event, now time.Duration) []Event {
	if t.pending == 0 {
		return dst
	}
	rto := t.RTO()
	expired := false
	for seq := t.oldest; seq != t.next; seq++ {
		s := t.ring.Get(seq)
		if s == nil {
			continue
		}
		if now-s.sentAt < rto {
			break // sent in seq order, so every later seq is younger
		}
		dst = t.resolve(dst, seq, false, CauseTimeout)
		expired = true
	}
	if expired {
		t.advanceOldest()
		t.stats.Timeouts++
		t.backoff = min(2*t.backoff, maxBackoff)
	}
	return dst
}

// resolve gives seq (which must be unresolved) its verdict, updates its
// record and appends the events.
func (t *SendTracker) resolve(dst []Event, seq wire.Seq, acked bool, cause Cause) []Event {
	return t.resolveSlot(dst, seq, t.ring.Get(seq), acked, cause)
}

// resolveSlot is resolve with seq's ring slot already looked up.
func (t *SendTracker) resolveSlot(dst []Event, seq wire.Seq, slot *sentSeq, acked bool, cause Cause) []Event {
	s := *slot
	t.ring.Remove(seq)
	t.pending--

	ev := Event{Kind: SeqAcked, Cause: cause, Seq: seq, SentAt: s.sentAt} // 24 bytes: fields ordered to pack
	if acked {
		t.stats.Acked++
		t.stats.LossRate -= t.stats.LossRate / 64
	} else {
		ev.Kind = SeqLost
		t.stats.Lost++
		t.stats.LostBy[cause]++
		t.stats.LossRate += (1 - t.stats.LossRate) / 64
	}
	if s.record == 0 {
		return append(dst, ev)
	}
	r := &t.records[s.record-1]
	id := RecordID(uint32(r.gen)<<recordIndexBits | s.record)
	ev.Record, ev.Tag = id, r.tag
	dst = append(dst, ev)

	r.unacked--
	rev := Event{Seq: seq, Cause: cause, SentAt: s.sentAt, Record: id, Tag: r.tag}
	switch {
	case !acked && !r.abandoned:
		r.abandoned = true
		rev.Kind = RecordAbandoned
		t.stats.RecordsAbandoned++
		dst = append(dst, rev)
	case acked && !r.abandoned && r.sealed && r.unacked == 0:
		rev.Kind = RecordConfirmed
		t.stats.RecordsConfirmed++
		dst = append(dst, rev)
	}
	if r.sealed && r.unacked == 0 {
		t.release(id)
	}
	return dst
}

// advanceOldest moves oldest past resolved seqs.
func (t *SendTracker) advanceOldest() {
	if t.pending == 0 {
		t.oldest = t.next
		return
	}
	for !t.ring.Has(t.oldest) {
		t.oldest++
	}
}

// record returns the live record named by id, panicking on a stale or
// foreign id: that is a bug in the caller, not bad input.
func (t *SendTracker) record(id RecordID) *record {
	idx := int(uint32(id)&(1<<recordIndexBits-1)) - 1
	if idx < 0 || idx >= len(t.records) {
		panic(fmt.Sprintf("ackmap: unknown RecordID %#x", uint32(id)))
	}
	r := &t.records[idx]
	if !r.live || uint32(r.gen) != uint32(id)>>recordIndexBits {
		panic(fmt.Sprintf("ackmap: stale RecordID %#x", uint32(id)))
	}
	return r
}

// release returns a record to the slab and bumps its generation.
func (t *SendTracker) release(id RecordID) {
	idx := uint32(id)&(1<<recordIndexBits-1) - 1
	r := &t.records[idx]
	r.live = false
	r.gen++
	t.freeRecs = append(t.freeRecs, idx)
}
