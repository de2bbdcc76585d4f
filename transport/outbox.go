package transport

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// outbox holds the messages Endpoint.Send queued from other goroutines
// until the endpoint's goroutine moves them into their channels at its
// next Flush. It is a FIFO of entries whose payload copies sit end to end
// in one byte slice; both grow to the peak held and are then reused, so a
// steady flow allocates nothing. mu guards everything but n, which Flush
// reads without the lock to skip an empty outbox for free.
type outbox struct {
	mu       sync.Mutex
	n        atomic.Int32 // len(entries), for the lock-free empty check
	entries  []outEntry
	buf      []byte
	closed   bool
	maxMsgs  int
	maxBytes int
}

// outEntry is one queued message: its payload is buf[off : off+n].
type outEntry struct {
	p        *Peer
	delivery Delivery
	stream   uint8
	off, n   int
}

func (o *outbox) init(maxMsgs, maxBytes int) { o.maxMsgs, o.maxBytes = maxMsgs, maxBytes }

// close drops what is queued, refuses later pushes, and returns how many
// messages it dropped.
func (o *outbox) close() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	n := len(o.entries)
	clear(o.entries)
	o.entries, o.buf = o.entries[:0], o.buf[:0]
	o.n.Store(0)
	return n
}

// Send queues a copy of payload for p's channel, to be sent with delivery
// d (Reliable on reliable stream stream — 0 unordered, 1..OrderedStreams
// ordered —, Sequenced on sequenced stream stream, or Unreliable, stream
// ignored) by the endpoint's goroutine at its next Flush. It is safe from
// any goroutine — with Wake and Now the only Endpoint methods that are —
// and is how a game's other goroutines (input, matchmaking, chat) send
// without touching the Channel, which only the endpoint's goroutine may
// use. Send wakes the endpoint's Wait when the outbox was empty, so an
// event-driven loop sends within microseconds; a fixed-rate loop sends at
// its next tick.
//
// p must be a Peer of this endpoint that the endpoint's goroutine handed
// over (from OnConnect, say, through a channel or under a lock): its
// channel's limits are fixed at its creation, so Send checks the stream
// and size against them at once and returns ErrNoStream or ErrTooLarge
// with the numbers. A full outbox (EndpointConfig.OutboxMessages,
// OutboxBytes) returns an error wrapping ErrQueueFull with the numbers and
// accepts nothing: back-pressure, for the caller to retry or drop. After
// Close it returns ErrClosed (which matches net.ErrClosed). A Record
// delivery is an error wrapping errors.ErrUnsupported: its verdict belongs
// to the endpoint's goroutine (use Channel.SendRecord there).
//
// Once accepted, messages of one Send caller keep their order per peer:
// the Flush moves them into the channel in order, and a channel that is
// full (its reliable window, or its unreliable queue) keeps that peer's
// messages — this one and every later one — in the outbox for a later
// Flush, so none is lost or reordered by back-pressure. A message whose
// session has ended by then is dropped and counted
// (EndpointStats.OutboxDropped); a Peer never carries traffic again once
// closed, so a message never reaches a later session that reuses its id.
//
// Cost: one lock and one copy of payload; memory grows to the peak the
// outbox held and is then reused. payload may be reused at once.
func (e *Endpoint) Send(p *Peer, d Delivery, stream uint8, payload []byte) error {
	if p == nil || p.ep != e {
		return fmt.Errorf("%w: Send to a peer that is not a session of this endpoint", ErrNoSession)
	}
	cfg := &p.ch.cfg // fixed at NewChannel, before the peer was handed out
	switch d {
	case Reliable:
		if int(stream) > cfg.OrderedStreams {
			return fmt.Errorf("%w: reliable stream %d, streams are 0..%d (OrderedStreams %d)", ErrNoStream, stream, cfg.OrderedStreams, cfg.OrderedStreams)
		}
	case Sequenced:
		if int(stream) >= cfg.SequencedStreams {
			return fmt.Errorf("%w: sequenced stream %d, SequencedStreams %d", ErrNoStream, stream, cfg.SequencedStreams)
		}
	case Unreliable:
		stream = 0
	default:
		return fmt.Errorf("transport: Send with delivery %v: %w", d, errors.ErrUnsupported)
	}
	if len(payload) > cfg.MaxMessageSize {
		return fmt.Errorf("%w: %d-byte message, MaxMessageSize %d", ErrTooLarge, len(payload), cfg.MaxMessageSize)
	}
	o := &e.outbox
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	if len(o.entries) >= o.maxMsgs || len(o.buf)+len(payload) > o.maxBytes {
		held, bytes := len(o.entries), len(o.buf)
		o.mu.Unlock()
		return fmt.Errorf("%w: outbox holds %d messages, %d bytes (OutboxMessages %d, OutboxBytes %d); %d-byte message refused",
			ErrQueueFull, held, bytes, o.maxMsgs, o.maxBytes, len(payload))
	}
	wasEmpty := len(o.entries) == 0
	o.entries = append(o.entries, outEntry{p: p, delivery: d, stream: stream, off: len(o.buf), n: len(payload)})
	o.buf = append(o.buf, payload...)
	o.n.Store(int32(len(o.entries)))
	o.mu.Unlock()
	if wasEmpty {
		// Later Sends find the outbox non-empty: this wake, or the Flush
		// it causes, covers them too.
		e.Wake()
	}
	return nil
}

// drainOutbox moves the outbox's messages into their channels, in order,
// on the endpoint's goroutine (Flush). A peer whose channel answers
// ErrQueueFull keeps that message and every later one of its own in the
// outbox, in order, for the next Flush; other peers' messages go on. An
// empty outbox costs one atomic load; the rest allocates nothing.
func (e *Endpoint) drainOutbox() {
	o := &e.outbox
	if o.n.Load() == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	e.outboxRound++
	round := e.outboxRound
	keep, kept := 0, 0 // entries and payload bytes kept, compacted to the front
	for i := range o.entries {
		m := o.entries[i]
		p := m.p
		if p.state == PeerClosed || p.state == PeerClosing {
			e.stats.OutboxDropped++
			continue
		}
		msg := o.buf[m.off : m.off+m.n]
		if p.outboxBlocked != round {
			var err error
			switch m.delivery {
			case Reliable:
				_, err = p.ch.SendReliable(m.stream, msg)
			case Sequenced:
				err = p.ch.SendSequenced(m.stream, msg)
			default:
				err = p.ch.SendUnreliable(msg)
			}
			switch {
			case err == nil:
				e.stats.OutboxSent++
				continue
			case !errors.Is(err, ErrQueueFull):
				e.stats.OutboxDropped++ // checked at Send; cannot happen
				continue
			}
			p.outboxBlocked = round
		}
		// Keep it: entries are in buffer order, so moving each kept
		// payload down never overwrites one still to be read.
		copy(o.buf[kept:], msg)
		m.off = kept
		kept += m.n
		o.entries[keep] = m
		keep++
	}
	clear(o.entries[keep:])
	o.entries, o.buf = o.entries[:keep], o.buf[:kept]
	o.n.Store(int32(keep))
	e.outboxLeft = int32(keep)
}
