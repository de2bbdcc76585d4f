package simlink

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/tickwire/tickwire/transport/socket"
)

// ConnStats counts what one endpoint did. A snapshot.
type ConnStats struct {
	// Sent and SentBytes count datagrams accepted by WriteBatch, whatever
	// became of them afterwards.
	Sent, SentBytes uint64
	// TooLarge counts datagrams WriteBatch refused with socket.ErrTooLarge.
	TooLarge uint64
	// Received and ReceivedBytes count datagrams returned by ReadBatch and
	// TryReadBatch; ReceivedBytes counts the bytes copied out.
	Received, ReceivedBytes uint64
	// Truncated counts datagrams longer than the Message.Buf they were read
	// into; the excess bytes were discarded.
	Truncated uint64
	// Queued is the number of datagrams due and waiting to be read.
	Queued int
}

// Conn is an endpoint of a Network, bound to one virtual address. It
// implements socket.Conn with the same contract as the UDP socket:
//
//   - WriteBatch copies each Buf[:N] into a pooled buffer before returning,
//     so the caller may overwrite or reuse its buffers at once (S-A4). A
//     datagram is accepted (counted as sent) even when it is then lost, or
//     when no endpoint is bound at its destination.
//   - ReadBatch and TryReadBatch copy each datagram into the caller's Buf
//     and keep no reference to it.
//   - ReadBatch, TryReadBatch and WriteBatch are each safe for one goroutine
//     at a time, a reader and a writer may run concurrently, and Close may be
//     called from anywhere, any number of times.
//
// A Conn starts no goroutine: a ReadBatch blocked on an empty queue wakes
// when another goroutine moves the Network's clock (or sends with zero
// delay), or when the Conn is closed.
type Conn struct {
	net  *Network
	addr netip.AddrPort

	// Guarded by net.mu.
	cond    sync.Cond // L is &net.mu; signalled on delivery and Close
	ready   fifo
	closed  bool
	waiting int // ReadBatch calls blocked in cond.Wait (observed by tests)
	stats   ConnStats
	linkDst netip.AddrPort // destination of the cached link
	link    *link          // last link written to, saves a map lookup
}

var _ socket.Conn = (*Conn)(nil)

// LocalAddr returns the address the endpoint is bound to.
func (c *Conn) LocalAddr() netip.AddrPort { return c.addr }

// MaxDatagramSize returns the largest datagram WriteBatch accepts on the
// default link: the MTU of Network.SetDefaultLink's config, DefaultMTU
// unless set. A direction configured with SetLink or SetPair may accept a
// different size (see Network.Link). The UDP socket has the same method,
// for conformance tests that probe the limit.
func (c *Conn) MaxDatagramSize() int {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	return c.net.def.WithDefaults().MTU
}

// Network returns the network the endpoint belongs to.
func (c *Conn) Network() *Network { return c.net }

// Stats returns a snapshot of the endpoint's counters.
func (c *Conn) Stats() ConnStats {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	s := c.stats
	s.Queued = c.ready.len()
	return s
}

// WriteBatch sends msgs in order through the links from this endpoint to
// each msgs[i].Addr, and returns how many were accepted. On error msgs[:n]
// were sent and msgs[n] was not: socket.ErrTooLarge (wrapped) when N
// exceeds the link's MTU, socket.ErrInvalidMessage when N is outside Buf,
// socket.ErrInvalidAddr for an invalid, unspecified or port-0
// destination, and socket.Closed("write", …) — wrapping socket.ErrClosed
// and net.ErrClosed — after Close. It keeps no
// reference to any Buf. Cost per datagram: one model decision, one copy
// into a recycled buffer and a heap push; no allocation in steady state.
func (c *Conn) WriteBatch(msgs []socket.Message) (int, error) {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.closed {
		return 0, socket.Closed("write", c.addr)
	}
	for i := range msgs {
		m := &msgs[i]
		if m.N < 0 || m.N > len(m.Buf) {
			return i, fmt.Errorf("simlink: message %d: %w: N %d with len(Buf) %d", i, socket.ErrInvalidMessage, m.N, len(m.Buf))
		}
		dst := unmap(m.Addr)
		if !dst.Addr().IsValid() || dst.Addr().IsUnspecified() || dst.Port() == 0 {
			return i, fmt.Errorf("simlink: message %d: %w: destination %v", i, socket.ErrInvalidAddr, m.Addr)
		}
		if err := n.send(c, dst, m.Buf[:m.N]); err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

// ReadBatch blocks until at least one datagram is due at this endpoint,
// then fills msgs with as many due datagrams as fit, oldest first, and
// returns their count. Each datagram is copied into msgs[i].Buf (truncated
// to len(Buf), counted in ConnStats.Truncated), msgs[i].N is set to the
// bytes copied and msgs[i].Addr to the sender. On an open endpoint an empty
// msgs returns (0, nil) at once. After Close — including a Close while
// blocked — it returns an error satisfying errors.Is(err, net.ErrClosed).
// Cost per datagram: one copy; the Network's buffer is recycled.
func (c *Conn) ReadBatch(msgs []socket.Message) (int, error) {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	if len(msgs) == 0 && !c.closed {
		return 0, nil
	}
	for !c.closed && c.ready.len() == 0 {
		c.waiting++
		c.cond.Wait()
		c.waiting--
	}
	if c.closed {
		return 0, socket.Closed("read", c.addr)
	}
	return c.fill(msgs), nil
}

// TryReadBatch is ReadBatch without blocking: it returns (0, nil) when no
// datagram is due.
func (c *Conn) TryReadBatch(msgs []socket.Message) (int, error) {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	if c.closed {
		return 0, socket.Closed("read", c.addr)
	}
	return c.fill(msgs), nil
}

// fill copies due datagrams into msgs and recycles their buffers. The
// caller holds net.mu.
func (c *Conn) fill(msgs []socket.Message) int {
	k := 0
	for k < len(msgs) && c.ready.len() > 0 {
		p := c.ready.pop()
		m := &msgs[k]
		m.N = copy(m.Buf, p.buf)
		m.Addr = p.src
		m.Age = c.net.now - p.at
		if m.N < len(p.buf) {
			c.stats.Truncated++
		}
		c.stats.Received++
		c.stats.ReceivedBytes += uint64(m.N)
		c.net.release(p)
		k++
	}
	return k
}

// Close unbinds the endpoint, discards the datagrams waiting in its queue
// and wakes any blocked ReadBatch. Datagrams still in flight to its address
// are dropped on arrival (DropNoEndpoint) unless a new endpoint binds the
// address first. It always returns nil; later calls do nothing.
func (c *Conn) Close() error {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if n.conns[c.addr] == c {
		delete(n.conns, c.addr)
		n.bindGen++
	}
	for c.ready.len() > 0 {
		n.release(c.ready.pop())
	}
	c.cond.Broadcast()
	return nil
}

// cachedLink returns the link from c to dst if it exists, remembering it
// for the next datagram to the same destination. The caller holds net.mu.
func (c *Conn) cachedLink(dst netip.AddrPort) *link {
	if c.link != nil && c.linkDst == dst {
		return c.link
	}
	l := c.net.links[linkKey{c.addr, dst}]
	if l != nil {
		c.linkDst, c.link = dst, l
	}
	return l
}
