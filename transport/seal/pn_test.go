package seal

import (
	"math/rand/v2"
	"testing"
)

// closestOracle is the slow reference for reconstruct: of every packet
// number in [0, 2^62) whose low 16 bits are truncated, the one closest to
// expected, found by walking outward from expected one number at a time.
// Ties (exactly 2^15 either way) go to the higher, as RFC 9000 §A.3 does.
func closestOracle(expected, truncated uint64) uint64 {
	const limit = 1 << 62
	for d := uint64(0); ; d++ {
		if up := expected + d; up < limit && up&0xffff == truncated {
			return up
		}
		if d <= expected {
			if down := expected - d; down&0xffff == truncated && d < 1<<15 {
				return down
			}
		}
	}
}

// TestReconstructRFCExample is the example of RFC 9000 §A.3: with the
// highest packet number 0xa82f30ea, a 16-bit 0x9b32 is 0xa82f9b32.
func TestReconstructRFCExample(t *testing.T) {
	if got := reconstruct(0xa82f30ea+1, 0x9b32); got != 0xa82f9b32 {
		t.Fatalf("reconstruct = %#x, want 0xa82f9b32", got)
	}
}

// TestReconstructOracle checks reconstruct against closestOracle for
// expected values around 0, around every kind of 16-bit wrap, at random,
// and next to 2^62, with the true number anywhere within 2^15 of
// expected: the range the algorithm promises.
func TestReconstructOracle(t *testing.T) {
	for _, seed := range seeds(1, 2) {
		r := rand.New(rand.NewPCG(seed, 0xA3))
		bases := []uint64{0, 1, 0x7fff, 0x8000, 0xffff, 0x10000, 0x18000, 1 << 32, 1<<62 - 1, 1<<62 - 0x8000}
		for range 60 {
			bases = append(bases, r.Uint64N(1<<62), r.Uint64N(1<<20), uint64(r.IntN(1<<12))<<16+uint64(r.IntN(16))-8)
		}
		n := 0
		for _, expected := range bases {
			if expected > 1<<62 {
				continue
			}
			for range 32 {
				// a true packet number within 2^15 − 1 of expected, inside [0, 2^62)
				off := int64(r.IntN(1<<16-1)) - (1<<15 - 1)
				pn := int64(expected) + off
				if pn < 0 || pn >= 1<<62 {
					continue
				}
				tr := uint64(pn) & 0xffff
				got, want := reconstruct(expected, tr), closestOracle(expected, tr)
				if want != uint64(pn) {
					t.Fatalf("oracle(%#x, %#x) = %#x, want the true %#x; %s", expected, tr, want, pn, repro(t.Name(), seed))
				}
				if got != want {
					t.Fatalf("reconstruct(%#x, %#x) = %#x, oracle %#x; %s", expected, tr, got, want, repro(t.Name(), seed))
				}
				n++
			}
		}
		if n < 5000 {
			t.Fatalf("only %d cases ran", n)
		}
	}
}

// TestReconstructAcrossWraps drives a Session over many wraps of the
// 16-bit field with random losses of up to 2^15 − 1 datagrams in a row:
// every datagram that arrives opens and carries its own packet number.
func TestReconstructAcrossWraps(t *testing.T) {
	for _, seed := range seeds(1, 2) {
		r := rand.New(rand.NewPCG(seed, 0xA4))
		c, s := pair(t, Config{KeyUpdateInterval: MaxKeyUpdateInterval}, testSecret())
		var buf [HeaderLen + 8 + TagLen]byte
		received := 0
		for c.NextPacketNumber() < 20<<16 {
			// skip (lose) up to 2^15 − 1 numbers, then deliver one
			c.pn += r.Uint64N(1 << 15)
			pn := c.NextPacketNumber()
			b := buf[:HeaderLen+8]
			putU64(b[HeaderLen:], pn)
			d, err := c.Seal(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Open(d)
			if err != nil {
				t.Fatalf("packet number %#x after a gap: %v; %s", pn, err, repro(t.Name(), seed))
			}
			if getU64(got) != pn {
				t.Fatalf("packet number %#x opened as %#x", pn, getU64(got))
			}
			received++
		}
		if received < 40 {
			t.Fatalf("only %d datagrams over 20 wraps", received)
		}
	}
}

func putU64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func getU64(b []byte) uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}
