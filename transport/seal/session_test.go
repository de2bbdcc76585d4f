package seal

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestRoundTripEverySize seals and opens every plaintext size 0..1472
// (every datagram a socket can carry, and then some) in both directions
// with both suites, and checks the header, the length and that the
// plaintext does not show through.
func TestRoundTripEverySize(t *testing.T) {
	for _, suite := range suites {
		t.Run(suite.String(), func(t *testing.T) {
			c, s := pair(t, Config{Suite: suite}, testSecret())
			r := rand.New(rand.NewPCG(1, uint64(suite)))
			for n := 0; n <= 1472; n++ {
				plain := make([]byte, n)
				for i := range plain {
					plain[i] = byte(r.Uint32())
				}
				for dir, ends := range [][2]*Session{{c, s}, {s, c}} {
					from, to := ends[0], ends[1]
					pn := from.NextPacketNumber()
					d := sealCopy(t, from, plain)
					if len(d) != n+Overhead {
						t.Fatalf("size %d dir %d: sealed length %d, want %d", n, dir, len(d), n+Overhead)
					}
					if d[0] != KindPhase0 || d[1] != byte(pn) || d[2] != byte(pn>>8) {
						t.Fatalf("size %d dir %d: header % x, want 80 %02x %02x", n, dir, d[:HeaderLen], byte(pn), byte(pn>>8))
					}
					if n >= 16 && bytes.Contains(d, plain[:16]) {
						t.Fatalf("size %d dir %d: plaintext visible in the sealed datagram", n, dir)
					}
					got, err := to.Open(d)
					if err != nil {
						t.Fatalf("size %d dir %d: Open: %v", n, dir, err)
					}
					if !bytes.Equal(got, plain) {
						t.Fatalf("size %d dir %d: plaintext differs", n, dir)
					}
					if &got[:1][0] != &d[HeaderLen] && n > 0 {
						t.Fatalf("size %d dir %d: Open did not decrypt in place", n, dir)
					}
				}
			}
			if st := s.Stats(); st.Opened != 1473 || st.Sealed != 1473 || st.Refused() != 0 {
				t.Fatalf("server stats %+v, want 1473 sealed and opened, none refused", st)
			}
		})
	}
}

// TestDirectionsAndSuitesDiffer: a datagram opens only at the other end
// of its own direction, with its own suite and secret.
func TestDirectionsAndSuitesDiffer(t *testing.T) {
	c, s := pair(t, Config{}, testSecret())
	d := sealCopy(t, c, []byte("to the server"))
	if _, err := openCopy(c, d); !errors.Is(err, ErrAuth) {
		t.Fatalf("client opened its own datagram: %v, want ErrAuth", err)
	}
	other := *testSecret()
	other[0] ^= 1
	_, s2 := pair(t, Config{}, &other)
	if _, err := openCopy(s2, d); !errors.Is(err, ErrAuth) {
		t.Fatalf("another session's server opened it: %v, want ErrAuth", err)
	}
	_, sc := pair(t, Config{Suite: ChaCha20Poly1305}, testSecret())
	if _, err := openCopy(sc, d); !errors.Is(err, ErrAuth) {
		t.Fatalf("a ChaCha20-Poly1305 server opened an AES-GCM datagram: %v, want ErrAuth", err)
	}
	if _, err := openCopy(s, d); err != nil {
		t.Fatalf("the server: %v", err)
	}
}

// TestTamperEveryByte flips every bit of every byte of sealed datagrams
// (64 and 1200 bytes of plaintext, both suites) and truncates them to
// every length: each altered copy is refused, counted under exactly one
// reason, and leaves the receiver able to open the genuine datagram.
func TestTamperEveryByte(t *testing.T) {
	for _, suite := range suites {
		for _, n := range []int{0, 64, 1200} {
			c, s := pair(t, Config{Suite: suite}, testSecret())
			// Open a few first, so the tampered datagram is not the first
			// and its packet number is not 0.
			for range 3 {
				if _, err := s.Open(sealCopy(t, c, []byte("warm"))); err != nil {
					t.Fatal(err)
				}
			}
			plain := bytes.Repeat([]byte{0xa5}, n)
			d := sealCopy(t, c, plain)
			bits := 8
			if raceEnabled && n > 64 {
				bits = 1 // the race detector makes 1200×8 AEAD opens slow
			}
			tries := 0
			for i := range d {
				for b := range bits {
					x := bytes.Clone(d)
					x[i] ^= 1 << b
					before := s.Stats()
					if _, err := s.Open(x); err == nil {
						t.Fatalf("%v n=%d: flipping bit %d of byte %d opened", suite, n, b, i)
					}
					if got := s.Stats().Refused() - before.Refused(); got != 1 {
						t.Fatalf("%v n=%d byte %d bit %d: %d refusals counted, want 1", suite, n, i, b, got)
					}
					tries++
				}
			}
			for l := range len(d) {
				before := s.Stats()
				if _, err := openCopy(s, d[:l]); err == nil {
					t.Fatalf("%v n=%d: a %d-byte prefix opened", suite, n, l)
				}
				if got := s.Stats().Refused() - before.Refused(); got != 1 {
					t.Fatalf("%v n=%d prefix %d: %d refusals counted, want 1", suite, n, l, got)
				}
				tries++
			}
			st := s.Stats()
			if st.AuthFailed != s.forgeries {
				t.Fatalf("%v n=%d: %d failed authentication, %d counted toward the integrity limit", suite, n, st.AuthFailed, s.forgeries)
			}
			if st.Refused() != uint64(tries) || st.Opened != 3 {
				t.Fatalf("%v n=%d: stats %+v after %d tampered copies", suite, n, st, tries)
			}
			// Prefixes below Overhead are short; bits 1–7 of the kind byte
			// make it malformed; flipping bit 0 or 1 of packet number 3
			// names 2 or 1, both opened already; everything else but the
			// phase bit fails the tag.
			if want := uint64(bits - 1); st.Short != Overhead || st.Malformed != want {
				t.Fatalf("%v n=%d: %d short (want %d), %d malformed (want %d)", suite, n, st.Short, Overhead, st.Malformed, want)
			}
			if want := uint64(min(bits, 2)); st.Replayed != want {
				t.Fatalf("%v n=%d: %d replayed, want %d", suite, n, st.Replayed, want)
			}
			// Bit 0 of the kind flips the key phase of a number too close
			// to the current generation's lowest for an update: no key.
			if st.WrongPhase != 1 {
				t.Fatalf("%v n=%d: %d refused for their phase, want 1", suite, n, st.WrongPhase)
			}
			if want := uint64(tries) - st.Short - st.Malformed - st.Replayed - st.WrongPhase; st.AuthFailed != want {
				t.Fatalf("%v n=%d: %d failed authentication, want %d (stats %+v)", suite, n, st.AuthFailed, want, st)
			}
			got, err := s.Open(d)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("%v n=%d: the genuine datagram after the tampering: %v", suite, n, err)
			}
		}
	}
}
