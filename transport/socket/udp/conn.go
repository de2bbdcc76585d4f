package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// Conn is a UDP socket that implements socket.Conn. Open gives the best
// path for the platform (batched on Linux); OpenPlain gives the portable
// one-datagram-per-system-call path. Both behave identically at the
// interface: only the cost per datagram and Stats differ.
//
// One goroutine may read (ReadBatch or TryReadBatch: the two share state and
// must not run at the same time) while another writes (WriteBatch). Close,
// Stats, Features, LocalAddr and MaxDatagramSize are safe from any
// goroutine. The socket starts no goroutines of its own.
type Conn struct {
	impl impl
	w    *waiter
}

// impl is what each implementation provides.
type impl interface {
	socket.Conn
	stats(*Stats)
	features() Features
	maxDatagramSize() int
	// udpConn is the socket Wait watches.
	udpConn() *net.UDPConn
	// buffered reports datagrams already received but not yet handed
	// out (the GRO path's coalesced buffers), which Wait must not sleep
	// through.
	buffered() bool
}

var (
	_ socket.Conn   = (*Conn)(nil)
	_ socket.Waiter = (*Conn)(nil)
)

// Open binds a UDP socket to laddr (port 0 picks a free port) with the
// best path this platform offers: on Linux the batched socket, probing GSO
// and GRO unless cfg disables them; elsewhere the plain socket. An IPv4
// laddr gives an IPv4-only socket; an IPv6 one gives an IPv6 socket, dual
// stack when laddr is [::] (IPv4 peers then appear with IPv4 addresses).
func Open(laddr netip.AddrPort, cfg Config) (*Conn, error) {
	return open(laddr, cfg, openBest)
}

// OpenPlain binds a UDP socket to laddr that issues one system call per
// datagram through the standard library's *net.UDPConn. It is the fallback
// on platforms without a batched path and the floor the benchmarks compare
// against. cfg.BatchSize, DisableGSO and DisableGRO do not apply to it.
func OpenPlain(laddr netip.AddrPort, cfg Config) (*Conn, error) {
	return open(laddr, cfg, openPlain)
}

// FromConn makes uc, a UDP socket the caller has already bound (with
// net.ListenUDP, a net.ListenConfig with its own Control function, a
// socket inherited from a supervisor, …), into a Conn with the best path
// the platform offers: on Linux the batched socket, issuing
// recvmmsg/sendmmsg through uc.SyscallConn and probing GSO and GRO on uc's
// descriptor exactly as Open does; elsewhere the plain socket. cfg is
// Open's: RecvBuffer and SendBuffer, when set, are applied to uc.
//
// On success the Conn owns uc: its Close closes uc, and the caller must no
// longer read, write or set deadlines on uc (a read on uc would take
// datagrams from the Conn; a deadline would make its reads fail).
// FromConn clears any deadline already set. On error uc is left open and
// the caller's, though the probes may have set UDP_GRO and SO_TIMESTAMPNS
// on it.
//
// uc must not be connected (net.DialUDP): a connected socket accepts
// datagrams from one peer only and the plain path cannot address its
// writes, so FromConn refuses it with an error wrapping
// errors.ErrUnsupported. Cost: what Open costs, less the bind.
func FromConn(uc *net.UDPConn, cfg Config) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if uc == nil {
		return nil, fmt.Errorf("%w: FromConn of a nil *net.UDPConn", ErrInvalidConfig)
	}
	if ra := uc.RemoteAddr(); ra != nil {
		return nil, fmt.Errorf("udp: FromConn of a conn connected to %v (bind one with net.ListenUDP): %w", ra, errors.ErrUnsupported)
	}
	if err := uc.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("udp: FromConn: clearing deadlines: %w", err)
	}
	if err := setBuffers(uc, cfg); err != nil {
		return nil, err
	}
	return wrap(uc, cfg.WithDefaults(), openBest)
}

// open binds a socket to laddr and wraps it with mk, closing it on error.
func open(laddr netip.AddrPort, cfg Config, mk func(*net.UDPConn, Config) (impl, error)) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	uc, err := listen(laddr, cfg)
	if err != nil {
		return nil, err
	}
	c, err := wrap(uc, cfg.WithDefaults(), mk)
	if err != nil {
		uc.Close()
		return nil, err
	}
	return c, nil
}

// wrap makes uc a Conn with mk. On error uc is the caller's to close.
func wrap(uc *net.UDPConn, cfg Config, mk func(*net.UDPConn, Config) (impl, error)) (*Conn, error) {
	im, err := mk(uc, cfg)
	if err != nil {
		return nil, err
	}
	w, err := newWaiter(uc)
	if err != nil {
		return nil, err
	}
	return &Conn{impl: im, w: w}, nil
}

// ReadBatch blocks until at least one datagram is available, then fills
// msgs[:n], each Buf receiving one datagram (cut to len(Buf), counted in
// Stats.Truncated), N its length, Addr its source and Age how long it had
// waited in the socket (from the kernel's receive timestamp where
// Features.Timestamps, else 0; see the package documentation). It returns (0, nil)
// for an empty msgs. The batched socket without GRO returns at most
// Config.BatchSize datagrams per call; otherwise up to len(msgs). A blocked
// ReadBatch parks in the Go netpoller, costing no thread and no CPU, until
// data arrives or Close makes it return socket.Closed("read", …), an error
// wrapping socket.ErrClosed and net.ErrClosed.
func (c *Conn) ReadBatch(msgs []socket.Message) (int, error) {
	return c.impl.ReadBatch(msgs)
}

// TryReadBatch is ReadBatch without waiting: it returns (0, nil) when no
// datagram is ready. The batched socket issues at most one recvmmsg per
// call (none when a coalesced receive still holds datagrams); the plain
// socket one recvmsg per datagram plus the one that finds the queue empty.
func (c *Conn) TryReadBatch(msgs []socket.Message) (int, error) {
	return c.impl.TryReadBatch(msgs)
}

// Drained reports whether the last ReadBatch or TryReadBatch emptied the
// socket's receive queue, as far as the socket can tell: the kernel
// handed it fewer datagrams than it asked for, and every one it received
// was returned (a read cut short by GRO's buffer count, or by a small
// msgs, is not drained). A datagram may arrive just after; Wait then
// returns at once. Endpoint.Poll uses it to end without one more read
// that would find nothing. Always false for the plain socket. Part of the
// read role; it allocates nothing.
func (c *Conn) Drained() bool {
	d, ok := c.impl.(interface{ drained() bool })
	return ok && d.drained()
}

// WriteBatch sends each msgs[i].Buf[:N] to msgs[i].Addr, in order, and
// returns how many were sent. On error msgs[:n] were sent and msgs[n]
// caused the error: socket.ErrTooLarge for N above MaxDatagramSize,
// socket.ErrInvalidMessage for N outside [0, len(Buf)],
// socket.ErrInvalidAddr for an unusable Addr, or the kernel's error
// wrapped in a *net.OpError (after Close, socket.ErrClosed). A full
// socket send buffer makes it wait in the netpoller rather than fail.
// Zero-length datagrams are sent. No buffer is referenced after it returns.
func (c *Conn) WriteBatch(msgs []socket.Message) (int, error) { return c.impl.WriteBatch(msgs) }

// LocalAddr returns the address the socket is bound to.
func (c *Conn) LocalAddr() netip.AddrPort { return c.impl.LocalAddr() }

// Wait implements socket.Waiter: it blocks until a datagram may be ready
// (or one received earlier is still held), Wake is called, or timeout
// passes. On Linux the socket, an eventfd (Wake) and a timerfd (the
// timeout) sit in an epoll instance of the Conn's own, which is itself in
// the Go netpoller: the goroutine parks like a blocking read, no thread
// blocks, and nothing is read from the socket. A ready socket or a pending
// Wake returns at once. It costs two to five system calls (arm the
// timer, check the epoll set; after a park, check it again and read the
// eventfd or timerfd that fired) and allocates nothing.
// Elsewhere it sleeps for timeout or until Wake, not waking for datagrams.
// It is part of the read role: not concurrently with ReadBatch or
// TryReadBatch. After Close it returns an error wrapping socket.ErrClosed
// and net.ErrClosed.
func (c *Conn) Wait(timeout time.Duration) error {
	if c.impl.buffered() {
		return nil
	}
	if err := c.w.wait(timeout); err != nil {
		if errors.Is(err, net.ErrClosed) {
			return socket.Closed("wait", c.impl.LocalAddr())
		}
		return &net.OpError{Op: "wait", Net: "udp", Source: net.UDPAddrFromAddrPort(c.impl.LocalAddr()), Err: err}
	}
	return nil
}

// Wake implements socket.Waiter: it ends a blocked Wait, or makes the next
// one return at once. Safe from any goroutine; one write(2) to an eventfd.
func (c *Conn) Wake() { c.w.wake() }

// Close closes the socket. Blocked and later reads, writes and Waits
// return socket.Closed(op, LocalAddr()): a *net.OpError wrapping
// socket.ErrClosed and net.ErrClosed. Calls after the first return nil.
func (c *Conn) Close() error {
	c.w.close()
	return c.impl.Close()
}

// MaxDatagramSize returns the largest payload WriteBatch accepts
// (Config.MaxDatagramSize). The conformance suite in package sockettest
// asks for it.
func (c *Conn) MaxDatagramSize() int { return c.impl.maxDatagramSize() }

// Features returns the kernel paths the socket is using now.
func (c *Conn) Features() Features { return c.impl.features() }

// Stats returns a snapshot of the socket's counters and live features.
func (c *Conn) Stats() Stats {
	var s Stats
	c.impl.stats(&s)
	s.WaitSyscalls = c.w.syscallCount()
	return s
}

// listen opens the *net.UDPConn under either implementation and applies
// the socket buffer sizes, for Open and OpenPlain.
func listen(laddr netip.AddrPort, cfg Config) (*net.UDPConn, error) {
	if !laddr.IsValid() {
		return nil, fmt.Errorf("udp: local address %v: %w", laddr, socket.ErrInvalidAddr)
	}
	network := "udp"
	if laddr.Addr().Is4() {
		network = "udp4"
	}
	uc, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(laddr))
	if err != nil {
		return nil, err
	}
	if err := setBuffers(uc, cfg); err != nil {
		uc.Close()
		return nil, err
	}
	return uc, nil
}

// setBuffers applies cfg's socket buffer sizes to uc, where set.
func setBuffers(uc *net.UDPConn, cfg Config) error {
	if cfg.RecvBuffer > 0 {
		if err := uc.SetReadBuffer(cfg.RecvBuffer); err != nil {
			return fmt.Errorf("udp: SO_RCVBUF %d: %w", cfg.RecvBuffer, err)
		}
	}
	if cfg.SendBuffer > 0 {
		if err := uc.SetWriteBuffer(cfg.SendBuffer); err != nil {
			return fmt.Errorf("udp: SO_SNDBUF %d: %w", cfg.SendBuffer, err)
		}
	}
	return nil
}

// localAddrPort returns uc's bound address, IPv4 addresses unmapped.
func localAddrPort(uc *net.UDPConn) netip.AddrPort {
	ap := uc.LocalAddr().(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// ioErr is what a read or write reports for err, an error of the layer
// below (the RawConn, the *net.UDPConn): once the socket is closed — by
// this Conn's Close, whose flag closed is, or under it — the one closed
// error of package socket, whatever the layer below said; otherwise err.
func ioErr(err error, closed *atomic.Bool, op string, laddr netip.AddrPort) error {
	if closed.Load() || errors.Is(err, net.ErrClosed) {
		return socket.Closed(op, laddr)
	}
	return err
}
