package seal

// The replay window: a ring of windowBlocks 64-bit words over packet
// numbers (RFC 6479, as WireGuard's), 1 KiB per receiving direction.
const (
	windowBlocks = 128
	windowBits   = windowBlocks * 64

	// WindowSize is how far behind the highest authenticated packet number
	// a datagram may be and still be accepted once: 8128 (8192 bits of
	// ring less the one word being refilled, as in WireGuard). A datagram
	// further behind is dropped as too old. The reliability harness's
	// worst reordering, jitter of 80 ms at its 4 MB/s cap in 576-byte
	// datagrams, puts at most about 1,200 datagrams ahead of a late one,
	// a seventh of the window (TestWindowCoversHarnessReordering measures
	// it on simlink).
	WindowSize = windowBits - 64
)

// window records which packet numbers near the highest one were
// authenticated. The zero value is empty.
//
// The word of the ring that holds the highest packet number lives in
// word, not in blocks (its slot there is stale until the highest moves on
// to a later word): an in-order datagram, which the window checks without
// reading the ring, then marks without touching it either, 63 times in
// 64. In a Session, top and word share a cache line with the rest of what
// Open touches.
type window struct {
	top    uint64 // highest authenticated packet number + 1; 0 before any
	word   uint64 // the bits of word top−1>>6
	blocks [windowBlocks]uint64
}

// verdict is what window.check says of a packet number.
type verdict uint8

const (
	fresh verdict = iota
	replayed
	tooOld
)

// expected is the packet number reconstruction works around: the highest
// authenticated one plus one, or 0 before any.
func (w *window) expected() uint64 { return w.top }

// check says whether pn may be opened: never seen and inside the window.
// It changes nothing: the window is updated (mark) only after the datagram
// authenticates, so a forgery cannot move it.
func (w *window) check(pn uint64) verdict {
	if pn >= w.top { // above the highest, or the window is empty
		return fresh
	}
	highest := w.top - 1
	if highest-pn >= WindowSize {
		return tooOld
	}
	bits := w.word
	if pn>>6 != highest>>6 {
		// Within the window and in an earlier word: at most
		// windowBlocks−1 words back, so not highest's slot.
		bits = w.blocks[(pn>>6)%windowBlocks]
	}
	if bits&(1<<(pn&63)) != 0 {
		return replayed
	}
	return fresh
}

// mark records pn as authenticated; check(pn) must have been fresh. A
// higher pn in a later word stores the current word in its slot and
// clears the words it moves past (at most the whole ring).
func (w *window) mark(pn uint64) {
	if w.top == 0 {
		w.top, w.word = pn+1, 0
	} else if pn >= w.top {
		cur, next := (w.top-1)>>6, pn>>6
		if n := next - cur; n >= windowBlocks {
			clear(w.blocks[:])
			w.word = 0
		} else if n > 0 {
			w.blocks[cur%windowBlocks] = w.word
			for i := cur + 1; i < next; i++ {
				w.blocks[i%windowBlocks] = 0
			}
			w.word = 0
		}
		w.top = pn + 1
	}
	if pn>>6 == (w.top-1)>>6 {
		w.word |= 1 << (pn & 63)
	} else {
		w.blocks[(pn>>6)%windowBlocks] |= 1 << (pn & 63)
	}
}
