package transport

import (
	"math/bits"
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
	// copies counts the redundant copies since the latest transmission
	// that was not one (txAt, below). The small fields sit together, so
	// the slot stays 64 bytes.
	copies uint8
	sent   bool   // transmitted at least once
	resend bool   // a datagram carrying it was lost and it is still unacked
	buf    []byte // the payload; capacity is kept across reuse
	// lastSent is the Flush of the latest transmission (of any piece), so a
	// message rides at most once per Flush; lastSentAt is its time, which
	// spaces redundant copies by Config.RedundancyInterval.
	lastSent   uint64
	lastSentAt time.Duration
	// txAt is the time of the latest transmission that was not a
	// redundant copy (the first send, or a re-send after a loss verdict):
	// adaptive redundancy bounds the copies by it and by their count
	// (Config.Redundancy).
	txAt time.Duration
	// frag is a large message's per-piece state, nil until its first
	// piece goes out (and for every message that fits one datagram); it
	// comes from the stream's pool, so only large messages pay for it.
	frag *fragState
}

// fragState tracks the pieces of one large message (sent as ReliablePiece
// frames): count is the piece count; acked, due and sentMask are per-piece
// bitmaps (acked, to be (re)sent, sent at least once). The receiver keeps
// every piece it acked until the message is whole, so a piece is sent
// again only after a datagram carrying it was declared lost.
type fragState struct {
	count    int
	acked    [4]uint64
	due      [4]uint64
	sentMask [4]uint64
	ackedN   int
}

// isDue reports whether the held message in sl is due for sending: never
// sent, marked for re-sending after a loss, or a large message with a
// piece to (re)send. What flushReliable sends is always due; a due
// message it skips (re-marked in the Flush that sent it) waits for the
// next Flush.
func (sl *sendSlot) isDue() bool {
	if sl.frag != nil {
		return anyBit(&sl.frag.due)
	}
	return !sl.sent || sl.resend
}

// sendTotals are the counts a channel's reliable streams keep together,
// so a Flush can tell at once that none of them has work: held is the
// messages held (the sum of the streams' unacked), busy the streams that
// hold any (so a stall check stops after the last of them), due the
// messages due for sending (the sum of their due); checks counts the
// channel's stall checks (Channel.checkStalls), so a stream knows whether
// one ran while it held nothing.
type sendTotals struct {
	held, busy, due int
	checks          uint64
}

func bitSet(b *[4]uint64, i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func setBit(b *[4]uint64, i int)      { b[i>>6] |= 1 << (i & 63) }
func clearBit(b *[4]uint64, i int)    { b[i>>6] &^= 1 << (i & 63) }
func anyBit(b *[4]uint64) bool        { return b[0]|b[1]|b[2]|b[3] != 0 }

// firstBit returns the lowest set bit below n, or n if there is none.
func firstBit(b *[4]uint64, n int) int {
	for w, v := range b {
		if v != 0 {
			return min(w<<6+bits.TrailingZeros64(v), n)
		}
	}
	return n
}

// reliableSender is the sending half of one reliable stream: a window of
// messages identified by a 16-bit id, each held (with a copy of its frame
// encoding) until the peer acks it. The window bounds the span from the
// oldest unacked id to the newest; a full window is back-pressure, never a
// silent drop.
type reliableSender struct {
	slots     []sendSlot // indexed by id & mask; nil until the first push
	window    int
	freeFrags []*fragState // released fragment states, reused
	// spare holds the copy buffers of messages the window has moved past,
	// at most maxSpareSend, for the next pushes: a stream that holds few
	// messages at a time reuses a few buffers instead of giving each of
	// its window's slots one of its own on first use (which, for a message
	// every half second on a 256-slot window, allocates for two minutes).
	spare  [][]byte
	mask   wire.Seq
	oldest wire.Seq // oldest unacked id (== next when empty)
	next   wire.Seq // id the next message gets
	queued int      // bytes held
	// span is the bytes of every message from oldest to next, the acked
	// ones between included: what the receiver may have to buffer behind
	// a gap on an ordered stream. The byte cap applies to it, not to
	// queued, so the receiver's buffer (the same cap) never overflows and
	// drops a message whose datagram it already acked.
	span      int
	maxQueued int
	unacked   int // messages held
	// due counts the held messages that are due for sending (isDue):
	// flushReliable passes over a stream with none. While due > 0,
	// firstDue is at or before the oldest due message and at or after
	// oldest, so the pass starts there instead of walking the messages in
	// flight. tot is the channel's sums over its streams (a sender of its
	// own when not in a channel). cursor is where the pass looks next
	// (flushReliable).
	due        int
	firstDue   wire.Seq
	cursor     wire.Seq
	tot        *sendTotals
	everQueued uint64
	// progressAt is the time of the stream's last progress: a release, or
	// the first Flush that found it holding messages after it held none.
	// released counts releases; progress counts releases and acked
	// pieces of large messages (a large message's pieces acked one by one
	// on a slow path are progress, though none is released for a while);
	// warned marks a stall already reported.
	// A stall check passes over a stream that holds nothing, which would
	// only restart these: idleAt (tot.checks when it last came to hold
	// nothing) tells the push that ends the idle spell whether a check
	// ran in it, and so whether to restart them as that check would have.
	progressAt time.Duration
	released   uint64
	progress   uint64
	seen       uint64 // progress as of the last stall check
	warned     bool
	idleAt     uint64
}

// newReliableSender returns a stream's sender counting into tot (the
// channel's sums; nil for a sender of its own).
func newReliableSender(window, maxQueued int, tot *sendTotals) *reliableSender {
	if tot == nil {
		tot = &sendTotals{}
	}
	return &reliableSender{
		window:    window,
		mask:      wire.Seq(window - 1),
		maxQueued: maxQueued,
		tot:       tot,
	}
}

// addDue and subDue count held message id becoming due, or no longer
// due, keeping firstDue at or before the oldest due message.
func (s *reliableSender) addDue(id wire.Seq) {
	if s.due == 0 || id.Sub(s.firstDue) < 0 {
		s.firstDue = id
	}
	s.due++
	s.tot.due++
}

func (s *reliableSender) subDue(id wire.Seq) {
	if id == s.firstDue {
		s.firstDue++
	}
	s.due--
	s.tot.due--
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
	buf := sl.buf[:0]
	if cap(buf) < n {
		if k := len(s.spare) - 1; buf == nil && k >= 0 && cap(s.spare[k]) >= n {
			// takeBuf's common case, inline: the slot has no buffer
			// (the window moved it to spare) and the newest spare fits.
			buf = s.spare[k][:0]
			s.spare[k] = nil
			s.spare = s.spare[:k]
		} else {
			buf = s.takeBuf(buf, n)
		}
	}
	*sl = sendSlot{} // (zeroed in place, then filled: a literal is built on the stack and copied)
	sl.id, sl.state, sl.buf = id, msgQueued, buf
	s.next++
	if s.unacked++; s.unacked == 1 {
		s.tot.busy++
	}
	s.tot.held++
	s.addDue(id) // never sent
	s.queued += n
	s.span += n
	s.everQueued++
	return sl, nil
}

// maxSpareSend bounds reliableSender.spare; a buffer the pool has no
// room for stays in its slot, as every buffer did before the pool.
const maxSpareSend = 32

// minSendBuf is the smallest copy buffer a stream allocates: small
// messages whose size varies by a byte or two (varints) then fit the
// buffer they had before.
const minSendBuf = 64

// takeBuf returns an empty buffer of capacity at least n for a message in
// place of own (the slot's buffer, too small): the newest spare if it is
// large enough (own, if any, taking its place), else a new one of at
// least minSendBuf bytes rounded up to a power of two up to 4 KiB (own
// is dropped, as append would have). Allocates only in the last case.
func (s *reliableSender) takeBuf(own []byte, n int) []byte {
	if k := len(s.spare) - 1; k >= 0 && cap(s.spare[k]) >= n {
		b := s.spare[k]
		if own != nil {
			s.spare[k] = own[:0]
		} else {
			s.spare[k] = nil
			s.spare = s.spare[:k]
		}
		return b[:0]
	}
	size := n
	if n <= 4096 {
		size = minSendBuf
		for size < n {
			size <<= 1
		}
	}
	return make([]byte, 0, size)
}

// newFrag returns a zeroed fragment state, reusing a released one.
func (s *reliableSender) newFrag() *fragState {
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

// ackPiece marks one piece of a large message acked; the message is
// delivered when every piece has been acked.
func (s *reliableSender) ackPiece(id wire.Seq, piece int) {
	sl := s.slot(id)
	if sl == nil || sl.frag == nil {
		return
	}
	f := sl.frag
	if piece >= f.count || bitSet(&f.acked, piece) {
		return
	}
	setBit(&f.acked, piece)
	if bitSet(&f.due, piece) {
		clearBit(&f.due, piece)
		if !anyBit(&f.due) {
			s.subDue(id)
		}
	}
	f.ackedN++
	if f.ackedN == f.count {
		s.release(sl)
	} else {
		s.progress++
	}
}

// lostWhole notes that a datagram carrying message id was lost.
func (s *reliableSender) lostWhole(id wire.Seq) {
	if sl := s.slot(id); sl != nil && sl.frag == nil {
		if !sl.isDue() {
			s.addDue(id)
		}
		sl.resend = true
	}
}

// lostPiece notes that a datagram carrying one piece was lost: only that
// piece is sent again.
func (s *reliableSender) lostPiece(id wire.Seq, piece int) {
	sl := s.slot(id)
	if sl == nil || sl.frag == nil {
		return
	}
	if f := sl.frag; piece < f.count && !bitSet(&f.acked, piece) {
		if !anyBit(&f.due) {
			s.addDue(id)
		}
		setBit(&f.due, piece)
	}
}

func (s *reliableSender) release(sl *sendSlot) {
	s.released++
	s.progress++
	s.queued -= len(sl.buf)
	s.unacked--
	s.tot.held--
	if s.unacked == 0 {
		s.idleAt = s.tot.checks
		s.tot.busy--
	}
	if sl.isDue() {
		s.subDue(sl.id)
	}
	sl.state = msgFree
	if sl.frag != nil {
		s.freeFrags = append(s.freeFrags, sl.frag)
		sl.frag = nil
	}
	for s.oldest != s.next && s.slots[s.oldest&s.mask].state == msgFree {
		old := &s.slots[s.oldest&s.mask]
		s.span -= len(old.buf)
		if old.buf != nil && len(s.spare) < maxSpareSend {
			if s.spare == nil {
				s.spare = make([][]byte, 0, maxSpareSend)
			}
			s.spare = append(s.spare, old.buf[:0])
			old.buf = nil
		}
		s.oldest++
	}
	if s.firstDue.Sub(s.oldest) < 0 {
		s.firstDue = s.oldest // (oldest moved past messages not due)
	}
}

// recvSlot holds one message of a reliable stream that cannot be
// delivered yet: on an ordered stream a whole message waiting for the gap
// before it (present), or on any stream the pieces of a large message
// being assembled (partial).
type recvSlot struct {
	id      wire.Seq
	present bool // a whole message, in buf
	partial bool // pieces of a large message, at their offsets in buf
	count   uint8
	got     int       // pieces received
	size    int       // the message length, known once its last piece arrived
	have    [4]uint64 // bit i: piece i received
	bytes   int       // bytes buffered in this slot
	buf     []byte
}

// keepRecvBuf is the largest buffer a receive slot keeps for reuse once
// its message is delivered; a larger one (a large message's) goes to the
// stream's few spare buffers or is released, so the receiver's memory
// follows what it holds, not what it once held.
const keepRecvBuf = 4 << 10

// maxSpareBufs is how many large buffers a reliable stream keeps for the
// next large messages, so a steady flow of them allocates nothing.
const maxSpareBufs = 4

// reliableReceiver is the receiving half of one reliable stream. Ordered
// streams deliver in id order, buffering up to a window of later messages;
// the unordered stream delivers at once. Both deliver each id exactly once,
// and both assemble large messages (ReliablePiece frames) in the slot of
// their id, so a piece is deduplicated, bounded and kept exactly like a
// whole message: it never expires and is never evicted, and the sender can
// trust the ack of the datagram that carried it.
//
// The sender never has more than window messages unacked, so an id more
// than window behind the newest seen was necessarily delivered already: the
// receiver needs no memory beyond the window.
type reliableReceiver struct {
	ordered bool
	mask    wire.Seq
	window  int
	// next id to deliver (ordered), and a ring of messages that cannot be
	// delivered yet, allocated when the first one arrives.
	next  wire.Seq
	slots []recvSlot
	// unordered: newest id seen and a bitmap of delivered ids in
	// (newest−window, newest].
	newest  wire.Seq
	started bool
	seen    []uint64
	// bytes held in slots (out of order or in assembly), and their cap: the
	// sender's byte cap on its window (the same ReliableBytes) keeps a
	// conforming peer below it.
	buffered    int
	maxBuffered int
	spare       [][]byte // large buffers kept for reuse, at most maxSpareBufs
}

func newReliableReceiver(ordered bool, window, maxBuffered int) *reliableReceiver {
	r := &reliableReceiver{ordered: ordered, mask: wire.Seq(window - 1), window: window, maxBuffered: maxBuffered}
	if !ordered {
		r.seen = make([]uint64, (window+63)/64)
	}
	return r
}

// recvVerdict is what the receiver does with an arriving message or piece.
type recvVerdict uint8

const (
	recvDeliver   recvVerdict = iota // deliver now (and then drain buffered ones)
	recvBuffered                     // held: until the gap before it fills, or until its other pieces arrive
	recvDuplicate                    // already delivered or already held
	recvOutside                      // beyond the window: the peer broke the protocol
	recvOverflow                     // holding it would pass the byte cap: the peer broke the protocol
	recvMalformed                    // a piece that contradicts the others of its message
)

// fresh classifies id before it is held: a duplicate of a delivered id,
// outside the window, or new (recvBuffered, the caller decides further).
func (r *reliableReceiver) fresh(id wire.Seq) recvVerdict {
	if r.ordered {
		switch d := id.Sub(r.next); {
		case d < 0:
			return recvDuplicate
		case d >= r.window:
			return recvOutside
		}
		return recvBuffered
	}
	if !r.started {
		return recvBuffered
	}
	d := id.Sub(r.newest)
	switch {
	case d > r.window:
		// The sender holds at most window unacked messages and the one
		// before its oldest was delivered, so a legitimate id is at most
		// window past the newest seen.
		return recvOutside
	case d > 0:
		return recvBuffered
	case -d >= r.window:
		return recvDuplicate // delivered long ago (see the type comment)
	case r.marked(id):
		return recvDuplicate
	}
	return recvBuffered
}

// slot returns the ring slot of id, allocating the ring on first use.
func (r *reliableReceiver) slot(id wire.Seq) *recvSlot {
	if r.slots == nil {
		r.slots = make([]recvSlot, r.window)
	}
	return &r.slots[id&r.mask]
}

// clear empties a slot, releasing a large buffer.
func (r *reliableReceiver) clear(sl *recvSlot) {
	r.buffered -= sl.bytes
	buf := sl.buf[:0]
	if cap(buf) > keepRecvBuf {
		r.putSpare(buf)
		buf = nil
	}
	*sl = recvSlot{buf: buf}
}

// putSpare keeps a large buffer for reuse, replacing the smallest spare
// when all are taken and this one is larger.
func (r *reliableReceiver) putSpare(b []byte) {
	if len(r.spare) < maxSpareBufs {
		r.spare = append(r.spare, b[:0])
		return
	}
	small := 0
	for i, sb := range r.spare {
		if cap(sb) < cap(r.spare[small]) {
			small = i
		}
	}
	if cap(b) > cap(r.spare[small]) {
		r.spare[small] = b[:0]
	}
}

// buffer returns a buffer of length n: the smallest spare that is large
// enough, or a new one.
func (r *reliableReceiver) buffer(n int) []byte {
	best := -1
	for i, sb := range r.spare {
		if cap(sb) >= n && (best < 0 || cap(sb) < cap(r.spare[best])) {
			best = i
		}
	}
	if best < 0 {
		return make([]byte, n)
	}
	b := r.spare[best][:n]
	last := len(r.spare) - 1
	r.spare[best], r.spare[last] = r.spare[last], nil
	r.spare = r.spare[:last]
	return b
}

// accept decides a whole arriving message's fate. For recvBuffered it
// copies p.
func (r *reliableReceiver) accept(id wire.Seq, p []byte) recvVerdict {
	if v := r.fresh(id); v != recvBuffered {
		return v
	}
	if !r.ordered {
		r.markDelivered(id)
		return recvDeliver
	}
	if id == r.next {
		return recvDeliver
	}
	sl := r.slot(id)
	if sl.id == id && (sl.present || sl.partial) {
		return recvDuplicate
	}
	if r.buffered+len(p) > r.maxBuffered {
		return recvOverflow
	}
	r.clear(sl) // a stale occupant cannot be in the window; drop it
	sl.id, sl.present, sl.bytes = id, true, len(p)
	sl.buf = append(sl.buf, p...)
	r.buffered += len(p)
	return recvBuffered
}

// acceptPiece takes one piece of large message id: piece index of count,
// each pieceSize bytes but the last. It returns recvDeliver with the whole
// message when this piece completed it and it can be delivered now (the
// bytes stay valid until the slot is reused: the next accept or
// acceptPiece), recvBuffered when the piece was held (or completed a
// message that waits for an earlier gap on an ordered stream), and the
// other verdicts as accept does.
//
// A message in assembly is charged its smallest possible size, (count−1) ×
// pieceSize + 1 bytes, from its first piece (its exact size once the last
// piece arrived), and its buffer is count × pieceSize: a peer cannot make
// the receiver hold more than the byte cap plus one piece per message,
// and a conforming sender, whose cap counts whole messages, never
// overflows it.
func (r *reliableReceiver) acceptPiece(id wire.Seq, index, count uint8, p []byte, pieceSize int) ([]byte, recvVerdict) {
	if v := r.fresh(id); v != recvBuffered {
		return nil, v
	}
	last := index == count-1
	if last && len(p) > pieceSize || !last && len(p) != pieceSize {
		return nil, recvMalformed
	}
	sl := r.slot(id)
	switch {
	case sl.id == id && sl.present:
		return nil, recvDuplicate
	case sl.id == id && sl.partial:
		if sl.count != count {
			return nil, recvMalformed
		}
		if bitSet(&sl.have, int(index)) {
			return nil, recvDuplicate
		}
	default:
		least := (int(count)-1)*pieceSize + 1
		if r.buffered-sl.bytes+least > r.maxBuffered {
			return nil, recvOverflow
		}
		r.clear(sl) // a stale occupant cannot be in the window; drop it
		sl.id, sl.partial, sl.count, sl.bytes = id, true, count, least
		r.buffered += least
		if need := int(count) * pieceSize; cap(sl.buf) < need {
			if sl.buf != nil && cap(sl.buf) > keepRecvBuf {
				r.putSpare(sl.buf)
			}
			sl.buf = r.buffer(need)
		}
		sl.buf = sl.buf[:cap(sl.buf)]
	}
	off := int(index) * pieceSize
	copy(sl.buf[off:], p)
	setBit(&sl.have, int(index))
	sl.got++
	if last {
		sl.size = off + len(p)
		r.buffered += sl.size - sl.bytes
		sl.bytes = sl.size
	}
	if sl.got < int(count) {
		return nil, recvBuffered
	}
	msg := sl.buf[:sl.size]
	if !r.ordered || id == r.next {
		if !r.ordered {
			r.markDelivered(id)
		}
		r.clearKeep(sl)
		return msg, recvDeliver
	}
	sl.partial, sl.present = false, true
	sl.buf = msg
	return nil, recvBuffered
}

// release drops the buffer of id's slot if it is large and the slot no
// longer holds anything: called after a message delivered from the slot
// has been handed to the application.
func (r *reliableReceiver) release(id wire.Seq) {
	if r.slots == nil {
		return
	}
	if sl := &r.slots[id&r.mask]; !sl.present && !sl.partial && cap(sl.buf) > keepRecvBuf {
		r.putSpare(sl.buf)
		sl.buf = nil
	}
}

// clearKeep empties a slot whose message is being delivered from its
// buffer right now: the bytes are no longer held, but the buffer stays
// with the slot until its next use.
func (r *reliableReceiver) clearKeep(sl *recvSlot) {
	r.buffered -= sl.bytes
	sl.bytes, sl.present, sl.partial, sl.got, sl.have = 0, false, false, 0, [4]uint64{}
}

// delivered advances an ordered stream past the message just delivered and
// returns the next held message that is now deliverable, if any. The
// returned bytes stay valid until the next accept or acceptPiece.
func (r *reliableReceiver) delivered() ([]byte, bool) {
	r.next++
	if r.slots == nil {
		return nil, false // nothing was ever held
	}
	sl := &r.slots[r.next&r.mask]
	if !sl.present || sl.id != r.next {
		return nil, false
	}
	msg := sl.buf
	r.clearKeep(sl)
	return msg, true
}

// markDelivered records id as delivered on the unordered stream.
func (r *reliableReceiver) markDelivered(id wire.Seq) {
	if !r.started {
		r.started, r.newest = true, id
		r.mark(id)
		return
	}
	if d := id.Sub(r.newest); d > 0 {
		for i := 1; i <= d; i++ {
			r.unmark(r.newest.Add(i))
		}
		r.newest = id
	}
	r.mark(id)
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
