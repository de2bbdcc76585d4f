package fragment

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// TestNoAllocs: the per-piece paths allocate nothing in steady state —
// Add of every piece of a 16-piece message (including the one that
// completes it), Expire, Count and AppendPiece.
func TestNoAllocs(t *testing.T) {
	const mtu = 1200
	ps := PieceSize(mtu)
	msg, mode := frameOfLen(t, 15*ps+100, 1)
	pieces := split(t, msg, ps, mode, 0)
	if len(pieces) != 16 {
		t.Fatalf("%d pieces, want 16", len(pieces))
	}
	a := newAssembler(t, AssemblerConfig{MTU: mtu})
	id := wire.Seq(0)
	var tick time.Duration
	delivered := 0
	addMessage := func() {
		id++
		tick++
		for i := range pieces {
			f := pieces[i]
			f.MessageID = id
			if m, err := a.Add(f, tick); err != nil {
				t.Fatal(err)
			} else if m != nil {
				delivered++
			}
		}
	}
	addMessage() // warm up: the first buffer is allocated here
	delivered = 0

	// Interleaved: two messages in progress at once, one piece of each in
	// turn, then a stale piece and a duplicate.
	interleaved := func() {
		id += 2
		tick++
		for i := range pieces {
			for _, mid := range []wire.Seq{id - 1, id} {
				f := pieces[i]
				f.MessageID = mid
				if _, err := a.Add(f, tick); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, _ = a.Add(pieces[0], tick) // late or stale
	}
	interleaved() // warm up the second buffer

	dst := make([]byte, 0, 2048)
	cases := []struct {
		name string
		f    func()
	}{
		{"Add 16-piece message", addMessage},
		{"Add two interleaved 16-piece messages", interleaved},
		{"Expire", func() { a.Expire(tick) }},
		{"Count", func() { _, _ = Count(len(msg), ps) }},
		{"PieceSize", func() { _ = PieceSize(mtu) }},
		{"AppendPiece 16 pieces", func() {
			for i := range 16 {
				dst = AppendPiece(dst[:0], msg, ps, mode, 7, i)
			}
		}},
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", c.name, n)
		}
	}
	if delivered != 100+1 { // AllocsPerRun runs f once more to warm up
		t.Errorf("delivered %d messages, want 101", delivered)
	}
}
