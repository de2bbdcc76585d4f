package pconn

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// udpAddrPortReader is the allocation-free receive of *net.UDPConn.
type udpAddrPortReader interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
}

// udpAddrPortWriter is the allocation-free send of *net.UDPConn.
type udpAddrPortWriter interface {
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

// maxAddrCache bounds the destinations whose net.Addr WriteBatch keeps
// for a conn without WriteToUDPAddrPort; past it the cache starts over.
const maxAddrCache = 1024

// Conn adapts a net.PacketConn to socket.Conn and socket.Waiter. New makes
// one; Close closes it and the PacketConn under it.
//
// A goroutine of the Conn's own, (*Conn).receive, reads the PacketConn one
// datagram per ReadFrom into a ring of Config.QueueLen slots; ReadBatch,
// TryReadBatch and Wait take from the ring. One goroutine may read
// (ReadBatch, TryReadBatch, Wait) while another writes (WriteBatch); Wake,
// Close, Stats, LocalAddr and MaxDatagramSize are safe from any goroutine.
type Conn struct {
	pc     net.PacketConn
	fastWr udpAddrPortWriter // pc, when it has the allocation-free send
	laddr  netip.AddrPort
	limit  int

	// The ring: slot i is arena[i*stride:][:limit+1], its datagram's length
	// in lens[i], source in addrs[i] and when ReadFrom returned it in
	// stamps[i] (clock()). Slot indices travel free → the
	// receiving goroutine → full → the reader → free; a channel send is
	// what publishes a slot's contents to the other side.
	arena  []byte
	stride int
	lens   []int32
	addrs  []netip.AddrPort
	stamps []int64
	free   chan int32
	full   chan int32
	errc   chan error    // read errors, one at a time (capacity 1)
	notify chan struct{} // capacity 1: the ring or errc gained something
	wake   chan struct{} // capacity 1: Wake

	closed    atomic.Bool
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	dead      chan struct{} // closed when receive returns: Close, or pc closed under it

	// Reader state.
	timer *time.Timer // Wait's timeout, reused
	rd    readCounters

	// Writer state.
	wr    writeCounters
	cache map[netip.AddrPort]net.Addr

	// Receiving goroutine's counters.
	rcv recvCounters
}

var (
	_ socket.Conn             = (*Conn)(nil)
	_ socket.Waiter           = (*Conn)(nil)
	_ socket.MaxDatagramSizer = (*Conn)(nil)
)

// New wraps pc, which the Conn then owns: it reads every datagram
// arriving on pc, and its Close closes pc. The caller must no longer read
// from pc, nor set deadlines on it; New clears any deadline already set
// (ignoring a PacketConn that cannot). pc's LocalAddr must be an IP and
// port (a *net.UDPAddr, or an address whose String() parses as one), else
// New fails with an error wrapping socket.ErrInvalidAddr.
//
// New allocates the receive ring (Config.QueueLen slots of
// MaxDatagramSize+1 bytes) and starts one goroutine, which Close ends.
// For a *net.UDPConn, prefer udp.FromConn: it keeps the kernel's batched
// path instead of one call per datagram.
func New(pc net.PacketConn, cfg Config) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pc == nil {
		return nil, fmt.Errorf("%w: New of a nil net.PacketConn", ErrInvalidConfig)
	}
	cfg = cfg.WithDefaults()
	la, ok := addrPort(pc.LocalAddr())
	if !ok {
		return nil, fmt.Errorf("pconn: local address %v is not an IP and port: %w", pc.LocalAddr(), socket.ErrInvalidAddr)
	}
	// The adapter never sets deadlines; one left by the caller would make
	// the receiving goroutine's reads fail. A conn without deadlines
	// returns an error here, which changes nothing.
	_ = pc.SetDeadline(time.Time{})

	n := cfg.QueueLen
	stride := (cfg.MaxDatagramSize + 1 + 63) &^ 63 // slots start on cache lines
	c := &Conn{
		pc:     pc,
		laddr:  la,
		limit:  cfg.MaxDatagramSize,
		arena:  make([]byte, n*stride),
		stride: stride,
		lens:   make([]int32, n),
		addrs:  make([]netip.AddrPort, n),
		stamps: make([]int64, n),
		free:   make(chan int32, n),
		full:   make(chan int32, n),
		errc:   make(chan error, 1),
		notify: make(chan struct{}, 1),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		dead:   make(chan struct{}),
		timer:  time.NewTimer(time.Hour),
	}
	c.timer.Stop()
	// Asserted once here: an interface assertion on every write would call
	// into the runtime, which now and then allocates to grow its cache.
	c.fastWr, _ = pc.(udpAddrPortWriter)
	for i := range n {
		c.free <- int32(i)
	}
	go c.receive()
	return c, nil
}

// slot returns slot i's room: one byte more than the limit, so that a
// datagram longer than the limit shows as one that filled the slot.
func (c *Conn) slot(i int32) []byte {
	off := int(i) * c.stride
	return c.arena[off : off+c.limit+1 : off+c.limit+1]
}

// receive is the Conn's goroutine: it reads pc into free slots and queues
// them, until Close or a read error that says pc is closed. Other read
// errors are handed to the reader one at a time (the goroutine reads on
// only once the reader has taken the previous one), so a failing conn
// cannot make it spin.
func (c *Conn) receive() {
	defer close(c.dead)
	rd, fast := c.pc.(udpAddrPortReader)
	for {
		var i int32
		select {
		case i = <-c.free:
		case <-c.done:
			return
		}
		buf := c.slot(i)
		var (
			n    int
			from netip.AddrPort
			err  error
			ok   = true
		)
		if fast {
			n, from, err = rd.ReadFromUDPAddrPort(buf)
			from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		} else {
			var a net.Addr
			n, a, err = c.pc.ReadFrom(buf)
			if err == nil {
				from, ok = addrPort(a)
			}
		}
		if err != nil {
			c.free <- i // never blocks: the slot came from free
			if c.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			c.rcv.errors.Add(1)
			select {
			case c.errc <- err:
			case <-c.done:
				return
			}
			c.signal()
			continue
		}
		if !ok {
			c.rcv.unaddressable.Add(1)
			c.free <- i
			continue
		}
		if n > c.limit {
			n = c.limit + 1 // marks the cut: take reports limit bytes
		}
		c.lens[i] = int32(n)
		c.addrs[i] = from
		c.stamps[i] = clock()
		c.full <- i // never blocks: at most QueueLen slots exist
		c.signal()
	}
}

// clockBase is the origin of clock.
var clockBase = time.Now()

// clock is the adapter's time for dating queued datagrams: monotonic
// nanoseconds since clockBase, at least 1 (0 means "not read yet"). The
// receiving goroutine and the reader share the process's monotonic clock,
// so a wall-clock step cannot skew an Age.
func clock() int64 { return max(int64(time.Since(clockBase)), 1) }

// signal tells a Wait that the ring or errc gained something.
func (c *Conn) signal() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// addrPort converts a source or local address to a netip.AddrPort,
// without allocating for a *net.UDPAddr. IPv4-mapped addresses are
// unmapped, as the UDP socket reports them.
func addrPort(a net.Addr) (netip.AddrPort, bool) {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.UDPAddr:
		if a == nil {
			return netip.AddrPort{}, false
		}
		ap = a.AddrPort()
	case nil:
		return netip.AddrPort{}, false
	default:
		var err error
		if ap, err = netip.ParseAddrPort(a.String()); err != nil {
			return netip.AddrPort{}, false
		}
	}
	if !ap.Addr().IsValid() {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// ReadBatch blocks until at least one datagram is queued, then fills
// msgs[:n] and returns n ≥ 1: each Buf receives a copy of one datagram
// (cut to len(Buf), counted in Stats.Truncated), N its length, Addr its
// source and Age how long it sat in the Conn's ring (from the return of
// the ReadFrom that received it to this read, on the monotonic clock; time
// spent in the PacketConn before a slot was free is not counted); no
// buffer is referenced after the call. It returns (0, nil) for
// an empty msgs. A read error of the PacketConn is returned by the next
// read call, once, in the PacketConn's own words (a passed deadline keeps
// its Timeout() == true). A blocked ReadBatch parks on a channel until a
// datagram is queued or Close makes it return socket.Closed("read", …).
// Cost: one copy and two channel operations per datagram; no allocation.
func (c *Conn) ReadBatch(msgs []socket.Message) (int, error) {
	if c.closed.Load() {
		return 0, socket.Closed("read", c.laddr)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	select {
	case i := <-c.full:
		now := clock()
		c.put(&msgs[0], i, now)
		n := 1 + c.take(msgs[1:], &now)
		c.rd.count(msgs[:n])
		return n, nil
	case err := <-c.errc:
		return 0, err
	case <-c.dead:
		return c.afterDeath(msgs)
	case <-c.done:
		return 0, socket.Closed("read", c.laddr)
	}
}

// TryReadBatch is ReadBatch without waiting: it copies what the ring holds
// now, up to len(msgs), and returns (0, nil) when it is empty. It issues
// no system call.
func (c *Conn) TryReadBatch(msgs []socket.Message) (int, error) {
	if c.closed.Load() {
		return 0, socket.Closed("read", c.laddr)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	var now int64
	if n := c.take(msgs, &now); n > 0 {
		c.rd.count(msgs[:n])
		return n, nil
	}
	select {
	case err := <-c.errc:
		return 0, err
	case <-c.dead:
		return c.afterDeath(msgs)
	default:
		return 0, nil
	}
}

// afterDeath is a read once the receiving goroutine has returned: what it
// queued before, then the closed error.
func (c *Conn) afterDeath(msgs []socket.Message) (int, error) {
	var now int64
	if n := c.take(msgs, &now); n > 0 {
		c.rd.count(msgs[:n])
		return n, nil
	}
	return 0, socket.Closed("read", c.laddr)
}

// take copies queued datagrams into msgs without waiting. now is the
// read's clock() for their Age, read here if still 0.
func (c *Conn) take(msgs []socket.Message, now *int64) int {
	n := 0
	for n < len(msgs) {
		select {
		case i := <-c.full:
			if *now == 0 {
				*now = clock()
			}
			c.put(&msgs[n], i, *now)
			n++
		default:
			return n
		}
	}
	return n
}

// put copies slot i into m, dating it against now (clock()), and frees
// the slot.
func (c *Conn) put(m *socket.Message, i int32, now int64) {
	l := int(c.lens[i])
	cut := l > c.limit
	if cut {
		l = c.limit
	}
	m.N = copy(m.Buf, c.slot(i)[:l])
	m.Addr = c.addrs[i]
	m.Age = time.Duration(max(now-c.stamps[i], 0))
	if cut || m.N < l {
		c.rd.truncated.Add(1)
	}
	c.free <- i // never blocks
}

// Wait implements socket.Waiter: it blocks until a datagram (or a read
// error) is queued, Wake is called, or timeout passes, and returns nil. A
// datagram queued before the call, or a Wake made while no Wait was
// blocked, makes it return at once. It is part of the read role. After
// Close it returns socket.Closed("wait", …), and Close ends a blocked
// Wait. Cost: a few channel operations and a timer reset; no allocation.
func (c *Conn) Wait(timeout time.Duration) error {
	if c.closed.Load() {
		return socket.Closed("wait", c.laddr)
	}
	// A token left by a datagram already taken would end this Wait for
	// nothing: clear it, then look at the ring itself.
	select {
	case <-c.notify:
	default:
	}
	if len(c.full) > 0 || len(c.errc) > 0 || timeout <= 0 {
		return nil
	}
	c.timer.Reset(timeout)
	defer c.timer.Stop()
	select {
	case <-c.notify:
	case <-c.wake:
	case <-c.timer.C:
	case <-c.dead: // the next read reports it
	case <-c.done:
		return socket.Closed("wait", c.laddr)
	}
	return nil
}

// Wake implements socket.Waiter: it ends a blocked Wait, or makes the next
// one return at once. Safe from any goroutine; one non-blocking channel
// send.
func (c *Conn) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// WriteBatch sends each msgs[i].Buf[:N] to msgs[i].Addr with one WriteTo
// of the PacketConn per datagram, in order, and returns how many were
// sent. On error msgs[:n] were sent and msgs[n] caused the error:
// socket.ErrTooLarge for N above MaxDatagramSize, socket.ErrInvalidMessage
// for N outside [0, len(Buf)], socket.ErrInvalidAddr for the zero Addr,
// socket.Closed("write", …) after Close, or the PacketConn's own error.
// The PacketConn is handed the caller's buffer, so it must not keep it
// after WriteTo returns (the conformance suite checks). Cost per datagram:
// the PacketConn's WriteTo; for a conn without WriteToUDPAddrPort, also a
// map lookup of the destination's net.Addr (allocated once per
// destination, for up to 1024 destinations).
func (c *Conn) WriteBatch(msgs []socket.Message) (int, error) {
	if c.closed.Load() {
		return 0, socket.Closed("write", c.laddr)
	}
	wr, fast := c.fastWr, c.fastWr != nil
	var n int
	var nbytes uint64
	var err error
	for n < len(msgs) {
		m := &msgs[n]
		if err = m.Check(c.limit); err != nil {
			if errors.Is(err, socket.ErrTooLarge) {
				c.wr.oversize.Add(1)
			}
			break
		}
		if fast {
			_, err = wr.WriteToUDPAddrPort(m.Buf[:m.N], m.Addr)
		} else {
			_, err = c.pc.WriteTo(m.Buf[:m.N], c.netAddr(m.Addr))
		}
		if err != nil {
			if c.closed.Load() || errors.Is(err, net.ErrClosed) {
				err = socket.Closed("write", c.laddr)
			}
			break
		}
		nbytes += uint64(m.N)
		n++
	}
	if n > 0 {
		c.wr.datagrams.Add(uint64(n))
		c.wr.bytes.Add(nbytes)
	}
	return n, err
}

// netAddr returns dst as a net.Addr for WriteTo, from the cache when it
// has been sent to before. Writer only.
func (c *Conn) netAddr(dst netip.AddrPort) net.Addr {
	if a, ok := c.cache[dst]; ok {
		return a
	}
	if c.cache == nil || len(c.cache) >= maxAddrCache {
		c.cache = make(map[netip.AddrPort]net.Addr)
	}
	a := net.UDPAddrFromAddrPort(dst)
	c.cache[dst] = a
	return a
}

// LocalAddr returns the PacketConn's local address, IPv4 unmapped.
func (c *Conn) LocalAddr() netip.AddrPort { return c.laddr }

// MaxDatagramSize returns the largest payload WriteBatch accepts and the
// adapter receives whole (Config.MaxDatagramSize).
func (c *Conn) MaxDatagramSize() int { return c.limit }

// Close closes the PacketConn, which ends the receiving goroutine (a
// net.PacketConn's Close unblocks its ReadFrom), and waits for that
// goroutine to return. Blocked and later reads, writes and Waits return
// socket.Closed(op, LocalAddr()); queued datagrams are discarded. It
// returns the PacketConn's Close error; calls after the first return nil.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.done)
		err = c.pc.Close()
		<-c.dead
	})
	return err
}
