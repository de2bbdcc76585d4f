//go:build unix && !linux

package udp

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

const msgTrunc = syscall.MSG_TRUNC

// openBest is Open and FromConn on Unix systems other than Linux: the plain socket.
func openBest(uc *net.UDPConn, cfg Config) (impl, error) { return openPlain(uc, cfg) }

// isTruncation reports a read error that only means the datagram was cut:
// Unix systems report truncation in the flags instead.
func isTruncation(error) bool { return false }

// tryRecvState is empty: the non-blocking receive keeps no state.
type tryRecvState struct{}

func (*tryRecvState) init() {}

// tryRecv receives one datagram into m if one is queued, with one
// recvmsg(MSG_DONTWAIT). syscall.Recvmsg allocates the source sockaddr.
func (c *plainConn) tryRecv(m *socket.Message, _ *int64) (ok, cut bool, err error) {
	var (
		n, flags int
		from     syscall.Sockaddr
		rerr     error
	)
	err = c.rc.Read(func(fd uintptr) bool {
		for {
			n, _, flags, from, rerr = syscall.Recvmsg(int(fd), m.Buf, nil, syscall.MSG_DONTWAIT)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			rerr = nil
		} else if rerr == nil {
			ok = true
		}
		return true
	})
	if err != nil {
		return false, false, ioErr(err, &c.closed, "read", c.laddr)
	}
	if rerr != nil {
		return false, false, &net.OpError{Op: "read", Net: "udp", Source: net.UDPAddrFromAddrPort(c.laddr), Err: os.NewSyscallError("recvmsg", rerr)}
	}
	if !ok {
		return false, false, nil
	}
	m.N = n
	m.Age = 0
	switch sa := from.(type) {
	case *syscall.SockaddrInet4:
		m.Addr = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *syscall.SockaddrInet6:
		a := netip.AddrFrom16(sa.Addr)
		if a.Is4In6() {
			a = a.Unmap()
		} else if sa.ZoneId != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(sa.ZoneId), 10))
		}
		m.Addr = netip.AddrPortFrom(a, uint16(sa.Port))
	default:
		m.Addr = netip.AddrPort{}
	}
	return true, flags&syscall.MSG_TRUNC != 0, nil
}

// socketBuffers reports SO_RCVBUF and SO_SNDBUF.
func socketBuffers(rc syscall.RawConn) (rcv, snd int) {
	rc.Control(func(fd uintptr) {
		rcv, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
		snd, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	})
	return rcv, snd
}

// setTimestamps reports false: receive timestamps are Linux-only.
func setTimestamps(syscall.RawConn, bool) bool { return false }

// oob is nil: there are no receive timestamps here.
func (c *plainConn) oob() []byte { return nil }

// age is 0: there are no receive timestamps here.
func (c *plainConn) age([]byte, *int64) time.Duration { return 0 }
