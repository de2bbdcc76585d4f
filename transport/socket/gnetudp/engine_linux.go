package gnetudp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"github.com/tickwire/tickwire/internal/sockaddr"
	"github.com/tickwire/tickwire/transport/socket"
)

const (
	// sendBatch is the most datagrams one sendmmsg carries.
	sendBatch = socket.IdealBatchSize
	// drainBatch is the most datagrams one draining recvmmsg takes, and
	// drainRounds the most recvmmsg calls per wake-up: a loop returns to
	// gnet after at most 1 + 256 datagrams, so its task queue (shutdown
	// among others) is served even under a flood.
	drainBatch  = socket.IdealBatchSize
	drainRounds = 4
	// pollSlice bounds each wait for a writable socket in WriteBatch, so
	// that a writer waiting on a full send buffer notices Close.
	pollSlice = 50 // milliseconds
	// tickIdle is the delay gnet's ticker is given after its first tick,
	// which only marks the engine as started.
	tickIdle = 24 * time.Hour
)

// sysState is the Linux part of an Engine.
type sysState struct {
	eng       gnet.Engine // set in OnBoot
	started   chan struct{}
	startOnce sync.Once
	stopped   chan struct{} // closed when gnet.Run returns
	runErr    error         // what gnet.Run returned

	// sendMu guards sendFD against Close: WriteBatch holds it shared while
	// it uses the descriptor, Close exclusively to close it.
	sendMu sync.RWMutex
	sendFD int // a dup of the first event loop's socket; -1 once closed
	family int

	// Writer state, allocated at open: hdrs[i] permanently points at
	// iovs[i] and names[i]; each call re-aims the iovecs at the caller's
	// buffers and clears them before returning.
	hdrs        []unix.Mmsghdr
	iovs        []unix.Iovec
	names       []sockaddr.Raw
	pfd         [1]unix.PollFd
	perDatagram bool // sendto per datagram, as gnet's Conn.SendTo does (benchmarks)

	drains []*drainState // indexed like Engine.rings
}

// drainState is the recvmmsg vector of one event loop, used only by the
// loop that claimed the matching ring. Its iovecs point into the ring.
type drainState struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []sockaddr.Raw
}

// newVectors allocates n message headers, each pointing at its own iovec
// and sockaddr.
func newVectors(n int) ([]unix.Mmsghdr, []unix.Iovec, []sockaddr.Raw) {
	hdrs := make([]unix.Mmsghdr, n)
	iovs := make([]unix.Iovec, n)
	names := make([]sockaddr.Raw, n)
	for i := range hdrs {
		h := &hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&names[i]))
		h.Iov = &iovs[i]
		h.SetIovlen(1)
	}
	return hdrs, iovs, names
}

// Open starts a gnet engine serving UDP on laddr and returns it once every
// event loop's socket is bound. Port 0 picks a free port, shared by all
// the loops (LocalAddr reports it). An IPv4 laddr gives IPv4 sockets; an
// IPv6 one IPv6 sockets, dual stack for [::] (IPv4 peers then appear as
// plain IPv4 addresses).
//
// Open allocates the queues (EventLoops × QueueLen slots of
// MaxDatagramSize bytes) and starts EventLoops + 2 goroutines: gnet's
// event loops, gnet's ticker, and one waiting in gnet.Run. Close stops
// them all.
func Open(laddr netip.AddrPort, cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if !laddr.IsValid() {
		return nil, fmt.Errorf("gnetudp: local address %v: %w", laddr, socket.ErrInvalidAddr)
	}
	laddr = netip.AddrPortFrom(laddr.Addr().Unmap(), laddr.Port())
	loops := cfg.EventLoops
	if loops == 0 {
		loops = min(runtime.NumCPU(), MaxEventLoops)
	}

	// gnet opens one socket per event loop, each binding the address it was
	// given; with port 0 each would get its own port. So a port is
	// reserved first and handed to gnet, and the reservation is closed once
	// gnet's sockets share it.
	port := laddr.Port()
	resFD := -1
	if port == 0 {
		var err error
		if resFD, port, err = reservePort(laddr); err != nil {
			return nil, fmt.Errorf("gnetudp: reserving a port on %v: %w", laddr.Addr(), err)
		}
	}
	closeRes := func() {
		if resFD >= 0 {
			unix.Close(resFD)
			resFD = -1
		}
	}
	defer closeRes()

	e := newEngine(cfg, loops)
	e.features = Features{DrainRecv: !cfg.DisableDrain, BatchSend: true}
	s := &e.sys
	s.started = make(chan struct{})
	s.stopped = make(chan struct{})
	s.sendFD = -1
	s.hdrs, s.iovs, s.names = newVectors(sendBatch)
	if e.features.DrainRecv {
		s.drains = make([]*drainState, loops)
		for i := range s.drains {
			d := &drainState{}
			d.hdrs, d.iovs, d.names = newVectors(drainBatch)
			s.drains[i] = d
		}
	}

	opts := []gnet.Option{
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(loops),
		gnet.WithReusePort(true),
		gnet.WithTicker(true),
		gnet.WithLogger(gnetLogger{cfg.Logger}),
	}
	if cfg.RecvBuffer > 0 {
		opts = append(opts, gnet.WithSocketRecvBuffer(cfg.RecvBuffer))
	}
	if cfg.SendBuffer > 0 {
		opts = append(opts, gnet.WithSocketSendBuffer(cfg.SendBuffer))
	}
	go e.serve(&handler{e: e}, gnetAddr(laddr, port), opts)
	select {
	case <-s.started:
	case <-s.stopped:
		return nil, fmt.Errorf("gnetudp: starting gnet on %v: %w", netip.AddrPortFrom(laddr.Addr(), port), s.runErr)
	}
	closeRes()

	fail := func(err error) (*Engine, error) {
		e.Close()
		return nil, fmt.Errorf("gnetudp: %w", err)
	}
	fd, err := s.eng.Dup()
	if err != nil {
		return fail(err)
	}
	s.sendFD = fd
	if s.family, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil {
		return fail(os.NewSyscallError("getsockopt", err))
	}
	if e.laddr, err = sockaddr.Name(fd); err != nil {
		return fail(os.NewSyscallError("getsockname", err))
	}
	e.rcvbuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	e.sndbuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	e.errRead = socket.Closed("read", e.laddr)
	e.errWrite = socket.Closed("write", e.laddr)
	return e, nil
}

// serve runs gnet until the engine stops. It is the goroutine a stack
// dump shows parked in gnet.Run for each open engine.
func (e *Engine) serve(h *handler, addr string, opts []gnet.Option) {
	err := gnet.Run(h, addr, opts...)
	e.sys.runErr = err
	close(e.sys.stopped)
	// gnet stops by itself only when an event loop fails; readers then
	// see the engine as closed.
	e.closeDone()
}

// reservePort binds a socket to laddr's address and port 0 without
// SO_REUSEPORT, so the kernel picks a port no socket uses (an automatic
// bind with SO_REUSEPORT may be given a port another reuse-port socket of
// the same user already has), then sets SO_REUSEPORT so that gnet's
// sockets can join it. The socket must stay open until they have.
func reservePort(laddr netip.AddrPort) (fd int, port uint16, err error) {
	family := unix.AF_INET
	if laddr.Addr().Is6() {
		family = unix.AF_INET6
	}
	if fd, err = unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP); err != nil {
		return -1, 0, os.NewSyscallError("socket", err)
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	// Match gnet's sockets, or the kernel will not group them: "udp6"
	// sockets are IPv6-only, the dual-stack "udp" one keeps the default.
	if family == unix.AF_INET6 && !laddr.Addr().IsUnspecified() {
		if err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return -1, 0, os.NewSyscallError("setsockopt", err)
		}
	}
	var sa sockaddr.Raw
	salen, err := putSockaddr(&sa, netip.AddrPortFrom(laddr.Addr(), 0), family)
	if err != nil {
		return -1, 0, err
	}
	if _, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(salen)); e != 0 {
		return -1, 0, os.NewSyscallError("bind", e)
	}
	if err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return -1, 0, os.NewSyscallError("setsockopt", err)
	}
	ap, err := sockaddr.Name(fd)
	if err != nil {
		return -1, 0, os.NewSyscallError("getsockname", err)
	}
	return fd, ap.Port(), nil
}

// gnetAddr is gnet's address for laddr's address and port: "udp4" for
// IPv4, "udp6" (IPv6-only) for an IPv6 address, and "udp" with no host
// for [::], the only form gnet opens dual stack.
func gnetAddr(laddr netip.AddrPort, port uint16) string {
	a := laddr.Addr()
	switch {
	case a.Is4():
		return "udp4://" + netip.AddrPortFrom(a, port).String()
	case a.IsUnspecified():
		return "udp://:" + strconv.Itoa(int(port))
	default:
		return "udp6://" + netip.AddrPortFrom(a, port).String()
	}
}

// handler is the engine's gnet.EventHandler.
type handler struct {
	gnet.BuiltinEventEngine
	e *Engine
}

// OnBoot keeps gnet's Engine handle, for Dup and Stop.
func (h *handler) OnBoot(eng gnet.Engine) gnet.Action {
	h.e.sys.eng = eng
	return gnet.None
}

// OnTick runs on gnet's ticker goroutine, which gnet starts after every
// event loop's socket is bound: its first call is the start-up barrier
// Open waits for.
func (h *handler) OnTick() (time.Duration, gnet.Action) {
	s := &h.e.sys
	s.startOnce.Do(func() { close(s.started) })
	return tickIdle, gnet.None
}

// OnTraffic runs on the event loop that owns the socket c arrived on, for
// the one datagram gnet read for this wake-up. It copies the datagram into
// the loop's queue (dropping it, counted, if the queue is full), drains
// what else the socket holds when draining is on, and wakes the reader. It
// never waits.
func (h *handler) OnTraffic(c gnet.Conn) gnet.Action {
	e := h.e
	fd := c.Fd()
	i := e.ringFor(fd)
	r := e.rings[i]
	r.wakeups.Add(1)
	// gnet's recvfrom, and the getsockopt(SO_PROTOCOL) with which x/sys's
	// Recvfrom decides how to decode the source address.
	r.syscalls.Add(2)
	p, _ := c.Next(-1)
	var from netip.AddrPort
	if ua, ok := c.RemoteAddr().(*net.UDPAddr); ok {
		from = ua.AddrPort()
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	}
	now := clock() // dates every datagram this wake-up queues
	queued := r.push(p, from, now)
	if queued && e.sys.drains != nil {
		e.sys.drains[i].drain(fd, r, now)
	}
	if queued {
		e.wake()
	}
	return gnet.None
}

// drain receives into r's free slots with non-blocking recvmmsg until the
// socket is empty, r is full or drainRounds calls were made. UDP sockets
// are level-triggered in gnet's epoll set, so whatever is left wakes the
// loop again.
func (d *drainState) drain(fd int, r *ring, now int64) {
	for range drainRounds {
		h := r.head.Load()
		k := min(r.free(), len(d.hdrs))
		if k == 0 {
			return
		}
		for j := range k {
			s := r.slot(h + uint64(j))
			d.iovs[j].Base = &s[0]
			d.iovs[j].SetLen(len(s))
			d.hdrs[j].Hdr.Namelen = unix.SizeofSockaddrInet6
			d.hdrs[j].Hdr.Flags = 0
		}
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&d.hdrs[0])), uintptr(k), unix.MSG_DONTWAIT, 0, 0)
		r.syscalls.Add(1)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			// EAGAIN: the socket is empty. Any other error recurs on
			// gnet's next recvfrom, which reports it.
			return
		}
		var nbytes uint64
		for j := range int(n) {
			i := (h + uint64(j)) & r.mask
			hd := &d.hdrs[j]
			r.lens[i] = int32(hd.Len)
			r.trunc[i] = hd.Hdr.Flags&unix.MSG_TRUNC != 0
			r.addrs[i] = sockaddr.AddrPort(&d.names[j])
			r.stamps[i] = now
			nbytes += uint64(hd.Len)
		}
		r.head.Store(h + uint64(n))
		r.received.Add(uint64(n))
		r.bytes.Add(nbytes)
		if int(n) < k {
			return
		}
	}
}

// WriteBatch sends each msgs[i].Buf[:N] to msgs[i].Addr, in order, from the
// engine's address, and returns how many were sent. It issues one sendmmsg
// per 64 messages on a descriptor of the first event loop's socket,
// straight from the caller's buffers, and references none of them after it
// returns. On error msgs[:n] were sent and msgs[n] caused the error:
// socket.ErrTooLarge for N above MaxDatagramSize, socket.ErrInvalidMessage
// for N outside [0, len(Buf)], socket.ErrInvalidAddr for an unusable Addr,
// socket.ErrClosed after Close, or the
// kernel's error in a *net.OpError. A full socket send buffer makes it wait
// in poll(2) until the socket is writable (or the engine is closed).
// Zero-length datagrams are sent.
func (e *Engine) WriteBatch(msgs []socket.Message) (int, error) {
	if e.closed.Load() {
		return 0, e.errWrite
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	s := &e.sys
	s.sendMu.RLock()
	defer s.sendMu.RUnlock()
	if s.sendFD < 0 {
		return 0, e.errWrite
	}
	done := 0
	var nbytes uint64
	var err error
	for done < len(msgs) && err == nil {
		rest := msgs[done:]
		nm, verr := e.build(rest)
		sent := 0
		if nm > 0 {
			var serr error
			sent, serr = e.send(nm)
			for i := range nm {
				s.iovs[i].Base = nil // keep no reference to the caller's buffers
			}
			if serr != nil {
				err = serr
				if errno, ok := serr.(unix.Errno); ok {
					err = &net.OpError{Op: "write", Net: "udp", Source: net.UDPAddrFromAddrPort(e.laddr),
						Addr: net.UDPAddrFromAddrPort(rest[sent].Addr), Err: os.NewSyscallError("sendmmsg", errno)}
				}
			}
		}
		for i := range sent {
			nbytes += uint64(rest[i].N)
		}
		done += sent
		if err == nil && verr != nil {
			if errors.Is(verr, socket.ErrTooLarge) {
				e.wr.oversize.Add(1)
			}
			err = verr
		}
	}
	if done > 0 {
		e.wr.datagrams.Add(uint64(done))
		e.wr.bytes.Add(nbytes)
	}
	return done, err
}

// build lays out one header per message for up to sendBatch of msgs,
// stopping early at an invalid message and returning its error with nm its
// index.
func (e *Engine) build(msgs []socket.Message) (int, error) {
	s := &e.sys
	nm := 0
	for nm < len(msgs) && nm < len(s.hdrs) {
		m := &msgs[nm]
		if err := m.Check(e.limit); err != nil {
			return nm, err
		}
		salen, err := putSockaddr(&s.names[nm], m.Addr, s.family)
		if err != nil {
			return nm, err
		}
		iov := &s.iovs[nm]
		iov.Base = nil
		if m.N > 0 {
			iov.Base = &m.Buf[0]
		}
		iov.SetLen(m.N)
		s.hdrs[nm].Hdr.Namelen = salen
		nm++
	}
	return nm, nil
}

// send issues headers [0, nh) and returns how many the kernel took. It
// returns the kernel's unix.Errno for the first header it refused, or
// errWrite if the engine was closed while the send buffer was full.
func (e *Engine) send(nh int) (int, error) {
	s := &e.sys
	fd := uintptr(s.sendFD)
	pos := 0
	var calls uint64
	defer func() { e.wr.syscalls.Add(calls) }()
	for pos < nh {
		var n uintptr
		var errno unix.Errno
		if s.perDatagram {
			h := &s.hdrs[pos].Hdr
			_, _, errno = unix.Syscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(h.Iov.Base)), uintptr(h.Iov.Len), 0,
				uintptr(unsafe.Pointer(h.Name)), uintptr(h.Namelen))
			n = 1
		} else {
			n, _, errno = unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[pos])), uintptr(nh-pos), 0, 0, 0)
		}
		calls++
		switch errno {
		case 0:
			pos += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			if e.closed.Load() {
				return pos, e.errWrite
			}
			s.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
			unix.Poll(s.pfd[:], pollSlice)
			calls++
		default:
			return pos, errno
		}
	}
	return nh, nil
}

// Close stops the engine: blocked and later reads, and later writes,
// return an error wrapping net.ErrClosed. It returns once gnet's event
// loops and goroutines have exited and every socket is closed. Calls after
// the first return nil at once.
func (e *Engine) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	e.closeDone()
	s := &e.sys
	// Stop starts the shutdown, then polls for its end every 500 ms; with
	// a context already cancelled it returns at once, and the end is
	// gnet.Run returning.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.eng.Stop(ctx)
	<-s.stopped
	s.sendMu.Lock()
	if s.sendFD >= 0 {
		unix.Close(s.sendFD)
		s.sendFD = -1
	}
	s.sendMu.Unlock()
	return nil
}

// gnetLogger hands gnet's log output to a *slog.Logger, or discards it.
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) log(level slog.Level, format string, args []any) {
	if g.l == nil || !g.l.Enabled(context.Background(), level) {
		return
	}
	g.l.Log(context.Background(), level, fmt.Sprintf(format, args...), "component", "gnet")
}

// Debugf implements gnet's logging.Logger.
func (g gnetLogger) Debugf(format string, args ...any) { g.log(slog.LevelDebug, format, args) }

// Infof implements gnet's logging.Logger.
func (g gnetLogger) Infof(format string, args ...any) { g.log(slog.LevelInfo, format, args) }

// Warnf implements gnet's logging.Logger.
func (g gnetLogger) Warnf(format string, args ...any) { g.log(slog.LevelWarn, format, args) }

// Errorf implements gnet's logging.Logger.
func (g gnetLogger) Errorf(format string, args ...any) { g.log(slog.LevelError, format, args) }

// Fatalf implements gnet's logging.Logger. gnet calls it only where a
// kqueue wake-up pipe cannot be made (not on Linux); it is logged as an
// error and the process is not ended.
func (g gnetLogger) Fatalf(format string, args ...any) { g.log(slog.LevelError, format, args) }
