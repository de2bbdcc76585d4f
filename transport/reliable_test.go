package transport

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/wire"
)

func pushBytes(t *testing.T, s *reliableSender, p []byte) wire.Seq {
	t.Helper()
	sl, err := s.push(len(p))
	if err != nil {
		t.Fatal(err)
	}
	sl.buf = append(sl.buf, p...)
	return sl.id
}

// S-D3: a full window or byte budget is back-pressure: ErrQueueFull, and
// nothing already accepted is dropped.
func TestReliableSenderBackPressure(t *testing.T) {
	s := newReliableSender(16, 100, nil)
	for i := 0; i < 16; i++ {
		pushBytes(t, s, []byte{byte(i)})
	}
	if _, err := s.push(1); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("17th push: %v", err)
	}
	for id := wire.Seq(0); id < 16; id++ {
		if sl := s.slot(id); sl == nil || sl.buf[0] != byte(id) {
			t.Fatalf("message %d lost after a refused push", id)
		}
	}
	s.ackWhole(3) // acking a middle message does not slide the window
	if s.oldest != 0 || s.unacked != 15 {
		t.Fatalf("oldest %d unacked %d", s.oldest, s.unacked)
	}
	if _, err := s.push(1); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("push with the window's oldest unacked: %v", err)
	}
	s.ackWhole(0)
	s.ackWhole(1)
	s.ackWhole(2)
	if s.oldest != 4 {
		t.Fatalf("oldest %d, want 4 (0-3 acked)", s.oldest)
	}
	for i := 0; i < 4; i++ {
		if _, err := s.push(1); err != nil {
			t.Fatalf("push %d after the window slid: %v", i, err)
		}
	}
	for id := wire.Seq(4); id < 20; id++ {
		if id != 3 && s.slot(id) == nil {
			t.Fatalf("message %d missing", id)
		}
	}

	b := newReliableSender(16, 10, nil)
	pushBytes(t, b, make([]byte, 8))
	if _, err := b.push(3); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("byte budget: %v", err)
	}
	b.ackWhole(0)
	if b.queued != 0 {
		t.Fatalf("queued %d after ack", b.queued)
	}
}

func TestReliableSenderPieces(t *testing.T) {
	s := newReliableSender(16, 1<<20, nil)
	id := pushBytes(t, s, make([]byte, 100))
	sl := s.slot(id)
	sl.frag = s.newFrag()
	sl.frag.count = 3
	f := sl.frag
	s.ackPiece(id, 0)
	s.ackPiece(id, 0) // duplicate ack of a piece counts once
	s.lostPiece(id, 2)
	s.lostPiece(id, 0) // a loss of a piece acked by another datagram is ignored
	if !bitSet(&f.due, 2) || bitSet(&f.due, 0) {
		t.Fatal("lost piece 2 not due, or acked piece 0 due")
	}
	s.ackPiece(id, 1)
	if s.slot(id) == nil {
		t.Fatal("released with piece 2 unacked")
	}
	s.ackPiece(id, 2)
	if s.slot(id) != nil || s.unacked != 0 {
		t.Fatal("not released with every piece acked")
	}
	s.ackPiece(id, 2) // late ack after release is harmless
}

// Property: over a simulated sender (window W, random retransmissions of
// any unacked message, random ack delays, ids wrapping past 65535), the
// ordered receiver delivers every message exactly once and in order, and
// the unordered receiver every message exactly once. (S-D1 at the stream
// level.)
func TestReliableReceiverExactlyOnce(t *testing.T) {
	const window = 32
	for _, ordered := range []bool{true, false} {
		for seed := uint64(1); seed <= 10; seed++ {
			rng := rand.New(rand.NewPCG(seed, 9))
			r := newReliableReceiver(ordered, window, 1<<20)
			total := 70000 + rng.IntN(10000)
			oldest, next := 0, 0 // absolute message numbers; the id is the low 16 bits
			count := make([]int, total)
			var order []int
			for len(order) < total {
				if next-oldest < window && next < total && rng.IntN(3) > 0 {
					next++
				}
				if next == oldest {
					continue
				}
				abs := oldest + rng.IntN(next-oldest)
				var payload [4]byte
				binary.LittleEndian.PutUint32(payload[:], uint32(abs))
				switch r.accept(wire.Seq(abs), payload[:]) {
				case recvDeliver:
					count[abs]++
					order = append(order, abs)
					for ordered {
						p, ok := r.delivered()
						if !ok {
							break
						}
						b := int(binary.LittleEndian.Uint32(p))
						count[b]++
						order = append(order, b)
					}
				case recvOutside:
					t.Fatalf("seed %d: message %d outside the window", seed, abs)
				}
				// The sender learns of deliveries after a random delay.
				for oldest < next && count[oldest] > 0 && rng.IntN(8) == 0 {
					oldest++
				}
			}
			for abs, n := range count {
				if n != 1 {
					t.Fatalf("ordered=%v seed %d: message %d delivered %d times", ordered, seed, abs, n)
				}
			}
			if ordered {
				for i, abs := range order {
					if abs != i {
						t.Fatalf("seed %d: delivery %d was message %d", seed, i, abs)
					}
				}
			}
		}
	}
}

// S-D4: a sequenced stream delivers only messages newer than the last.
func TestSequencedReceiver(t *testing.T) {
	var r sequencedReceiver
	for _, c := range []struct {
		id   wire.Seq
		want bool
	}{{10, true}, {9, false}, {10, false}, {12, true}, {11, false}, {65000, false}, {100, true}} {
		if got := r.accept(c.id); got != c.want {
			t.Fatalf("accept(%d) = %v, want %v", c.id, got, c.want)
		}
	}
}
