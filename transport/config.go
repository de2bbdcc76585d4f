package transport

import (
	"fmt"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/wire"
)

// maxAckDelay is the largest Config.AckDelay: what the header's ack-delay
// byte can state, in whole milliseconds.
const maxAckDelay = wire.MaxAckDelay / time.Millisecond * time.Millisecond

// Defaults applied by Config for zero-valued fields.
const (
	DefaultMTU              = 1200
	MinMTU                  = 576
	MaxMTU                  = 1472
	DefaultOrderedStreams   = 4
	DefaultSequencedStreams = 4
	DefaultReliableWindow   = 256
	DefaultReliableBytes    = 1 << 20
	DefaultRedundancyBytes  = 512
	// DefaultRedundancyInterval is one tick at 60 Hz.
	DefaultRedundancyInterval = time.Second / 60
	DefaultUnreliableBytes    = 256 << 10
	DefaultRecordQueue        = 64
	DefaultFragmentTimeout    = 2 * time.Second
	DefaultMaxPartial         = 8
	DefaultMaxDatagrams       = ackmap.AckWindow - 1
	DefaultStallWarning       = 5 * time.Second
	DefaultStallTimeout       = 30 * time.Second
	// NoStallTimeout, as Config.StallTimeout, never ends a session for a
	// stalled stream (stalls are still counted and reported).
	NoStallTimeout = -1
	// NoRedundancy, as Config.RedundancyBytes, turns redundant re-sending
	// of unacked reliable messages off.
	NoRedundancy = -1
	// DefaultAckDelay is the default Config.AckDelay.
	DefaultAckDelay = 5 * time.Millisecond
	// NoAckDelay, as Config.AckDelay, acks every datagram with content at
	// the first Flush after it arrived.
	NoAckDelay = -1
)

// RedundancyMode says when small unacked reliable messages ride again in
// later datagrams (Config.Redundancy).
type RedundancyMode uint8

const (
	// RedundancyAdaptive (the default): copies ride only while the link
	// shows loss — from the first loss verdict (within the Flush that
	// learns of it) until the loss estimate (ChannelStats.LossEstimate,
	// which takes spurious losses back) falls below RedundancyOffBelow,
	// and during a session's first 32 datagram verdicts, before the
	// estimate knows anything —
	// and a message gets at most as many copies as the estimate calls for
	// (enough that all of them and the original are lost less than once in
	// a hundred, at least one, at most MaxCopies), none once its ack could
	// be back (its last transmission plus the smallest RTT sample and the
	// peer's ack delay). A lossless link carries no copies at all. At 10 %
	// loss that is one copy of each message, at 20 % two.
	RedundancyAdaptive RedundancyMode = iota
	// RedundancyEager is RedundancyAdaptive with copies enough that a
	// message and all its copies are lost less than once in 10,000 (three
	// at 10 % loss, five at 20 %, still none past the ack's due time): the
	// tail of RedundancyAlways on a lossy link, no copies on a clean one.
	// With RedundancyInterval below a tick it is the low-latency end of
	// the latency–bytes frontier (docs/TUNING.md).
	RedundancyEager
	// RedundancyAlways: copies ride on every link, each message again
	// every RedundancyInterval until acked (the behaviour before
	// RedundancyAdaptive): the lowest tail latency, the most bytes.
	RedundancyAlways
	// RedundancyOff: no copies; a lost message waits for its loss verdict.
	// The same as RedundancyBytes NoRedundancy.
	RedundancyOff
)

// Adaptive redundancy's thresholds on ChannelStats.LossEstimate, and the
// most copies of one message it sends.
const (
	// RedundancyOnAbove: at or above it copies ride. One loss verdict
	// lifts the estimate by about 1/256 (0.39 %), above it.
	RedundancyOnAbove = 0.003
	// RedundancyOffBelow: once copies ride, they stop only below it (about
	// 250 verdicts, two seconds at 60 Hz each way, after a lone loss): on a
	// link losing 1 % the estimate stays above it and copies keep riding,
	// where a faster estimate let them stop between losses and the next
	// loss then cost a verdict's round trip (echo p99 at 1 % loss 104 ms
	// against 73 ms, for 298 against 329 bytes per message).
	RedundancyOffBelow = 0.0015
	// MaxCopies caps the copies of one transmission.
	MaxCopies = 8
)

// String returns the mode's name.
func (m RedundancyMode) String() string {
	switch m {
	case RedundancyAdaptive:
		return "adaptive"
	case RedundancyEager:
		return "eager"
	case RedundancyAlways:
		return "always"
	case RedundancyOff:
		return "off"
	}
	return "unknown"
}

// Config tunes a Channel (and, later, an Endpoint's channels). The zero
// value means every default; each field says its default and range.
// Validate reports the first field out of range; copies are independent.
type Config struct {
	// MTU is the largest datagram sent, headers included. Both peers must
	// use the same value: an Endpoint server announces it in its Accept and
	// a client adopts it (as it does every limit marked "shared" here: the
	// stream counts, ReliableWindow, ReliableBytes, MaxPartial and
	// MaxMessageSize), so set them on the server; two bare Channels must be
	// given the same values. Default 1200 — safe on the open internet;
	// range [576, 1472].
	MTU int

	// Ack tunes the sequence bookkeeping (in-flight window, loss
	// threshold, time-outs). See ackmap.Config.
	Ack ackmap.Config

	// OrderedStreams is the number of reliable-ordered streams, ids 1..N
	// (id 0 is the reliable-unordered stream). A stalled stream never
	// blocks another. Shared. Default 4; range [1, 255].
	OrderedStreams int

	// SequencedStreams is the number of unreliable-sequenced streams, ids
	// 0..N−1. Shared. Default 4; range [1, 256].
	SequencedStreams int

	// ReliableWindow is the most messages a reliable stream holds unacked;
	// a send beyond it fails with ErrQueueFull. The receiver buffers at most
	// this many out-of-order messages per ordered stream. Shared. Default
	// 256; a power of two in [16, 16384].
	ReliableWindow int

	// ReliableBytes caps, per reliable stream, the bytes of the send window
	// — every message from the oldest unacked to the newest, the acked ones
	// between included (send side) — and the bytes buffered out of order
	// (receive side). Shared: the sender's cap is what keeps the
	// receiver's buffer from overflowing, and a message it dropped would
	// be lost for good (its datagram was acked). Default
	// 1 MiB, or one largest message if that is more; at least that.
	ReliableBytes int

	// RedundancyBytes is the per-datagram budget for riding unacked small
	// reliable messages again in the next datagrams until they are acked,
	// so a lost message costs one RedundancyInterval rather than a loss
	// verdict's round trip. A message rides again at most once per
	// RedundancyInterval (and per Flush), oldest first, and
	// only if it is no larger than the budget. Default 512; NoRedundancy
	// (−1) turns it off; range [−1, MTU].
	RedundancyBytes int

	// RedundancyInterval spaces the redundant copies of one message: it
	// rides again only if its last transmission is at least this old, so an
	// endpoint that Flushes faster than the game ticks (every millisecond,
	// say) does not multiply its bandwidth. Default 1/60 s; range [0, 1 s]
	// (0: every Flush). Below a tick (5 ms, say, in an event-driven loop)
	// the copies of a lost message arrive sooner: with RedundancyAdaptive,
	// which caps the copies by the loss estimate and the ack's due time,
	// that buys tail latency for few extra bytes (docs/TUNING.md).
	RedundancyInterval time.Duration

	// Redundancy says when redundant copies ride: RedundancyAdaptive (the
	// zero value) and RedundancyEager only while the link shows loss (one
	// lean on bytes, one on tail latency), RedundancyAlways on every link,
	// RedundancyOff never. RedundancyBytes NoRedundancy also
	// turns them off, whatever the mode.
	Redundancy RedundancyMode

	// AckDelay bounds how long the channel may hold the ack of a datagram
	// with content, hoping to piggy-back it on data: the ack leaves with
	// the first datagram a Flush sends anyway, or in a standalone ack once
	// min(AckDelay, SRTT/4) has passed since the datagram arrived (at
	// once before the first RTT sample). Every ack says how long the
	// newest datagram it acks waited (the channel header's ack delay), so
	// the peer's RTT samples stay true. A datagram that held only
	// duplicates (copies of what arrived before) is acked no sooner than
	// SRTT/4 after it came, whatever AckDelay, and never by a standalone
	// ack at once. Default 5 ms; NoAckDelay (−1) acks at the first Flush;
	// range [−1, 25 ms] (wire.MaxAckDelay).
	AckDelay time.Duration

	// UnreliableBytes caps the unreliable and sequenced bytes queued and
	// not yet sent; beyond it Send returns ErrQueueFull. Default 256 KiB,
	// or one largest message if that is more; at least that.
	UnreliableBytes int

	// RecordQueue caps the record sends (SendRecord) queued between two
	// Flushes. Default 64.
	RecordQueue int

	// FragmentTimeout is how long a partly received unreliable,
	// sequenced or record message is kept, from its first piece, before it
	// is discarded: a duration on the channel's clock, whatever the Flush
	// cadence. Large reliable messages never expire: their pieces were
	// acked and will not come again, so the receiver keeps them until the
	// message is whole. Default 2 s; range (0, 1 min].
	FragmentTimeout time.Duration

	// MaxPartial is how many fragmented unreliable, sequenced or record
	// messages may be partly received at once; a new one beyond it evicts
	// the oldest unreliable or sequenced one, else the oldest. Large
	// reliable messages do not count: they are assembled in their stream's
	// window, bounded by ReliableWindow and ReliableBytes. Shared. Default 8.
	MaxPartial int

	// MaxDatagramsPerFlush caps the datagrams one Flush sends; what does not
	// fit waits for the next Flush, in order. The peer acks once per Flush
	// of its own, and one ack header covers 33 seqs, so a burst longer than
	// 32 would have its first datagrams age out of the ack window unacked —
	// declared lost although they arrived — and re-sent forever. Default
	// and maximum 32; bulk throughput scales with the Flush rate instead.
	// Range [1, 32].
	MaxDatagramsPerFlush int

	// StallWarning is how long a reliable stream may hold messages without
	// progress — no message released, no piece of a large one acked —
	// before the channel counts a stall (ChannelStats.Stalls) and tells a
	// handler that implements StallHandler. A pause of the peer or a long
	// outage trips it; an ordinary slow transfer, which releases messages
	// or pieces as acks come, does not. Default 5 s; range (0, StallTimeout].
	StallWarning time.Duration

	// StallTimeout is how long a reliable stream may hold messages without
	// progress before Channel.Stalled reports ErrStalled, and an Endpoint
	// ends the session with wire.DisconnectStalled: a wedged stream is
	// never silent. NoStallTimeout (−1) turns the hard bound off. Default
	// 30 s; range [StallWarning, 1 h], or −1.
	StallTimeout time.Duration

	// MaxSendRate is the ceiling of the send budget, bytes/s of datagrams
	// (headers included): a token bucket whose rate a delay-based
	// estimator sets — it backs off when the RTT grows past the path's
	// minimum by QueueDelayTarget, never for loss — with pacing inside the
	// tick. Over budget, redundant copies stay home first, then superseded
	// sequenced and expired unreliable messages are shed (counted in
	// ChannelStats.Budget), and reliable messages wait in their stream
	// (ErrQueueFull once it is full); none is dropped. The rate starts at
	// the ceiling. Default DefaultMaxSendRate (4 GiB/s); NoSendBudget (−1)
	// turns the budget off; range −1 or [MinSendRate, 2^40]. Not shared.
	MaxSendRate int64

	// QueueDelayTarget is the queuing delay (RTT above the 10 s minimum)
	// above which the send budget backs off. Default 10 ms; range [1 ms,
	// 1 s].
	QueueDelayTarget time.Duration

	// UnreliableMaxAge is how long an unreliable message held back by the
	// send budget (or by a full span of seqs: ChannelStats.SpanWaits) may
	// wait before it is shed (counted as ShedExpired); a message is only
	// ever shed after a Flush that held traffic back.
	// Default 100 ms; range [1 ms, 1 min].
	UnreliableMaxAge time.Duration

	// MaxMessageSize is the largest message accepted by Send, after
	// framing. It may not exceed what 255 fragments carry at this MTU
	// (MaxMessageSizeFor), which is also the default. Shared.
	MaxMessageSize int
}

// WithDefaults returns c with every zero field replaced by its default: the
// config the constructor runs with.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MTU, DefaultMTU)
	def(&c.OrderedStreams, DefaultOrderedStreams)
	def(&c.SequencedStreams, DefaultSequencedStreams)
	def(&c.ReliableWindow, DefaultReliableWindow)
	def(&c.RedundancyBytes, DefaultRedundancyBytes)
	if c.RedundancyInterval == 0 {
		c.RedundancyInterval = DefaultRedundancyInterval
	}
	if c.AckDelay == 0 {
		c.AckDelay = DefaultAckDelay
	}
	def(&c.RecordQueue, DefaultRecordQueue)
	if c.FragmentTimeout == 0 {
		c.FragmentTimeout = DefaultFragmentTimeout
	}
	def(&c.MaxPartial, DefaultMaxPartial)
	def(&c.MaxDatagramsPerFlush, DefaultMaxDatagrams)
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.StallWarning == 0 {
		c.StallWarning = DefaultStallWarning
		if c.StallTimeout > 0 {
			c.StallWarning = min(c.StallWarning, c.StallTimeout)
		}
	}
	if c.MaxSendRate == 0 {
		c.MaxSendRate = DefaultMaxSendRate
	}
	if c.QueueDelayTarget == 0 {
		c.QueueDelayTarget = DefaultQueueDelayTarget
	}
	if c.UnreliableMaxAge == 0 {
		c.UnreliableMaxAge = DefaultUnreliableMaxAge
	}
	if c.MTU >= MinMTU && c.MTU <= MaxMTU {
		def(&c.MaxMessageSize, MaxMessageSizeFor(c.MTU))
	}
	def(&c.ReliableBytes, max(DefaultReliableBytes, c.MaxMessageSize+maxFraming))
	def(&c.UnreliableBytes, max(DefaultUnreliableBytes, c.MaxMessageSize+maxFraming))
	return c
}

// Validate reports the first field out of range, after defaults are
// applied, as an error wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.WithDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.MTU < MinMTU || c.MTU > MaxMTU:
		return bad("MTU %d not in [%d, %d]", c.MTU, MinMTU, MaxMTU)
	case c.OrderedStreams < 1 || c.OrderedStreams > 255:
		return bad("OrderedStreams %d not in [1, 255]", c.OrderedStreams)
	case c.SequencedStreams < 1 || c.SequencedStreams > 256:
		return bad("SequencedStreams %d not in [1, 256]", c.SequencedStreams)
	case c.ReliableWindow < 16 || c.ReliableWindow > 16384 || c.ReliableWindow&(c.ReliableWindow-1) != 0:
		return bad("ReliableWindow %d not a power of two in [16, 16384]", c.ReliableWindow)
	case c.RedundancyBytes < NoRedundancy || c.RedundancyBytes > c.MTU:
		return bad("RedundancyBytes %d not in [-1, MTU]", c.RedundancyBytes)
	case c.RedundancyInterval < 0 || c.RedundancyInterval > time.Second:
		return bad("RedundancyInterval %v not in [0, 1s]", c.RedundancyInterval)
	case c.Redundancy > RedundancyOff:
		return bad("Redundancy %d not a RedundancyMode (0..%d)", c.Redundancy, RedundancyOff)
	case c.AckDelay != NoAckDelay && (c.AckDelay < 0 || c.AckDelay > maxAckDelay):
		return bad("AckDelay %v not in [0, %v] or -1", c.AckDelay, maxAckDelay)
	case c.UnreliableBytes < c.MaxMessageSize+maxFraming:
		return bad("UnreliableBytes %d below MaxMessageSize %d + framing", c.UnreliableBytes, c.MaxMessageSize)
	case c.RecordQueue < 1:
		return bad("RecordQueue %d below 1", c.RecordQueue)
	case c.FragmentTimeout < 0 || c.FragmentTimeout > time.Minute:
		return bad("FragmentTimeout %v not in (0, 1m]", c.FragmentTimeout)
	case c.MaxPartial < 1:
		return bad("MaxPartial %d below 1", c.MaxPartial)
	case c.MaxDatagramsPerFlush < 1 || c.MaxDatagramsPerFlush > ackmap.AckWindow-1:
		return bad("MaxDatagramsPerFlush %d not in [1, %d]", c.MaxDatagramsPerFlush, ackmap.AckWindow-1)
	case c.StallTimeout != NoStallTimeout && (c.StallTimeout < 0 || c.StallTimeout > time.Hour):
		return bad("StallTimeout %v not in (0, 1h] or -1", c.StallTimeout)
	case c.StallWarning <= 0 || c.StallTimeout > 0 && c.StallWarning > c.StallTimeout:
		return bad("StallWarning %v not in (0, StallTimeout %v]", c.StallWarning, c.StallTimeout)
	case c.MaxSendRate != NoSendBudget && (c.MaxSendRate < MinSendRate || c.MaxSendRate > 1<<40):
		return bad("MaxSendRate %d not %d or in [%d, %d]", c.MaxSendRate, NoSendBudget, MinSendRate, int64(1)<<40)
	case c.QueueDelayTarget < time.Millisecond || c.QueueDelayTarget > time.Second:
		return bad("QueueDelayTarget %v not in [1ms, 1s]", c.QueueDelayTarget)
	case c.UnreliableMaxAge < time.Millisecond || c.UnreliableMaxAge > time.Minute:
		return bad("UnreliableMaxAge %v not in [1ms, 1m]", c.UnreliableMaxAge)
	case c.MaxMessageSize < 1 || c.MaxMessageSize > MaxMessageSizeFor(c.MTU):
		return bad("MaxMessageSize %d not in [1, %d] at MTU %d", c.MaxMessageSize, MaxMessageSizeFor(c.MTU), c.MTU)
	case c.ReliableBytes < c.MaxMessageSize+maxFraming:
		return bad("ReliableBytes %d below MaxMessageSize %d + framing", c.ReliableBytes, c.MaxMessageSize)
	}
	if err := c.Ack.Validate(); err != nil {
		return fmt.Errorf("%w: Ack: %w", ErrInvalidConfig, err)
	}
	return nil
}
