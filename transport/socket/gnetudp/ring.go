package gnetudp

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// ring is one event loop's queue: a single-producer, single-consumer ring
// of fixed-size datagram slots, allocated once at open. The producer is
// the event loop that owns the socket the ring is bound to; the consumer is
// the engine's reader. Neither ever waits for the other: the producer
// drops on a full ring, the consumer returns what is there.
//
// Slot i (of cap) holds a datagram in arena[i*stride:][:lens[i]], its
// source in addrs[i], whether it was cut to the slot size in trunc[i] and
// when its event loop queued it in stamps[i] (clock()).
// The producer fills slots from head on and publishes them by storing head;
// the consumer copies slots from tail on and releases them by storing
// tail. head−tail is the number queued.
type ring struct {
	// Written by the producer only.
	head atomic.Uint64
	// fd is the socket of the event loop that produces into this ring, or
	// -1 while no loop has claimed it (see Engine.ringFor).
	fd atomic.Int64
	// Producer counters, read by Stats.
	received, bytes, drops, wakeups, syscalls atomic.Uint64
	_                                         [64]byte

	// Written by the consumer only.
	tail atomic.Uint64
	_    [64]byte

	// Fixed at open.
	mask   uint64
	stride int // bytes per slot in arena
	size   int // room per slot: the engine's datagram limit
	arena  []byte
	lens   []int32
	trunc  []bool
	addrs  []netip.AddrPort
	stamps []int64
}

// clockBase is the origin of clock.
var clockBase = time.Now()

// clock is the engine's time for dating queued datagrams: monotonic
// nanoseconds since clockBase, at least 1 (0 means "not read yet"). Event
// loops and reader share the process's monotonic clock, so a wall-clock
// step cannot skew an Age. One time.Since: a vDSO clock read.
func clock() int64 { return max(int64(time.Since(clockBase)), 1) }

// newRing allocates a ring of at least n slots of size bytes.
func newRing(n, size int) *ring {
	c := 1
	for c < n {
		c <<= 1
	}
	stride := (size + 63) &^ 63 // slots start on cache lines
	r := &ring{
		mask:   uint64(c - 1),
		stride: stride,
		size:   size,
		arena:  make([]byte, c*stride),
		lens:   make([]int32, c),
		trunc:  make([]bool, c),
		addrs:  make([]netip.AddrPort, c),
		stamps: make([]int64, c),
	}
	r.fd.Store(-1)
	return r
}

// capacity is the number of slots.
func (r *ring) capacity() int { return int(r.mask) + 1 }

// queued is the number of datagrams queued (a snapshot; for Stats).
func (r *ring) queued() int { return int(r.head.Load() - r.tail.Load()) }

// free returns the producer's view of the empty slots.
func (r *ring) free() int { return r.capacity() - int(r.head.Load()-r.tail.Load()) }

// slot returns slot i's room.
func (r *ring) slot(i uint64) []byte {
	off := int(i&r.mask) * r.stride
	return r.arena[off : off+r.size : off+r.size]
}

// push copies one datagram into the next slot, dated now (clock()), and
// publishes it, or counts a drop when the ring is full. Producer only.
func (r *ring) push(p []byte, from netip.AddrPort, now int64) bool {
	h := r.head.Load()
	if h-r.tail.Load() > r.mask {
		r.drops.Add(1)
		return false
	}
	i := h & r.mask
	n := copy(r.slot(h), p)
	r.lens[i] = int32(n)
	r.trunc[i] = n < len(p)
	r.addrs[i] = from
	r.stamps[i] = now
	r.head.Store(h + 1)
	r.received.Add(1)
	r.bytes.Add(uint64(n))
	return true
}

// pop copies up to len(msgs) queued datagrams into msgs and releases their
// slots. It returns how many it copied, their bytes, and how many were
// truncated (cut to the slot when queued, or to the caller's buffer now).
// Each message's Age is how long it was queued: *now less its stamp, where
// *now is the read's clock(), read here if still 0. Consumer only.
func (r *ring) pop(msgs []socket.Message, now *int64) (n int, nbytes, trunc uint64) {
	t := r.tail.Load()
	avail := int(r.head.Load() - t)
	n = min(avail, len(msgs))
	if n > 0 && *now == 0 {
		*now = clock()
	}
	for k := range n {
		i := (t + uint64(k)) & r.mask
		l := int(r.lens[i])
		m := &msgs[k]
		m.N = copy(m.Buf, r.slot(i)[:l])
		m.Addr = r.addrs[i]
		m.Age = time.Duration(max(*now-r.stamps[i], 0))
		nbytes += uint64(m.N)
		if r.trunc[i] || m.N < l {
			trunc++
		}
	}
	if n > 0 {
		r.tail.Store(t + uint64(n))
	}
	return n, nbytes, trunc
}
