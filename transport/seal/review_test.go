package seal

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// A peer that updates its key far sooner than MinKeyUpdateInterval — on
// every datagram here — cannot make the receiver derive a key per
// datagram: an update is followed only WindowSize or more packet numbers
// after the current generation's lowest. The rest are refused, counted,
// without a key derivation or an allocation — the other phase as fitting
// no generation (no AEAD open), the current one by its tag — and an update
// at the legitimate distance is still followed.
func TestKeyUpdateTooSoonRefused(t *testing.T) {
	c, s := pair(t, Config{KeyUpdateInterval: MinKeyUpdateInterval}, testSecret())
	c.interval = 1 // a misbehaving peer: a new generation every datagram
	if _, err := openCopy(s, sealCopy(t, c, []byte("first"))); err != nil {
		t.Fatal(err)
	}
	const n = 100
	ds := make([][]byte, n)
	for i := range ds {
		ds[i] = sealCopy(t, c, []byte("again"))
	}
	i := 0
	allocs := testing.AllocsPerRun(n-1, func() {
		// The other phase fits no generation; the current phase is
		// tried under the current key, and fails its tag.
		want := ErrKeyPhase
		if i%2 == 1 {
			want = ErrAuth
		}
		if _, err := s.Open(ds[i]); !errors.Is(err, want) {
			t.Fatalf("datagram %d of a peer updating every datagram: %v, want %v", i, err, want)
		}
		i++
	})
	if st := s.Stats(); st.KeyUpdatesReceived != 0 || st.WrongPhase != uint64(i+1)/2 || st.WrongPhase+st.AuthFailed != uint64(i) || allocs != 0 {
		t.Fatalf("after %d too-soon updates: %.1f allocations each, stats %+v", i, allocs, st)
	}

	// The legitimate distance: a generation-1 datagram WindowSize after
	// the lowest generation-0 number is followed.
	c2, s2 := pair(t, Config{KeyUpdateInterval: MinKeyUpdateInterval}, testSecret())
	if _, err := openCopy(s2, sealCopy(t, c2, nil)); err != nil {
		t.Fatal(err)
	}
	c2.pn = WindowSize
	c2.genStart = WindowSize - c2.interval // due for its update at this datagram
	if _, err := openCopy(s2, sealCopy(t, c2, []byte("updated"))); err != nil || s2.RecvGeneration() != 1 {
		t.Fatalf("an update WindowSize after the generation's lowest number: %v, generation %d", err, s2.RecvGeneration())
	}
}

// The integrity limit is reached by failed opens themselves: one forgery
// short of it, a forged datagram fails the tag and is counted, and after
// it even a genuine datagram is refused.
func TestIntegrityLimitReachedByForgeries(t *testing.T) {
	for _, suite := range suites {
		c, s := pair(t, Config{Suite: suite}, testSecret())
		genuine := sealCopy(t, c, []byte("genuine"))
		forged := bytes.Clone(genuine)
		forged[len(forged)-1] ^= 1
		s.forgeries = s.suite.integrityLimit() - 1
		if _, err := openCopy(s, forged); !errors.Is(err, ErrAuth) {
			t.Fatalf("%v: the forgery one short of the limit: %v, want ErrAuth", suite, err)
		}
		if _, err := openCopy(s, genuine); !errors.Is(err, ErrIntegrityLimit) {
			t.Fatalf("%v: a genuine datagram after the limit: %v, want ErrIntegrityLimit", suite, err)
		}
		if st := s.Stats(); st.AuthFailed != 1 || st.IntegrityLimited != 1 || st.Opened != 0 {
			t.Fatalf("%v: stats %+v", suite, st)
		}
	}
}

// The nonce is built from the whole 64-bit packet number, not the 16 bits
// on the wire: numbers that share their low 16 (or 32, 48) bits give
// other nonces under one key.
func TestNonceUsesWholePacketNumber(t *testing.T) {
	c, _ := pair(t, Config{}, testSecret())
	seen := map[string]uint64{}
	for _, base := range []uint64{0, 5, 0xffff} {
		for _, hi := range []uint64{0, 1 << 16, 1 << 32, 1 << 48, 1<<62 | 1<<16} {
			pn := base + hi
			var dst [NonceLen]byte
			n := string(c.sendKey.nonce(&dst, pn))
			if other, dup := seen[n]; dup {
				t.Fatalf("packet numbers %#x and %#x share a nonce", other, pn)
			}
			seen[n] = pn
		}
	}
}

// A Secret never prints its bytes, whatever the verb.
func TestSecretRedacted(t *testing.T) {
	s := testSecret()
	for _, verb := range []string{"%v", "%s", "%+v", "%#v", "%x", "%q"} {
		out := fmt.Sprintf(verb, *s)
		if bytes.Contains([]byte(out), []byte{0x01, 0x02}) || bytes.Contains([]byte(out), []byte("0102")) || bytes.Contains([]byte(out), []byte("1 2 3")) {
			t.Fatalf("%s of a Secret prints its bytes: %s", verb, out)
		}
	}
}
