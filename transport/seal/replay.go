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
type window struct {
	highest uint64 // highest authenticated packet number, if any
	any     bool   // a packet number was authenticated
	blocks  [windowBlocks]uint64
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
func (w *window) expected() uint64 {
	if !w.any {
		return 0
	}
	return w.highest + 1
}

// check says whether pn may be opened: never seen and inside the window.
// It changes nothing: the window is updated (mark) only after the datagram
// authenticates, so a forgery cannot move it.
func (w *window) check(pn uint64) verdict {
	if !w.any || pn > w.highest {
		return fresh
	}
	if w.highest-pn >= WindowSize {
		return tooOld
	}
	if w.blocks[(pn>>6)%windowBlocks]&(1<<(pn&63)) != 0 {
		return replayed
	}
	return fresh
}

// mark records pn as authenticated; check(pn) must have been fresh. A
// higher pn clears the words it moves past (at most the whole ring).
func (w *window) mark(pn uint64) {
	if !w.any {
		w.any = true
		w.highest = pn
	} else if pn > w.highest {
		cur, next := w.highest>>6, pn>>6
		n := next - cur
		if n > windowBlocks {
			n = windowBlocks
		}
		for i := uint64(1); i <= n; i++ {
			w.blocks[(cur+i)%windowBlocks] = 0
		}
		w.highest = pn
	}
	w.blocks[(pn>>6)%windowBlocks] |= 1 << (pn & 63)
}
