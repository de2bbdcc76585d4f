package soak

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/wire"
)

// ClassCount is one size class's messages in a stream or a flow.
type ClassCount struct {
	Class string `json:"class"`
	// Sent counts messages the sender's SendReliable accepted; Delivered
	// those the receiver got intact, once; Missing those sent and never
	// delivered intact.
	Sent      uint64 `json:"sent"`
	Delivered uint64 `json:"delivered"`
	Missing   uint64 `json:"missing"`
}

// MissingMessage names one message sent and never delivered.
type MissingMessage struct {
	// Seq is its number on its stream, from 0; ID its wire message id.
	Seq   uint64   `json:"seq"`
	ID    wire.Seq `json:"id"`
	Bytes int      `json:"bytes"`
	Class string   `json:"class"`
}

// StreamResult is one reliable stream's outcome in one direction.
type StreamResult struct {
	Stream  uint8 `json:"stream"`
	Ordered bool  `json:"ordered"`
	// Share is the messages the stream was to carry; Sent those accepted
	// by SendReliable; Delivered those delivered intact, once; Missing
	// those sent and never delivered.
	Share     uint64 `json:"share"`
	Sent      uint64 `json:"sent"`
	Delivered uint64 `json:"delivered"`
	Missing   uint64 `json:"missing"`
	// Duplicates, OutOfOrder, OutOfRange and Corrupt are violations:
	// second deliveries, deliveries other than the one due (ordered),
	// ids that name no message sent, and payloads not byte for byte what
	// was sent.
	Duplicates uint64 `json:"duplicates"`
	OutOfOrder uint64 `json:"out_of_order"`
	OutOfRange uint64 `json:"out_of_range"`
	Corrupt    uint64 `json:"corrupt"`
	// Reordered counts deliveries behind the newest on the unordered
	// stream (the link's reordering, passed through: not a violation).
	Reordered uint64 `json:"reordered"`
	// FirstMissing is the lowest message sent and never delivered.
	FirstMissing *MissingMessage `json:"first_missing,omitempty"`
	// Classes splits Sent, Delivered and Missing by size class.
	Classes []ClassCount `json:"classes"`
}

// FlowResult is one direction's outcome: everything one side sent and
// what the other received.
type FlowResult struct {
	Name string `json:"name"`
	// From and To describe the sender and the receiver and their cadence.
	From string `json:"from"`
	To   string `json:"to"`
	// Totals over the streams.
	Share     uint64 `json:"share"`
	Sent      uint64 `json:"sent"`
	Delivered uint64 `json:"delivered"`
	Missing   uint64 `json:"missing"`
	// QueueFull counts sends refused by back-pressure (and retried).
	QueueFull uint64 `json:"queue_full"`
	// Streams are the reliable streams, 0 (unordered) first.
	Streams []StreamResult `json:"streams"`
	// Classes splits the totals by size class.
	Classes []ClassCount `json:"classes"`
	// Held, HeldBytes and Pending are the sender's reliable messages held
	// until acked, their frame bytes, and its datagrams awaiting a
	// verdict, at the end of the phase: a sender whose messages were all
	// delivered must end holding none.
	Held      int `json:"held"`
	HeldBytes int `json:"held_bytes"`
	Pending   int `json:"pending"`
	// MaxBuffered bounds how many of the missing messages the receiver
	// may hold out of order behind a gap on an ordered stream (released by
	// the sender, acked, not yet deliverable): the most of them, smallest
	// first, whose bytes fit the receiver's ReliableBufferedIn. Missing −
	// Held − MaxBuffered is then a floor on the messages released and lost.
	MaxBuffered uint64 `json:"max_buffered"`
	// Sender and Receiver are the two channels' full counters at the end;
	// Link is the link's, sender to receiver.
	Sender   transport.ChannelStats `json:"sender_stats"`
	Receiver transport.ChannelStats `json:"receiver_stats"`
	Link     simlink.Stats          `json:"link"`
}

// streamFlow is one stream of one direction: what was sent, and the
// checker of what arrived.
type streamFlow struct {
	stream  uint8
	ordered bool
	key     uint64
	share   uint64   // messages to send
	next    uint64   // messages accepted by SendReliable so far
	base    wire.Seq // the wire id of message 0
	check   *Checker
	corrupt uint64
	sent    []uint64 // per class
	got     []uint64 // per class
	// buf holds message next's payload once built, so a send refused by
	// back-pressure is retried without rebuilding it.
	buf    []byte
	filled bool
}

// flow is one direction of the message pair: src sends on every reliable
// stream, dst's handler (an inbox) checks every delivery.
type flow struct {
	res       *PhaseResult
	name      string
	from, to  string
	src, dst  *end
	sz        sizer
	streams   []*streamFlow
	perTick   uint64
	total     uint64 // messages delivered intact
	queueFull uint64
}

func newFlow(res *PhaseResult, dir int, name string, src, dst *end, sz sizer, streams int, count uint64, cfg Config, phase int) *flow {
	cadence := [2]string{"60 Hz", fmt.Sprintf("every %v–%v", FastMin, FastMax)}
	f := &flow{
		res: res, name: name, src: src, dst: dst, sz: sz,
		from:    fmt.Sprintf("%c (flushes %s)", name[0], cadence[dir]),
		to:      fmt.Sprintf("%c (flushes %s)", name[len(name)-1], cadence[1-dir]),
		perTick: uint64(cfg.PerTick),
	}
	for s := range streams {
		share := count / uint64(streams)
		if uint64(s) < count%uint64(streams) {
			share++
		}
		f.streams = append(f.streams, &streamFlow{
			stream: uint8(s), ordered: s != 0, key: flowKey(cfg.Seed, phase, dir, s), share: share,
			check: NewChecker(share, s != 0),
			sent:  make([]uint64, len(sz.classes)), got: make([]uint64, len(sz.classes)),
			buf: make([]byte, 0, largeMax),
		})
	}
	return f
}

// offer sends, on every stream, the messages released by now (PerTick per
// Tick of virtual time) that the stream accepts.
func (f *flow) offer(now time.Duration) error {
	release := (uint64(now/Tick) + 1) * f.perTick
	for _, sf := range f.streams {
		for sf.next < sf.share && sf.next < release {
			class, n := f.sz.size(sf.key, sf.next)
			if !sf.filled {
				sf.buf, sf.filled = fill(sf.buf[:0], sf.key, sf.next, n), true
			}
			id, err := f.src.ch.SendReliable(sf.stream, sf.buf)
			if err != nil {
				if errors.Is(err, transport.ErrQueueFull) {
					f.queueFull++
					break
				}
				return fmt.Errorf("%s: send stream %d message #%d (%d B): %w", f.name, sf.stream, sf.next, n, err)
			}
			if sf.next == 0 {
				sf.base = id
			} else if want := sf.base.Add(int(sf.next % (1 << 16))); id != want {
				f.res.violate("%s stream %d: SendReliable gave message #%d id %d, want %d", f.name, sf.stream, sf.next, id, want)
			}
			sf.sent[class]++
			sf.next++
			sf.filled = false
		}
	}
	return nil
}

// deliver checks one delivered message: its id names a message sent, its
// bytes are that message's, and it is the first delivery of it (and, on
// an ordered stream, the one due).
func (f *flow) deliver(s uint8, id wire.Seq, p []byte) {
	sf := f.streams[s]
	seq, ok := sf.check.Resolve(uint16(id - sf.base))
	if !ok || seq >= sf.next {
		sf.check.OutOfRange++
		f.res.violate("%s stream %d: delivered id %d (%d B) names no message sent (%d sent)", f.name, s, id, len(p), sf.next)
		return
	}
	class, n := f.sz.size(sf.key, seq)
	if !intact(p, sf.key, seq, n) {
		sf.corrupt++
		f.res.violate("%s stream %d: message #%d (id %d, %s) corrupt: %d B delivered, %d B sent%s",
			f.name, s, seq, id, f.sz.classes[class].Name, len(p), n, embedded(p))
		return
	}
	if err := sf.check.Deliver(seq); err != nil {
		f.res.violate("%s stream %d (%s, %d B): %v", f.name, s, f.sz.classes[class].Name, n, err)
		return
	}
	sf.got[class]++
	f.total++
}

// embedded describes the sequence number a corrupt payload carries.
func embedded(p []byte) string {
	if len(p) < 8 {
		return ""
	}
	var seq uint64
	for i := 7; i >= 0; i-- {
		seq = seq<<8 | uint64(p[i])
	}
	return fmt.Sprintf(" (its first 8 bytes say #%d)", seq)
}

// delivered is the messages delivered intact so far.
func (f *flow) delivered() uint64 { return f.total }

// result collects the flow's outcome at the end of the phase.
func (f *flow) result(n *simlink.Network) FlowResult {
	r := FlowResult{Name: f.name, From: f.from, To: f.to, QueueFull: f.queueFull}
	r.Sender, r.Receiver = f.src.ch.Stats(), f.dst.ch.Stats()
	r.Held, r.HeldBytes, r.Pending = r.Sender.ReliableHeld, r.Sender.ReliableHeldBytes, r.Sender.Pending
	r.Link = n.LinkStats(f.src.conn.LocalAddr(), f.dst.conn.LocalAddr())
	r.Classes = make([]ClassCount, len(f.sz.classes))
	for i, c := range f.sz.classes {
		r.Classes[i].Class = c.Name
	}
	var behind []int // sizes of missing messages behind their stream's first gap
	for _, sf := range f.streams {
		c := sf.check
		sr := StreamResult{
			Stream: sf.stream, Ordered: sf.ordered, Share: sf.share, Sent: sf.next, Delivered: c.Delivered,
			Duplicates: c.Duplicates, OutOfOrder: c.OutOfOrder, OutOfRange: c.OutOfRange, Corrupt: sf.corrupt,
			Reordered: c.Reordered, Classes: make([]ClassCount, len(f.sz.classes)),
		}
		for i, cl := range f.sz.classes {
			sr.Classes[i] = ClassCount{Class: cl.Name, Sent: sf.sent[i], Delivered: sf.got[i]}
		}
		if first, ok := c.FirstMissing(sf.next); ok {
			for seq := first; seq < sf.next; seq++ {
				if c.Has(seq) {
					continue
				}
				class, bytes := f.sz.size(sf.key, seq)
				sr.Classes[class].Missing++
				sr.Missing++
				if sf.ordered && sr.FirstMissing != nil {
					behind = append(behind, bytes)
				}
				if sr.FirstMissing == nil {
					sr.FirstMissing = &MissingMessage{Seq: seq, ID: sf.base.Add(int(seq % (1 << 16))), Bytes: bytes, Class: f.sz.classes[class].Name}
				}
			}
		}
		for i := range sr.Classes {
			r.Classes[i].Sent += sr.Classes[i].Sent
			r.Classes[i].Delivered += sr.Classes[i].Delivered
			r.Classes[i].Missing += sr.Classes[i].Missing
		}
		r.Share += sr.Share
		r.Sent += sr.Sent
		r.Delivered += sr.Delivered
		r.Missing += sr.Missing
		r.Streams = append(r.Streams, sr)
	}
	slices.Sort(behind)
	room := r.Receiver.ReliableBufferedIn
	for _, n := range behind {
		if n > room {
			break
		}
		room -= n
		r.MaxBuffered++
	}
	return r
}

// judge records the flow's end-state violations in res: messages sent and
// never delivered (per stream, per size class); more of them than the
// sender still holds (released undelivered: silent loss); and a sender
// that still holds messages, with some missing or after every one of them
// was delivered.
func (r FlowResult) judge(res *PhaseResult) {
	for _, s := range r.Streams {
		if s.Missing == 0 {
			continue
		}
		var by []string
		for _, c := range s.Classes {
			if c.Missing != 0 {
				by = append(by, fmt.Sprintf("%s %d of %d", c.Class, c.Missing, c.Sent))
			}
		}
		m := s.FirstMissing
		res.violate("%s stream %d: %d of %d sent never delivered (%s); the first is #%d (id %d, %d B, %s)",
			r.Name, s.Stream, s.Missing, s.Sent, strings.Join(by, ", "), m.Seq, m.ID, m.Bytes, m.Class)
	}
	sender := r.From[:1]
	// A reliable message is held until acked and never given up, and an
	// acked one was delivered or is buffered behind a gap: a missing one
	// that is neither held nor buffered was released and lost.
	if r.Missing > uint64(r.Held)+r.MaxBuffered {
		res.violate("%s: %d messages never delivered; sender %s holds %d and receiver %s can buffer at most %d of them (%d B out of order): at least %d were released and lost (silent loss)",
			r.Name, r.Missing, sender, r.Held, r.To[:1], r.MaxBuffered, r.Receiver.ReliableBufferedIn, r.Missing-uint64(r.Held)-r.MaxBuffered)
	}
	switch {
	case r.Missing != 0 && r.Held != 0:
		res.violate("%s: sender %s still holds %d reliable messages (%d B), %d datagrams pending, with %d messages never delivered (stranded or wedged)",
			r.Name, sender, r.Held, r.HeldBytes, r.Pending, r.Missing)
	case r.Held != 0:
		res.violate("%s: every message sent was delivered, yet sender %s still holds %d reliable messages (%d B), %d datagrams pending (never released)",
			r.Name, sender, r.Held, r.HeldBytes, r.Pending)
	}
}

// inbox is one side's handler of the message pair: every delivery is
// checked against the flow that sends to this side.
type inbox struct {
	res     *PhaseResult
	f       *flow
	every   uint64 // Config.redeliverEvery
	corrupt uint64 // Config.corruptEvery
	seen    uint64 // deliveries so far
}

// OnMessage implements transport.Handler.
func (h *inbox) OnMessage(m transport.Message) {
	if m.Delivery != transport.Reliable || int(m.Stream) >= len(h.f.streams) {
		h.res.violate("%s: unexpected %v message on stream %d", h.f.name, m.Delivery, m.Stream)
		return
	}
	h.seen++
	p := m.Payload
	if h.corrupt != 0 && h.seen%h.corrupt == 0 && len(p) > 0 {
		p[len(p)/2] ^= 0x5A
	}
	h.f.deliver(m.Stream, m.ID, p)
	if h.every != 0 && h.seen%h.every == 0 {
		h.f.deliver(m.Stream, m.ID, p)
	}
}

// OnRecord implements transport.Handler; the message pair sends no records.
func (h *inbox) OnRecord(uint64, bool) {}

// OnDisconnect implements transport.Handler.
func (h *inbox) OnDisconnect(wire.DisconnectReason) {}
