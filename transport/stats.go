package transport

import (
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/transport/fragment"
)

// ChannelStats are one channel's counters. Every datagram or message that
// is dropped is counted under the reason it was dropped for. Reading them
// (Channel.Stats) is a struct copy; they are not synchronised, so read them
// on the channel's goroutine.
type ChannelStats struct {
	DatagramsSent uint64
	// BytesSent counts the datagrams' bytes on the wire, sealing header and
	// tag included; BytesReceived the bytes the channel received: after
	// the session framing (the sealed header and tag, or the cleartext
	// session header) is taken off.
	BytesSent         uint64
	AckOnlySent       uint64 // standalone acks: datagrams with no frames
	UrgentAcks        uint64 // of those, sent at once by SendAck (AckDue)
	DatagramsReceived uint64
	BytesReceived     uint64
	AckOnlyReceived   uint64

	// Receive-side drops, by reason.
	Malformed          uint64 // undecodable datagram (dropped whole) or reassembled message
	Duplicates         uint64 // datagram seq already received
	TooOld             uint64 // datagram seq too far behind to judge
	AcksRefused        uint64 // ack header naming a seq we never sent
	BadStream          uint64 // frame for a stream id that is not configured
	SequencedStale     uint64 // sequenced message not newer than the last delivered
	ReliableDuplicates uint64 // reliable message already delivered or buffered
	ReliableOutside    uint64 // reliable message beyond the receive window
	ReliableOverflow   uint64 // out-of-order reliable message over the buffer's byte cap (re-sent later)
	FragmentsRefused   uint64 // fragment the assembler refused (see Fragments for why)

	ReliableBuffered uint64 // ordered messages held for an earlier gap
	Delivered        [5]uint64

	// Send side.
	ReliableResent  uint64 // reliable messages or pieces re-sent after a loss verdict
	RedundantCopies uint64 // unacked reliable messages that rode again
	RedundantBytes  uint64 // their frame bytes
	// DuplicateOnly counts received datagrams whose every frame was a
	// reliable message already delivered or buffered (their ack waits,
	// Config.AckDelay).
	DuplicateOnly uint64
	// LossEstimate is the link's loss as the channel estimates it
	// (ackmap.SendStats.LinkLoss: spurious losses taken back), and
	// RedundancyOn whether adaptive redundancy's switch is on
	// (Config.Redundancy; always true for RedundancyAlways, false for
	// RedundancyOff or NoRedundancy).
	LossEstimate  float64
	RedundancyOn  bool
	FragmentsSent uint64
	// Stalls counts the times a reliable stream held messages with no
	// progress for Config.StallWarning (once per stall).
	Stalls uint64
	// SpanWaits counts the Flushes that held unreliable or sequenced
	// messages back because the span of seqs from the oldest datagram
	// awaiting a verdict was full (ackmap.SendTracker.SpanLimit, 4 ×
	// MaxInFlight): one more datagram would have evicted that datagram as
	// lost before its ack could return. They wait while acks arrive (with
	// none for two smoothed RTTs plus KeepAliveInterval they go out and
	// evict, as before), and the next Flush sheds stale ones (superseded
	// sequenced, unreliable older than Config.UnreliableMaxAge), with the
	// send budget on or off. A path whose round trip carries more
	// datagrams than the span shows it: raise Config.Ack.MaxInFlight.
	SpanWaits uint64
	// Budget is the send budget: estimated rate, bucket, queuing delay,
	// what was shed and why (zero when Config.MaxSendRate is NoSendBudget).
	Budget BudgetStats

	// Ack bookkeeping, round trip and reassembly.
	Ack       ackmap.SendStats
	SRTT      time.Duration
	RTTVar    time.Duration
	MinRTT    time.Duration
	Jitter    time.Duration
	RTO       time.Duration
	Pending   int // sent datagrams awaiting a verdict
	Fragments fragment.Stats

	// Queue depths at the time of the call.
	ReliableHeld       int // reliable messages held until acked, all streams
	ReliableHeldBytes  int // their frame bytes
	ReliableBufferedIn int // out-of-order bytes buffered by ordered streams
	QueuedBytes        int // unreliable and sequenced frame bytes not yet sent
	QueuedRecords      int // record sends not yet sent
	PartialAssemblies  int // fragmented messages partly received
	// StalledFor is how long the most stalled reliable stream has held
	// messages without releasing any, as of the last Flush (0: none).
	StalledFor time.Duration
}

// Stats returns a copy of the channel's counters.
func (c *Channel) Stats() ChannelStats {
	s := c.stats
	s.Ack = c.tracker.Stats()
	s.LossEstimate = s.Ack.LinkLoss
	s.RedundancyOn = c.cfg.RedundancyBytes > 0 && c.redundancyOn()
	rtt := c.tracker.RTT()
	s.SRTT, s.RTTVar, s.MinRTT, s.Jitter = rtt.Smoothed(), rtt.Variance(), rtt.Min(), rtt.Jitter()
	s.RTO = c.tracker.RTO()
	s.Pending = c.tracker.PendingCount()
	s.Fragments = c.assembler.Stats()
	for _, rs := range c.reliable {
		s.ReliableHeld += rs.unacked
		s.ReliableHeldBytes += rs.queued
	}
	for _, rr := range c.rrecv {
		s.ReliableBufferedIn += rr.buffered
	}
	s.QueuedBytes, s.QueuedRecords = c.outBytes, len(c.outRecs)
	s.PartialAssemblies = c.assembler.Partials()
	c.budgetStats(&s)
	for _, rs := range c.reliable {
		if rs.unacked > 0 {
			s.StalledFor = max(s.StalledFor, c.now-rs.progressAt)
		}
	}
	return s
}
