package wire

import "testing"

// seqOracle is the readable reference for Seq comparison: the forward
// distance from b to a, as a plain integer in [0, 65536).
func seqForward(a, b Seq) int { return (int(a) - int(b) + 65536) % 65536 }

// checkSeqPair compares every Seq method on (a, b) with the oracle.
func checkSeqPair(t *testing.T, a, b Seq) {
	d := seqForward(a, b)
	newer := d >= 1 && d <= 32767
	older := d >= 32769 // b is newer than a: forward distance a→b in [1, 32767]
	if got := a.Newer(b); got != newer {
		t.Fatalf("Seq(%d).Newer(%d) = %v, want %v (d=%d)", a, b, got, newer, d)
	}
	if got := a.Older(b); got != older {
		t.Fatalf("Seq(%d).Older(%d) = %v, want %v (d=%d)", a, b, got, older, d)
	}
	if got, want := a.NewerOrEqual(b), d == 0 || newer; got != want {
		t.Fatalf("Seq(%d).NewerOrEqual(%d) = %v, want %v", a, b, got, want)
	}
	wantSub := d
	if d >= 32768 {
		wantSub = d - 65536
	}
	if got := a.Sub(b); got != wantSub {
		t.Fatalf("Seq(%d).Sub(%d) = %d, want %d", a, b, got, wantSub)
	}
	if got := b.Add(a.Sub(b)); got != a {
		t.Fatalf("Seq(%d).Add(Seq(%d).Sub(%d)) = %d", b, a, b, got)
	}
	// Antisymmetry: at most one of a, b is newer; exactly one unless equal
	// or exactly 32768 apart.
	if a.Newer(b) && b.Newer(a) {
		t.Fatalf("both %d and %d newer than each other", a, b)
	}
	if d != 0 && d != 32768 && a.Newer(b) == b.Newer(a) {
		t.Fatalf("neither of %d, %d newer (d=%d)", a, b, d)
	}
}

// TestSeqCompareWrap checks every method against the oracle for every base
// seq with a set of distances that crosses every boundary (0, ±1, the 33-seq
// ack window, ±32767, the ambiguous 32768), and for a few bases against
// every distance. That covers each base on both sides of the wrap.
// Scenario S-B3 relies on this arithmetic.
func TestSeqCompareWrap(t *testing.T) {
	dists := []int{0, 1, 2, 31, 32, 33, 255, 256, 16384, 32766, 32767, 32768, 32769, 32770, 65534, 65535}
	for a := 0; a < 65536; a++ {
		for _, d := range dists {
			checkSeqPair(t, Seq(a), Seq(a-d))
		}
	}
	for _, a := range []Seq{0, 1, 32767, 32768, 65535, 12345} {
		for d := 0; d < 65536; d++ {
			checkSeqPair(t, a, a.Add(-d))
		}
	}
}

// TestSeqAmbiguity pins the documented behaviour for seqs exactly 32768
// apart: neither is newer or older, NewerOrEqual is false both ways, and Sub
// gives −32768 both ways.
func TestSeqAmbiguity(t *testing.T) {
	for _, a := range []Seq{0, 1, 100, 32767, 32768, 65535} {
		b := a.Add(32768)
		if a.Newer(b) || b.Newer(a) || a.Older(b) || b.Older(a) {
			t.Errorf("%d vs %d: ordered, want unordered", a, b)
		}
		if a.NewerOrEqual(b) || b.NewerOrEqual(a) {
			t.Errorf("%d vs %d: NewerOrEqual true", a, b)
		}
		if a.Sub(b) != -32768 || b.Sub(a) != -32768 {
			t.Errorf("%d vs %d: Sub = %d, %d, want -32768 both", a, b, a.Sub(b), b.Sub(a))
		}
	}
}

func TestSeqNextAdd(t *testing.T) {
	cases := []struct {
		s    Seq
		n    int
		want Seq
	}{
		{0, 1, 1},
		{65535, 1, 0},
		{0, -1, 65535},
		{65535, 2, 1},
		{10, 65536, 10},
		{10, -65536, 10},
		{10, 65536*3 + 5, 15},
		{32768, 32768, 0},
	}
	for _, c := range cases {
		if got := c.s.Add(c.n); got != c.want {
			t.Errorf("Seq(%d).Add(%d) = %d, want %d", c.s, c.n, got, c.want)
		}
	}
	var s Seq = 65534
	for _, want := range []Seq{65535, 0, 1} {
		s = s.Next()
		if s != want {
			t.Fatalf("Next = %d, want %d", s, want)
		}
	}
}

// TestSeqOrderAcrossWrap walks 200,000 consecutive seqs (three wraps): each
// is newer than the previous 32767 and older than none of them.
func TestSeqOrderAcrossWrap(t *testing.T) {
	var s Seq = 65000
	for i := 0; i < 200000; i++ {
		n := s.Next()
		if !n.Newer(s) || !s.Older(n) || n.Sub(s) != 1 || !n.Newer(s.Add(-32766)) {
			t.Fatalf("step %d: %d → %d misordered", i, s, n)
		}
		s = n
	}
}
