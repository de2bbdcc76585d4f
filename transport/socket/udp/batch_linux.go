package udp

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tickwire/tickwire/internal/sockaddr"
	"github.com/tickwire/tickwire/transport/socket"
)

const (
	// gsoMaxSegments is the most datagrams one UDP_SEGMENT send may carry
	// (UDP_MAX_SEGMENTS, 64 on every kernel with GSO; newer ones allow 128).
	gsoMaxSegments = 64
	// gsoMaxBytes bounds a UDP_SEGMENT send's payload: the whole super
	// datagram must fit the 16-bit IP length.
	gsoMaxBytes = socket.MaxDatagramSize
	// groSlotSize is the room for one receive when GRO is live: a coalesced
	// buffer is at most 64 KiB.
	groSlotSize = 1 << 16
	// groMaxSlots bounds the GRO receive arena (groMaxSlots × 64 KiB).
	groMaxSlots = 16
	// gsoSafeSegment is the largest segment every IPv4 or IPv6 path
	// carries (the IPv6 minimum MTU, 1280, less IPv6 and UDP headers). A
	// GSO send of segments this small that the kernel still refuses with
	// EINVAL or EMSGSIZE means GSO is unusable on the socket, not that the
	// path MTU is too small.
	gsoSafeSegment = 1232
)

var (
	sizeofGSOCmsg = unix.CmsgSpace(2) // UDP_SEGMENT carries a uint16
	sizeofGROCmsg = unix.CmsgSpace(4) // UDP_GRO carries an int
)

// batchConn is the Linux socket: recvmmsg/sendmmsg through the RawConn of
// a *net.UDPConn, so waiting happens in the Go netpoller.
type batchConn struct {
	uc     *net.UDPConn
	rc     syscall.RawConn
	laddr  netip.AddrPort
	family int
	limit  int
	gro    bool
	stamps bool // SO_TIMESTAMPNS is on: receives carry SCM_TIMESTAMPNS
	rcvbuf int
	sndbuf int
	closed atomic.Bool
	gso    atomic.Bool // cleared for good when the kernel refuses GSO (blameGSO)

	ctr counters
	r   recvState
	_   [64]byte
	w   sendState
}

// recvState is owned by the reading goroutine. The header, iovec and
// sockaddr arrays are allocated once at open; hdrs[i] permanently points
// at iovs[i] and names[i], and each call only re-aims the iovecs.
type recvState struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []sockaddr.Raw

	// Set before and read after each RawConn.Read.
	n        int        // headers offered
	got      int        // headers filled
	errno    unix.Errno // a failure other than EAGAIN/EINTR
	syscalls uint64
	block    func(fd uintptr) bool // the recvmmsg callbacks, bound once so
	try      func(fd uintptr) bool // passing them does not allocate

	// ctrl holds each header's control messages (sizeofRecvCmsg each),
	// when GRO or timestamps are on; nil otherwise.
	ctrl []byte

	// GRO only: the kernel receives into arena slots (one per header), and
	// reads hand the datagrams out of them. segs, addrs and stamps are what
	// each slot's receive said (stamps: its SCM_TIMESTAMPNS in nanoseconds,
	// 0 for none; every segment of a slot shares it). Datagrams not yet
	// handed out are slots [pendI, pendN), the first starting at pendOff.
	arena   []byte
	segs    []int
	addrs   []netip.AddrPort
	stamps  []int64
	pendI   int
	pendN   int
	pendOff int

	// drained: the last read took fewer datagrams from the kernel than
	// it asked for and handed out every one (Conn.Drained).
	drained bool
}

// sendState is owned by the writing goroutine. Each header carries one
// datagram, or with GSO a run of messages, one iovec per message.
type sendState struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []sockaddr.Raw
	ctrl  []byte // a UDP_SEGMENT control message per header
	first []int  // header h carries messages first[h] to first[h+1]-1

	n        int // headers to send
	pos      int // headers sent
	errno    unix.Errno
	syscalls uint64
	fn       func(fd uintptr) bool

	// segLimit is the largest segment size GSO still coalesces. A GSO
	// send refused with EINVAL (a segment the route's MTU cannot carry)
	// lowers it below that size.
	segLimit int
}

// openBest is Open and FromConn on Linux.
func openBest(uc *net.UDPConn, cfg Config) (impl, error) {
	return openBatch(uc, cfg)
}

// errNoMmsg reports a kernel without recvmmsg/sendmmsg; openBatch falls
// back to the plain socket on it.
var errNoMmsg = errors.New("udp: recvmmsg/sendmmsg unavailable")

// openBatch makes uc the batched socket, probing recvmmsg/sendmmsg, GSO
// and GRO on its descriptor. Without recvmmsg/sendmmsg (ENOSYS, as in some
// sandboxes) it returns the plain socket over uc instead. On error uc is
// the caller's to close.
func openBatch(uc *net.UDPConn, cfg Config) (impl, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &batchConn{uc: uc, rc: rc, laddr: localAddrPort(uc), limit: cfg.MaxDatagramSize}
	var probeErr error
	var gso bool
	err = rc.Control(func(fd uintptr) {
		c.family, probeErr = sockaddr.Family(int(fd))
		if probeErr != nil {
			return
		}
		for _, sys := range [...]uintptr{unix.SYS_RECVMMSG, unix.SYS_SENDMMSG} {
			// A zero-length vector moves nothing and answers ENOSYS only
			// where the call does not exist.
			if _, _, e := unix.Syscall6(sys, fd, 0, 0, unix.MSG_DONTWAIT, 0, 0); e == unix.ENOSYS {
				probeErr = errNoMmsg
				return
			}
		}
		c.rcvbuf, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		c.sndbuf, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		if !cfg.DisableGSO {
			// Kernels with UDP GSO (4.18+) answer this option.
			_, e := unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
			gso = e == nil
		}
		if !cfg.DisableGRO {
			c.gro = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
		}
		if !cfg.DisableTimestamps {
			c.stamps = enableTimestamps(int(fd))
		}
	})
	if err == nil {
		err = probeErr
	}
	if err != nil {
		if errors.Is(err, errNoMmsg) {
			return openPlain(uc, cfg)
		}
		return nil, err
	}
	c.gso.Store(gso)
	c.initRecv(cfg.BatchSize)
	c.initSend(cfg.BatchSize)
	return c, nil
}

func (c *batchConn) initRecv(batch int) {
	r := &c.r
	slots := batch
	if c.gro {
		slots = min(batch, groMaxSlots)
		r.arena = make([]byte, slots*groSlotSize)
		r.segs = make([]int, slots)
		r.addrs = make([]netip.AddrPort, slots)
		r.stamps = make([]int64, slots)
	}
	if c.gro || c.stamps {
		r.ctrl = make([]byte, slots*sizeofRecvCmsg)
	}
	r.hdrs = make([]unix.Mmsghdr, slots)
	r.iovs = make([]unix.Iovec, slots)
	r.names = make([]sockaddr.Raw, slots)
	for i := range r.hdrs {
		h := &r.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		if c.gro {
			r.iovs[i].Base = &r.arena[i*groSlotSize]
			r.iovs[i].SetLen(groSlotSize)
		}
		if r.ctrl != nil {
			h.Control = &r.ctrl[i*sizeofRecvCmsg]
		}
	}
	r.block = func(fd uintptr) bool { return r.recvmmsg(fd, true) }
	r.try = func(fd uintptr) bool { return r.recvmmsg(fd, false) }
}

func (c *batchConn) initSend(batch int) {
	w := &c.w
	w.hdrs = make([]unix.Mmsghdr, batch)
	w.iovs = make([]unix.Iovec, batch)
	w.names = make([]sockaddr.Raw, batch)
	w.first = make([]int, batch+1)
	w.ctrl = make([]byte, batch*sizeofGSOCmsg)
	for i := range w.hdrs {
		w.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&w.names[i]))
		cm := (*unix.Cmsghdr)(unsafe.Pointer(&w.ctrl[i*sizeofGSOCmsg]))
		cm.Level = unix.IPPROTO_UDP
		cm.Type = unix.UDP_SEGMENT
		cm.SetLen(unix.CmsgLen(2))
	}
	w.fn = w.sendmmsg
	w.segLimit = gsoMaxBytes
}

// recvmmsg is the RawConn.Read callback. Returning false parks the reader
// in the netpoller until the socket is readable.
func (r *recvState) recvmmsg(fd uintptr, block bool) bool {
	for {
		n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(r.n), 0, 0, 0)
		r.syscalls++
		switch e {
		case 0:
			r.got = int(n)
			return true
		case unix.EINTR:
		case unix.EAGAIN:
			return !block
		default:
			r.errno = e
			return true
		}
	}
}

// sendmmsg is the RawConn.Write callback. A full send buffer (EAGAIN, or
// fewer headers taken than offered) parks the writer until writable.
func (w *sendState) sendmmsg(fd uintptr) bool {
	for w.pos < w.n {
		n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.hdrs[w.pos])), uintptr(w.n-w.pos), 0, 0, 0)
		w.syscalls++
		switch e {
		case 0:
			w.pos += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			w.errno = e
			return true
		}
	}
	return true
}

// recv issues one RawConn.Read of r.n headers, waiting if block.
func (c *batchConn) recv(block bool) error {
	r := &c.r
	r.got, r.errno, r.syscalls = 0, 0, 0
	fn := r.try
	if block {
		fn = r.block
	}
	err := c.rc.Read(fn)
	c.ctr.recv.syscalls.Add(r.syscalls)
	if err != nil {
		return ioErr(err, &c.closed, "read", c.laddr)
	}
	if r.errno != 0 {
		return &net.OpError{Op: "read", Net: "udp", Source: net.UDPAddrFromAddrPort(c.laddr), Err: os.NewSyscallError("recvmmsg", r.errno)}
	}
	return nil
}

func (c *batchConn) ReadBatch(msgs []socket.Message) (int, error) { return c.read(msgs, true) }

func (c *batchConn) TryReadBatch(msgs []socket.Message) (int, error) { return c.read(msgs, false) }

func (c *batchConn) drained() bool { return c.r.drained }

func (c *batchConn) read(msgs []socket.Message, block bool) (int, error) {
	if c.closed.Load() {
		return 0, socket.Closed("read", c.laddr)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	if c.gro {
		return c.readGRO(msgs, block)
	}
	r := &c.r
	k := min(len(msgs), len(r.hdrs))
	for i := range k {
		b := msgs[i].Buf
		iov := &r.iovs[i]
		iov.Base = nil
		if len(b) > 0 {
			iov.Base = &b[0]
		}
		iov.SetLen(len(b))
		r.hdrs[i].Hdr.Namelen = sockaddr.Len
		if c.stamps {
			r.hdrs[i].Hdr.SetControllen(sizeofRecvCmsg)
		}
	}
	r.n = k
	err := c.recv(block)
	for i := range k {
		r.iovs[i].Base = nil // keep no reference to the caller's buffers
	}
	r.drained = err == nil && r.got < k
	if err != nil {
		return 0, err
	}
	var nbytes, trunc uint64
	var now int64
	if c.stamps && r.got > 0 {
		now = time.Now().UnixNano()
	}
	for i := range r.got {
		h := &r.hdrs[i]
		m := &msgs[i]
		m.N = int(h.Len)
		m.Addr = sockaddr.AddrPort(&r.names[i])
		m.Age = 0
		if c.stamps {
			_, stamp, _ := parseControl(r.slotCtrl(i))
			m.Age = stampAge(now, stamp)
		}
		nbytes += uint64(h.Len)
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			trunc++
		}
	}
	c.countRecv(r.got, nbytes, trunc)
	return r.got, nil
}

// slotCtrl returns the control messages the kernel wrote for header i.
func (r *recvState) slotCtrl(i int) []byte {
	cl := min(int(r.hdrs[i].Hdr.Controllen), sizeofRecvCmsg)
	return r.ctrl[i*sizeofRecvCmsg : i*sizeofRecvCmsg+max(cl, 0)]
}

func (c *batchConn) countRecv(n int, nbytes, trunc uint64) {
	if n > 0 {
		c.ctr.recv.datagrams.Add(uint64(n))
		c.ctr.recv.bytes.Add(nbytes)
	}
	if trunc > 0 {
		c.ctr.recv.truncated.Add(trunc)
	}
}

// readGRO hands out datagrams left from the previous receive, then, if
// msgs has room, receives once more into the arena and hands out more.
// It waits only when it has nothing at all to return. The clock for Age
// is read before handing out leftovers and again after a receive that
// got something.
func (c *batchConn) readGRO(msgs []socket.Message, block bool) (int, error) {
	r := &c.r
	var nbytes, trunc uint64
	var now int64
	if c.stamps && r.pendI < r.pendN {
		now = time.Now().UnixNano()
	}
	n := r.drain(msgs, now, &nbytes, &trunc)
	r.drained = false
	if n < len(msgs) {
		for i := range r.hdrs {
			h := &r.hdrs[i].Hdr
			h.Namelen = sockaddr.Len
			h.SetControllen(sizeofRecvCmsg)
		}
		r.n = len(r.hdrs)
		if err := c.recv(block && n == 0); err != nil {
			if n == 0 {
				return 0, err
			}
			// Deliver what we have; a lasting error recurs next call.
		} else {
			var coalesced uint64
			for i := range r.got {
				h := &r.hdrs[i]
				r.addrs[i] = sockaddr.AddrPort(&r.names[i])
				seg, stamp, _ := parseControl(r.slotCtrl(i))
				r.stamps[i] = stamp
				if seg <= 0 || seg >= int(h.Len) {
					seg = int(h.Len)
				} else {
					coalesced++
				}
				r.segs[i] = seg
				if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
					trunc++ // beyond 64 KiB: cannot happen for UDP
				}
			}
			if coalesced > 0 {
				c.ctr.recv.groReceives.Add(coalesced)
			}
			r.pendI, r.pendN, r.pendOff = 0, r.got, 0
			if c.stamps && r.got > 0 {
				now = time.Now().UnixNano()
			}
			n += r.drain(msgs[n:], now, &nbytes, &trunc)
			r.drained = r.got < len(r.hdrs) && r.pendI >= r.pendN
		}
	}
	c.countRecv(n, nbytes, trunc)
	return n, nil
}

// drain copies pending datagrams out of the arena into msgs, splitting
// coalesced slots at their segment size. now dates them (Age): the clock
// as time.Now().UnixNano(), or 0 without timestamps.
func (r *recvState) drain(msgs []socket.Message, now int64, nbytes, trunc *uint64) int {
	n := 0
	for n < len(msgs) && r.pendI < r.pendN {
		i := r.pendI
		l := int(r.hdrs[i].Len)
		end := min(r.pendOff+r.segs[i], l)
		d := r.arena[i*groSlotSize+r.pendOff : i*groSlotSize+end]
		m := &msgs[n]
		m.N = copy(m.Buf, d)
		m.Addr = r.addrs[i]
		m.Age = stampAge(now, r.stamps[i])
		*nbytes += uint64(m.N)
		if m.N < len(d) {
			*trunc++
		}
		n++
		r.pendOff = end
		if r.pendOff >= l {
			r.pendI, r.pendOff = r.pendI+1, 0
		}
	}
	return n
}

func (c *batchConn) WriteBatch(msgs []socket.Message) (int, error) {
	if c.closed.Load() {
		return 0, socket.Closed("write", c.laddr)
	}
	w := &c.w
	done := 0
	var nbytes uint64
	var err error
	// After the kernel refuses a GSO send, the messages of that send go
	// out one per header (the first noCoalesce of rest), and the refusal
	// is blamed on GSO only once the first of them is accepted on its own:
	// a destination the kernel rejects anyway (say, port 0) also fails a
	// GSO send, and must not turn GSO off.
	noCoalesce := 0
	var suspect gsoSuspect
	for done < len(msgs) && err == nil {
		rest := msgs[done:]
		nh, nm, gsoSends, verr := c.build(rest, noCoalesce)
		if nh > 0 {
			sent, serr := c.send(nh)
			if sent > 0 && suspect.armed {
				c.blameGSO(suspect)
				suspect.armed = false
			}
			if serr != nil {
				gsoSends -= c.countGSO(sent, nh)
				nm, verr = w.first[sent], nil
				if s, ok := c.gsoRefusal(sent); ok {
					noCoalesce, suspect = w.first[sent+1]-w.first[sent], s
				} else {
					err = serr
					if w.errno != 0 {
						err = &net.OpError{Op: "write", Net: "udp", Source: net.UDPAddrFromAddrPort(c.laddr),
							Addr: net.UDPAddrFromAddrPort(rest[nm].Addr), Err: os.NewSyscallError("sendmmsg", w.errno)}
					}
				}
			} else {
				noCoalesce = max(noCoalesce-nm, 0)
			}
			for i := range w.first[nh] {
				w.iovs[i].Base = nil // keep no reference to the caller's buffers
			}
		}
		for i := range nm {
			nbytes += uint64(rest[i].N)
		}
		if gsoSends > 0 {
			c.ctr.send.gsoSends.Add(uint64(gsoSends))
		}
		done += nm
		if err == nil && verr != nil {
			if errors.Is(verr, socket.ErrTooLarge) {
				c.ctr.send.oversize.Add(1)
			}
			err = verr
		}
	}
	if done > 0 {
		c.ctr.send.datagrams.Add(uint64(done))
		c.ctr.send.bytes.Add(nbytes)
	}
	return done, err
}

// countGSO counts the GSO headers among w.hdrs[from:to].
func (c *batchConn) countGSO(from, to int) int {
	n := 0
	for h := from; h < to; h++ {
		if c.w.first[h+1]-c.w.first[h] > 1 {
			n++
		}
	}
	return n
}

// gsoSuspect is a GSO send the kernel refused, awaiting proof that GSO
// (not the destination) was the cause.
type gsoSuspect struct {
	armed bool
	errno unix.Errno
	seg   int
}

// gsoRefusal reports whether the send failed at header h with an error a
// device or route unable to segment gives: EIO, EINVAL or EMSGSIZE on a
// header carrying two or more datagrams.
func (c *batchConn) gsoRefusal(h int) (gsoSuspect, bool) {
	w := &c.w
	if w.first[h+1]-w.first[h] < 2 {
		return gsoSuspect{}, false
	}
	switch w.errno {
	case unix.EIO, unix.EINVAL, unix.EMSGSIZE:
		return gsoSuspect{armed: true, errno: w.errno, seg: int(w.iovs[w.first[h]].Len)}, true
	}
	return gsoSuspect{}, false
}

// blameGSO adapts to a GSO refusal, once a datagram of the refused send
// went out alone: EIO (the device cannot checksum or segment) turns GSO
// off for the socket; EINVAL or EMSGSIZE for segments larger than
// gsoSafeSegment (a segment bigger than the route's MTU) stops coalescing
// segments that big, and for smaller segments turns GSO off.
func (c *batchConn) blameGSO(s gsoSuspect) {
	c.ctr.send.gsoFallbacks.Add(1)
	if s.errno != unix.EIO && s.seg > gsoSafeSegment {
		c.w.segLimit = min(c.w.segLimit, s.seg-1)
		return
	}
	c.gso.Store(false)
}

// build lays out headers for as many of msgs as fit one sendmmsg. It
// stops early at an invalid message, returning its error with nm its
// index. Messages nm covers all sit in headers [0, nh); gsoSends counts the
// headers carrying more than one. The first noCoalesce messages get a
// header each.
func (c *batchConn) build(msgs []socket.Message, noCoalesce int) (nh, nm, gsoSends int, err error) {
	w := &c.w
	gso := c.gso.Load()
	var (
		seg, segs, total int
		dst              netip.AddrPort
		open             bool // the last header may take more segments
	)
	for nm < len(msgs) && nm < len(w.iovs) {
		m := &msgs[nm]
		if err = m.Check(c.limit); err != nil {
			break
		}
		iov := &w.iovs[nm]
		iov.Base = nil
		if m.N > 0 {
			iov.Base = &m.Buf[0]
		}
		iov.SetLen(m.N)
		if open && m.N <= seg && m.N > 0 && m.Addr == dst && segs < gsoMaxSegments && total+m.N <= gsoMaxBytes {
			segs++
			total += m.N
			open = m.N == seg
			nm++
			continue
		}
		if nh == len(w.hdrs) {
			break
		}
		h := &w.hdrs[nh].Hdr
		var salen uint32
		if salen, err = putSockaddr(&w.names[nh], m.Addr, c.family); err != nil {
			break
		}
		h.Namelen = salen
		h.Iov = iov
		w.first[nh] = nm
		nh++
		nm++
		seg, segs, total, dst = m.N, 1, m.N, m.Addr
		open = gso && m.N > 0 && m.N <= w.segLimit && nm > noCoalesce // nm-1 is this header's first message
	}
	w.first[nh] = nm
	for i := range nh {
		h := &w.hdrs[i].Hdr
		k := w.first[i+1] - w.first[i]
		h.SetIovlen(k)
		if k > 1 {
			gsoSends++
			off := i * sizeofGSOCmsg
			*(*uint16)(unsafe.Pointer(&w.ctrl[off+unix.CmsgLen(0)])) = uint16(w.iovs[w.first[i]].Len)
			h.Control = &w.ctrl[off]
			h.SetControllen(sizeofGSOCmsg)
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
	}
	return nh, nm, gsoSends, err
}

// send issues sendmmsg for headers [0, nh) and returns how many the kernel
// took. On a kernel error, w.errno holds it.
func (c *batchConn) send(nh int) (int, error) {
	w := &c.w
	w.n, w.pos, w.errno, w.syscalls = nh, 0, 0, 0
	err := c.rc.Write(w.fn)
	c.ctr.send.syscalls.Add(w.syscalls)
	if err != nil {
		return w.pos, ioErr(err, &c.closed, "write", c.laddr)
	}
	if w.errno != 0 {
		return w.pos, w.errno
	}
	return nh, nil
}

func (c *batchConn) LocalAddr() netip.AddrPort { return c.laddr }

func (c *batchConn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	return c.uc.Close()
}

func (c *batchConn) maxDatagramSize() int { return c.limit }

func (c *batchConn) udpConn() *net.UDPConn { return c.uc }

func (c *batchConn) buffered() bool { return c.gro && c.r.pendI < c.r.pendN }

func (c *batchConn) features() Features {
	return Features{BatchRecv: true, BatchSend: true, GSO: c.gso.Load(), GRO: c.gro, Timestamps: c.stamps}
}

func (c *batchConn) stats(s *Stats) {
	s.Features = c.features()
	c.ctr.fill(s)
	s.RecvBufferBytes, s.SendBufferBytes = c.rcvbuf, c.sndbuf
}
