package ackmap

import (
	"fmt"

	"github.com/tickwire/tickwire/wire"
)

// MaxSeqBufferSize is the largest ring a SeqBuffer may have: half the seq
// space, so every live entry is unambiguously older or newer than another.
const MaxSeqBufferSize = 32768

// SeqBuffer is a fixed-size ring of T indexed by seq & mask. Each slot
// remembers the seq it holds, so after the seq space wraps (or the ring
// laps itself) a lookup for an older seq that shares the slot misses instead
// of returning the newer entry.
//
// Insert, Get, Has and Remove are O(1), touch no map and allocate nothing.
// A SeqBuffer is not safe for concurrent use.
type SeqBuffer[T any] struct {
	mask  uint16
	slots []seqSlot[T]
}

// seqSlot keeps the tag beside its value so a lookup touches one cache line.
type seqSlot[T any] struct {
	tag uint32 // 0 = empty, otherwise seq+1
	val T
}

// NewSeqBuffer returns a ring with room for size entries, rounded up to a
// power of two. It panics if size is not in [1, MaxSeqBufferSize]: ring sizes
// are fixed by code, never by input. The ring is allocated once, here.
func NewSeqBuffer[T any](size int) *SeqBuffer[T] {
	if size < 1 || size > MaxSeqBufferSize {
		panic(fmt.Sprintf("ackmap: SeqBuffer size %d out of range [1, %d]", size, MaxSeqBufferSize))
	}
	n := 1
	for n < size {
		n <<= 1
	}
	return &SeqBuffer[T]{mask: uint16(n - 1), slots: make([]seqSlot[T], n)}
}

// Size returns the number of slots.
func (b *SeqBuffer[T]) Size() int { return len(b.slots) }

// Insert claims the slot for seq, zeroes its value and returns a pointer to
// it. Whatever the slot held before — an older seq that shares it, or seq
// itself — is discarded. The pointer is valid until the slot is reused.
func (b *SeqBuffer[T]) Insert(seq wire.Seq) *T {
	sl := &b.slots[uint16(seq)&b.mask]
	*sl = seqSlot[T]{tag: uint32(seq) + 1}
	return &sl.val
}

// Claim is Insert without zeroing the value: the caller overwrites what it
// uses. For large values of which a caller fills a prefix (a manifest with a
// count), it saves clearing the whole slot on every insert.
func (b *SeqBuffer[T]) Claim(seq wire.Seq) *T {
	sl := &b.slots[uint16(seq)&b.mask]
	sl.tag = uint32(seq) + 1
	return &sl.val
}

// Get returns a pointer to seq's value, or nil when the slot is empty or
// holds a different seq.
func (b *SeqBuffer[T]) Get(seq wire.Seq) *T {
	sl := &b.slots[uint16(seq)&b.mask]
	if sl.tag != uint32(seq)+1 {
		return nil
	}
	return &sl.val
}

// Has reports whether seq is present.
func (b *SeqBuffer[T]) Has(seq wire.Seq) bool {
	return b.slots[uint16(seq)&b.mask].tag == uint32(seq)+1
}

// Remove empties seq's slot if it holds seq, and reports whether it did.
// The value is zeroed so the ring keeps no pointers alive.
func (b *SeqBuffer[T]) Remove(seq wire.Seq) bool {
	sl := &b.slots[uint16(seq)&b.mask]
	if sl.tag != uint32(seq)+1 {
		return false
	}
	*sl = seqSlot[T]{}
	return true
}

// Drop empties seq's slot if it holds seq, like Remove, but leaves the
// value's bytes in place (for values holding no pointers, whose next
// Claim overwrites what it uses).
func (b *SeqBuffer[T]) Drop(seq wire.Seq) {
	if sl := &b.slots[uint16(seq)&b.mask]; sl.tag == uint32(seq)+1 {
		sl.tag = 0
	}
}

// Take returns seq's value and empties its slot, like Get and Drop in one
// lookup, or ok false (and the zero value) when the slot does not hold
// seq. Like Drop, it leaves the value's bytes in place.
func (b *SeqBuffer[T]) Take(seq wire.Seq) (v T, ok bool) {
	sl := &b.slots[uint16(seq)&b.mask]
	if sl.tag != uint32(seq)+1 {
		return v, false
	}
	sl.tag = 0
	return sl.val, true
}

// Reset empties every slot.
func (b *SeqBuffer[T]) Reset() {
	clear(b.slots)
}
