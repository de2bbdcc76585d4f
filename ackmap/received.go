package ackmap

import "github.com/tickwire/tickwire/wire"

// AckWindow is the number of seqs one ack header covers: the ack itself and
// the 32 seqs before it, one per ack bit.
const AckWindow = 33

// RecvStatus is the outcome of recording a received seq.
type RecvStatus uint8

const (
	// RecvFresh: first time this seq was seen; process its payload.
	RecvFresh RecvStatus = iota
	// RecvDuplicate: this seq was already recorded; drop the datagram.
	RecvDuplicate
	// RecvTooOld: the seq is more than 32 behind the newest received, so the
	// history can no longer say whether it is a duplicate, and the sender has
	// already had (or will have) its loss verdict for it. Drop the datagram.
	RecvTooOld
)

// String returns the status name.
func (s RecvStatus) String() string {
	switch s {
	case RecvFresh:
		return "fresh"
	case RecvDuplicate:
		return "duplicate"
	case RecvTooOld:
		return "too-old"
	}
	return "unknown"
}

// RecvHistory is the received side of a channel: the newest seq received
// and a 32-bit history of the seqs before it. It produces the ack and ack
// bits a datagram piggy-backs, and detects duplicates and stale seqs.
//
// Bit i of the history (i = 0..31) is set when seq newest−1−i was received.
// The zero value is an empty history, ready to use. Every method is a few
// integer operations; nothing allocates. Not safe for concurrent use.
type RecvHistory struct {
	newest  wire.Seq
	bits    uint32
	started bool
}

// Record notes that seq arrived and says whether its payload is fresh.
// A fresh seq newer than the newest shifts the history; an older one sets
// its bit. Duplicates and too-old seqs leave the history unchanged.
func (h *RecvHistory) Record(seq wire.Seq) RecvStatus {
	if !h.started {
		h.started, h.newest, h.bits = true, seq, 0
		return RecvFresh
	}
	d := seq.Sub(h.newest)
	switch {
	case d > 0:
		// Shift the old newest into the history at bit d−1. A shift of 32 or
		// more empties a uint32, which is exactly the history we want.
		h.bits = h.bits<<uint(d) | 1<<uint(d-1)
		h.newest = seq
		return RecvFresh
	case d == 0:
		return RecvDuplicate
	}
	back := -d // 1..32768
	if back >= AckWindow {
		return RecvTooOld
	}
	bit := uint32(1) << uint(back-1)
	if h.bits&bit != 0 {
		return RecvDuplicate
	}
	h.bits |= bit
	return RecvFresh
}

// Ack returns the ack (the newest seq received) and the ack bits to send.
// ok is false until the first seq has been recorded; a datagram sent before
// then carries no ack.
func (h *RecvHistory) Ack() (ack wire.Seq, bits uint32, ok bool) {
	return h.newest, h.bits, h.started
}

// Reset forgets every seq, as for a new session.
func (h *RecvHistory) Reset() { *h = RecvHistory{} }
