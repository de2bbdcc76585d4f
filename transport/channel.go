package transport

import (
	"fmt"
	"math"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/transport/fragment"
	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/wire"
)

// Delivery says how a message travelled.
type Delivery uint8

const (
	// Unreliable: delivered at most once, in any order.
	Unreliable Delivery = iota + 1
	// Sequenced: unreliable, but only messages newer than the last one
	// delivered on the same stream are delivered (newest wins).
	Sequenced
	// Reliable: delivered exactly once; in order within an ordered stream
	// (stream ids 1..OrderedStreams), in any order on stream 0.
	Reliable
	// Record: a record send (SendRecord), such as an action-stream slice.
	// Delivered at most once; the sender learns whether it arrived whole.
	Record
)

// String returns the delivery mode's name.
func (d Delivery) String() string {
	switch d {
	case Unreliable:
		return "unreliable"
	case Sequenced:
		return "sequenced"
	case Reliable:
		return "reliable"
	case Record:
		return "record"
	}
	return "unknown"
}

// Message is one delivered message, as passed to Handler.OnMessage.
type Message struct {
	Delivery Delivery
	// Stream is the stream id: the sequenced stream, or the reliable stream
	// (0 = unordered). 0 for Unreliable and Record.
	Stream uint8
	// ID is the message's id on its stream (sequenced and reliable).
	ID wire.Seq
	// Payload is the message. It aliases a receive buffer and is valid only
	// during the OnMessage call: copy what you keep.
	Payload []byte
}

// Handler receives what a Channel delivers. Its methods are called on the
// channel's goroutine, from inside Receive (messages, verdicts) and Flush
// (verdicts from in-flight eviction). A handler may call the channel's Send
// methods; what it sends goes out on the next Flush.
type Handler interface {
	// OnMessage delivers one message. m.Payload is valid only during the
	// call.
	OnMessage(m Message)
	// OnRecord reports the verdict of a SendRecord: confirmed when every
	// datagram it went out in was acked, abandoned (confirmed == false) at
	// the first loss. Exactly one verdict per record.
	OnRecord(tag uint64, confirmed bool)
	// OnDisconnect reports a Disconnect frame from the peer.
	OnDisconnect(reason wire.DisconnectReason)
}

// StallHandler is implemented by a Handler that wants to hear of a stalled
// reliable stream: OnStall(stream, held, stalledFor) is called from Flush
// once per stall, when stream has held messages for Config.StallWarning
// without releasing any — the peer paused, the path broke, or something
// is wedged. It is a warning: the channel keeps trying, and ends only at
// Config.StallTimeout (Channel.Stalled).
type StallHandler interface {
	OnStall(stream uint8, held int, stalledFor time.Duration)
}

// Sink takes the datagrams a Channel builds during Flush.
type Sink interface {
	// Buffer returns an empty buffer with capacity of at least the MTU for
	// the next datagram. The channel appends to it and hands it to Commit.
	Buffer() []byte
	// Commit takes a finished datagram (a buffer from Buffer, extended).
	// The sink owns it from then on; the channel never touches it again.
	Commit(datagram []byte)
}

// queued is a message accepted by Send and waiting for the next Flush; its
// frame encoding lives in Channel.outArena.
type queued struct {
	off, n int32
	tag    uint64
	fragID wire.Seq      // a large message's fragment message id, once its first piece went out
	piece  uint8         // a large message's next piece to send
	at     time.Duration // the now of the last Flush before it was queued (UnreliableMaxAge)
}

// Channel is the protocol state for one peer: seq/ack bookkeeping on every
// datagram, reliable and sequenced streams, fragmentation and reassembly,
// record sends with all-or-nothing verdicts, and statistics.
//
// A Channel does no I/O. Send methods queue messages; Flush packs them
// into datagrams (into a Sink) whenever the loop calls it — at a fixed
// tick, on every wake-up, or irregularly; Receive takes one datagram from
// the peer. It is not safe for concurrent use: one goroutine (the tick loop
// or the event loop that owns the peer) drives it, and no lock is taken on
// the per-datagram path.
//
// Memory is sized at construction and reused: message copies keep their
// buffers' capacity, so steady-state traffic allocates nothing.
type Channel struct {
	cfg       Config
	handler   Handler
	secret    uint64
	pieceSize int // fragment piece size at this MTU
	// Session framing (sizes.go): sealed datagrams (docs/WIRE.md §13)
	// reserve seal.HeaderLen bytes at the front, which the endpoint's
	// Seal overwrites, and seal.TagLen at the end; cleartext ones start
	// with the 9-byte session header. limit is the most bytes a datagram
	// holds before sealing, single the most frame bytes after the
	// largest channel header.
	sealed        bool
	limit, single int
	margin        int // inFlightMargin: the tracker's MaxInFlight / 8

	tracker  *ackmap.SendTracker
	history  ackmap.RecvHistory
	events   []ackmap.Event
	ackDirty bool // a fresh datagram with frames arrived since our last send
	unacked  int  // fresh datagrams with frames received since our last send
	// ackDueAt is when the ack ackDirty owes must leave, in a standalone
	// ack if nothing else has carried it (Config.AckDelay); newestAt is
	// when the newest seq in history arrived, for the header's ack delay.
	ackDueAt time.Duration
	newestAt time.Duration
	// lossy is adaptive redundancy's switch (Config.Redundancy), with
	// hysteresis on the tracker's LinkLoss.
	lossy bool
	// spanHeld: this Flush held unreliable or sequenced messages back for
	// a full span of seqs (pacedRoom; ChannelStats.SpanWaits).
	spanHeld bool
	ackAt    time.Duration // the last ack header received (spanWait)
	// rxAt is when the datagram in Receive arrived (arrival); lastArrival
	// the latest such time so far, which arrivals never precede.
	rxAt        time.Duration
	lastArrival time.Duration

	// Outgoing, between Flushes.
	outArena  []byte
	outMsgs   []queued // unreliable and sequenced frames, in Send order
	outRecs   []queued // record frames
	outBytes  int
	seqNext   []wire.Seq // per sequenced stream
	reliable  []*reliableSender
	fragNext  wire.Seq // next fragment message id
	manifests *manifestLog
	closing   bool
	closeWhy  wire.DisconnectReason

	// Incoming. fragsIn: a fragment went to the assembler (Add), the only
	// call that gives it anything to expire or recycle; until then Flush
	// skips its Expire, which would read the cold Assembler to find
	// nothing.
	assembler *fragment.Assembler
	fragsIn   bool
	rrecv     []*reliableReceiver
	seqRecv   []sequencedReceiver

	// The datagram being built in Flush.
	cur       []byte
	man       manifest // reliable content of cur, copied to manifests at finish
	curFrame  int      // frames in cur
	curRec    ackmap.RecordID
	sealAfter ackmap.RecordID // record to seal once cur is sent
	curRedun  int             // redundant bytes in cur
	sink      Sink
	now       time.Duration
	flushes   uint64 // Flush calls so far: once-per-Flush rules compare it
	// stallCheckAt and prevCheckAt are the now of the latest stall check
	// (checkStalls) and of the one before; stallPos is how many streams
	// the latest has passed (all of them but while it calls OnStall).
	stallCheckAt, prevCheckAt time.Duration
	stallPos                  int
	rotor                     int  // flushes % len(reliable): the stream flushReliable serves first
	sentAny                   bool // a datagram left in this Flush
	burst                     int  // datagrams sent in this Flush
	lastSend                  time.Duration

	// For NextDeadline: wantFlush is set by whatever may give the next
	// Flush work (a Send, a Disconnect, a datagram received) and cleared
	// when a Flush starts; budgetHit is set when a Flush stopped at
	// MaxDatagramsPerFlush with work left.
	wantFlush, budgetHit bool

	// reliableTot is what the streams count together: the messages they
	// hold and those due for sending, so a Flush with none due skips the
	// reliable pass.
	reliableTot sendTotals

	budget    budget  // the send budget (budget.go)
	seqLatest []int32 // per sequenced stream: scratch for budget.shedStale

	stats ChannelStats
}

// NewChannel returns a channel for one peer. first is the seq of its first
// datagram (pick it at random per session); secret is the session secret
// every datagram carries in its session header; h receives deliveries.
func NewChannel(cfg Config, h Handler, first wire.Seq, secret uint64) (*Channel, error) {
	return newChannel(cfg, h, first, secret, false)
}

// newChannel is NewChannel for cleartext (sealed false) or sealed
// datagrams: the Endpoint's sessions are sealed unless
// EndpointConfig.InsecureCleartext.
func newChannel(cfg Config, h Handler, first wire.Seq, secret uint64, sealed bool) (*Channel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	tr, err := ackmap.NewSendTracker(cfg.Ack, first)
	if err != nil {
		return nil, err
	}
	fr := framingFor(cfg.MTU, sealed)
	asm, err := fragment.NewAssembler(fragment.AssemblerConfig{
		PieceSize:      fr.pieceSize,
		MaxPartial:     cfg.MaxPartial,
		Expiry:         cfg.FragmentTimeout,
		MaxMessageSize: cfg.MaxMessageSize + maxFraming,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c := &Channel{
		cfg:       cfg,
		pieceSize: fr.pieceSize,
		sealed:    sealed,
		limit:     fr.limit,
		single:    fr.single,
		handler:   h,
		secret:    secret,
		tracker:   tr,
		manifests: newManifestLog(tr.SpanLimit(), first),
		assembler: asm,
		seqNext:   make([]wire.Seq, cfg.SequencedStreams),
		seqRecv:   make([]sequencedReceiver, cfg.SequencedStreams),
		events:    make([]ackmap.Event, 0, 64),
	}
	c.margin = tr.Config().MaxInFlight / 8
	c.stallPos = cfg.OrderedStreams + 1 // every stream: no stall check is running
	c.budget.init(cfg)
	if c.budget.on {
		c.seqLatest = make([]int32, cfg.SequencedStreams)
	}
	for s := 0; s <= cfg.OrderedStreams; s++ {
		rs := newReliableSender(cfg.ReliableWindow, cfg.ReliableBytes, &c.reliableTot)
		c.reliable = append(c.reliable, rs)
		c.rrecv = append(c.rrecv, newReliableReceiver(s != 0, cfg.ReliableWindow, cfg.ReliableBytes))
	}
	return c, nil
}

// Config returns the channel's config with defaults applied.
func (c *Channel) Config() Config { return c.cfg }

// SetSecret replaces the session secret stamped on every datagram from the
// next one on (a resumed session gets a fresh secret while its channel,
// streams and seqs live on).
func (c *Channel) SetSecret(secret uint64) { c.secret = secret }

// MaxSinglePayload returns the largest payload that travels in one
// datagram (not fragmented) with the given delivery mode; one byte more is
// fragmented (scenario S-C1).
func (c *Channel) MaxSinglePayload(d Delivery) int {
	return wire.FramePayloadRoom(frameTypeOf(d), c.single)
}

func frameTypeOf(d Delivery) wire.FrameType {
	switch d {
	case Sequenced:
		return wire.FrameSequenced
	case Reliable:
		return wire.FrameReliable
	case Record:
		return wire.FrameActionStream
	}
	return wire.FrameUnreliable
}

// SendUnreliable queues p to go out once, unacknowledged, on the next
// Flush. p is copied; the caller may reuse it at once (S-A4).
func (c *Channel) SendUnreliable(p []byte) error {
	if err := c.checkQueued(p); err != nil {
		return err
	}
	off := len(c.outArena)
	c.outArena = wire.AppendUnreliableFrame(c.outArena, wire.UnreliableFrame{Payload: p})
	c.outMsgs = append(c.outMsgs, queued{off: int32(off), n: int32(len(c.outArena) - off), at: c.now})
	c.outBytes += len(c.outArena) - off
	c.wantFlush = true
	return nil
}

// SendSequenced queues p on sequenced stream s: unreliable, and the peer
// delivers it only if it is newer than the last message it delivered on s.
// p is copied.
func (c *Channel) SendSequenced(s uint8, p []byte) error {
	if int(s) >= len(c.seqNext) {
		return fmt.Errorf("%w: sequenced stream %d, SequencedStreams %d", ErrNoStream, s, len(c.seqNext))
	}
	if err := c.checkQueued(p); err != nil {
		return err
	}
	off := len(c.outArena)
	c.outArena = wire.AppendSequencedFrame(c.outArena, wire.SequencedFrame{Stream: s, Seq: c.seqNext[s], Payload: p})
	c.seqNext[s]++
	c.outMsgs = append(c.outMsgs, queued{off: int32(off), n: int32(len(c.outArena) - off), at: c.now})
	c.outBytes += len(c.outArena) - off
	c.wantFlush = true
	return nil
}

// SendReliable queues p on reliable stream s (0 = unordered, 1..N
// ordered) and returns its message id. It is delivered exactly once;
// until acked it is re-sent on loss and, if small, rides redundantly in
// the next datagrams. A full stream returns ErrQueueFull and accepts
// nothing. p is copied.
func (c *Channel) SendReliable(s uint8, p []byte) (wire.Seq, error) {
	if int(s) >= len(c.reliable) {
		return 0, fmt.Errorf("%w: reliable stream %d, streams are 0..%d (OrderedStreams %d)", ErrNoStream, s, len(c.reliable)-1, len(c.reliable)-1)
	}
	if len(p) > c.cfg.MaxMessageSize {
		return 0, fmt.Errorf("%w: %d-byte message, MaxMessageSize %d", ErrTooLarge, len(p), c.cfg.MaxMessageSize)
	}
	rs := c.reliable[s]
	f := wire.ReliableFrame{Stream: s, MessageID: rs.next, Payload: p}
	sl, err := rs.push(wire.ReliableFrameLen(f))
	if err != nil {
		return 0, err
	}
	sl.buf = wire.AppendReliableFrame(sl.buf, f)
	if rs.unacked == 1 {
		c.restartIdle(s, rs)
	}
	c.wantFlush = true
	return sl.id, nil
}

// restartIdle brings the stall clock of stream s, which just came to
// hold a message after holding none, to where the stall checks it was
// passed over in would have left it: restarted by the latest that reached
// it, if one did since it last held something (checkStalls). (A check
// calling OnStall has not reached the streams after the stalled one.)
func (c *Channel) restartIdle(s uint8, rs *reliableSender) {
	checks, at := c.reliableTot.checks, c.stallCheckAt
	if int(s) >= c.stallPos {
		checks, at = checks-1, c.prevCheckAt
	}
	if rs.idleAt < checks {
		rs.progressAt, rs.seen, rs.warned = at, rs.progress, false
	}
}

// SendRecord queues p as a record send: it goes out in one datagram, or
// fragmented over several (at most MaxRecordSize bytes), all owned by one
// record, and Handler.OnRecord
// later reports (tag, true) if every one of those datagrams was acked or
// (tag, false) at the first loss. The peer receives it as a Record
// message, at most once. This is what the action stream uses: a frame
// range is credited only when the whole slice provably arrived. p is
// copied.
func (c *Channel) SendRecord(tag uint64, p []byte) error {
	if len(p) > c.MaxRecordSize() {
		return fmt.Errorf("%w: %d-byte record, MaxRecordSize %d", ErrTooLarge, len(p), c.MaxRecordSize())
	}
	if len(c.outRecs) >= c.cfg.RecordQueue {
		return ErrQueueFull
	}
	off := len(c.outArena)
	c.outArena = wire.AppendActionStreamFrame(c.outArena, wire.ActionStreamFrame{Payload: p})
	c.outRecs = append(c.outRecs, queued{off: int32(off), n: int32(len(c.outArena) - off), tag: tag})
	c.wantFlush = true
	return nil
}

// Disconnect queues a Disconnect frame with reason for the next Flush.
func (c *Channel) Disconnect(reason wire.DisconnectReason) {
	c.closing, c.closeWhy = true, reason
	c.wantFlush = true
}

// checkQueued checks payload p against MaxMessageSize and its frame (p
// and the sequenced framing) against the unreliable queue's byte cap. ErrQueueFull
// is the bare sentinel: back-pressure is an ordinary, frequent answer, and
// building an error with numbers for it would allocate on every refusal.
func (c *Channel) checkQueued(p []byte) error {
	if n := len(p); n > c.cfg.MaxMessageSize {
		return fmt.Errorf("%w: %d-byte message, MaxMessageSize %d", ErrTooLarge, n, c.cfg.MaxMessageSize)
	}
	if c.outBytes+wire.SequencedFrameLen(wire.SequencedFrame{Payload: p}) > c.cfg.UnreliableBytes {
		return ErrQueueFull
	}
	return nil
}

// PendingCount returns how many sent datagrams have no ack/loss verdict yet.
func (c *Channel) PendingCount() int { return c.tracker.PendingCount() }

// Flush packs everything queued since the last Flush — records, reliable
// messages due for (re)transmission, sequenced and unreliable messages,
// redundant copies of unacked reliable messages, a keep-alive or a
// standalone ack when needed — into datagrams handed to sink, and resolves
// time-outs. now is the channel's clock (monotonic, from any origin);
// every timer and expiry is a duration on it. Call it at any cadence — once
// per game tick, on every wake-up of an event loop, or irregularly: the
// protocol's behaviour depends on time, not on how often Flush is called.
func (c *Channel) Flush(now time.Duration, sink Sink) {
	c.flushes++
	if c.rotor++; c.rotor == len(c.reliable) {
		c.rotor = 0
	}
	c.now, c.sink, c.sentAny, c.burst = now, sink, false, 0
	c.wantFlush, c.budgetHit = false, false
	c.dispatch(c.tracker.Expire(c.events[:0], now))
	if c.fragsIn {
		c.assembler.Expire(now)
	}
	if c.budget.on {
		c.budget.refill(now)
	}
	if (c.budget.paced || c.spanHeld) && len(c.outMsgs) != 0 {
		c.shedStale() // (it has nothing to do otherwise)
	}
	c.budget.paced, c.spanHeld = false, false

	if c.closing && c.room(wire.DisconnectFrameLen) {
		c.cur = wire.AppendDisconnectFrame(c.cur, wire.DisconnectFrame{Reason: c.closeWhy})
		c.curFrame++
		c.closing = false
	}
	c.checkStalls()
	// Each pass is called only when it may have work: the common Flush
	// skips most of them without a call.
	if len(c.outRecs) != 0 {
		c.flushRecords()
	}
	if c.reliableTot.due != 0 {
		c.flushReliable()
	}
	if len(c.outMsgs) != 0 {
		c.flushQueued()
	} else {
		c.outBytes = 0
	}
	if c.cfg.RedundancyBytes > 0 && (c.cur != nil || !c.sentAny) && c.redundancyOn() {
		c.flushRedundant()
	}
	switch {
	case c.cur != nil || c.sentAny:
	case c.ackDirty && now >= c.ackDueAt:
		c.room(0) // a standalone ack: a datagram with no frames (S-B4), once due (Config.AckDelay)
	case now-c.lastSend >= KeepAliveInterval && c.room(wire.KeepAliveFrameLen):
		c.cur = wire.AppendKeepAliveFrame(c.cur, wire.KeepAliveFrame{})
		c.curFrame++
	}
	c.finish()
	if len(c.outMsgs) != 0 || len(c.outRecs) != 0 {
		c.compactArena()
	} else {
		c.outArena = c.outArena[:0]
	}
	c.sink = nil
}

// checkStalls notes each reliable stream's progress and reports the ones
// that made none for StallWarning. O(streams), no allocation. A stream
// that holds nothing is passed over: the check would restart its stall
// clock, and SendReliable does that when it next holds a message
// (restartIdle).
func (c *Channel) checkStalls() {
	c.reliableTot.checks++
	c.prevCheckAt, c.stallCheckAt = c.stallCheckAt, c.now
	if c.reliableTot.held == 0 {
		return
	}
	// left is how many of the streams that hold messages are still to be
	// checked: the walk stops after the last (most channels use one
	// stream of several). An OnStall handler may send on a later stream,
	// so after one the walk goes to the end (left < 0 never reaches 0).
	left := c.reliableTot.busy
	for s, rs := range c.reliable {
		// The first Flush starts every stream's stall clock: a message
		// queued before it would otherwise be measured from time 0, and a
		// channel created at a now past StallTimeout (any clock that does
		// not start with the session) would stall at its first Flush.
		if rs.unacked == 0 {
			continue
		}
		left--
		if rs.progress != rs.seen || c.flushes == 1 {
			rs.progressAt, rs.seen, rs.warned = c.now, rs.progress, false
		} else if stalled := c.now - rs.progressAt; !rs.warned && stalled >= c.cfg.StallWarning {
			rs.warned = true
			c.stats.Stalls++
			if h, ok := c.handler.(StallHandler); ok {
				c.stallPos = s + 1 // a message it sends on a later stream meets that stream unchecked
				h.OnStall(uint8(s), rs.unacked, stalled)
				c.stallPos = len(c.reliable)
				left = -1
			}
		}
		if left == 0 {
			return
		}
	}
}

// Stalled returns nil, or an error wrapping ErrStalled once a reliable
// stream has held messages without progress (no message released, no
// piece of a large one acked) for Config.StallTimeout
// (as of the last Flush): the session cannot make progress and should end
// (an Endpoint ends it with wire.DisconnectStalled). O(streams).
func (c *Channel) Stalled() error {
	if c.cfg.StallTimeout == NoStallTimeout {
		return nil
	}
	// Only a stream that holds messages can be stalled, and busy of them
	// do: the walk stops after the last (as checkStalls's does), so a
	// channel that uses one stream of several does not read the state of
	// the streams after it, cold on a server with many peers.
	left := c.reliableTot.busy
	for s, rs := range c.reliable {
		if left == 0 {
			break
		}
		if rs.unacked == 0 {
			continue
		}
		left--
		if rs.progress == rs.seen && c.now-rs.progressAt >= c.cfg.StallTimeout {
			return fmt.Errorf("%w: stream %d held %d messages with none released and no piece acked for %v (StallTimeout %v)",
				ErrStalled, s, rs.unacked, c.now-rs.progressAt, c.cfg.StallTimeout)
		}
	}
	return nil
}

// NextDeadline returns the earliest time on the channel's clock at which
// Flush has something to do, and true; it is in the past (the time of the
// last Flush) when a Flush is due at once: before the first Flush, after
// a Send, Disconnect or Receive since the last one, or when the last one
// stopped at MaxDatagramsPerFlush with more to send. Otherwise it is the
// earliest of: a redundant copy due in a datagram of its own (an unacked
// small reliable message whose last transmission is 5/4 RedundancyInterval
// old: from RedundancyInterval on, the copy rides in whatever datagram a
// Flush sends, and the extra quarter lets it ride in the game's next one
// rather than leave alone microseconds before it — a 60 Hz game's next
// message is due one interval after the last; with RedundancyAdaptive only
// while the link is lossy and within the copy bounds), a delayed ack's due
// time (Config.AckDelay), a loss verdict by time (the SendTracker's next
// expiry, which also frees the in-flight window that held anything back),
// a partial reassembly's expiry, a stall warning or StallTimeout, the send
// budget's next pacing slot when the last Flush held something back for
// lack of tokens (when the bucket turns positive, at least 1 ms on), and
// the keep-alive (KeepAliveInterval after the last datagram sent), which
// always exists. A loop that Flushes at that time, and whenever a datagram
// arrives, runs every timer of the channel on time: this is what lets an
// event loop sleep until something is due instead of waking on a fixed
// period. Cost: O(streams + unacked reliable messages), no allocation.
func (c *Channel) NextDeadline() (time.Duration, bool) {
	if c.flushes == 0 || c.wantFlush || c.budgetHit || c.closing {
		return c.now, true
	}
	at := c.lastSend + KeepAliveInterval
	if c.ackDirty {
		if c.ackDueAt <= c.now {
			return c.now, true
		}
		at = min(at, c.ackDueAt)
	}
	if c.budget.paced {
		at = min(at, c.budget.nextSlot(c.now)) // the pacing slot
	}
	if t, ok := c.tracker.NextExpiry(); ok {
		at = min(at, t)
	}
	if t, ok := c.assembler.NextExpiry(); ok {
		at = min(at, t)
	}
	for _, rs := range c.reliable {
		if rs.unacked == 0 {
			continue
		}
		if !rs.warned {
			at = min(at, rs.progressAt+c.cfg.StallWarning)
		}
		if t := rs.progressAt + c.cfg.StallTimeout; c.cfg.StallTimeout != NoStallTimeout && t > c.now {
			at = min(at, t) // once passed, Stalled says so: no timer left
		}
	}
	if budget := c.cfg.RedundancyBytes; budget > 0 && c.cfg.RedundancyInterval > 0 && c.redundancyOn() {
		// (With RedundancyInterval 0 copies ride every Flush, whenever it
		// runs: they set no time of their own.)
		// A copy already due rode nowhere in the last Flush for lack of
		// room; the next Flush gives it a datagram of its own, unless the
		// in-flight window keeps it back (then it waits for an ack or a
		// verdict, or rides with other traffic).
		own := c.tracker.InFlightRoom() > c.inFlightMargin()
		maxCopies, ackDue := c.copyBounds()
		for _, rs := range c.reliable {
			for id := rs.oldest; id != rs.next; id++ {
				sl := rs.slot(id)
				if sl == nil || !sl.sent || sl.frag != nil || len(sl.buf) > budget || sl.copies >= maxCopies {
					continue
				}
				t := sl.lastSentAt + c.cfg.RedundancyInterval + c.cfg.RedundancyInterval/4 // see the doc comment
				if max(t, c.now)-sl.txAt >= ackDue {
					continue // its ack is due first: no copy (as flushRedundant judges at max(t, now))
				}
				if t <= c.now {
					if !own {
						continue
					}
					return c.now, true
				}
				at = min(at, t)
			}
		}
	}
	return at, true
}

// KeepAliveInterval is how long a channel stays silent before Flush sends a
// keep-alive, so the peer's idle time-out sees it alive and its acks flow.
// An idle time-out must be several times longer.
const KeepAliveInterval = 250 * time.Millisecond

// flushRecords sends queued records in order. A record goes out whole in
// this Flush or waits: its datagrams must all fit the in-flight window and
// this Flush's datagram budget, since one evicted datagram would abandon it.
func (c *Channel) flushRecords() {
	single := c.single
	piece := c.pieceSize
	n := len(c.outRecs) // records queued by a handler during this Flush wait for the next
	if n == 0 {
		return
	}
	sent := 0
	for ; sent < n; sent++ {
		q := c.outRecs[sent]
		frame := c.outArena[q.off : q.off+q.n]
		count := 1
		if len(frame) > single {
			count = (len(frame) + piece - 1) / piece
		}
		if count > 1 || c.curRec != ackmap.NoRecord || !c.fits(len(frame)) {
			// The record needs fresh datagrams: check they are all there.
			c.finish()
			if c.burst+count > c.cfg.MaxDatagramsPerFlush {
				c.budgetHit = true
				break
			}
			if c.tracker.InFlightRoom() < count || !c.budget.mayOpen() {
				break
			}
		}
		id := c.tracker.Open(q.tag)
		if count == 1 {
			c.room(len(frame))
			c.cur = append(c.cur, frame...)
			c.curFrame++
			c.curRec, c.sealAfter = id, id
			continue
		}
		fragID := c.nextFragID()
		for k := 0; k < count; k++ {
			f := pieceOf(frame, wire.FrameActionStream, fragID, k, count, piece)
			if c.curRec != ackmap.NoRecord || !c.fits(wire.FragmentFrameLen(f)) {
				c.finish()
			}
			c.room(wire.FragmentFrameLen(f))
			c.cur = wire.AppendFragmentFrame(c.cur, f)
			c.curFrame++
			c.stats.FragmentsSent++
			c.curRec = id
		}
		c.sealAfter = id
	}
	c.outRecs = append(c.outRecs[:0], c.outRecs[sent:]...)
}

// flushReliable sends the reliable messages that are due — new ones, ones
// a loss verdict marked for re-sending, and the due pieces of large ones —
// taking the streams in turn, one message or piece from each per round, so
// a stream of large messages never starves the others (the first stream
// served rotates from Flush to Flush). It stops when this Flush's datagram
// budget is spent or the in-flight window has no more room: sending more
// than the window holds would evict the channel's own datagrams as lost
// before their acks could return, so what is not sent now stays due for
// the next Flush.
func (c *Channel) flushReliable() {
	if c.reliableTot.due == 0 {
		return // nothing due on any stream: every round would send nothing
	}
	streams := c.reliable
	n := len(streams)
	for round, progress := 0, true; progress; round++ {
		progress = false
		s := c.rotor // the first stream served: flushes % n
		for range n {
			rs := streams[s]
			// A stream's walk starts at the first message that may be
			// due (firstDue): from its oldest, the walk would pass over
			// everything before it. A stream with nothing due, or
			// nothing from its cursor on, is idle: sendNextReliable
			// would walk to its end and find nothing. Its cursor goes
			// there all the same, so a message that a loss verdict in
			// this Flush makes due again is taken only where that walk
			// would have taken it.
			if rs.due == 0 {
				rs.cursor = rs.next
			} else {
				if round == 0 {
					rs.cursor = rs.firstDue
				}
				if rs.cursor != rs.next {
					switch c.sendNextReliable(uint8(s)) {
					case sendBlocked:
						return
					case sendProgress:
						progress = true
					}
					// (Only a send, and what it dispatches, changes
					// the totals: an idle stream leaves them as they
					// were, non-zero.)
					if c.reliableTot.due == 0 {
						return // the rest of this round and the next would find nothing
					}
				}
			}
			if s++; s == n {
				s = 0
			}
		}
	}
}

// sendOutcome is what sendNextReliable did.
type sendOutcome uint8

const (
	sendIdle     sendOutcome = iota // nothing due on the stream
	sendProgress                    // one message or piece went out
	sendBlocked                     // no room left in this Flush: stop
)

// sendNextReliable sends the next due message of stream s — or the next
// due piece of a large one — from the stream's cursor on.
func (c *Channel) sendNextReliable(s uint8) sendOutcome {
	rs := c.reliable[s]
	single := c.single
	for id := rs.cursor; id != rs.next; id++ {
		rs.cursor = id
		sl := rs.slot(id)
		switch {
		case sl == nil:
			continue // acked
		case len(sl.buf) > single:
			if sl.frag != nil && !anyBit(&sl.frag.due) {
				continue // every piece in flight or acked
			}
			return c.sendPiece(s, sl)
		case sl.sent && (!sl.resend || sl.lastSent == c.flushes):
			continue // in flight (the redundancy pass may add a copy), or sent in this Flush
		}
		if !c.reliableRoom(len(sl.buf)) {
			return sendBlocked
		}
		if sl.sent {
			c.stats.ReliableResent++
		}
		c.cur = append(c.cur, sl.buf...)
		c.curFrame++
		c.note(manifestEntry{id: sl.id, stream: s})
		sl.sent, sl.resend, sl.lastSent, sl.lastSentAt, sl.state = true, false, c.flushes, c.now, msgInFlight
		sl.txAt, sl.copies = c.now, 0
		rs.subDue(id) // it was due: never sent, or marked for re-sending
		rs.cursor = id + 1
		return sendProgress
	}
	rs.cursor = rs.next
	return sendIdle
}

// sendPiece sends the first due piece of large message sl (all of them are
// due when it starts) as a ReliablePiece frame.
func (c *Channel) sendPiece(s uint8, sl *sendSlot) sendOutcome {
	piece := c.pieceSize
	f := sl.frag
	payload := reliablePayload(sl.buf)
	if f == nil {
		f = c.reliable[s].newFrag()
		f.count = (len(payload) + piece - 1) / piece
		for i := range f.count {
			setBit(&f.due, i)
		}
		sl.frag = f
	}
	i := firstBit(&f.due, f.count)
	end := min((i+1)*piece, len(payload))
	pf := wire.ReliablePieceFrame{Stream: s, MessageID: sl.id, Index: uint8(i), Count: uint8(f.count), Payload: payload[i*piece : end]}
	if !c.reliableRoom(wire.ReliablePieceFrameLen(pf)) {
		return sendBlocked
	}
	if bitSet(&f.sentMask, i) {
		c.stats.ReliableResent++
	}
	setBit(&f.sentMask, i)
	clearBit(&f.due, i)
	if !anyBit(&f.due) {
		c.reliable[s].subDue(sl.id) // its last due piece is on its way
	}
	c.cur = wire.AppendReliablePieceFrame(c.cur, pf)
	c.curFrame++
	c.stats.FragmentsSent++
	c.note(manifestEntry{id: sl.id, stream: s, piece: uint8(i), frag: true})
	sl.sent, sl.state, sl.lastSent, sl.lastSentAt = true, msgInFlight, c.flushes, c.now
	return sendProgress
}

// reliablePayload returns the payload of a reliable frame encoding.
func reliablePayload(frame []byte) []byte {
	f, _, _ := wire.ParseReliableFrame(frame) // encoded by SendReliable
	return f.Payload
}

// reliableRoom makes room for n bytes of reliable content in the open
// datagram, or opens a new one if the in-flight window has room for it
// beyond the margin kept for other traffic and the datagram budget allows.
// It reports false, with nothing new open, when it cannot.
func (c *Channel) reliableRoom(n int) bool {
	if c.cur != nil && len(c.cur)+n <= c.limit && c.man.n < manifestCap {
		return true
	}
	if c.inFlightRoom() <= c.inFlightMargin() {
		return false
	}
	c.finish()
	if !c.budget.mayOpen() {
		return false
	}
	return c.beginRoom() // (room(n) with none open: openRoom, whose finish has nothing left to do)
}

// flushQueued sends queued unreliable and sequenced messages in order. A
// large one goes out piece by piece, paced like reliable pieces; what does
// not fit this Flush waits for the next, in order.
func (c *Channel) flushQueued() {
	single := c.single
	piece := c.pieceSize
	n := len(c.outMsgs) // messages queued by a handler during this Flush wait for the next
	if n == 0 {
		c.outBytes = 0
		return
	}
	done := 0
	for ; done < n; done++ {
		q := &c.outMsgs[done]
		frame := c.outArena[q.off : q.off+q.n]
		if len(frame) <= single {
			if !c.pacedRoom(len(frame)) {
				break
			}
			c.cur = append(c.cur, frame...)
			c.curFrame++
			continue
		}
		count := (len(frame) + piece - 1) / piece
		for ; int(q.piece) < count; q.piece++ {
			f := pieceOf(frame, wire.FrameType(frame[0]), q.fragID, int(q.piece), count, piece)
			if c.inFlightRoom() <= c.inFlightMargin()/2 || !c.pacedRoom(wire.FragmentFrameLen(f)) {
				break
			}
			if q.piece == 0 {
				// The id is taken when the first piece leaves, not at
				// every Flush that finds no room for it: ids run out no
				// faster than messages go.
				q.fragID = c.nextFragID()
				f.MessageID = q.fragID
			}
			c.cur = wire.AppendFragmentFrame(c.cur, f)
			c.curFrame++
			c.stats.FragmentsSent++
		}
		if int(q.piece) < count {
			break
		}
	}
	c.outBytes = 0
	if done == len(c.outMsgs) {
		c.outMsgs = c.outMsgs[:0] // all sent (the common Flush)
		return
	}
	c.outMsgs = append(c.outMsgs[:0], c.outMsgs[done:]...)
	for _, q := range c.outMsgs {
		c.outBytes += int(q.n)
	}
}

// compactArena drops the frame bytes of messages already sent, keeping those
// queued by a handler during Flush at the front of the arena.
func (c *Channel) compactArena() {
	if len(c.outMsgs) == 0 && len(c.outRecs) == 0 {
		c.outArena = c.outArena[:0]
		return
	}
	// Walk both queues in arena order, moving each frame to the front; a
	// frame only ever moves toward lower offsets, over bytes already moved
	// or already sent.
	var off int32
	i, j := 0, 0
	for i < len(c.outRecs) || j < len(c.outMsgs) {
		var q *queued
		if j == len(c.outMsgs) || i < len(c.outRecs) && c.outRecs[i].off < c.outMsgs[j].off {
			q, i = &c.outRecs[i], i+1
		} else {
			q, j = &c.outMsgs[j], j+1
		}
		if off != q.off {
			copy(c.outArena[off:], c.outArena[q.off:q.off+q.n])
			q.off = off
		}
		off += q.n
	}
	c.outArena = c.outArena[:off]
}

// flushRedundant lets unacked small reliable messages ride again, oldest
// first, each at most once per Flush and about once per RedundancyInterval
// (a duration, so a loop that Flushes every millisecond sends no more
// copies than a 60 Hz one): in the room this Flush's last datagram has
// left, up to RedundancyBytes, once 3/4 of the interval has passed since
// the message last went (so a game whose messages leave 16 or 17 ms apart
// at 60 Hz carries each copy in its next datagram), or — if nothing else
// went out — in a datagram of its own once 5/4 of it has (the game's next
// datagram was due before that; NextDeadline wakes the loop then), while
// the in-flight window has room. A lost message then costs one interval,
// not a loss verdict's round trip.
//
// Flush calls it only when there is room for a copy (a datagram open, or
// none sent in this Flush) and copies may ride now: redundancyOn, asked
// there in that order, as this pass asked it when it started.
func (c *Channel) flushRedundant() {
	budget := c.cfg.RedundancyBytes
	maxCopies, ackDue := c.copyBounds()
	ival := c.cfg.RedundancyInterval
	ride, alone := ival-ival/4, ival+ival/4 // see the doc comment
	for s, rs := range c.reliable {
		for id := rs.oldest; id != rs.next; id++ {
			sl := rs.slot(id)
			if sl == nil || !sl.sent || sl.frag != nil || sl.lastSent == c.flushes || len(sl.buf) > budget ||
				c.now-sl.lastSentAt < ride || sl.copies >= maxCopies || c.now-sl.txAt >= ackDue {
				continue
			}
			if c.cur == nil && c.now-sl.lastSentAt < alone {
				continue // not yet worth a datagram of its own
			}
			if c.cur != nil && (c.curRedun+len(sl.buf) > budget || len(c.cur)+len(sl.buf) > c.limit || c.man.n == manifestCap) {
				return // this Flush's redundancy budget is spent
			}
			if c.budget.on && (c.budget.congested() || c.budget.tokens-int64(len(c.cur)) <= int64(len(sl.buf))) {
				// Over budget: redundant copies are the first to stay
				// home (counted; the message itself is still in flight).
				c.budget.shed(ShedRedundant, len(sl.buf))
				sl.lastSentAt = c.now // its next chance is an interval on
				continue
			}
			if c.cur == nil && c.inFlightRoom() <= c.inFlightMargin() {
				// A copy in a datagram of its own takes a place in the
				// in-flight window: never so many that the window evicts
				// the datagrams whose acks would release these messages.
				return
			}
			if !c.room(len(sl.buf)) {
				return
			}
			c.cur = append(c.cur, sl.buf...)
			c.curFrame++
			c.curRedun += len(sl.buf)
			c.note(manifestEntry{id: sl.id, stream: uint8(s)})
			sl.lastSent, sl.lastSentAt = c.flushes, c.now
			sl.copies++
			c.stats.RedundantCopies++
			c.stats.RedundantBytes += uint64(len(sl.buf))
		}
	}
}

// redundancyWarmup is how many datagram verdicts the loss estimate needs
// before adaptive redundancy trusts it to say "clean": until then copies
// ride (as many as the estimate calls for, at least one), since a loss
// early in a session — when the estimate knows nothing — would otherwise
// cost a loss verdict's round trip, and every ordered message behind it
// with it. About half a second at 60 Hz; the estimate, whose gain is
// 1/256, then still underweights what it saw, but one loss among those
// verdicts is enough to keep copies on.
const redundancyWarmup = 32

// redundancyOn reports whether redundant copies may ride now
// (Config.Redundancy): always, never, or — adaptive — while the link shows
// loss: from the start until the estimate has seen redundancyWarmup
// verdicts, then switched on at RedundancyOnAbove and off below
// RedundancyOffBelow of the tracker's LinkLoss, which a loss verdict
// lifts at once (so the Flush that learns of a loss already sends copies)
// and a spurious one gives back. O(1).
func (c *Channel) redundancyOn() bool {
	switch c.cfg.Redundancy {
	case RedundancyAlways:
		return true
	case RedundancyOff:
		return false
	}
	if c.tracker.Verdicts() < redundancyWarmup {
		c.lossy = true // nothing known yet: the first loss must not cost a round trip
		return true
	}
	est := c.tracker.LinkLoss()
	if c.lossy {
		c.lossy = est >= RedundancyOffBelow
	} else {
		c.lossy = est >= RedundancyOnAbove
	}
	return c.lossy
}

// copyMissTarget is how rarely RedundancyAdaptive lets a message and all
// its copies be lost: once in a hundred, which keeps a 10 %-loss link at
// one copy per message (the bytes goal: 1.5× kcp-go's); eagerMissTarget is
// RedundancyEager's, once in 10,000. On an ordered stream one miss holds
// back every message behind it for a loss verdict's round trip, so the
// eager target sits far below the 1 % of a p99.
const (
	copyMissTarget  = 1e-2
	eagerMissTarget = 1e-4
)

// copyBounds returns how many copies one transmission of a message may
// get and how long after it (sendSlot.txAt) the last may leave: for
// RedundancyAdaptive and RedundancyEager, the fewest copies k with
// LinkLoss^(k+1) at most the mode's miss target
// (in [1, MaxCopies]) and the time its ack can first be back, the smallest
// RTT sample plus the peer's ack delay (no bound before an RTT sample): a
// copy that would leave later than that races its own ack, and on a
// jittery path about half of those copies would follow an ack already on
// its way (SRTT is the middle of the spread, not its start). For RedundancyAlways,
// no bound. O(MaxCopies).
func (c *Channel) copyBounds() (maxCopies uint8, ackDue time.Duration) {
	target := copyMissTarget
	switch c.cfg.Redundancy {
	case RedundancyAdaptive:
	case RedundancyEager:
		target = eagerMissTarget
	default:
		return math.MaxUint8, math.MaxInt64
	}
	p := c.tracker.LinkLoss()
	k, miss := uint8(1), p*p
	for miss > target && k < MaxCopies {
		miss *= p
		k++
	}
	ackDue = math.MaxInt64
	if rtt := c.tracker.RTT(); rtt.HasSample() {
		ackDue = min(rtt.Smoothed(), rtt.Min()) + c.tracker.PeerAckDelay()
	}
	return k, ackDue
}

// ackDelay is how long an owed ack may wait for data to ride on
// (Config.AckDelay): min(AckDelay, SRTT/4), 0 before an RTT sample; for a
// datagram that held only duplicates, at least SRTT/4 (at most
// wire.MaxAckDelay), whatever AckDelay.
func (c *Channel) ackDelay(dupOnly bool) time.Duration {
	rtt := c.tracker.RTT()
	if !rtt.HasSample() {
		return 0
	}
	quarter := min(rtt.Smoothed()/4, wire.MaxAckDelay)
	if dupOnly {
		return quarter
	}
	if c.cfg.AckDelay == NoAckDelay {
		return 0
	}
	return min(c.cfg.AckDelay, quarter)
}

// pieceOf returns fragment i of count of frame, each pieceSize bytes but
// the last.
func pieceOf(frame []byte, mode wire.FrameType, fragID wire.Seq, i, count, pieceSize int) wire.FragmentFrame {
	end := min((i+1)*pieceSize, len(frame))
	return wire.FragmentFrame{Mode: mode, MessageID: fragID, Index: uint8(i), Count: uint8(count), Payload: frame[i*pieceSize : end]}
}

// inFlightRoom is how many more datagrams fit the in-flight window,
// counting the one being built.
func (c *Channel) inFlightRoom() int {
	room := c.tracker.InFlightRoom()
	if c.cur != nil {
		room--
	}
	return room
}

// inFlightMargin is the in-flight room that reliable content leaves for
// other traffic, so that paced bulk never makes it evict. The pieces of
// large unreliable and sequenced messages may use half of it (the other
// half stays for small messages, records and keep-alives): reliable
// content, sent first in every Flush, can then never starve them.
func (c *Channel) inFlightMargin() int { return c.margin }

// MaxRecordSize returns the largest payload SendRecord accepts: a record's
// datagrams go out together in one Flush and must all be in flight at once
// (its verdict needs every one acked), so it spans at most half the
// in-flight window and at most MaxDatagramsPerFlush datagrams.
func (c *Channel) MaxRecordSize() int {
	pieces := min(wire.MaxFragments, c.tracker.Config().MaxInFlight/2, c.cfg.MaxDatagramsPerFlush)
	return min(c.cfg.MaxMessageSize, pieces*c.pieceSize-maxFraming)
}

func (c *Channel) nextFragID() wire.Seq {
	id := c.fragNext
	c.fragNext++
	return id
}

// begin starts a datagram: session header, channel header.
func (c *Channel) begin() {
	cur := c.sink.Buffer()[:0] // (built in a local: c.cur is stored once)
	if c.sealed {
		cur = cur[:sealHeaderLen] // Seal writes it
	} else {
		cur = wire.AppendSessionHeader(cur, wire.SessionHeader{Secret: c.secret})
	}
	h := wire.ChannelHeader{Seq: c.tracker.NextSeq()}
	var ok bool
	h.Ack, h.AckBits, ok = c.history.Ack()
	h.NoAck = !ok
	// Every header states the delay, not only the first after the newest
	// seq arrived: when that one is lost, the next is the peer's sample
	// (it gives none from a newest it has seen acked), and a 0 there read
	// the whole wait as round trip (20 % loss, random wake-ups: the budget
	// backed off for queues that were not there).
	if ok {
		h.AckDelay = wire.AckDelayUnits(c.now - c.newestAt)
	}
	c.cur = wire.AppendChannelHeader(cur, h)
	c.man.n = 0
	c.curFrame, c.curRec, c.curRedun = 0, ackmap.NoRecord, 0
}

// room makes sure a datagram is open with n more bytes of room, finishing
// the open one first if it lacks them. It returns false, with nothing open,
// when a new datagram is needed but this Flush has sent
// MaxDatagramsPerFlush already.
func (c *Channel) room(n int) bool {
	if c.cur != nil && len(c.cur)+n <= c.limit {
		return true // (inlined)
	}
	return c.openRoom()
}

// openRoom is room's slow path: finish the open datagram, begin another.
func (c *Channel) openRoom() bool {
	c.finish()
	return c.beginRoom()
}

// beginRoom begins a datagram when none is open, or returns false, with
// none open, when this Flush has sent MaxDatagramsPerFlush already.
func (c *Channel) beginRoom() bool {
	if c.burst >= c.cfg.MaxDatagramsPerFlush {
		c.budgetHit = true
		return false
	}
	c.begin()
	return true
}

// tagLen is the AEAD tag the endpoint's Seal appends to each datagram
// (0 for cleartext), so BytesSent counts the bytes on the wire.
func (c *Channel) tagLen() int {
	if c.sealed {
		return seal.TagLen
	}
	return 0
}

// pacedRoom is room for traffic the send budget paces: a new datagram opens
// only while the bucket has tokens (budget.mayOpen) and unreliable traffic
// need not wait for the span of seqs (spanWait).
func (c *Channel) pacedRoom(n int) bool {
	if !c.fits(n) {
		if c.spanWait() {
			// Untracked near a full window (finish), these datagrams
			// still take seqs of the span: past it, each would evict the
			// oldest datagram awaiting a verdict, and a stream of them
			// on a long round trip would evict every one before its ack
			// returned. Wait for acks instead (an ack wakes the loop;
			// the next Flush sheds what went stale meanwhile, as when
			// the budget paces).
			if !c.spanHeld {
				c.spanHeld = true
				c.stats.SpanWaits++
			}
			c.finish()
			return false
		}
		if !c.budget.mayOpen() {
			c.finish()
			return false
		}
	}
	return c.room(n)
}

// spanWait reports whether unreliable and sequenced traffic waits for
// acks rather than open a datagram: the span of seqs has no room beyond
// half the in-flight margin, and acks are arriving (an ack header within
// two smoothed RTTs plus KeepAliveInterval: a live peer sends one at least
// that often). With none arriving — a return path down, a peer gone —
// waiting would hold the traffic until a time-out frees the span (the
// RTO backs off to seconds), so it goes out and evicts as it always did.
func (c *Channel) spanWait() bool {
	if c.spanRoom() > c.inFlightMargin()/2 {
		return false
	}
	return c.now-c.ackAt <= 2*c.tracker.RTT().Smoothed()+KeepAliveInterval
}

// spanRoom is how many more datagrams the span of seqs from the oldest
// one awaiting a verdict holds before a send evicts it
// (SendTracker.SpanLimit less Span), counting the one being built.
func (c *Channel) spanRoom() int {
	room := c.tracker.SpanLimit() - c.tracker.Span()
	if c.cur != nil {
		room--
	}
	return room
}

// fits reports whether n more bytes fit the open datagram.
func (c *Channel) fits(n int) bool { return c.cur != nil && len(c.cur)+n <= c.limit }

// note records that the open datagram carries e.
func (c *Channel) note(e manifestEntry) {
	c.man.entries[c.man.n] = e
	c.man.n++
}

// finish hands the datagram being built, if any, to the sink and gives
// it its seq. It is inlined: a Flush calls it where a datagram may be
// open, most often when none is.
func (c *Channel) finish() {
	if c.cur != nil {
		c.finishDatagram()
	}
}

func (c *Channel) finishDatagram() {
	var seq wire.Seq
	var evs []ackmap.Event
	tracked := c.curFrame > 0
	if tracked && c.man.n == 0 && c.curRec == ackmap.NoRecord && c.tracker.InFlightRoom() <= 2*c.inFlightMargin() {
		// Only unreliable and sequenced frames (nothing waits for this
		// datagram's verdict), and the in-flight window nearly full: the
		// datagram goes untracked, as a standalone ack does. Tracked, a
		// stream of them would evict every pending seq before its ack
		// could return on a path whose round trip outlasts the window —
		// no ack, no RTT sample, and reliable messages never released
		// (the stream stalls) — and would take the room the reliable
		// path keeps (inFlightMargin). The peer acks it all the same.
		tracked = false
	}
	switch {
	case c.curFrame == 0:
		// A standalone ack elicits no ack, so it expects no verdict.
		seq, evs = c.tracker.Skip(c.events[:0])
	case !tracked:
		// The peer acks it, but its ack must give no RTT sample.
		seq, evs = c.tracker.SkipAckEliciting(c.events[:0])
	default:
		seq, evs = c.tracker.Send(c.events[:0], c.now, c.curRec)
	}
	// A send that evicted the oldest pending seq reports its loss here.
	// Dispatch it before the new datagram claims its manifest slot: the
	// ring may put the evicted seq and the new one in the same slot, and
	// the evicted datagram's messages must learn they need re-sending.
	c.dispatch(evs)
	evs = c.events[:0]
	c.manifests.sent(seq)
	if c.man.n > 0 {
		c.manifests.put(seq, c.man.entries[:c.man.n])
	}
	if c.sealAfter != ackmap.NoRecord && c.sealAfter == c.curRec {
		evs = c.tracker.Seal(evs, c.sealAfter)
		c.sealAfter = ackmap.NoRecord
	}
	wireLen := len(c.cur) + c.tagLen()
	c.budget.spend(wireLen, tracked)
	c.stats.DatagramsSent++
	c.stats.BytesSent += uint64(wireLen)
	if c.curFrame == 0 {
		c.stats.AckOnlySent++
	}
	c.sink.Commit(c.cur)
	c.cur, c.sentAny, c.ackDirty, c.unacked, c.lastSend = nil, true, false, 0, c.now
	c.burst++
	c.dispatch(evs)
}

// Receive processes one datagram from the peer: b starts at the channel
// header (the caller has checked the session header). Every frame is
// validated before any is applied; a malformed datagram is dropped whole,
// counted, and returned as an error wrapping ErrMalformed. Duplicates and
// seqs too old to judge are dropped and counted without error. Deliveries
// and verdicts reach the Handler before Receive returns. now is the
// channel's clock, as for Flush. Receive(now, b) is ReceiveAged(now, 0, b).
func (c *Channel) Receive(now time.Duration, b []byte) error {
	return c.ReceiveAged(now, 0, b)
}

// ReceiveAged is Receive for a datagram that had waited age in the socket
// before the loop read it (socket.Message.Age; 0 if unknown), with now the
// time of the read and age on the same clock. The datagram counts as
// arrived at now − age: the RTT sample its ack gives (SRTT, the time-out,
// the send budget's queuing delay) runs to then, and the ack delay this
// end states for it on the wire counts from then. A loop that reads its
// socket only when it wakes — a fixed tick, wake-ups at random — would
// otherwise take its own wake-up gaps for delay on the path: its send
// budget would hold it back on a clean path, and its peer's would too.
// A negative age counts as 0. Cost as Receive.
func (c *Channel) ReceiveAged(now, age time.Duration, b []byte) error {
	c.rxAt = c.arrival(now, age)
	c.stats.DatagramsReceived++
	c.stats.BytesReceived += uint64(len(b))
	h, n, err := wire.ParseChannelHeader(b)
	if err != nil {
		c.stats.Malformed++
		return fmt.Errorf("%w: channel header: %w", ErrMalformed, err)
	}
	frames := b[n:]
	// The first frame, when it is a reliable or unreliable one (the
	// common datagram), is parsed once: validated by scanFrames and
	// delivered from f0 below.
	var f0 firstFrame
	nframes, err := scanFrames(frames, &f0)
	if err != nil {
		c.stats.Malformed++
		return fmt.Errorf("%w: frame: %w", ErrMalformed, err)
	}
	switch c.history.Record(h.Seq) {
	case ackmap.RecvDuplicate:
		c.stats.Duplicates++
		return nil
	case ackmap.RecvTooOld:
		c.stats.TooOld++
		return nil
	}
	if newest, _, _ := c.history.Ack(); newest == h.Seq {
		c.newestAt = c.rxAt
	}
	c.wantFlush = true // acks, verdicts and an ack owed: the next Flush may have work
	if !h.NoAck {
		c.receiveAck(now, &h, ackDelayKnown(h, n))
	}
	if len(frames) == 0 {
		c.stats.AckOnlyReceived++
		return nil
	}
	dups := c.stats.ReliableDuplicates
	if f0.n > 0 {
		r := f0.r
		if f0.t == wire.FrameReliable {
			if int(r.Stream) < len(c.rrecv) && c.rrecv[r.Stream].ordered && r.MessageID == c.rrecv[r.Stream].next {
				c.deliverReliable(c.rrecv[r.Stream], r.Stream, r.MessageID, r.Payload) // receiveReliable's common case
			} else {
				c.receiveReliable(r)
			}
		} else {
			c.deliver(Message{Delivery: Unreliable, Payload: f0.r.Payload})
		}
	}
	if f0.n < len(frames) { // (not the common datagram, one frame parsed as f0)
		for rest := frames[f0.n:]; len(rest) > 0; {
			rest = rest[c.deliverFrame(rest, now, true):] // validated above
		}
	}
	// The ack is owed; it leaves with the next datagram, or alone once
	// due. A datagram of nothing but duplicates (redundant copies of
	// messages already here) waits longer: acking it at once tells the
	// peer nothing it needs soon.
	dupOnly := c.stats.ReliableDuplicates-dups == uint64(nframes)
	if dupOnly {
		c.stats.DuplicateOnly++
	}
	due := now + c.ackDelay(dupOnly)
	if !c.ackDirty || due < c.ackDueAt {
		c.ackDueAt = due
	}
	c.ackDirty = true
	c.unacked++
	return nil
}

// firstFrame is the first frame of a datagram when it is a reliable or
// an unreliable one (t), parsed once by scanFrames: n is its length (0
// for any other first frame), r the frame (for an unreliable one, only
// its Payload).
type firstFrame struct {
	r wire.ReliableFrame
	t wire.FrameType
	n int
}

// scanFrames validates every frame of a datagram and returns how many
// there are; a reliable or unreliable first frame is kept in f0.
func scanFrames(frames []byte, f0 *firstFrame) (int, error) {
	if len(frames) == 0 {
		return 0, nil
	}
	var k int
	var err error
	switch t := wire.FrameType(frames[0]); t {
	case wire.FrameReliable:
		f0.r, k, err = wire.ParseReliableFrame(frames)
		f0.t, f0.n = t, k
	case wire.FrameUnreliable:
		var u wire.UnreliableFrame
		u, k, err = wire.ParseUnreliableFrame(frames)
		f0.r.Payload, f0.t, f0.n = u.Payload, t, k
	default:
		_, k, err = wire.SkipFrame(frames)
	}
	if err != nil {
		return 0, err
	}
	if k == len(frames) {
		return 1, nil // the common datagram: one frame
	}
	nframes := 1
	for rest := frames[k:]; len(rest) > 0; nframes++ {
		if _, k, err = wire.SkipFrame(rest); err != nil {
			return 0, err
		}
		rest = rest[k:]
	}
	return nframes, nil
}

// receiveAck applies the ack header h of a fresh datagram: the verdicts
// it gives, and the RTT sample it may give the send budget.
//
// The tracker takes the ack as of when it arrived (now less the time it
// waited in the socket, ReceiveAged), as the peer's ack delay counts from
// when the acked datagram arrived there: an RTT sample is then the path's
// round trip, not the wake-up gaps of the two loops (a loop that reads
// only at its wake-ups would read its own gaps as queuing, and the send
// budget would hold it back on a clean path). The retransmission time-out
// needs no allowance for the gap on this side: a loop reads before it
// Flushes, so an ack that arrived before the time-out is read before it
// is judged.
func (c *Channel) receiveAck(now time.Duration, h *wire.ChannelHeader, delayKnown bool) {
	c.ackAt = now
	at := c.rxAt
	evs, err := c.tracker.OnAckDelayed(c.events[:0], at, h.Ack, h.AckBits, time.Duration(h.AckDelay)*wire.AckDelayUnit)
	if err != nil {
		c.stats.AcksRefused++
	}
	c.dispatch(evs)
	if rtt := c.tracker.RTT(); c.budget.on && rtt.Samples() != c.budget.samples {
		c.budget.samples = rtt.Samples()
		// A saturated ack delay (the most the byte holds) says only that
		// the ack waited at least that long at the peer: the sample is an
		// upper bound, its excess would read as queuing, and the budget
		// takes none. One the header had no room for says nothing: the
		// sample (then the whole round trip) is taken less the peer's
		// mean stated delay and its mean deviation, but not below the
		// budget's base RTT — erring low, so a peer whose delays spread
		// widely (one that wakes at random) does not read as a queue —
		// and a lossy path, where such headers are common, keeps its
		// samples.
		// (The tracker takes both whole: an upper bound errs toward a
		// later time-out.)
		sample, d := rtt.Latest(), time.Duration(h.AckDelay)*wire.AckDelayUnit
		switch {
		case h.AckDelay == math.MaxUint8:
			sample = 0
		case delayKnown:
			c.budget.notePeerDelay(d)
		default:
			sample = max(sample-c.budget.peerDelay-c.budget.peerDev, c.budget.baseRTT())
		}
		if sample > 0 && c.budget.sample(at, sample) {
			c.budget.update(now, rtt.Smoothed(), rtt.Jitter(), c.tracker.Acked())
		}
	}
}

// arrival is when a datagram read at now after waiting age in the socket
// arrived: now − age. A socket hands datagrams out in the order they
// arrived, so an arrival before the last one is not believed: by up to
// arrivalSlack (rounding, a timestamp's resolution) it is the last one;
// by more, the age is off the loop's clock (a receive timestamp from
// another clock, a clock step), and the datagram counts as arrived at
// now, as with no age at all — a consistently wrong age would otherwise
// date every datagram at the last good arrival, and no RTT sample would
// ever come again.
func (c *Channel) arrival(now, age time.Duration) time.Duration {
	at := now - max(age, 0)
	switch {
	case at >= c.lastArrival:
	case c.lastArrival-at <= arrivalSlack:
		at = c.lastArrival
	default:
		at = max(now, c.lastArrival)
	}
	c.lastArrival = at
	return at
}

// arrivalSlack is how far an arrival may seem to precede the last one and
// still be taken as that one (see arrival).
const arrivalSlack = time.Millisecond

// ackDelayKnown reports whether the ack header h, n bytes on the wire,
// states its ack delay: a header as long as it can be has no room for one
// (wire.ChannelHeader), so its 0 says nothing. At 20 % loss, where all
// four ack-bits bytes are often present, about half the headers are such.
func ackDelayKnown(h wire.ChannelHeader, n int) bool {
	return h.AckDelay != 0 || n < wire.ChannelHeaderMaxLen
}

// deliverFrame applies the validated frame at the front of f and returns
// its length. Fragments are reassembled and the whole message delivered as
// the frame it encodes (never another fragment).
func (c *Channel) deliverFrame(f []byte, now time.Duration, allowFragment bool) int {
	var n int
	switch wire.FrameType(f[0]) {
	case wire.FrameUnreliable:
		var u wire.UnreliableFrame
		u, n, _ = wire.ParseUnreliableFrame(f)
		c.deliver(Message{Delivery: Unreliable, Payload: u.Payload})
	case wire.FrameSequenced:
		var s wire.SequencedFrame
		s, n, _ = wire.ParseSequencedFrame(f)
		switch {
		case int(s.Stream) >= len(c.seqRecv):
			c.stats.BadStream++
		case !c.seqRecv[s.Stream].accept(s.Seq):
			c.stats.SequencedStale++
		default:
			c.deliver(Message{Delivery: Sequenced, Stream: s.Stream, ID: s.Seq, Payload: s.Payload})
		}
	case wire.FrameReliable:
		var r wire.ReliableFrame
		r, n, _ = wire.ParseReliableFrame(f)
		c.receiveReliable(r)
	case wire.FrameActionStream:
		var a wire.ActionStreamFrame
		a, n, _ = wire.ParseActionStreamFrame(f)
		c.deliver(Message{Delivery: Record, Payload: a.Payload})
	case wire.FrameReliablePiece:
		var r wire.ReliablePieceFrame
		r, n, _ = wire.ParseReliablePieceFrame(f)
		c.receivePiece(r)
	case wire.FrameFragment:
		var fr wire.FragmentFrame
		fr, n, _ = wire.ParseFragmentFrame(f)
		if !allowFragment {
			c.stats.Malformed++
			break
		}
		c.fragsIn = true
		msg, err := c.assembler.Add(fr, now)
		if err != nil {
			c.stats.FragmentsRefused++
			break
		}
		if msg == nil {
			break
		}
		// The assembler checked msg is exactly one frame of type fr.Mode.
		c.deliverFrame(msg, now, false)
	case wire.FrameDisconnect:
		var d wire.DisconnectFrame
		d, n, _ = wire.ParseDisconnectFrame(f)
		c.handler.OnDisconnect(d.Reason)
	case wire.FrameKeepAlive:
		n = wire.KeepAliveFrameLen
	}
	return n
}

func (c *Channel) receiveReliable(r wire.ReliableFrame) {
	if int(r.Stream) >= len(c.rrecv) {
		c.stats.BadStream++
		return
	}
	rr := c.rrecv[r.Stream]
	if rr.ordered && r.MessageID == rr.next {
		// The next message of an ordered stream (the common case):
		// accept's verdict is recvDeliver.
		c.deliverReliable(rr, r.Stream, r.MessageID, r.Payload)
		return
	}
	c.reliableVerdict(rr, r.Stream, r.MessageID, r.Payload, rr.accept(r.MessageID, r.Payload))
}

// reliableVerdict counts what the receiver did with message id (or a piece
// of it) and, for recvDeliver, delivers msg and then every held message of
// an ordered stream that follows it.
func (c *Channel) reliableVerdict(rr *reliableReceiver, stream uint8, id wire.Seq, msg []byte, v recvVerdict) {
	switch v {
	case recvDuplicate:
		c.stats.ReliableDuplicates++
	case recvOutside:
		c.stats.ReliableOutside++
	case recvOverflow:
		c.stats.ReliableOverflow++
	case recvMalformed:
		c.stats.Malformed++
	case recvBuffered:
		c.stats.ReliableBuffered++
	case recvDeliver:
		c.deliverReliable(rr, stream, id, msg)
	}
}

// deliverReliable delivers message id, which the receiver rr said to
// deliver (recvDeliver), and then every held message of an ordered
// stream that follows it.
func (c *Channel) deliverReliable(rr *reliableReceiver, stream uint8, id wire.Seq, msg []byte) {
	c.deliver(Message{Delivery: Reliable, Stream: stream, ID: id, Payload: msg})
	rr.release(id)
	if !rr.ordered {
		return
	}
	for {
		next := rr.next + 1
		p, ok := rr.delivered()
		if !ok {
			return
		}
		c.deliver(Message{Delivery: Reliable, Stream: stream, ID: next, Payload: p})
		rr.release(next)
	}
}

// receivePiece takes one piece of a large reliable message into its
// stream's receive window and delivers the message once it is whole.
func (c *Channel) receivePiece(p wire.ReliablePieceFrame) {
	if int(p.Stream) >= len(c.rrecv) {
		c.stats.BadStream++
		return
	}
	if (int(p.Count)-1)*c.pieceSize+1 > c.cfg.MaxMessageSize {
		c.stats.Malformed++
		return
	}
	rr := c.rrecv[p.Stream]
	msg, v := rr.acceptPiece(p.MessageID, p.Index, p.Count, p.Payload, c.pieceSize)
	c.reliableVerdict(rr, p.Stream, p.MessageID, msg, v)
}

func (c *Channel) deliver(m Message) {
	c.stats.Delivered[m.Delivery]++
	c.handler.OnMessage(m)
}

// dispatch routes ack/loss verdicts to the reliable messages and records
// that the datagrams carried. It is inlined: most calls (a Flush's
// Expire, a send that evicted nothing) have no verdict to route.
func (c *Channel) dispatch(evs []ackmap.Event) {
	if len(evs) != 0 {
		c.dispatchEvents(evs)
	}
}

func (c *Channel) dispatchEvents(evs []ackmap.Event) {
	for i := range evs {
		ev := &evs[i]
		switch ev.Kind {
		case ackmap.SeqAcked, ackmap.SeqLost:
			off, n, ok := c.manifests.take(ev.Seq)
			if !ok {
				continue
			}
			acked := ev.Kind == ackmap.SeqAcked
			for i := range n {
				e := c.manifests.at(off, i)
				rs := c.reliable[e.stream]
				switch {
				case e.frag && acked:
					rs.ackPiece(e.id, int(e.piece))
				case e.frag:
					rs.lostPiece(e.id, int(e.piece))
				case acked:
					if sl := rs.slot(e.id); sl != nil {
						rs.release(sl) // ackWhole, inline
					}
				default:
					rs.lostWhole(e.id)
				}
			}
		case ackmap.RecordConfirmed:
			c.handler.OnRecord(ev.Tag, true)
		case ackmap.RecordAbandoned:
			c.handler.OnRecord(ev.Tag, false)
		}
	}
}

// AckUrgent is how many fresh datagrams a channel may receive between two
// of its own sends before it must ack at once: one ack header covers 33
// seqs, so a peer that sends faster than this channel Flushes would
// otherwise see its early datagrams age out of the window unacked — lost
// although they arrived — and re-send them forever.
const AckUrgent = 16

// AckDue reports whether the peer has sent AckUrgent or more datagrams
// since this channel last sent one, so an ack should go out now rather
// than at the next Flush (SendAck). An Endpoint checks it after each
// received batch.
func (c *Channel) AckDue() bool { return c.unacked >= AckUrgent }

// SendAck sends a standalone ack (a datagram with no frames, expecting no
// verdict) into sink at once. Use it between Flushes when AckDue says the
// peer is outrunning this channel's Flush rate. Cost: one header-only
// datagram; no allocation.
func (c *Channel) SendAck(now time.Duration, sink Sink) {
	c.now, c.sink = now, sink
	c.begin()
	c.finish()
	c.sink = nil
	c.stats.UrgentAcks++
}

// reliableIdle reports whether no reliable message is waiting for an ack.
func (c *Channel) reliableIdle() bool {
	for _, rs := range c.reliable {
		if rs.unacked > 0 {
			return false
		}
	}
	return true
}
