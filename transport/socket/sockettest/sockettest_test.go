package sockettest_test

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/sockettest"
)

// memNet is a minimal in-memory socket.Conn network: the readable
// reference the suite is checked against, with no UDP, no clock and no
// delivery delay, and a datagram limit below socket.MaxDatagramSize so the
// suite goes through MaxDatagramSizer.
type memNet struct {
	mu    sync.Mutex
	conns map[netip.AddrPort]*memConn
	next  uint16
}

const memLimit = 1200

type memDatagram struct {
	data []byte
	from netip.AddrPort
}

type memConn struct {
	net    *memNet
	addr   netip.AddrPort
	mu     sync.Mutex
	cond   sync.Cond
	queue  []memDatagram
	closed bool
	woken  bool // a Wake not yet consumed by a Wait
}

func (n *memNet) open() *memConn {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	c := &memConn{net: n, addr: netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), n.next)}
	c.cond.L = &c.mu
	n.conns[c.addr] = c
	return c
}

func (c *memConn) ReadBatch(msgs []socket.Message) (int, error) {
	if len(msgs) == 0 {
		return 0, c.closedErr()
	}
	c.mu.Lock()
	for len(c.queue) == 0 && !c.closed {
		c.cond.Wait()
	}
	c.mu.Unlock()
	return c.TryReadBatch(msgs)
}

func (c *memConn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return socket.Closed("read", c.addr)
	}
	return nil
}

func (c *memConn) TryReadBatch(msgs []socket.Message) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, socket.Closed("read", c.addr)
	}
	n := 0
	for n < len(msgs) && len(c.queue) > 0 {
		d := c.queue[0]
		c.queue = c.queue[1:]
		msgs[n].N = copy(msgs[n].Buf, d.data)
		msgs[n].Addr = d.from
		msgs[n].Age = 0 // no queue delay worth reporting
		n++
	}
	return n, nil
}

func (c *memConn) WriteBatch(msgs []socket.Message) (int, error) {
	if err := c.closedErr(); err != nil {
		return 0, socket.Closed("write", c.addr)
	}
	for i := range msgs {
		m := &msgs[i]
		if err := m.Check(memLimit); err != nil {
			return i, err
		}
		c.net.mu.Lock()
		dst := c.net.conns[m.Addr]
		c.net.mu.Unlock()
		if dst == nil {
			continue // nobody there: dropped, as UDP would
		}
		dst.mu.Lock()
		dst.queue = append(dst.queue, memDatagram{append([]byte(nil), m.Buf[:m.N]...), c.addr})
		dst.cond.Broadcast() // a ReadBatch or a Wait
		dst.mu.Unlock()
	}
	return len(msgs), nil
}

func (c *memConn) LocalAddr() netip.AddrPort { return c.addr }
func (c *memConn) MaxDatagramSize() int      { return memLimit }

// Wait blocks until a datagram is queued, Wake is called or timeout
// passes. The timer is the one wall-clock part of the reference.
func (c *memConn) Wait(timeout time.Duration) error {
	t := time.AfterFunc(timeout, func() {
		c.mu.Lock()
		c.woken = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer t.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed && !c.woken && len(c.queue) == 0 {
		c.cond.Wait()
	}
	c.woken = false
	if c.closed {
		return socket.Closed("wait", c.addr)
	}
	return nil
}

func (c *memConn) Wake() {
	c.mu.Lock()
	c.woken = true
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *memConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.cond.Broadcast()
	return nil
}

// TestSuiteOnReference runs the suite on the in-memory reference: the
// suite needs nothing UDP-specific and no delivery delay.
func TestSuiteOnReference(t *testing.T) {
	sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
		n := &memNet{conns: map[netip.AddrPort]*memConn{}}
		a, b := n.open(), n.open()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	})
}
