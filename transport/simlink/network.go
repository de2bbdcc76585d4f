package simlink

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// Ephemeral ports handed out by Listen for port 0, in order, skipping ports
// in use (the IANA dynamic range).
const (
	firstEphemeralPort = 49152
	lastEphemeralPort  = 65535
)

// EventKind is the kind of a trace Event.
type EventKind uint8

const (
	// EventSend: a datagram was accepted by WriteBatch.
	EventSend EventKind = iota + 1
	// EventDrop: a datagram was dropped; Event.Reason says why.
	EventDrop
	// EventDeliver: a copy of a datagram became readable at its destination.
	EventDeliver
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventSend:
		return "send"
	case EventDrop:
		return "drop"
	case EventDeliver:
		return "deliver"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one entry of the Network's trace (see Network.SetTrace): the full
// log of what happened to every datagram, from which delivery order, loss
// runs and latencies can be derived.
type Event struct {
	// Kind says what happened: send, drop or deliver.
	Kind EventKind
	// At is the virtual time of the event: the send time for EventSend and
	// for drops decided at send, the delivery time for EventDeliver and for
	// a DropNoEndpoint found on arrival.
	At time.Duration
	// ID numbers datagrams in WriteBatch order from 1; a duplicate shares
	// its original's ID.
	ID uint64
	// Src and Dst are the sending endpoint's address and the destination.
	Src, Dst netip.AddrPort
	// Size is the datagram's length in bytes.
	Size int
	// Reason is why the datagram was dropped (EventDrop only).
	Reason DropReason
	// Copy is 0 for the original and 1 for a duplicate (EventDeliver, and
	// EventDrop with DropNoEndpoint on arrival).
	Copy int
}

// String formats the event for test failure messages.
func (e Event) String() string {
	s := fmt.Sprintf("%v %s #%d %v→%v %dB", e.At, e.Kind, e.ID, e.Src, e.Dst, e.Size)
	if e.Kind == EventDrop {
		s += " " + e.Reason.String()
	}
	if e.Copy != 0 {
		s += " dup"
	}
	return s
}

// NetStats counts what the Network did beyond its links. A snapshot.
type NetStats struct {
	// Sent counts datagrams accepted by WriteBatch on any endpoint.
	Sent uint64
	// Delivered counts copies made readable at an endpoint.
	Delivered uint64
	// NoEndpoint counts datagrams (or copies) dropped because no endpoint
	// was bound to their destination, at send or on arrival.
	NoEndpoint uint64
	// InFlight is the number of copies currently scheduled but not yet due.
	InFlight int
}

// linkKey identifies one direction of a link.
type linkKey struct{ src, dst netip.AddrPort }

// link is one direction between two addresses.
type link struct {
	model    Model
	dst      netip.AddrPort
	explicit bool // configured by SetLink/SetPair; SetDefaultLink leaves it alone

	// The endpoint bound at dst, cached while Network.bindGen == gen, so
	// the per-datagram path does no map lookup.
	ep  *Conn
	gen uint64
}

// endpoint returns the open endpoint bound at l.dst, or nil. The caller
// holds n.mu.
func (l *link) endpoint(n *Network) *Conn {
	if l.gen != n.bindGen {
		l.ep, l.gen = n.conns[l.dst], n.bindGen
	}
	return l.ep
}

// Network is an in-process datagram network with a virtual clock. Endpoints
// (Conn) bind virtual addresses with Listen and exchange datagrams through
// per-direction links, each impaired by its own Model seeded from the
// Network's seed and the two addresses. Time stands still until Advance,
// AdvanceTo, Drain or RunTicks moves it; a datagram becomes readable when
// the clock reaches its delivery time.
//
// All methods are safe for concurrent use; one mutex guards the whole
// network, which is plenty for tests. The Network starts no goroutine.
type Network struct {
	mu sync.Mutex

	seed   uint64
	now    time.Duration
	seq    uint64 // next heap insertion sequence
	lastID uint64 // last datagram id handed out

	def     LinkConfig // default link config, as given (validated)
	links   map[linkKey]*link
	conns   map[netip.AddrPort]*Conn
	bindGen uint64 // bumped by every Listen and Close: invalidates link.ep

	inflight eventHeap
	free     []*packet
	nextPort int

	trace func(Event)
	stats NetStats
}

// New returns an empty network at virtual time 0 whose links are perfect
// (the zero LinkConfig) until SetDefaultLink, SetLink or SetPair say
// otherwise. seed drives every random decision of every link.
func New(seed uint64) *Network {
	return &Network{
		seed:     seed,
		links:    make(map[linkKey]*link),
		conns:    make(map[netip.AddrPort]*Conn),
		bindGen:  1, // links start with gen 0: stale
		nextPort: firstEphemeralPort,
	}
}

// Seed returns the seed the network was created with.
func (n *Network) Seed() uint64 { return n.seed }

// SetDefaultLink sets the config of every link not configured with SetLink
// or SetPair, including links that already carried traffic (their RNG,
// queue and counters carry over, as with Model.SetConfig). It fails with
// cfg.Validate's error and then changes nothing.
func (n *Network) SetDefaultLink(cfg LinkConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.def = cfg
	for _, l := range n.links {
		if !l.explicit {
			l.model.apply(cfg.WithDefaults())
		}
	}
	return nil
}

// SetLink configures the direction src→dst, overriding the default from now
// on. Addresses need not be bound yet. It fails with cfg.Validate's error
// and then changes nothing.
func (n *Network) SetLink(src, dst netip.AddrPort, cfg LinkConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.linkFor(unmap(src), unmap(dst))
	l.model.apply(cfg.WithDefaults())
	l.explicit = true
	return nil
}

// SetPair configures both directions between a and b with cfg. Each
// direction keeps its own RNG streams, queue and counters.
func (n *Network) SetPair(a, b netip.AddrPort, cfg LinkConfig) error {
	if err := n.SetLink(a, b, cfg); err != nil {
		return err
	}
	return n.SetLink(b, a, cfg)
}

// Link returns the config (defaults applied) of the direction src→dst.
func (n *Network) Link(src, dst netip.AddrPort) LinkConfig {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l := n.links[linkKey{unmap(src), unmap(dst)}]; l != nil {
		return l.model.Config()
	}
	return n.def.WithDefaults()
}

// LinkStats returns the counters of the direction src→dst (zero if it never
// carried a datagram and was never configured).
func (n *Network) LinkStats(src, dst netip.AddrPort) Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l := n.links[linkKey{unmap(src), unmap(dst)}]; l != nil {
		return l.model.Stats()
	}
	return Stats{}
}

// Stats returns a snapshot of the network-wide counters.
func (n *Network) Stats() NetStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.stats
	s.InFlight = len(n.inflight)
	return s
}

// SetTrace installs fn to be called for every Event, in order, or removes
// the trace when fn is nil. fn runs with the network's lock held, on the
// goroutine of the WriteBatch or clock call that caused the event: it must
// be quick and must not call back into the Network or its Conns. A trace
// costs one call per event; without one, nothing is recorded.
func (n *Network) SetTrace(fn func(Event)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.trace = fn
}

// Listen binds a new endpoint to addr. Port 0 picks the next free port in
// 49152–65535 after the last one picked (starting at 49152, wrapping),
// deterministically. Use loopback-style addresses (127.0.0.x) for
// readability; nothing touches the real network. It fails with
// socket.ErrInvalidAddr for an invalid or unspecified IP and with
// ErrAddrInUse when addr already has an open endpoint (a closed endpoint's
// address may be bound again).
func (n *Network) Listen(addr netip.AddrPort) (*Conn, error) {
	addr = unmap(addr)
	if !addr.Addr().IsValid() || addr.Addr().IsUnspecified() {
		return nil, fmt.Errorf("simlink: listen %v: %w", addr, socket.ErrInvalidAddr)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr.Port() == 0 {
		port, ok := n.freePort(addr.Addr())
		if !ok {
			return nil, fmt.Errorf("simlink: listen %v: no free port: %w", addr, ErrAddrInUse)
		}
		addr = netip.AddrPortFrom(addr.Addr(), port)
	} else if n.conns[addr] != nil {
		return nil, fmt.Errorf("simlink: listen %v: %w", addr, ErrAddrInUse)
	}
	c := &Conn{net: n, addr: addr}
	c.cond.L = &n.mu
	n.conns[addr] = c
	n.bindGen++
	return c, nil
}

// freePort returns a port not bound on ip, searching from nextPort.
func (n *Network) freePort(ip netip.Addr) (uint16, bool) {
	const span = lastEphemeralPort - firstEphemeralPort + 1
	for range span {
		port := uint16(n.nextPort)
		n.nextPort++
		if n.nextPort > lastEphemeralPort {
			n.nextPort = firstEphemeralPort
		}
		if n.conns[netip.AddrPortFrom(ip, port)] == nil {
			return port, true
		}
	}
	return 0, false
}

// Now returns the virtual time: the duration since the network was created,
// as moved by Advance and friends.
func (n *Network) Now() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.now
}

// Advance moves virtual time forward by d and makes every datagram due by
// then readable, in (delivery time, send order) order, waking blocked
// readers. Cost: O(k log m) for k datagrams due out of m in flight. It
// panics if d is negative: virtual time never runs backwards.
func (n *Network) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("simlink: Advance(%v): negative duration", d))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.advanceTo(n.now + d)
}

// AdvanceTo moves virtual time to t, as Advance(t − Now()). It panics if t
// is before Now.
func (n *Network) AdvanceTo(t time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if t < n.now {
		panic(fmt.Sprintf("simlink: AdvanceTo(%v) before Now %v", t, n.now))
	}
	n.advanceTo(t)
}

// NextDue returns the delivery time of the earliest datagram in flight, and
// false when nothing is in flight. AdvanceTo(NextDue()) steps a test from
// one arrival to the next.
func (n *Network) NextDue() (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.inflight) == 0 {
		return 0, false
	}
	return n.inflight.peek(), true
}

// Drain advances virtual time until nothing is in flight — to the delivery
// time of the latest datagram, or not at all when nothing is in flight —
// and returns the new Now.
func (n *Network) Drain() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	latest := n.now
	for _, e := range n.inflight {
		latest = max(latest, e.at)
	}
	n.advanceTo(latest)
	return n.now
}

// RunTicks runs a fixed-step loop for tests: ticks times, it calls fn with
// the current virtual time (if fn is not nil) and then advances the clock by
// tick. It stops early, before advancing, when fn returns false, and
// returns the number of ticks completed. fn runs without the network's
// lock, so it may read, write and advance freely. It panics if tick is not
// positive.
func (n *Network) RunTicks(tick time.Duration, ticks int, fn func(now time.Duration) bool) int {
	if tick <= 0 {
		panic(fmt.Sprintf("simlink: RunTicks(%v): non-positive tick", tick))
	}
	for i := range ticks {
		if fn != nil && !fn(n.Now()) {
			return i
		}
		n.Advance(tick)
	}
	return ticks
}

// advanceTo pops and delivers every packet due by t, then sets the clock to
// t. The caller holds n.mu.
func (n *Network) advanceTo(t time.Duration) {
	for len(n.inflight) > 0 && n.inflight.peek() <= t {
		n.deliver(n.inflight.pop())
	}
	n.now = t
}

// deliver hands a due packet to its destination's ready queue, or drops it
// when no endpoint is bound there. The caller holds n.mu.
func (n *Network) deliver(p *packet) {
	c := p.link.endpoint(n)
	if c == nil {
		n.stats.NoEndpoint++
		if n.trace != nil {
			n.trace(Event{Kind: EventDrop, At: p.at, ID: p.id, Src: p.src, Dst: p.dst,
				Size: len(p.buf), Reason: DropNoEndpoint, Copy: int(p.copy)})
		}
		n.release(p)
		return
	}
	n.stats.Delivered++
	if n.trace != nil {
		n.trace(Event{Kind: EventDeliver, At: p.at, ID: p.id, Src: p.src, Dst: p.dst,
			Size: len(p.buf), Copy: int(p.copy)})
	}
	p.link = nil
	c.ready.push(p)
	if c.waiting > 0 {
		c.cond.Broadcast()
	}
}

// send runs one datagram from c through its link and schedules its copies.
// data is copied before send returns. The caller holds n.mu and has checked
// that c is open and dst is valid.
func (n *Network) send(c *Conn, dst netip.AddrPort, data []byte) error {
	l := c.cachedLink(dst)
	mtu := DefaultMTU
	if l != nil {
		mtu = l.model.cfg.MTU
	} else if n.def.MTU != 0 {
		mtu = n.def.MTU
	}
	if len(data) > mtu {
		c.stats.TooLarge++
		return fmt.Errorf("simlink: %d-byte datagram %v→%v exceeds MTU %d: %w",
			len(data), c.addr, dst, mtu, socket.ErrTooLarge)
	}

	n.lastID++
	id := n.lastID
	n.stats.Sent++
	c.stats.Sent++
	c.stats.SentBytes += uint64(len(data))
	if n.trace != nil {
		n.trace(Event{Kind: EventSend, At: n.now, ID: id, Src: c.addr, Dst: dst, Size: len(data)})
	}

	if l == nil {
		if n.conns[dst] == nil {
			// Unknown destination and no configured link: drop without
			// creating one, so traffic to random addresses costs no state.
			n.noEndpointAtSend(c, dst, id, len(data))
			return nil
		}
		l = n.linkFor(c.addr, dst)
		c.linkDst, c.link = dst, l
	}
	if l.endpoint(n) == nil {
		n.noEndpointAtSend(c, dst, id, len(data))
		return nil
	}

	v := l.model.Decide(n.now, len(data))
	if v.Copies == 0 {
		if n.trace != nil {
			n.trace(Event{Kind: EventDrop, At: n.now, ID: id, Src: c.addr, Dst: dst,
				Size: len(data), Reason: v.Drop})
		}
		return nil
	}
	for k := range v.Copies {
		p := n.alloc(len(data))
		copy(p.buf, data)
		p.at, p.seq, p.id = v.At[k], n.seq, id
		p.src, p.dst, p.copy, p.link = c.addr, dst, uint8(k), l
		n.seq++
		if p.at <= n.now {
			n.deliver(p)
		} else {
			n.inflight.push(p)
		}
	}
	return nil
}

// noEndpointAtSend counts and traces a datagram dropped at send because no
// endpoint is bound at dst. The caller holds n.mu.
func (n *Network) noEndpointAtSend(c *Conn, dst netip.AddrPort, id uint64, size int) {
	n.stats.NoEndpoint++
	if n.trace != nil {
		n.trace(Event{Kind: EventDrop, At: n.now, ID: id, Src: c.addr, Dst: dst,
			Size: size, Reason: DropNoEndpoint})
	}
}

// linkFor returns the link src→dst, creating it with the default config and
// a seed derived from the network seed and both addresses (so a link's
// randomness does not depend on which other links exist). The caller holds
// n.mu.
func (n *Network) linkFor(src, dst netip.AddrPort) *link {
	k := linkKey{src, dst}
	if l := n.links[k]; l != nil {
		return l
	}
	l := &link{dst: dst}
	if err := l.model.init(n.def, linkSeed(n.seed, src, dst)); err != nil {
		// n.def was validated by SetDefaultLink.
		panic("simlink: default link config invalid: " + err.Error())
	}
	n.links[k] = l
	return l
}

// alloc returns a packet from the free list (or a new one) whose buf has
// length size. The caller holds n.mu.
func (n *Network) alloc(size int) *packet {
	var p *packet
	if k := len(n.free); k > 0 {
		p = n.free[k-1]
		n.free[k-1] = nil
		n.free = n.free[:k-1]
	} else {
		p = &packet{}
	}
	if cap(p.buf) < size {
		p.buf = make([]byte, size, max(size, DefaultMTU))
	}
	p.buf = p.buf[:size]
	return p
}

// release returns p to the free list, dropping its addresses. The caller
// holds n.mu.
func (n *Network) release(p *packet) {
	p.buf = p.buf[:0]
	p.src, p.dst, p.link = netip.AddrPort{}, netip.AddrPort{}, nil
	n.free = append(n.free, p)
}

// linkSeed derives a link's seed from the network seed and its addresses.
func linkSeed(seed uint64, src, dst netip.AddrPort) uint64 {
	h := mix64(seed)
	for _, ap := range [2]netip.AddrPort{src, dst} {
		b := ap.Addr().As16()
		h = mix64(h ^ binary.LittleEndian.Uint64(b[:8]))
		h = mix64(h ^ binary.LittleEndian.Uint64(b[8:]))
		h = mix64(h ^ uint64(ap.Port()))
	}
	return h
}

// unmap turns an IPv4-mapped IPv6 address into plain IPv4, so that
// ::ffff:127.0.0.1 and 127.0.0.1 name the same endpoint.
func unmap(ap netip.AddrPort) netip.AddrPort {
	if ap.Addr().Is4In6() {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return ap
}
