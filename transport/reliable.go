package transport

import (
	"time"

	"github.com/tickwire/tickwire/wire"
)

// msgState is where a reliable message is in its life on the sender.
type msgState uint8

const (
	msgFree     msgState = iota // slot unused
	msgQueued                   // accepted by Send, never transmitted
	msgInFlight                 // transmitted at least once, not yet acked
)

// sendSlot is one reliable message held by its stream until acked.
type sendSlot struct {
	id    wire.Seq
	state msgState
	buf   []byte // the payload; capacity is kept across reuse
	// lastSent is the Flush of the latest transmission (of any piece), so a
	// message rides at most once per Flush; lastSentAt is its time, which
	// spaces redundant copies by Config.RedundancyInterval.
	lastSent   uint64
	lastSentAt time.Duration
	sent       bool // transmitted at least once
	resend     bool // a datagram carrying it was lost and it is still unacked
	// frag is a large message's per-piece state, nil until its first
	// piece goes out (and for every message that fits one datagram); it
	// comes from the stream's pool, so only fragmented messages pay for it.
	frag *fragState
}

// fragState tracks the pieces of one fragmented message in flight: count
// is the piece count, fragID the fragment message id of the current
// attempt, attempt the tick it started; acked, due and sentMask are
// per-piece bitmaps (acked, to be (re)sent, sent before in this attempt).
type fragState struct {
	count    int
	fragID   wire.Seq
	attempt  time.Duration
	acked    [4]uint64
	due      [4]uint64
	sentMask [4]uint64
	ackedN   int
}

func bitSet(b *[4]uint64, i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func setBit(b *[4]uint64, i int)      { b[i>>6] |= 1 << (i & 63) }
func clearBit(b *[4]uint64, i int)    { b[i>>6] &^= 1 << (i & 63) }

// reliableSender is the sending half of one reliable stream: a window of
// messages identified by a 16-bit id, each held (with a copy of its frame
// encoding) until the peer acks it. The window bounds the span from the
// oldest unacked id to the newest; a full window is back-pressure, never a
// silent drop.
type reliableSender struct {
	slots     []sendSlot // indexed by id & mask; nil until the first push
	window    int
	freeFrags []*fragState // released fragment states, reused
	openLarge int          // held messages with a fragment state: large ones being sent
	mask      wire.Seq
	oldest    wire.Seq // oldest unacked id (== next when empty)
	next      wire.Seq // id the next message gets
	queued    int      // bytes held
	// span is the bytes of every message from oldest to next, the acked
	// ones between included: what the receiver may have to buffer behind
	// a gap on an ordered stream. The byte cap applies to it, not to
	// queued, so the receiver's buffer (the same cap) never overflows and
	// drops a message whose datagram it already acked.
	span       int
	maxQueued  int
	unacked    int // messages held
	everQueued uint64
}

func newReliableSender(window, maxQueued int) *reliableSender {
	return &reliableSender{
		window:    window,
		mask:      wire.Seq(window - 1),
		maxQueued: maxQueued,
	}
}

// push claims the next message id for a message whose frame encoding is n
// bytes and returns its slot, with an empty buf (keeping its capacity) for
// the caller to fill with exactly n bytes. A full window or byte budget
// returns ErrQueueFull and changes nothing.
func (s *reliableSender) push(n int) (*sendSlot, error) {
	// The window is a span of ids, not a count: ids index the ring, so an
	// acked message in the middle does not free room for one more.
	if int(s.next-s.oldest) >= s.window || s.span+n > s.maxQueued {
		return nil, ErrQueueFull
	}
	if s.slots == nil {
		// Allocated on first use: most sessions use one or two of their
		// streams, and a window is window × 64 bytes.
		s.slots = make([]sendSlot, s.window)
	}
	id := s.next
	sl := &s.slots[id&s.mask]
	*sl = sendSlot{id: id, state: msgQueued, buf: sl.buf[:0]}
	s.next++
	s.unacked++
	s.queued += n
	s.span += n
	s.everQueued++
	return sl, nil
}

// newFrag returns a zeroed fragment state, reusing a released one.
func (s *reliableSender) newFrag() *fragState {
	s.openLarge++
	if n := len(s.freeFrags); n > 0 {
		f := s.freeFrags[n-1]
		s.freeFrags = s.freeFrags[:n-1]
		*f = fragState{}
		return f
	}
	return new(fragState)
}

// slot returns the held message with this id, or nil if it is not held
// (already acked, or never sent).
func (s *reliableSender) slot(id wire.Seq) *sendSlot {
	if s.slots == nil {
		return nil
	}
	sl := &s.slots[id&s.mask]
	if sl.state == msgFree || sl.id != id {
		return nil
	}
	return sl
}

// ackWhole marks message id delivered (a datagram carrying it whole was
// acked) and releases it.
func (s *reliableSender) ackWhole(id wire.Seq) {
	if sl := s.slot(id); sl != nil {
		s.release(sl)
	}
}

// ackPiece marks one piece of a fragmented message acked; the message is
// delivered when every piece has been acked in the current attempt.
func (s *reliableSender) ackPiece(id wire.Seq, fragID wire.Seq, piece int) {
	sl := s.slot(id)
	if sl == nil || sl.frag == nil {
		return
	}
	f := sl.frag
	if f.fragID != fragID || piece >= f.count || bitSet(&f.acked, piece) {
		return
	}
	setBit(&f.acked, piece)
	clearBit(&f.due, piece)
	f.ackedN++
	if f.ackedN == f.count {
		s.release(sl)
	}
}

// lostWhole notes that a datagram carrying message id was lost.
func (s *reliableSender) lostWhole(id wire.Seq) {
	if sl := s.slot(id); sl != nil && sl.frag == nil {
		sl.resend = true
	}
}

// lostPiece notes that a datagram carrying one piece was lost: only that
// piece is sent again (fast repair), unless the attempt has moved on.
func (s *reliableSender) lostPiece(id wire.Seq, fragID wire.Seq, piece int) {
	sl := s.slot(id)
	if sl == nil || sl.frag == nil {
		return
	}
	if f := sl.frag; f.fragID == fragID && piece < f.count && !bitSet(&f.acked, piece) {
		setBit(&f.due, piece)
	}
}

func (s *reliableSender) release(sl *sendSlot) {
	s.queued -= len(sl.buf)
	s.unacked--
	sl.state = msgFree
	if sl.frag != nil {
		s.freeFrags = append(s.freeFrags, sl.frag)
		sl.frag = nil
		s.openLarge--
	}
	for s.oldest != s.next && s.slots[s.oldest&s.mask].state == msgFree {
		s.span -= len(s.slots[s.oldest&s.mask].buf)
		s.oldest++
	}
}

// recvSlot buffers one out-of-order message on an ordered stream.
type recvSlot struct {
	id      wire.Seq
	present bool
	buf     []byte
}

// reliableReceiver is the receiving half of one reliable stream. Ordered
// streams deliver in id order, buffering up to a window of later messages;
// the unordered stream delivers at once. Both deliver each id exactly once.
//
// The sender never has more than window messages unacked, so an id more
// than window behind the newest seen was necessarily delivered already: the
// receiver needs no memory beyond the window.
type reliableReceiver struct {
	ordered bool
	mask    wire.Seq
	window  int
	// ordered: next id to deliver, and a ring of buffered later messages,
	// allocated when the first message arrives out of order.
	next  wire.Seq
	slots []recvSlot
	// unordered: newest id seen and a bitmap of delivered ids in
	// (newest−window, newest].
	newest  wire.Seq
	started bool
	seen    []uint64
	// buffered bytes on an ordered stream, and their cap
	buffered    int
	maxBuffered int
}

func newReliableReceiver(ordered bool, window, maxBuffered int) *reliableReceiver {
	r := &reliableReceiver{ordered: ordered, mask: wire.Seq(window - 1), window: window, maxBuffered: maxBuffered}
	if !ordered {
		r.seen = make([]uint64, (window+63)/64)
	}
	return r
}

// recvVerdict is what the receiver does with an arriving message.
type recvVerdict uint8

const (
	recvDeliver   recvVerdict = iota // deliver now (and then drain buffered ones)
	recvBuffered                     // held until the gap before it fills
	recvDuplicate                    // already delivered or already buffered
	recvOutside                      // beyond the window: the peer broke the protocol
	recvOverflow                     // buffering it would pass the byte cap; the sender re-sends it
)

// accept decides an arriving message's fate. For recvBuffered it copies p.
func (r *reliableReceiver) accept(id wire.Seq, p []byte) recvVerdict {
	if !r.ordered {
		return r.acceptUnordered(id)
	}
	d := id.Sub(r.next)
	switch {
	case d < 0:
		return recvDuplicate
	case d == 0:
		return recvDeliver
	case d >= r.window:
		return recvOutside
	}
	if r.slots == nil {
		r.slots = make([]recvSlot, r.window)
	}
	sl := &r.slots[id&r.mask]
	if sl.present && sl.id == id {
		return recvDuplicate
	}
	if r.buffered+len(p) > r.maxBuffered {
		return recvOverflow
	}
	sl.id, sl.present = id, true
	sl.buf = append(sl.buf[:0], p...)
	r.buffered += len(p)
	return recvBuffered
}

// delivered advances an ordered stream past the message just delivered and
// returns the next buffered message that is now deliverable, if any. The
// returned bytes stay valid until the next accept.
func (r *reliableReceiver) delivered() ([]byte, bool) {
	r.next++
	if r.slots == nil {
		return nil, false // nothing was ever buffered
	}
	sl := &r.slots[r.next&r.mask]
	if !sl.present || sl.id != r.next {
		return nil, false
	}
	sl.present = false
	r.buffered -= len(sl.buf)
	return sl.buf, true
}

func (r *reliableReceiver) acceptUnordered(id wire.Seq) recvVerdict {
	if !r.started {
		r.started, r.newest = true, id
		r.mark(id)
		return recvDeliver
	}
	d := id.Sub(r.newest)
	if d > 0 {
		if d > r.window {
			// The sender holds at most window unacked messages and the one
			// before its oldest was delivered, so a legitimate id is at most
			// window past the newest seen.
			return recvOutside
		}
		for i := 1; i <= d; i++ {
			r.unmark(r.newest.Add(i))
		}
		r.newest = id
		r.mark(id)
		return recvDeliver
	}
	if -d >= r.window {
		return recvDuplicate // delivered long ago (see the type comment)
	}
	if r.marked(id) {
		return recvDuplicate
	}
	r.mark(id)
	return recvDeliver
}

func (r *reliableReceiver) bit(id wire.Seq) (int, uint64) {
	i := int(id & r.mask)
	return i >> 6, 1 << (i & 63)
}
func (r *reliableReceiver) mark(id wire.Seq)   { w, b := r.bit(id); r.seen[w] |= b }
func (r *reliableReceiver) unmark(id wire.Seq) { w, b := r.bit(id); r.seen[w] &^= b }
func (r *reliableReceiver) marked(id wire.Seq) bool {
	w, b := r.bit(id)
	return r.seen[w]&b != 0
}

// sequencedReceiver keeps the newest id delivered on one unreliable-
// sequenced stream: only strictly newer messages are delivered (S-D4).
type sequencedReceiver struct {
	newest  wire.Seq
	started bool
}

func (r *sequencedReceiver) accept(id wire.Seq) bool {
	if r.started && !id.Newer(r.newest) {
		return false
	}
	r.started, r.newest = true, id
	return true
}
