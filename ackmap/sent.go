package ackmap

import (
	"encoding/json"
	"fmt"
	"math"
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
	// CauseReorder: a seq at least the effective packet threshold newer
	// (SendStats.ReorderThreshold) was acked while this seq's ack bit was
	// clear.
	CauseReorder
	// CauseWindow: a seq more than 32 newer was acked, so this seq fell out
	// of the ack window unacked.
	CauseWindow
	// CauseEvicted: a send found MaxInFlight seqs pending, or the span of
	// seqs from the oldest pending one full (SpanLimit), and this was the
	// oldest.
	CauseEvicted
	// CauseTimeout: no verdict arrived within the retransmission time-out.
	CauseTimeout
	// CauseReorderTime: a newer seq was acked and this one was sent more
	// than the time threshold ago (SendStats.LossDelay) without being
	// acked: RACK's and QUIC's time threshold.
	CauseReorderTime

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
	case CauseReorderTime:
		return "reorder-time"
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

// SendStats are a SendTracker's counters and its current loss-detection
// thresholds. Reading them is a struct copy plus two multiplications.
type SendStats struct {
	Sent             uint64            // seqs sent
	Acked            uint64            // seqs acked
	Lost             uint64            // seqs declared lost, all causes
	lostBy           [numCauses]uint64 // by Cause: LostBy
	RecordsConfirmed uint64
	RecordsAbandoned uint64
	Skipped          uint64  // seqs handed out by Skip (no verdict expected)
	AcksUnsent       uint64  // ack headers refused with ErrAckUnsent
	Timeouts         uint64  // Expire calls that declared at least one loss by time-out
	LossRate         float64 // exponentially weighted (gain 1/64) fraction of verdicts that were losses

	// LinkLoss estimates the link's real loss: the exponentially weighted
	// (gain 1/256) fraction of verdicts that were losses, with each loss a
	// later ack header showed spurious (SpuriousLosses) taken back exactly
	// — as if that verdict had been an ack. On a lossless link that
	// reorders or delays acks it returns to 0 within a round trip of each
	// spurious verdict, where LossRate keeps the spurious ones. One real
	// loss lifts it by about 1/256: slow enough that on a link losing 1 %
	// it stays near 1 % between losses instead of decaying to nothing, so
	// a consumer switching on a threshold stays on. SendTracker.LinkLoss
	// reads it alone.
	LinkLoss float64
	// PeerAckDelay is the largest ack delay the peer reported recently
	// (OnAckDelayed), decaying by an eighth per header that gives RTT
	// samples (OnAckDelayed's rule: its newest seq newly acked, or a recent
	// standalone ack): it is added to the
	// retransmission time-out, as QUIC adds max_ack_delay. Headers that
	// give none (a repeat of an ack already seen) leave it: their delay
	// is not the one a time-out waits on, and decaying on them forgot a
	// 60 Hz peer's wait between its ticks within a few repeats.
	PeerAckDelay time.Duration

	// SpuriousLosses counts seqs declared lost that a later ack header
	// showed had arrived (the ack itself or its ack bit), each once; the
	// verdict stands. Only the last 64 losses are remembered, so a header
	// delayed past 64 further losses goes uncounted. SpuriousBy splits it
	// by the Cause of the loss verdict.
	SpuriousLosses uint64
	spuriousBy     [numCauses]uint64
	// ReorderThreshold is the effective packet threshold now, in
	// [Config.ReorderThreshold, 34]: 33 means the packet threshold is off
	// (window age-out only), 34 that the window age-out is off too (every
	// loss behind an acked seq waits for the time threshold).
	ReorderThreshold int
	// TimeThreshold is the effective time-threshold multiplier now, in
	// [9/8, 2]: a seq behind an acked one is lost once it was sent more
	// than TimeThreshold × max(smoothed RTT, latest RTT) ago.
	TimeThreshold float64
	// LossDelay is that time threshold now, at least 1 ms (the initial RTO
	// stands in for the RTT before the first sample).
	LossDelay time.Duration
}

// LostBy counts the seqs declared lost with cause c.
func (s SendStats) LostBy(c Cause) uint64 {
	if c >= numCauses {
		return 0
	}
	return s.lostBy[c]
}

// SpuriousBy counts the spurious losses (SpuriousLosses) whose loss
// verdict had cause c.
func (s SendStats) SpuriousBy(c Cause) uint64 {
	if c >= numCauses {
		return 0
	}
	return s.spuriousBy[c]
}

// MarshalJSON encodes the stats as an object: every exported field, and
// LostBy and SpuriousBy as objects keyed by the cause's name (non-zero
// counts only). Cost: allocates; for monitoring.
func (s SendStats) MarshalJSON() ([]byte, error) {
	type fields SendStats // the exported fields, without this method
	byCause := func(v *[numCauses]uint64) map[string]uint64 {
		m := map[string]uint64{}
		for c, n := range v {
			if n != 0 {
				m[Cause(c).String()] = n
			}
		}
		return m
	}
	return json.Marshal(struct {
		fields
		LostBy     map[string]uint64
		SpuriousBy map[string]uint64
	}{fields(s), byCause(&s.lostBy), byCause(&s.spuriousBy)})
}

// sentSeq is what the ring holds per unresolved seq.
type sentSeq struct {
	sentAt time.Duration
	record uint32 // slab index+1, 0 for none
}

// Loss-detection constants (RFC 9002 §6.1, RFC 8985).
const (
	// lossGranularity is the smallest time threshold (kGranularity).
	lossGranularity = time.Millisecond
	// The time threshold is timeEighths/8 × max(SRTT, latest RTT):
	// baseTimeEighths is QUIC's 9/8, maxTimeEighths caps the adaptation
	// at 2× (RACK caps its reordering window at one SRTT).
	baseTimeEighths = 9
	maxTimeEighths  = 16
	// adaptDecayRTTs and minAdaptDecay set how long the thresholds stay
	// raised: after max(adaptDecayRTTs × SRTT, minAdaptDecay) with no
	// spurious loss, each threshold steps one down toward its base.
	adaptDecayRTTs = 16
	minAdaptDecay  = time.Second
	// lostMemory is how many recent loss verdicts are remembered for
	// spurious-loss detection: more than one ack header can name.
	lostMemory = 64
)

// Which loss rules fired for a remembered loss (lostSeq.rules): a spurious
// loss raises the thresholds of the rules that declared it.
const (
	rulePacket uint8 = 1 << iota
	ruleTime
	ruleWindow
)

// windowOff is the effective packet threshold past the ack window: no
// count of seqs declares a loss, not even the window age-out; every loss
// behind an acked seq waits for the time threshold.
const windowOff = AckWindow + 1

// lostSeq remembers one loss verdict, so that an ack header that later
// names the seq can be recognised as showing a spurious loss. The seq's
// absolute index is kept apart, in SendTracker.lostAbs, so the walk of
// every header over them touches one small array.
type lostSeq struct {
	sentAt  time.Duration // when it was sent
	verdict uint32        // low 32 bits of SendTracker.verdicts after its own verdict, for LinkLoss (16 bytes in all)
	cause   Cause
	rules   uint8 // the rules (rulePacket, ruleTime, ruleWindow) that declared it
	back    uint8 // how far behind the largest acked seq it was, capped at 255
}

// revealedAbs marks a remembered loss an ack already showed arrived: newer
// than any ack, so the walk skips it without stopping.
const revealedAbs = ^uint64(0)

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
// one per record. It also keeps the RTT estimate: every seq an ack header
// newly acks is a sample (seqs are never re-sent, so each is unambiguous),
// and so is a seq declared lost that a later header shows arrived.
//
// Loss is declared five ways. Relative to the largest seq acked so far, a
// pending seq behind it is lost once it is the effective packet threshold
// behind it (CauseReorder, QUIC's packet threshold), more than 32 behind it
// (CauseWindow: no later header can name it), or sent more than the time
// threshold ago (CauseReorderTime, RACK's and QUIC's time threshold):
// 9/8 × max(smoothed RTT, latest RTT), at least 1 ms, checked on every ack
// header and on every Expire. On a lossy path that does not reorder, a loss
// is thus declared about 1.125 round trips after its send, or sooner by the
// packet threshold. A Send evicts the oldest pending seq when MaxInFlight
// are pending or the span is full (CauseEvicted), and Expire declares lost
// every pending seq older than the retransmission time-out (CauseTimeout),
// so a quiet link strands nothing.
//
// Reordering is not loss. The last 64 loss verdicts are remembered, and an
// ack header that names one of them shows a spurious loss
// (SendStats.SpuriousLosses); the verdict stands, but the rule that
// declared it adapts: the packet threshold rises past the distance the seq
// was declared at (up to 33, the window age-out alone), a spurious window
// loss — a header overtaken by a later one — turns the window age-out off
// too (34: every loss waits for the time threshold), and the time threshold
// rises to what that seq's round trip needed plus an eighth (up to 2×).
// After a quiet spell of max(16 SRTT, 1 s) with no spurious loss, each
// steps one down toward its base. Spurious time-outs adapt nothing but
// their RTT sample.
//
// Storage is a ring of SpanLimit slots, a 64-entry ring of recent losses,
// and a slab of records that grows only when more records are pending than
// ever before; in steady state no method allocates. Events are appended to
// a caller-supplied slice. Not safe for concurrent use: one goroutine owns
// a channel's tracker.
type SendTracker struct {
	cfg       Config
	rtoFloor  time.Duration // min(MinRTO, InitialRTO, MaxRTO): no RTO is shorter
	ring      *SeqBuffer[sentSeq]
	spanLimit int      // ring size: the largest next − oldest
	next      wire.Seq // seq the next Send uses
	plain     uint64   // bit i: seq next−1−i came from Skip (a standalone ack)
	oldest    wire.Seq // oldest possibly-unresolved seq; == next when none is
	absNext   uint64   // seqs handed out so far: the absolute index of next
	pending   int      // unresolved seqs
	sentAny   bool

	// largest is the newest seq the peer has acked, while some pending seq
	// may be older (hasLargest is cleared once oldest passes it, so it is
	// never ambiguous against the span).
	largest    wire.Seq
	hasLargest bool

	// Adaptive thresholds and the losses that may yet prove spurious.
	pktThresh   int           // effective packet threshold, up to windowOff
	timeEighths int           // effective time threshold, in eighths of the RTT
	adaptedAt   time.Duration // last raise or decay step
	lost        [lostMemory]lostSeq
	lostAbs     [lostMemory]uint64 // each one's absolute index (seqs handed out before it), or revealedAbs
	lostNext    int                // index of the next entry to write
	lostN       int                // entries in use

	records  []record
	freeRecs []uint32 // slab indexes (not +1) ready for reuse

	rtt     RTT
	backoff int // multiplier on the RTO, 1..maxBackoff
	stats   SendStats

	// The link-loss estimate (SendStats.LinkLoss): verdicts counts every
	// seq verdict so far, so a spurious loss can be taken back with its
	// decayed weight; ackDelay is SendStats.PeerAckDelay.
	linkLoss float64
	verdicts uint64
	ackDelay time.Duration
}

// linkLossGain is the gain of the LinkLoss estimate per verdict.
const linkLossGain = 1.0 / 256

// NewSendTracker returns a tracker whose first seq is first. Pick first at
// random per session (it costs nothing and makes blind injection harder).
func NewSendTracker(cfg Config, first wire.Seq) (*SendTracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	span := spanLimitFor(cfg.MaxInFlight)
	return &SendTracker{
		cfg:         cfg,
		rtoFloor:    min(cfg.MinRTO, cfg.InitialRTO, cfg.MaxRTO),
		ring:        NewSeqBuffer[sentSeq](span),
		spanLimit:   span,
		next:        first,
		oldest:      first,
		pktThresh:   cfg.ReorderThreshold,
		timeEighths: baseTimeEighths,
		backoff:     1,
	}, nil
}

// spanLimitFor is spanFactor × maxInFlight rounded up to a power of two,
// capped at MaxSpanLimit.
func spanLimitFor(maxInFlight int) int {
	n := 1
	for n < spanFactor*maxInFlight && n < MaxSpanLimit {
		n <<= 1
	}
	return n
}

// Config returns the tracker's config with defaults applied.
func (t *SendTracker) Config() Config { return t.cfg }

// SpanLimit returns the largest span the tracker keeps (see Span): a Send
// or Skip that would widen it further first evicts the oldest pending seq.
// It is 4 × MaxInFlight rounded up to a power of two, at most MaxSpanLimit
// (32768), and fixed for the tracker's life. A ring indexed by seq
// (NewSeqBuffer) with SpanLimit slots therefore holds every pending seq in
// a slot of its own.
func (t *SendTracker) SpanLimit() int { return t.spanLimit }

// NextSeq returns the seq the next Send will use.
func (t *SendTracker) NextSeq() wire.Seq { return t.next }

// PendingCount returns how many sent seqs have no verdict yet. It is bounded
// by MaxInFlight and returns to 0 once traffic settles; a count that only
// grows is a leak.
func (t *SendTracker) PendingCount() int { return t.pending }

// Span returns how many seqs the span covers now: from the oldest pending
// seq to the newest handed out, skipped seqs included (0 when none is
// pending). It is at most SpanLimit.
func (t *SendTracker) Span() int { return int(t.next - t.oldest) }

// PendingRecords returns how many records are open or awaiting a verdict.
func (t *SendTracker) PendingRecords() int { return len(t.records) - len(t.freeRecs) }

// Stats returns a copy of the counters, with the current thresholds.
func (t *SendTracker) Stats() SendStats {
	s := t.stats
	s.ReorderThreshold = t.pktThresh
	s.TimeThreshold = float64(t.timeEighths) / 8
	s.LossDelay = t.lossDelay()
	s.LinkLoss = t.linkLoss
	s.PeerAckDelay = t.ackDelay
	return s
}

// Acked returns SendStats.Acked alone: a field read, for a caller that
// reads it on every ack header.
func (t *SendTracker) Acked() uint64 { return t.stats.Acked }

// LinkLoss returns the link-loss estimate (SendStats.LinkLoss) alone: a
// field read, for a caller that checks it on every Flush.
func (t *SendTracker) LinkLoss() float64 { return t.linkLoss }

// Verdicts returns how many seqs have had a verdict (acked or lost) so
// far: how much LinkLoss has seen. A field read.
func (t *SendTracker) Verdicts() uint64 { return t.verdicts }

// PeerAckDelay returns SendStats.PeerAckDelay alone: a field read.
func (t *SendTracker) PeerAckDelay() time.Duration { return t.ackDelay }

// RTT returns the round-trip estimator. The pointer is owned by the tracker
// and valid for its lifetime; read it from the tracker's goroutine.
func (t *SendTracker) RTT() *RTT { return &t.rtt }

// RTO returns the current retransmission time-out, including any back-off:
// SRTT + max(1 ms, 4·RTTVAR) (RFC 6298), but never less than the time
// threshold (SendStats.LossDelay) once there is an RTT sample, plus the
// peer's recent ack delay (SendStats.PeerAckDelay) — every
// newly acked seq is a sample, so on a steady path RTTVAR alone would put
// the time-out within a millisecond of the RTT, and one lost ack header
// would time out a seq that arrived — clamped to [MinRTO, MaxRTO], times
// the back-off, at most MaxRTO. Before the first sample it is InitialRTO.
func (t *SendTracker) RTO() time.Duration {
	rto := t.cfg.InitialRTO
	if t.rtt.HasSample() {
		rto = min(max(t.rtt.RTO(t.cfg.InitialRTO, t.cfg.MinRTO, t.cfg.MaxRTO), t.lossDelay())+t.ackDelay, t.cfg.MaxRTO)
	}
	return min(rto*time.Duration(t.backoff), t.cfg.MaxRTO)
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
// id (NoRecord for none), and returns it. If MaxInFlight seqs are pending,
// or the span already covers SpanLimit seqs, the oldest pending seq is
// first evicted as lost and its events appended to dst. now must not
// decrease from one call to the next. O(1), no allocation.
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
// none), evicting the oldest unresolved seq first if MaxInFlight are
// pending or the span is full. One eviction always suffices: it lowers
// both the pending count and the span by at least one.
func (t *SendTracker) sendSeq(dst []Event, now time.Duration, ri uint32) []Event {
	if t.pending >= t.cfg.MaxInFlight || int(t.next-t.oldest) >= t.spanLimit {
		dst = t.evictOldest(dst)
	}
	*t.ring.Insert(t.next) = sentSeq{sentAt: now, record: ri}
	t.plain <<= 1
	t.next++
	t.absNext++
	t.pending++
	t.sentAny = true
	t.stats.Sent++
	return dst
}

// evictOldest declares the oldest pending seq lost by eviction.
func (t *SendTracker) evictOldest(dst []Event) []Event {
	dst = t.lose(dst, t.oldest, t.ring.Get(t.oldest), CauseEvicted, 0, 0)
	t.advanceOldest()
	return dst
}

// Skip assigns the next seq to a datagram that expects no verdict — an
// ack-only datagram, which the peer does not ack (QUIC's non-ack-eliciting
// packet) — and returns it. The seq is never pending and never reported; an
// ack that names it is ignored, except that it still shows the peer got a
// datagram sent after every older seq, for the packet and time thresholds.
// A skipped seq does not count toward MaxInFlight, only toward the span:
// if the span already covers SpanLimit seqs, the oldest pending seq is
// first evicted as lost and its events appended to dst. O(1), no
// allocation.
func (t *SendTracker) Skip(dst []Event) (wire.Seq, []Event) { return t.skip(dst, 1) }

// SkipAckEliciting is Skip for a datagram that awaits no verdict yet
// elicits an ack — frames the peer acks though nothing waits for their
// fate (transport sends datagrams of only unreliable frames this way near
// a full window). A header whose newest seq is one of these gives no RTT
// sample: its ack delay covers that seq's wait at the peer, and the older
// seqs it acks waited longer. O(1), no allocation.
func (t *SendTracker) SkipAckEliciting(dst []Event) (wire.Seq, []Event) { return t.skip(dst, 0) }

// skip is Skip and SkipAckEliciting: plain (1 or 0) is the seq's bit in
// plain, whether a header naming it may give RTT samples.
func (t *SendTracker) skip(dst []Event, plain uint64) (wire.Seq, []Event) {
	if int(t.next-t.oldest) >= t.spanLimit {
		dst = t.evictOldest(dst)
	}
	seq := t.next
	t.plain = t.plain<<1 | plain
	t.next++
	t.absNext++
	t.sentAny = true
	t.stats.Skipped++
	if t.pending == 0 {
		t.advanceOldest()
	}
	return seq, dst
}

// plainSkip reports whether seq is one of the last 64 seqs handed out and
// Skip (not SkipAckEliciting) handed it out. O(1).
func (t *SendTracker) plainSkip(seq wire.Seq) bool {
	d := (t.next - 1).Sub(seq)
	return d >= 0 && d < 64 && t.plain>>uint(d)&1 != 0
}

// InFlightRoom returns how many more seqs Send can hand out before one
// evicts the oldest pending seq: the smaller of MaxInFlight less the
// pending seqs and SpanLimit less the span. (Skip is bounded by the span
// alone, so it may go on after this reaches 0 for want of pending room.) A
// sender that must not lose its own data to eviction (the pieces of a
// large message) paces itself by it.
func (t *SendTracker) InFlightRoom() int {
	return min(t.cfg.MaxInFlight-t.pending, t.spanLimit-int(t.next-t.oldest))
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

// lossDelay is the time threshold: a seq sent before an acked one is lost
// once it is this old.
func (t *SendTracker) lossDelay() time.Duration { return t.lossDelayFor(t.rttBase()) }

// lossDelayFor is lossDelay with rttBase already read.
func (t *SendTracker) lossDelayFor(base time.Duration) time.Duration {
	return max(base*time.Duration(t.timeEighths)/8, lossGranularity)
}

// rttBase is max(smoothed RTT, latest RTT), or the initial RTO before the
// first sample.
func (t *SendTracker) rttBase() time.Duration {
	if !t.rtt.HasSample() {
		return t.cfg.InitialRTO
	}
	return max(t.rtt.Smoothed(), t.rtt.Latest())
}

// OnAck applies an ack header from the peer — ack is the newest seq it
// received, bit i of bits says it received ack−1−i — at time now, and
// appends the resulting verdicts to dst. Seqs the header acks are SeqAcked,
// each an RTT sample — unless the header's newest seq came from
// SkipAckEliciting or was acked by an earlier header — resetting any
// time-out back-off. Then, relative to the
// largest seq ever acked (this ack or a newer one from an earlier header),
// pending seqs behind it are SeqLost when they are the packet threshold or
// more behind it, more than 32 behind it, or were sent more than the time
// threshold ago (see SendTracker); the others wait for a later header or
// Expire. Both thresholds are as they stood before this header's samples.
// Seqs that already have a verdict are ignored, so stale, reordered and
// duplicated headers are safe — except that a header naming one of the
// last 64 losses counts it as spurious, once, and adapts the thresholds.
//
// An ack newer than the newest seq sent returns ErrAckUnsent and changes
// nothing. Cost: O(seqs resolved + 33) amortised, at most SpanLimit; no
// allocation beyond dst's growth. OnAck is OnAckDelayed with no ack delay.
func (t *SendTracker) OnAck(dst []Event, now time.Duration, ack wire.Seq, bits uint32) ([]Event, error) {
	return t.OnAckDelayed(dst, now, ack, bits, 0)
}

// OnAckDelayed is OnAck for a header whose sender says the seq ack waited
// ackDelay at its end before the header left (wire.ChannelHeader.AckDelay,
// QUIC's ack_delay). Every RTT sample the header gives is taken with
// ackDelay subtracted, but never below the smallest sample seen (a delay
// larger than the round trip can explain is not believed in full); and
// ackDelay feeds SendStats.PeerAckDelay, which the retransmission time-out
// adds, so a delayed ack is not mistaken for a loss. A negative ackDelay
// counts as 0. Cost as OnAck.
func (t *SendTracker) OnAckDelayed(dst []Event, now time.Duration, ack wire.Seq, bits uint32, ackDelay time.Duration) ([]Event, error) {
	if !t.sentAny || ack.Newer(t.next-1) {
		t.stats.AcksUnsent++
		return dst, ErrAckUnsent
	}
	ackDelay = max(ackDelay, 0)
	if t.lostN > 0 {
		t.findSpurious(now, ack, bits)
	}
	t.decay(now)
	if !t.hasLargest || ack.Newer(t.largest) {
		t.largest, t.hasLargest = ack, true
	}
	if t.pending == 0 || t.largest.Sub(t.oldest) < 0 {
		t.advanceOldest() // nothing pending at or before the largest ack
		return dst, nil
	}
	if ack == t.oldest && ack == t.largest {
		// The common header: it acks the oldest pending seq, and that is
		// the largest acked so far. The walk below would take its RTT
		// sample (a pending seq gives one: see sampling), ack it and stop
		// there; this is the same without the walk's set-up and the state
		// it keeps across its calls.
		if slot := t.ring.Get(ack); slot != nil {
			t.ackDelay = max(ackDelay, t.ackDelay-t.ackDelay/8)
			t.rtt.Sample(t.adjusted(now-slot.sentAt, ackDelay))
			t.backoff = 1
			dst = t.resolveSlot(dst, ack, slot, true, CauseNone)
			t.oldest = ack + 1 // (ack, the oldest, is resolved: advanceOldest goes on from the next)
			t.advanceOldest()
			return dst, nil
		}
	}
	// One pass from the oldest pending seq: acks wherever the header says
	// so; losses only while every pending seq so far was acked or lost,
	// since both thresholds grow monotonically more lenient with the seq
	// (fewer seqs behind the largest, a later send time), so the losses
	// are a prefix of the pending seqs.
	// The time threshold is as it stood before this header's samples: its
	// RTT base is read now, the threshold worked out only if a seq is
	// judged by it (a header that acks the oldest pending seq stops
	// there).
	base := t.rttBase()
	var delay time.Duration
	haveDelay := false
	losing := true
	// RTT samples come from a header whose newest seq it newly acks (a
	// pending seq) or is a recent standalone ack (Skip), as before; not
	// from one whose newest came from SkipAckEliciting or was acked
	// before: its ack delay covers that seq's wait at the peer, the older
	// seqs it acks waited longer, and their samples would read the peer's
	// tick as path delay (13 ms of "standing queue" for the send budget
	// behind a 60 Hz peer, conformance seed 815). Without samples through
	// standalone acks a sender the budget holds to a trickle, which acks
	// what it receives on datagrams of their own, would see too few to
	// grow again (seed 35223).
	sampling := t.ring.Has(ack) || t.plainSkip(ack)
	if sampling {
		t.ackDelay = max(ackDelay, t.ackDelay-t.ackDelay/8)
	}
	for seq := t.oldest; ; seq++ {
		if slot := t.ring.Get(seq); slot != nil {
			back := ack.Sub(seq) // negative when the header is older than seq
			switch {
			case back == 0 || back > 0 && back < AckWindow && bits&(1<<uint(back-1)) != 0:
				// (A read time before the seq left gives a negative
				// sample, which Sample drops.)
				if sampling {
					t.rtt.Sample(t.adjusted(now-slot.sentAt, ackDelay))
				}
				t.backoff = 1
				dst = t.resolveSlot(dst, seq, slot, true, CauseNone)
			case losing:
				behind := t.largest.Sub(seq) // ≥ 0: seq is in the span, largest too
				if !haveDelay {
					delay, haveDelay = t.lossDelayFor(base), true
				}
				old := behind > 0 && now-slot.sentAt >= delay
				var rules uint8
				if old {
					rules = ruleTime
				}
				switch {
				case behind >= AckWindow && t.pktThresh <= AckWindow:
					dst = t.lose(dst, seq, slot, CauseWindow, behind, ruleWindow)
				case behind >= t.pktThresh && behind < AckWindow:
					dst = t.lose(dst, seq, slot, CauseReorder, behind, rulePacket|rules)
				case old:
					dst = t.lose(dst, seq, slot, CauseReorderTime, behind, rules)
				default:
					losing = false
				}
			}
		}
		if seq == t.largest || !losing && seq.NewerOrEqual(ack) {
			break
		}
	}
	t.advanceOldest()
	return dst, nil
}

// adjusted is the RTT sample raw less the peer's ack delay, but not below
// the smallest sample so far (nor below raw itself when raw is smaller).
// A delay that leaves nothing of the sample is not believed at all: before
// the first sample, raw is taken whole (as QUIC takes its first sample).
func (t *SendTracker) adjusted(raw, ackDelay time.Duration) time.Duration {
	s := raw - ackDelay
	switch {
	case ackDelay == 0:
		return raw
	case t.rtt.HasSample() && s < t.rtt.Min():
		return min(raw, t.rtt.Min())
	case s <= 0:
		return raw
	}
	return s
}

// findSpurious counts the remembered losses that the header (ack, bits)
// shows arrived, and raises the thresholds that declared them. The memory
// is in ascending seq order; the walk goes from the newest entry down to
// the first one the header cannot name. O(entries newer than ack + named).
func (t *SendTracker) findSpurious(now time.Duration, ack wire.Seq, bits uint32) {
	dist := uint64(uint16(t.next - 1 - ack)) // ack is not newer than next−1
	if dist >= t.absNext {
		return // ack names a seq before the first one handed out
	}
	ackAbs := t.absNext - 1 - dist
	named := uint64(bits)<<1 | 1 // bit d: the header says ack−d arrived
	i := t.lostNext
	for n := t.lostN; n > 0; n-- {
		i = (i - 1) & (lostMemory - 1)
		a := t.lostAbs[i]
		if a > ackAbs {
			continue // newer than this header's ack, or already revealed
		}
		d := ackAbs - a
		if d >= AckWindow {
			break // this and every older entry are out of the header's reach
		}
		if named>>d&1 != 0 {
			t.lostAbs[i] = revealedAbs
			t.spurious(now, &t.lost[i])
		}
	}
}

// spurious counts the spurious loss e and raises the thresholds of the
// rules that declared it: the packet threshold past the distance e was
// declared at, the time threshold to what e's round trip (now − its send,
// an upper bound) needed under the estimate that declared it, plus one
// eighth, at least one eighth more. e's round trip then becomes an RTT
// sample: e was never re-sent, so it is valid, and it is the slow tail
// that samples from seqs acked in time never show.
func (t *SendTracker) spurious(now time.Duration, e *lostSeq) {
	// Take the loss back from LinkLoss: the estimate is linear in its
	// inputs, and a loss instead of an ack added linkLossGain at its
	// verdict, decayed by (1 − gain) per verdict since.
	t.linkLoss = max(0, t.linkLoss-linkLossGain*math.Pow(1-linkLossGain, float64(uint32(t.verdicts)-e.verdict)))
	t.stats.SpuriousLosses++
	t.stats.spuriousBy[e.cause]++
	if e.rules&rulePacket != 0 {
		t.pktThresh = max(t.pktThresh, min(AckWindow, max(t.pktThresh+1, int(e.back)+1)))
	}
	if e.rules&ruleWindow != 0 {
		t.pktThresh = windowOff // a header overtaken by a later one: count nothing
	}
	if e.rules&ruleTime != 0 {
		base := t.rttBase()
		need := int((8*(now-e.sentAt)+base-1)/base) + 1 // eighths of base, rounded up, plus one
		t.timeEighths = min(maxTimeEighths, max(t.timeEighths+1, need))
	}
	if e.rules != 0 {
		t.adaptedAt = now
	}
	t.rtt.Sample(now - e.sentAt)
	t.backoff = 1
}

// decay steps each raised threshold one down toward its base once the
// thresholds have gone a quiet spell without a raise or a step.
func (t *SendTracker) decay(now time.Duration) {
	if t.pktThresh == t.cfg.ReorderThreshold && t.timeEighths == baseTimeEighths {
		return
	}
	if now-t.adaptedAt < max(adaptDecayRTTs*t.rtt.Smoothed(), minAdaptDecay) {
		return
	}
	t.pktThresh = max(t.pktThresh-1, t.cfg.ReorderThreshold)
	t.timeEighths = max(t.timeEighths-1, baseTimeEighths)
	t.adaptedAt = now
}

// Expire declares lost every pending seq behind the largest acked one that
// was sent more than the time threshold ago (CauseReorderTime), then every
// pending seq sent at least RTO ago (CauseTimeout), and appends the
// verdicts to dst. Call it on every Flush (any cadence: every rule is a
// duration on the caller's clock) so the time threshold is honoured
// without waiting for the next ack header, and a quiet link still resolves
// every seq. A call that declares any loss by time-out doubles the RTO
// back-off (up to 64×) until the next RTT sample, as RFC 6298 §5.5 does.
// Cost: O(seqs expired) amortised; no allocation beyond dst's growth.
func (t *SendTracker) Expire(dst []Event, now time.Duration) []Event {
	t.decay(now)
	if t.pending == 0 {
		return dst
	}
	if t.hasLargest {
		delay := t.lossDelay()
		lost := false
		for seq := t.oldest; seq.Older(t.largest); seq++ {
			s := t.ring.Get(seq)
			if s == nil {
				continue
			}
			if now-s.sentAt < delay {
				break // sent in seq order, so every later seq is younger
			}
			dst = t.lose(dst, seq, s, CauseReorderTime, t.largest.Sub(seq), ruleTime)
			lost = true
		}
		if lost {
			t.advanceOldest()
		}
	}
	// RTO is at least rtoFloor (its clamps and a backoff of at least 1),
	// so a pending seq younger than that needs no RTO computed: the common
	// Flush, whose oldest pending seq left a tick ago, skips it.
	floor := t.rtoFloor
	if s := t.ring.Get(t.oldest); s != nil && now-s.sentAt < floor {
		return dst // the common Flush: the walk below would stop at once
	}
	var rto time.Duration
	haveRTO := false
	expired := false
	for seq := t.oldest; seq != t.next; seq++ {
		s := t.ring.Get(seq)
		if s == nil {
			continue
		}
		age := now - s.sentAt
		if age < floor {
			break // sent in seq order, so every later seq is younger
		}
		if !haveRTO {
			rto, haveRTO = t.RTO(), true
		}
		if age < rto {
			break // sent in seq order, so every later seq is younger
		}
		dst = t.lose(dst, seq, s, CauseTimeout, 0, 0)
		expired = true
	}
	if expired {
		t.advanceOldest()
		t.stats.Timeouts++
		t.backoff = min(2*t.backoff, maxBackoff)
	}
	return dst
}

// NextExpiry returns the earliest time at which Expire, called then, may
// do something: declare the oldest pending seq lost by the time threshold
// (if an ack is newer than it) or by the retransmission time-out, or step
// a raised threshold back toward its base. ok is false when no such time
// exists (nothing pending, no threshold raised). An ack applied in
// between (OnAck) may move it either way; Send never makes it earlier
// than what it was (the new seq is the newest). A caller that sleeps
// until it (or until a datagram arrives) and then calls Expire honours
// every rule of Expire on time. O(1), no allocation.
func (t *SendTracker) NextExpiry() (at time.Duration, ok bool) {
	if t.pktThresh != t.cfg.ReorderThreshold || t.timeEighths != baseTimeEighths {
		at, ok = t.adaptedAt+max(adaptDecayRTTs*t.rtt.Smoothed(), minAdaptDecay), true
	}
	if t.pending == 0 {
		return at, ok
	}
	seq := t.oldest
	s := t.ring.Get(seq)
	for s == nil && seq != t.next { // oldest is only possibly unresolved
		seq++
		s = t.ring.Get(seq)
	}
	if s == nil {
		return at, ok
	}
	due := s.sentAt + t.RTO()
	if t.hasLargest && seq.Older(t.largest) {
		due = min(due, s.sentAt+t.lossDelay())
	}
	if !ok || due < at {
		at = due
	}
	return at, true
}

// lose declares the pending seq (whose ring slot is slot) lost for cause,
// remembering it for spurious-loss detection: behind is how far it was
// behind the largest acked seq, rules which thresholds declared it.
func (t *SendTracker) lose(dst []Event, seq wire.Seq, slot *sentSeq, cause Cause, behind int, rules uint8) []Event {
	t.lostAbs[t.lostNext] = t.absNext - uint64(uint16(t.next-seq))
	sentAt := slot.sentAt // resolveSlot frees the slot
	dst = t.resolveSlot(dst, seq, slot, false, cause)
	t.lost[t.lostNext] = lostSeq{
		sentAt:  sentAt,
		verdict: uint32(t.verdicts),
		cause:   cause,
		rules:   rules,
		back:    uint8(min(behind, 255)),
	}
	t.lostNext = (t.lostNext + 1) & (lostMemory - 1)
	t.lostN = min(t.lostN+1, lostMemory)
	return dst
}

// resolveSlot is resolve with seq's ring slot already looked up.
func (t *SendTracker) resolveSlot(dst []Event, seq wire.Seq, slot *sentSeq, acked bool, cause Cause) []Event {
	s := *slot
	t.ring.Remove(seq)
	t.pending--

	ev := Event{Kind: SeqAcked, Cause: cause, Seq: seq, SentAt: s.sentAt} // 24 bytes: fields ordered to pack
	t.verdicts++
	if acked {
		t.stats.Acked++
		t.stats.LossRate -= t.stats.LossRate / 64
		t.linkLoss -= t.linkLoss * linkLossGain
	} else {
		ev.Kind = SeqLost
		t.stats.Lost++
		t.stats.lostBy[cause]++
		t.stats.LossRate += (1 - t.stats.LossRate) / 64
		t.linkLoss += (1 - t.linkLoss) * linkLossGain
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

// advanceOldest moves oldest past resolved seqs, and forgets the largest
// acked seq once no pending seq is older than it.
func (t *SendTracker) advanceOldest() {
	if t.pending == 0 {
		t.oldest = t.next
	} else {
		for !t.ring.Has(t.oldest) {
			t.oldest++
		}
	}
	if t.hasLargest && !t.largest.Newer(t.oldest) {
		t.hasLargest = false
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
