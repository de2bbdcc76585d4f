package ackmap

import (
	"testing"

	"github.com/tickwire/tickwire/wire"
)

func TestSeqBufferRoundsUpAndRejectsBadSizes(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{1, 1}, {2, 2}, {3, 4}, {33, 64}, {64, 64}, {MaxSeqBufferSize, MaxSeqBufferSize}} {
		if got := NewSeqBuffer[int](tc.in).Size(); got != tc.want {
			t.Errorf("NewSeqBuffer(%d).Size() = %d, want %d", tc.in, got, tc.want)
		}
	}
	for _, bad := range []int{0, -1, MaxSeqBufferSize + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewSeqBuffer(%d) did not panic", bad)
				}
			}()
			NewSeqBuffer[int](bad)
		}()
	}
}

func TestSeqBufferInsertGetRemove(t *testing.T) {
	b := NewSeqBuffer[int](8)
	if b.Has(0) || b.Get(0) != nil {
		t.Fatal("empty buffer reports seq 0 present")
	}
	*b.Insert(5) = 50
	if !b.Has(5) || *b.Get(5) != 50 {
		t.Fatalf("Get(5) after Insert = %v", b.Get(5))
	}
	// 13 shares 5's slot (13 & 7 == 5): the stale tag must miss.
	if b.Has(13) || b.Get(13) != nil {
		t.Fatal("seq 13 found in a slot holding 5")
	}
	if b.Remove(13) {
		t.Fatal("Remove(13) removed seq 5")
	}
	*b.Insert(13) = 130
	if b.Has(5) {
		t.Fatal("seq 5 still present after its slot was claimed by 13")
	}
	if *b.Get(13) != 130 {
		t.Fatalf("Get(13) = %d", *b.Get(13))
	}
	if !b.Remove(13) || b.Has(13) || b.Remove(13) {
		t.Fatal("Remove(13) semantics wrong")
	}
	// Insert zeroes the value even when it reclaims its own slot.
	*b.Insert(2) = 7
	if v := *b.Insert(2); v != 0 {
		t.Fatalf("Insert returned non-zero value %d", v)
	}
	b.Reset()
	if b.Has(2) {
		t.Fatal("Reset left seq 2")
	}
}

// Seqs that alias across the 16-bit wrap (same slot, different laps) never
// return each other's values.
func TestSeqBufferWrapStaleDetection(t *testing.T) {
	b := NewSeqBuffer[wire.Seq](64)
	for i := 0; i < 200000; i++ {
		s := wire.Seq(i)
		*b.Insert(s) = s
		old := s - 64
		if i >= 64 && b.Has(old) {
			t.Fatalf("seq %d still present after %d (same slot) was inserted", old, s)
		}
		if v := b.Get(s); v == nil || *v != s {
			t.Fatalf("Get(%d) = %v", s, v)
		}
	}
}

func TestSeqBufferClaimAndDrop(t *testing.T) {
	b := NewSeqBuffer[[2]int](4)
	*b.Insert(1) = [2]int{7, 8}
	b.Drop(1)
	if b.Has(1) {
		t.Fatal("Drop left seq 1")
	}
	b.Drop(5) // a different seq in the same slot: no-op
	v := b.Claim(5)
	if !b.Has(5) || b.Has(1) {
		t.Fatal("Claim did not take the slot")
	}
	v[0] = 9 // Claim leaves the old bytes for the caller to overwrite
	if got := *b.Get(5); got[0] != 9 {
		t.Fatalf("Get(5) = %v", got)
	}
}

// TestSeqBufferTake: Take is Get and Drop in one lookup — the value, then
// an empty slot — and misses a seq the slot does not hold.
func TestSeqBufferTake(t *testing.T) {
	b := NewSeqBuffer[int](8)
	if v, ok := b.Take(3); ok || v != 0 {
		t.Fatalf("Take(3) on an empty buffer = %d, %v", v, ok)
	}
	*b.Claim(3) = 30
	if v, ok := b.Take(11); ok || v != 0 || !b.Has(3) { // 11 shares 3's slot
		t.Fatalf("Take(11) with 3 held = %d, %v; Has(3) %v", v, ok, b.Has(3))
	}
	if v, ok := b.Take(3); !ok || v != 30 {
		t.Fatalf("Take(3) = %d, %v, want 30, true", v, ok)
	}
	if b.Has(3) {
		t.Fatal("3 still held after Take")
	}
	if v, ok := b.Take(3); ok || v != 0 {
		t.Fatalf("second Take(3) = %d, %v", v, ok)
	}
}
