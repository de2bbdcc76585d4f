package transport

import (
	"net/netip"

	"github.com/tickwire/tickwire/transport/socket"
)

// memNet is a lossless in-memory network for benchmarks that must not
// count a network model: every conn is 127.0.0.1:(memBasePort+i), a
// datagram written is copied into the destination's inbox at once, and a
// read takes it from there. After warm-up it allocates nothing (buffers
// are recycled). Not safe for concurrent use.
type memNet struct {
	conns []*memConn
}

const memBasePort = 20000

type memDatagram struct {
	buf  []byte
	from netip.AddrPort
}

// memConn is one socket.Conn on a memNet.
type memConn struct {
	net   *memNet
	addr  netip.AddrPort
	inbox []memDatagram
	head  int
	free  [][]byte
}

// listen adds a conn to the network.
func (n *memNet) listen() *memConn {
	c := &memConn{net: n, addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(memBasePort+len(n.conns)))}
	n.conns = append(n.conns, c)
	return c
}

func (c *memConn) ReadBatch(msgs []socket.Message) (int, error) { return c.TryReadBatch(msgs) }

func (c *memConn) TryReadBatch(msgs []socket.Message) (int, error) {
	k := 0
	for ; k < len(msgs) && c.head < len(c.inbox); k++ {
		d := c.inbox[c.head]
		c.inbox[c.head] = memDatagram{}
		c.head++
		msgs[k].N = copy(msgs[k].Buf, d.buf)
		msgs[k].Addr = d.from
		c.free = append(c.free, d.buf[:0])
	}
	if c.head == len(c.inbox) {
		c.inbox, c.head = c.inbox[:0], 0
	}
	return k, nil
}

func (c *memConn) WriteBatch(msgs []socket.Message) (int, error) {
	for i := range msgs {
		m := &msgs[i]
		if err := m.Check(socket.MaxDatagramSize); err != nil {
			return i, err
		}
		j := int(m.Addr.Port()) - memBasePort
		if j < 0 || j >= len(c.net.conns) || c.net.conns[j].addr != m.Addr {
			continue // nobody there: dropped, as UDP would
		}
		dst := c.net.conns[j]
		var b []byte
		if n := len(dst.free); n > 0 {
			b, dst.free = dst.free[n-1], dst.free[:n-1]
		}
		dst.inbox = append(dst.inbox, memDatagram{buf: append(b, m.Buf[:m.N]...), from: c.addr})
	}
	return len(msgs), nil
}

func (c *memConn) LocalAddr() netip.AddrPort { return c.addr }
func (c *memConn) Close() error              { return nil }
