package udp

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/tickwire/tickwire/transport/socket"
)

const msgTrunc = windows.MSG_TRUNC

// fionread is FIONREAD: _IOR('f', 127, u_long).
const fionread = 0x4004667f

// openBest is Open and FromConn on Windows: the plain socket.
func openBest(uc *net.UDPConn, cfg Config) (impl, error) { return openPlain(uc, cfg) }

// isTruncation reports a read error that only means the datagram was cut
// (WSAEMSGSIZE: Windows fails the read but delivers the prefix).
func isTruncation(err error) bool { return errors.Is(err, windows.WSAEMSGSIZE) }

// tryRecvState is empty: the non-blocking receive keeps no state.
type tryRecvState struct{}

func (*tryRecvState) init() {}

// tryRecv receives one datagram into m if one is queued. Windows sockets
// under the Go runtime are overlapped, not non-blocking, so it asks
// FIONREAD first and reads only when data is queued. A queued zero-length
// datagram is invisible to FIONREAD: TryReadBatch sees it only once a
// non-empty datagram is queued behind it, and ReadBatch sees it at once.
func (c *plainConn) tryRecv(m *socket.Message, _ *int64) (ok, cut bool, err error) {
	var avail uint32
	var ioerr error
	if err := c.rc.Control(func(fd uintptr) {
		var ret uint32
		ioerr = windows.WSAIoctl(windows.Handle(fd), fionread, nil, 0, (*byte)(unsafe.Pointer(&avail)), 4, &ret, nil, 0)
	}); err != nil {
		return false, false, ioErr(err, &c.closed, "read", c.laddr)
	}
	if ioerr != nil {
		return false, false, os.NewSyscallError("WSAIoctl", ioerr)
	}
	if avail == 0 {
		return false, false, nil
	}
	n, _, flags, addr, err := c.uc.ReadMsgUDPAddrPort(m.Buf, nil)
	if err != nil {
		if !isTruncation(err) {
			return false, false, ioErr(err, &c.closed, "read", c.laddr)
		}
		n, cut = len(m.Buf), true
	}
	m.N = n
	m.Age = 0
	m.Addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	return true, cut || flags&msgTrunc != 0, nil
}

// socketBuffers reports 0, 0: the sizes are not queried on Windows.
func socketBuffers(syscall.RawConn) (rcv, snd int) { return 0, 0 }

// setTimestamps reports false: receive timestamps are Linux-only.
func setTimestamps(syscall.RawConn, bool) bool { return false }

// oob is nil: there are no receive timestamps here.
func (c *plainConn) oob() []byte { return nil }

// age is 0: there are no receive timestamps here.
func (c *plainConn) age([]byte, *int64) time.Duration { return 0 }
