package ackmap

import (
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/wire"
)

// S-B1: a receiver that got {n, n−1, n−5} reports ack=n and bits for exactly
// n−1 and n−5 — at several points of the seq space, including across wrap.
func TestRecvHistoryAckBits(t *testing.T) {
	for _, n := range []wire.Seq{100, 0, 1, 3, 4, 65535, 32768} {
		var h RecvHistory
		for _, s := range []wire.Seq{n - 5, n, n - 1} {
			if st := h.Record(s); st != RecvFresh {
				t.Fatalf("n=%d: Record(%d) = %v, want fresh", n, s, st)
			}
		}
		ack, bits, ok := h.Ack()
		if !ok || ack != n {
			t.Fatalf("n=%d: ack = %d ok=%v, want %d", n, ack, ok, n)
		}
		want := uint32(1)<<0 | uint32(1)<<4 // n−1 → bit 0, n−5 → bit 4
		if bits != want {
			t.Fatalf("n=%d: bits = %032b, want %032b", n, bits, want)
		}
	}
}

func TestRecvHistoryNoAckBeforeFirst(t *testing.T) {
	var h RecvHistory
	if _, _, ok := h.Ack(); ok {
		t.Fatal("empty history reports an ack")
	}
	h.Record(9)
	h.Reset()
	if _, _, ok := h.Ack(); ok {
		t.Fatal("Reset history reports an ack")
	}
}

func TestRecvHistoryDuplicateAndTooOld(t *testing.T) {
	var h RecvHistory
	h.Record(1000)
	cases := []struct {
		seq  wire.Seq
		want RecvStatus
	}{
		{1000, RecvDuplicate},
		{999, RecvFresh},
		{999, RecvDuplicate},
		{1000 - 32, RecvFresh}, // oldest seq the bits still cover
		{1000 - 32, RecvDuplicate},
		{1000 - 33, RecvTooOld},
		{1000 + 32768, RecvTooOld}, // exactly half the seq space away: ambiguous, counts as old
		{1001, RecvFresh},
		{1000 - 32, RecvTooOld}, // slid out of the window when 1001 arrived
		{1034, RecvFresh},       // jump of 33: the whole old history falls out
	}
	for _, c := range cases {
		if got := h.Record(c.seq); got != c.want {
			t.Fatalf("Record(%d) = %v, want %v", c.seq, got, c.want)
		}
	}
	// 1034−1001 = 33: the whole earlier history is outside the window.
	if ack, bits, _ := h.Ack(); ack != 1034 || bits != 0 {
		t.Fatalf("after jump: ack=%d bits=%032b, want 1034 and 0", ack, bits)
	}
}

// refRecv is the slow reference for RecvHistory: a set of absolute seqs.
type refRecv struct {
	got    map[int64]bool
	newest int64
	start  bool
}

func (r *refRecv) record(abs int64) RecvStatus {
	if !r.start {
		r.start, r.newest, r.got = true, abs, map[int64]bool{abs: true}
		return RecvFresh
	}
	if r.newest-abs >= AckWindow {
		return RecvTooOld
	}
	if r.got[abs] {
		return RecvDuplicate
	}
	r.got[abs] = true
	r.newest = max(r.newest, abs)
	return RecvFresh
}

func (r *refRecv) ack() (int64, uint32) {
	var bits uint32
	for i := int64(0); i < 32; i++ {
		if r.got[r.newest-1-i] {
			bits |= 1 << i
		}
	}
	return r.newest, bits
}

// Property: RecvHistory agrees with the set-based reference over random
// arrival orders with duplicates, reordering, gaps and seq wrap.
func TestRecvHistoryMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := 0; run < 20; run++ {
		first := int64(rng.IntN(65536))
		var h RecvHistory
		ref := refRecv{}
		next := first
		for op := 0; op < 20000; op++ {
			var abs int64
			switch p := rng.IntN(100); {
			case p < 60:
				abs = next
				next += 1 + int64(rng.IntN(3)) // gaps
			case p < 80 && next > first+1:
				abs = next - 1 - int64(rng.IntN(int(min(next-first, 40)))) // late or duplicate
			default:
				abs = next + int64(rng.IntN(50)) // jump ahead
				next = abs + 1
			}
			got := h.Record(wire.Seq(abs))
			want := ref.record(abs)
			if got != want {
				t.Fatalf("run %d op %d: Record(abs %d) = %v, reference %v", run, op, abs, got, want)
			}
			ack, bits, _ := h.Ack()
			rack, rbits := ref.ack()
			if ack != wire.Seq(rack) || bits != rbits {
				t.Fatalf("run %d op %d: Ack = (%d, %032b), reference (%d, %032b)", run, op, ack, bits, wire.Seq(rack), rbits)
			}
		}
	}
}
