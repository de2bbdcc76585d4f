package udp

import (
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tickwire/tickwire/internal/sockaddr"
	"github.com/tickwire/tickwire/transport/socket"
)

const msgTrunc = unix.MSG_TRUNC

// isTruncation reports a read error that only means the datagram was cut:
// Linux reports truncation in the flags instead.
func isTruncation(error) bool { return false }

// tryRecvState is the plain socket's non-blocking receive on Linux: one
// recvmsg(MSG_DONTWAIT) through the RawConn, with the header, sockaddr and
// control buffer kept here so it allocates nothing. The blocking receive
// of ReadBatch shares the control buffer.
type tryRecvState struct {
	hdr   unix.Msghdr
	iov   unix.Iovec
	name  sockaddr.Raw
	ctrl  []byte // SCM_TIMESTAMPNS, when the socket's timestamps are on
	n     int
	ok    bool
	errno unix.Errno
	fn    func(fd uintptr) bool
}

func (t *tryRecvState) init() {
	t.hdr.Name = (*byte)(unsafe.Pointer(&t.name))
	t.hdr.Iov = &t.iov
	t.hdr.SetIovlen(1)
	t.ctrl = make([]byte, sizeofStampCmsg)
	t.fn = t.recvmsg
}

// oob is the control buffer for a receive: nil without timestamps.
func (c *plainConn) oob() []byte {
	if !c.stamps {
		return nil
	}
	return c.tr.ctrl
}

// age is a datagram's Age from the control messages of its receive,
// reading the clock into *now if it is still 0.
func (c *plainConn) age(ctrl []byte, now *int64) time.Duration {
	if !c.stamps {
		return 0
	}
	_, stamp, ok := parseControl(ctrl)
	if !ok {
		return 0
	}
	if *now == 0 {
		*now = time.Now().UnixNano()
	}
	return stampAge(*now, stamp)
}

func (t *tryRecvState) recvmsg(fd uintptr) bool {
	for {
		n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&t.hdr)), unix.MSG_DONTWAIT)
		switch e {
		case 0:
			t.n, t.ok = int(n), true
			return true
		case unix.EINTR:
		case unix.EAGAIN:
			return true
		default:
			t.errno = e
			return true
		}
	}
}

// tryRecv receives one datagram into m if one is queued, dating it
// against *now (see age).
func (c *plainConn) tryRecv(m *socket.Message, now *int64) (ok, cut bool, err error) {
	t := &c.tr
	t.iov.Base = nil
	if len(m.Buf) > 0 {
		t.iov.Base = &m.Buf[0]
	}
	t.iov.SetLen(len(m.Buf))
	t.hdr.Namelen = sockaddr.Len
	if c.stamps {
		t.hdr.Control = &t.ctrl[0]
		t.hdr.SetControllen(len(t.ctrl))
	}
	t.ok, t.errno = false, 0
	err = c.rc.Read(t.fn)
	t.iov.Base = nil
	if err != nil {
		return false, false, ioErr(err, &c.closed, "read", c.laddr)
	}
	if t.errno != 0 {
		return false, false, &net.OpError{Op: "read", Net: "udp", Source: net.UDPAddrFromAddrPort(c.laddr), Err: os.NewSyscallError("recvmsg", t.errno)}
	}
	if !t.ok {
		return false, false, nil
	}
	m.N = t.n
	m.Addr = sockaddr.AddrPort(&t.name)
	m.Age = 0
	if c.stamps {
		cl := min(int(t.hdr.Controllen), len(t.ctrl))
		m.Age = c.age(t.ctrl[:max(cl, 0)], now)
	}
	return true, t.hdr.Flags&unix.MSG_TRUNC != 0, nil
}

// socketBuffers reports SO_RCVBUF and SO_SNDBUF.
func socketBuffers(rc syscall.RawConn) (rcv, snd int) {
	rc.Control(func(fd uintptr) {
		rcv, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		snd, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	})
	return rcv, snd
}
