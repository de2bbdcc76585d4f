package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"

	"github.com/tickwire/tickwire/transport/socket"
)

// plainConn is the portable socket: one ReadMsgUDPAddrPort or
// WriteToUDPAddrPort of the standard library per datagram. The standard
// library has no non-blocking read, so TryReadBatch, and ReadBatch after
// its first datagram, read through the RawConn with a platform-specific
// non-blocking receive (tryRecv).
type plainConn struct {
	uc     *net.UDPConn
	rc     syscall.RawConn
	laddr  netip.AddrPort
	limit  int
	rcvbuf int
	sndbuf int
	stamps bool // SO_TIMESTAMPNS is on (Linux only)
	closed atomic.Bool
	ctr    counters
	tr     tryRecvState // owned by the reading goroutine
}

// openPlain makes uc the plain socket. On error uc is the caller's to
// close.
func openPlain(uc *net.UDPConn, cfg Config) (impl, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &plainConn{uc: uc, rc: rc, laddr: localAddrPort(uc), limit: cfg.MaxDatagramSize}
	c.rcvbuf, c.sndbuf = socketBuffers(rc)
	c.stamps = setTimestamps(rc, cfg.DisableTimestamps)
	c.tr.init()
	return c, nil
}

func (c *plainConn) udpConn() *net.UDPConn { return c.uc }

func (c *plainConn) buffered() bool { return false }

func (c *plainConn) ReadBatch(msgs []socket.Message) (int, error) {
	if c.closed.Load() {
		return 0, socket.Closed("read", c.laddr)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	m := &msgs[0]
	oob := c.oob()
	n, oobn, flags, addr, err := c.uc.ReadMsgUDPAddrPort(m.Buf, oob)
	c.ctr.recv.syscalls.Add(1)
	var trunc uint64
	if err != nil {
		if !isTruncation(err) {
			return 0, ioErr(err, &c.closed, "read", c.laddr)
		}
		n, trunc = len(m.Buf), 1
	} else if flags&msgTrunc != 0 {
		trunc = 1
	}
	var now int64 // the clock for Age, read once when first needed
	m.N = n
	m.Age = c.age(oob[:min(max(oobn, 0), len(oob))], &now)
	m.Addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	c.count(1, uint64(n), trunc)
	// Take whatever else is already queued, without waiting. An error
	// here recurs on the next call.
	k, _ := c.tryRead(msgs[1:], &now)
	return 1 + k, nil
}

func (c *plainConn) TryReadBatch(msgs []socket.Message) (int, error) {
	if c.closed.Load() {
		return 0, socket.Closed("read", c.laddr)
	}
	var now int64
	return c.tryRead(msgs, &now)
}

// tryRead is TryReadBatch; now is the clock Age is taken against
// (time.Now().UnixNano(), 0 until first needed), shared by every datagram
// of one read call.
func (c *plainConn) tryRead(msgs []socket.Message, now *int64) (int, error) {
	var n int
	var nbytes, trunc, syscalls uint64
	var err error
	for n < len(msgs) {
		m := &msgs[n]
		var ok, cut bool
		ok, cut, err = c.tryRecv(m, now)
		syscalls++
		if err != nil || !ok {
			break
		}
		nbytes += uint64(m.N)
		if cut {
			trunc++
		}
		n++
	}
	c.ctr.recv.syscalls.Add(syscalls)
	c.count(n, nbytes, trunc)
	if err != nil && n == 0 {
		return 0, err
	}
	return n, nil
}

func (c *plainConn) count(n int, nbytes, trunc uint64) {
	if n > 0 {
		c.ctr.recv.datagrams.Add(uint64(n))
		c.ctr.recv.bytes.Add(nbytes)
	}
	if trunc > 0 {
		c.ctr.recv.truncated.Add(trunc)
	}
}

func (c *plainConn) WriteBatch(msgs []socket.Message) (int, error) {
	if c.closed.Load() {
		return 0, socket.Closed("write", c.laddr)
	}
	var n int
	var nbytes uint64
	var err error
	for n < len(msgs) {
		m := &msgs[n]
		if err = m.Check(c.limit); err != nil {
			if errors.Is(err, socket.ErrTooLarge) {
				c.ctr.send.oversize.Add(1)
			}
			break
		}
		addr := m.Addr
		if a := addr.Addr(); a.Is4In6() {
			addr = netip.AddrPortFrom(a.Unmap(), addr.Port())
		} else if a.Is6() && c.laddr.Addr().Is4() {
			err = fmt.Errorf("%w: destination %v on an IPv4 socket", socket.ErrInvalidAddr, addr)
			break
		}
		_, err = c.uc.WriteToUDPAddrPort(m.Buf[:m.N], addr)
		c.ctr.send.syscalls.Add(1)
		if err != nil {
			err = ioErr(err, &c.closed, "write", c.laddr)
			break
		}
		nbytes += uint64(m.N)
		n++
	}
	if n > 0 {
		c.ctr.send.datagrams.Add(uint64(n))
		c.ctr.send.bytes.Add(nbytes)
	}
	return n, err
}

func (c *plainConn) LocalAddr() netip.AddrPort { return c.laddr }

func (c *plainConn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	return c.uc.Close()
}

func (c *plainConn) maxDatagramSize() int { return c.limit }

func (c *plainConn) features() Features { return Features{Timestamps: c.stamps} }

func (c *plainConn) stats(s *Stats) {
	s.Features = c.features()
	c.ctr.fill(s)
	s.RecvBufferBytes, s.SendBufferBytes = c.rcvbuf, c.sndbuf
}
