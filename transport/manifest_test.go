package transport

import (
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/wire"
)

// Property: against a map of seq → entries, the manifest log returns
// exactly what was put for every seq still in flight, whatever the order
// verdicts arrive in, across ring growth, long runs of seqs that carry no
// manifest and seq wrap-around.
func TestManifestLogMatchesMap(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 77))
		const span = 64
		first := wire.Seq(r.IntN(65536))
		l := newManifestLog(span, first)
		want := map[wire.Seq][]manifestEntry{}
		var inFlight []wire.Seq
		seq := first
		check := func(s wire.Seq) {
			off, n, ok := l.take(s)
			w, had := want[s]
			if ok != had || n != len(w) {
				t.Fatalf("seed %d: take(%d) = %d entries, %v; want %d, %v", seed, s, n, ok, len(w), had)
			}
			for i := range n {
				if got := l.at(off, i); got != w[i] {
					t.Fatalf("seed %d: seq %d entry %d = %+v, want %+v", seed, s, i, got, w[i])
				}
			}
			delete(want, s)
		}
		for step := 0; step < 200_000; step++ {
			// Resolve the oldest when the span is full, else sometimes a
			// random one in flight.
			for len(inFlight) > 0 && (int(seq-inFlight[0]) >= span || r.IntN(3) == 0) {
				k := 0
				if int(seq-inFlight[0]) < span {
					k = r.IntN(len(inFlight))
				}
				check(inFlight[k])
				inFlight = append(inFlight[:k], inFlight[k+1:]...)
			}
			l.sent(seq)
			// 70,000 seqs in a row without a manifest (past a wrap of
			// the seq space) twice.
			if step%100_000 < 30_000 && r.IntN(4) != 0 {
				n := 1 + r.IntN(3)
				if r.IntN(50) == 0 {
					n = manifestCap
				}
				es := make([]manifestEntry, n)
				for i := range es {
					es[i] = manifestEntry{id: wire.Seq(r.IntN(65536)), stream: uint8(r.IntN(5)), piece: uint8(r.IntN(255)), frag: r.IntN(2) == 0}
				}
				l.put(seq, es)
				want[seq] = es
				inFlight = append(inFlight, seq)
			}
			seq++
		}
		if len(l.entries) > 4*span*manifestCap {
			t.Fatalf("seed %d: ring grew to %d entries for a span of %d", seed, len(l.entries), span)
		}
	}
}
