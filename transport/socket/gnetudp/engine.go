package gnetudp

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tickwire/tickwire/transport/socket"
)

// Engine is a UDP server on gnet's event loops that implements
// socket.Conn. Open starts it; Close stops it.
//
// The event loops (gnet's goroutines, one per socket) queue what they
// receive; one goroutine at a time may read the queues (ReadBatch or
// TryReadBatch: they share state and must not run at the same time) while
// another writes (WriteBatch). Close, Stats, Features, LocalAddr and
// MaxDatagramSize are safe from any goroutine. The zero Engine is not
// usable.
type Engine struct {
	laddr    netip.AddrPort
	limit    int
	rings    []*ring // one per event loop, claimed by the loop's socket
	features Features
	rcvbuf   int
	sndbuf   int

	closed   atomic.Bool
	done     chan struct{} // closed by Close, or when gnet stops by itself
	doneOnce sync.Once
	errRead  error // returned by reads after done: wraps net.ErrClosed
	errWrite error // returned by writes after Close: wraps net.ErrClosed

	// waiting is set while a ReadBatch is about to park or parked on
	// notify; an event loop that queues a datagram then sends a token.
	waiting atomic.Bool
	notify  chan struct{} // capacity 1
	_       [64]byte

	// Reader state.
	next int // ring the next read starts at, for fairness across loops
	rd   readCounters
	_    [64]byte

	wr  writeCounters
	sys sysState // the platform part: gnet, the send socket, headers
}

var _ socket.Conn = (*Engine)(nil)
var _ socket.MaxDatagramSizer = (*Engine)(nil)

// newEngine allocates the engine's queues: loops rings of queueLen slots of
// cfg.MaxDatagramSize bytes.
func newEngine(cfg Config, loops int) *Engine {
	e := &Engine{
		limit:  cfg.MaxDatagramSize,
		rings:  make([]*ring, loops),
		done:   make(chan struct{}),
		notify: make(chan struct{}, 1),
	}
	for i := range e.rings {
		e.rings[i] = newRing(cfg.QueueLen, cfg.MaxDatagramSize)
	}
	return e
}

// closeDone makes every present and future read return errRead.
func (e *Engine) closeDone() { e.doneOnce.Do(func() { close(e.done) }) }

// ringFor returns the index of the ring the event loop owning socket fd
// produces into, claiming a free one on the loop's first datagram. Each
// event loop has its own socket, so the claim binds a ring to one loop for
// the engine's life. Called on event-loop goroutines only.
func (e *Engine) ringFor(fd int) int {
	for i, r := range e.rings {
		if r.fd.Load() == int64(fd) {
			return i
		}
	}
	for i, r := range e.rings {
		if r.fd.CompareAndSwap(-1, int64(fd)) {
			return i
		}
	}
	// gnet opens exactly one socket per event loop.
	panic("gnetudp: a socket beyond the configured event loops delivered traffic")
}

// wake tells a parked reader that a ring has data. Called by an event loop
// after publishing datagrams; costs one atomic load when no reader waits.
func (e *Engine) wake() {
	if e.waiting.Load() {
		select {
		case e.notify <- struct{}{}:
		default:
		}
	}
}

// ReadBatch blocks until at least one datagram is queued, then fills
// msgs[:n] and returns n ≥ 1. Each Buf receives a copy of one datagram
// (cut to len(Buf), counted in Stats.Truncated), N its length, Addr its
// source and Age how long it sat in the engine's queue (from when its
// event loop queued it to this read, on the monotonic clock; the time in
// the kernel's socket buffer before the event loop woke is not counted);
// no buffer is referenced after the call. It returns (0, nil) for
// an empty msgs. Datagrams from one peer arrive in the order they were
// received; datagrams from different peers, which the kernel may spread
// over several event loops, interleave. A blocked ReadBatch parks on a
// channel, costing no CPU, until an event loop queues a datagram or Close
// makes it return an error wrapping net.ErrClosed.
func (e *Engine) ReadBatch(msgs []socket.Message) (int, error) {
	if e.closed.Load() {
		return 0, e.errRead
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	for {
		if n := e.take(msgs); n > 0 {
			return n, nil
		}
		// Announce the wait, then look once more: an event loop that
		// published before seeing waiting set is caught by this look, and
		// one that publishes after it sees waiting and sends a token.
		e.waiting.Store(true)
		if n := e.take(msgs); n > 0 {
			e.waiting.Store(false)
			return n, nil
		}
		select {
		case <-e.notify:
			e.waiting.Store(false)
		case <-e.done:
			e.waiting.Store(false)
			return 0, e.errRead
		}
	}
}

// TryReadBatch is ReadBatch without waiting: it copies what the queues
// hold now, up to len(msgs), and returns (0, nil) when they are empty. It
// issues no system call.
func (e *Engine) TryReadBatch(msgs []socket.Message) (int, error) {
	if e.closed.Load() {
		return 0, e.errRead
	}
	select {
	case <-e.done:
		return 0, e.errRead
	default:
	}
	return e.take(msgs), nil
}

// take drains the rings into msgs, starting at a different ring each call
// so that a busy loop cannot starve the others.
func (e *Engine) take(msgs []socket.Message) int {
	n := 0
	var nbytes, trunc uint64
	var now int64 // one clock read for every ring, when one has data
	for k := range e.rings {
		if n == len(msgs) {
			break
		}
		r := e.rings[(e.next+k)%len(e.rings)]
		got, b, t := r.pop(msgs[n:], &now)
		n += got
		nbytes += b
		trunc += t
	}
	e.next = (e.next + 1) % len(e.rings)
	if n > 0 {
		e.rd.datagrams.Add(uint64(n))
		e.rd.bytes.Add(nbytes)
		if trunc > 0 {
			e.rd.truncated.Add(trunc)
		}
	}
	return n
}

// LocalAddr returns the address the engine's sockets are bound to (with the
// port the kernel picked when Open was given port 0).
func (e *Engine) LocalAddr() netip.AddrPort { return e.laddr }

// MaxDatagramSize returns the largest payload WriteBatch accepts and the
// engine receives whole (Config.MaxDatagramSize). The conformance suite in
// package sockettest asks for it.
func (e *Engine) MaxDatagramSize() int { return e.limit }

// Features returns the paths the engine is using.
func (e *Engine) Features() Features { return e.features }

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	s := Stats{
		Features:         e.features,
		EventLoops:       len(e.rings),
		DatagramsIn:      e.rd.datagrams.Load(),
		BytesIn:          e.rd.bytes.Load(),
		Truncated:        e.rd.truncated.Load(),
		DatagramsOut:     e.wr.datagrams.Load(),
		BytesOut:         e.wr.bytes.Load(),
		SendSyscalls:     e.wr.syscalls.Load(),
		OversizeRejected: e.wr.oversize.Load(),
		RecvBufferBytes:  e.rcvbuf,
		SendBufferBytes:  e.sndbuf,
	}
	for _, r := range e.rings {
		s.QueueLen = r.capacity()
		s.Received += r.received.Load()
		s.ReceivedBytes += r.bytes.Load()
		s.QueueDrops += r.drops.Load()
		s.Wakeups += r.wakeups.Load()
		s.RecvSyscalls += r.syscalls.Load()
		s.Queued += r.queued()
	}
	return s
}
