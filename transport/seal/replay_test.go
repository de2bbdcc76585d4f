package seal

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWindowOracle checks the replay window alone against a set of seen
// numbers: random jumps ahead (up to past the whole ring), late numbers
// inside and outside the window, repeats.
func TestWindowOracle(t *testing.T) {
	for _, seed := range seeds(1, 4) {
		r := rand.New(rand.NewPCG(seed, 0xB1))
		var w window
		seen := map[uint64]bool{}
		var highest uint64
		any := false
		for i := range 200000 {
			var pn uint64
			switch k := r.IntN(10); {
			case !any || k < 4:
				pn = highest + uint64(r.IntN(200)) // ahead, or a repeat of the highest
				if r.IntN(500) == 0 {
					pn += uint64(r.IntN(3 * windowBits)) // jumps past the ring
				}
			case k < 9:
				pn = highest - min(highest, uint64(r.IntN(WindowSize+200))) // late, near the window's edge
			default:
				pn = highest - min(highest, uint64(r.IntN(64))) // recent
			}
			want := fresh
			switch {
			case any && pn < highest && highest-pn >= WindowSize:
				want = tooOld // seen or not: the window no longer knows
			case seen[pn]:
				want = replayed
			}
			if got := w.check(pn); got != want {
				t.Fatalf("step %d: check(%d) with highest %d = %d, want %d; %s", i, pn, highest, got, want, repro(t.Name(), seed))
			}
			if want == fresh {
				w.mark(pn)
				seen[pn] = true
				if !any || pn > highest {
					highest = pn
				}
				any = true
			}
		}
	}
}

// TestDeliveryOracle is the replay property test of a whole Session:
// over random seeded schedules of one direction — loss, reordering (most
// datagrams a little late, some far behind, some beyond the window),
// duplicates, forged datagrams, and three key updates — every genuine
// datagram gets exactly the verdict of a slow oracle (the set of packet
// numbers opened so far): opened with its own plaintext if new and inside
// the window, ErrReplayed if seen, ErrTooOld if WindowSize or more behind
// the highest. No forgery opens.
func TestDeliveryOracle(t *testing.T) {
	n := 3*MinKeyUpdateInterval + 5000
	runs := 3 // plus one
	if raceEnabled {
		runs = 1
	}
	for _, seed := range seeds(1, runs+1) {
		suite := AES128GCM
		if seed%2 == 0 {
			suite = ChaCha20Poly1305 // even seeds run the other suite
		}
		r := rand.New(rand.NewPCG(seed, 0xB2))
		c, s := pair(t, Config{Suite: suite, KeyUpdateInterval: MinKeyUpdateInterval}, testSecret())
		const size = HeaderLen + 8 + TagLen
		sealed := make([][size]byte, n)
		for pn := range sealed {
			b := sealed[pn][:HeaderLen+8]
			putU64(b[HeaderLen:], uint64(pn))
			if _, err := c.Seal(b); err != nil {
				t.Fatal(err)
			}
		}
		// The schedule: delivery time = send time + delay, stable by time.
		type delivery struct {
			at    int
			pn    int
			forge bool
		}
		var sched []delivery
		for pn := range n {
			if r.Float64() < 0.15 {
				continue // lost
			}
			for copyN := 0; copyN < 1 || copyN == 1 && r.Float64() < 0.05; copyN++ {
				delay := r.IntN(64)
				switch k := r.IntN(1000); {
				case k < 10:
					delay = r.IntN(3 * WindowSize) // far behind: some beyond the window
				case k < 100:
					delay = r.IntN(2000)
				}
				sched = append(sched, delivery{at: pn + delay, pn: pn})
			}
			if r.IntN(200) == 0 {
				sched = append(sched, delivery{at: pn + r.IntN(2000), pn: pn, forge: true})
			}
		}
		slices.SortStableFunc(sched, func(a, b delivery) int { return a.at - b.at })

		seen := map[uint64]bool{}
		var highest uint64
		any := false
		var opened, wantReplayed, wantTooOld, forged, late uint64
		buf := make([]byte, size)
		for i, d := range sched {
			copy(buf, sealed[d.pn][:])
			if d.forge {
				// the genuine header with random ciphertext and tag, or
				// the phase bit flipped
				if r.IntN(2) == 0 {
					for j := HeaderLen; j < size; j++ {
						buf[j] = byte(r.Uint32())
					}
				} else {
					buf[0] ^= 1
				}
				if _, err := s.Open(buf); err == nil {
					t.Fatalf("delivery %d: a forgery of packet number %d opened; %s", i, d.pn, repro(t.Name(), seed))
				}
				forged++
				continue
			}
			pn := uint64(d.pn)
			var want error
			switch {
			case any && pn < highest && highest-pn >= WindowSize:
				want = ErrTooOld // seen or not: the window no longer knows
				wantTooOld++
			case seen[pn]:
				want = ErrReplayed
				wantReplayed++
			}
			got, err := s.Open(buf)
			if !errors.Is(err, want) || (want == nil) != (err == nil) {
				t.Fatalf("delivery %d: packet number %d (highest %d, generation %d) gave %v, oracle %v; %s",
					i, pn, highest, s.RecvGeneration(), err, want, repro(t.Name(), seed))
			}
			if err != nil {
				continue
			}
			if getU64(got) != pn {
				t.Fatalf("delivery %d: packet number %d opened as %d", i, pn, getU64(got))
			}
			if pn/MinKeyUpdateInterval < s.RecvGeneration() {
				late++ // opened under the previous generation's key
			}
			seen[pn] = true
			opened++
			if !any || pn > highest {
				highest = pn
			}
			any = true
		}
		st := s.Stats()
		if st.Opened != opened || st.Replayed < wantReplayed || st.TooOld < wantTooOld || st.Refused() != wantReplayed+wantTooOld+forged {
			t.Fatalf("stats %+v; oracle: %d opened, %d replayed, %d too old, %d forged; %s", st, opened, wantReplayed, wantTooOld, forged, repro(t.Name(), seed))
		}
		if st.KeyUpdatesReceived != 3 || s.RecvGeneration() != 3 || c.SendGeneration() != 3 {
			t.Fatalf("key generations: sent %d, followed %d (stats %+v), want 3", c.SendGeneration(), s.RecvGeneration(), st)
		}
		if wantTooOld == 0 || wantReplayed == 0 || late == 0 || st.WrongPhase == 0 || st.PreviousKeysDropped < 2 {
			t.Fatalf("the schedule exercised too little: %d too old, %d replayed, %d under a previous key, stats %+v", wantTooOld, wantReplayed, late, st)
		}
		t.Logf("%v seed %d: %d deliveries, %d opened (%d under the previous key), %d replayed, %d too old, %d forged, %d auth failures, %d wrong phase, %d previous keys dropped",
			suite, seed, len(sched), opened, late, wantReplayed, wantTooOld, forged, st.AuthFailed, st.WrongPhase, st.PreviousKeysDropped)
	}
}
