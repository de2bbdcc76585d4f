package simlink

import (
	"net/netip"
	"time"
)

// packet is one copy of a datagram inside the Network: in flight (in the
// event heap) or due (in its destination's ready queue). Packets and their
// byte buffers are recycled through Network.free, so a steady stream of
// datagrams allocates nothing.
type packet struct {
	at   time.Duration // delivery time
	seq  uint64        // insertion sequence: the tie-break for equal at
	id   uint64        // datagram id, shared by a duplicate and its original
	src  netip.AddrPort
	dst  netip.AddrPort
	copy uint8 // 0 for the original, 1 for the duplicate
	buf  []byte
	link *link // the link it travels, while in flight
}

// eventHeap is a binary min-heap of in-flight packets keyed by (at, seq).
// The key is unique, so the pop order is a pure function of the pushes:
// the source of the Network's determinism. The key is kept inline in each
// entry so that sifting never dereferences a packet, and the heap is
// hand-written rather than container/heap to keep the per-datagram path
// free of interface calls.
type eventHeap []heapEntry

type heapEntry struct {
	at  time.Duration
	seq uint64
	p   *packet
}

func (e heapEntry) before(f heapEntry) bool {
	return e.at < f.at || (e.at == f.at && e.seq < f.seq)
}

func (h *eventHeap) push(p *packet) {
	e := heapEntry{p.at, p.seq, p}
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !e.before(s[parent]) {
			break
		}
		s[i] = s[parent]
		i = parent
	}
	s[i] = e
}

// peek returns the earliest packet's delivery time; the heap must not be
// empty.
func (h eventHeap) peek() time.Duration { return h[0].at }

// pop removes and returns the earliest packet; the heap must not be empty.
func (h *eventHeap) pop() *packet {
	s := *h
	top := s[0].p
	last := len(s) - 1
	e := s[last]
	s[last] = heapEntry{}
	s = s[:last]
	*h = s
	if last == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= last {
			break
		}
		if r := c + 1; r < last && s[r].before(s[c]) {
			c = r
		}
		if !s[c].before(e) {
			break
		}
		s[i] = s[c]
		i = c
	}
	s[i] = e
	return top
}

// fifo is a growable ring of packets: an endpoint's queue of due datagrams.
// Its size is a power of two; it grows to the high-water mark and stays.
type fifo struct {
	buf  []*packet
	head int
	n    int
}

func (q *fifo) len() int { return q.n }

func (q *fifo) push(p *packet) {
	if q.n == len(q.buf) {
		grown := make([]*packet, max(16, 2*len(q.buf)))
		for i := range q.n {
			grown[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = p
	q.n++
}

// pop removes and returns the oldest packet; the queue must not be empty.
func (q *fifo) pop() *packet {
	p := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return p
}
