package seal

import (
	"bytes"
	"errors"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	good := []Config{{}, {Suite: ChaCha20Poly1305}, {KeyUpdateInterval: MinKeyUpdateInterval}, {KeyUpdateInterval: MaxKeyUpdateInterval}}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := []Config{{Suite: 2}, {KeyUpdateInterval: MinKeyUpdateInterval - 1}, {KeyUpdateInterval: MaxKeyUpdateInterval + 1}}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: Validate = %v, want ErrInvalidConfig", c, err)
		}
		if s, err := New(c, Client, testSecret()); s != nil || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: New = %v, %v", c, s, err)
		}
	}
	if s, err := New(Config{}, 2, testSecret()); s != nil || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("role 2: New = %v, %v", s, err)
	}
	if got := (Config{}).WithDefaults().KeyUpdateInterval; got != DefaultKeyUpdateInterval {
		t.Errorf("default interval %d", got)
	}
}

func TestDeriveSecret(t *testing.T) {
	ikm, rnd := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16)
	a, err := DeriveSecret(ikm, rnd, []byte("t1"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DeriveSecret(ikm, rnd, []byte("t2"))
	rnd2 := bytes.Clone(rnd)
	rnd2[0] ^= 1
	c, _ := DeriveSecret(ikm, rnd2, []byte("t1"))
	a2, _ := DeriveSecret(ikm, rnd, []byte("t1"))
	if a == b || a == c || a != a2 {
		t.Fatal("DeriveSecret is not a function of all three inputs")
	}
	if _, err := DeriveSecret(ikm[:MinKeyMaterial-1], rnd, nil); !errors.Is(err, ErrSecret) {
		t.Errorf("short key material: %v", err)
	}
	if _, err := DeriveSecret(ikm, rnd[:MinServerRandom-1], nil); !errors.Is(err, ErrSecret) {
		t.Errorf("short server random: %v", err)
	}
}

// TestKeyUpdate walks one direction through a key update by hand: the
// phase bit flips at the interval, the receiver follows, keeps the
// previous key for a late datagram, refuses a phase that fits no
// generation without an AEAD open, and drops the previous key once the
// window has passed it.
func TestKeyUpdate(t *testing.T) {
	c, s := pair(t, Config{KeyUpdateInterval: MinKeyUpdateInterval}, testSecret())
	var late, flipped []byte
	for pn := range MinKeyUpdateInterval + 10 {
		d := sealCopy(t, c, []byte{byte(pn)})
		wantKind := byte(KindPhase0)
		if pn >= MinKeyUpdateInterval {
			wantKind = KindPhase1
		}
		if d[0] != wantKind {
			t.Fatalf("packet number %d: kind %#x, want %#x", pn, d[0], wantKind)
		}
		switch pn {
		case MinKeyUpdateInterval - 5:
			late = d // held back, delivered after the update
			continue
		case MinKeyUpdateInterval - 20:
			flipped = bytes.Clone(d)
			flipped[0] ^= 1
		}
		if _, err := s.Open(d); err != nil {
			t.Fatalf("packet number %d: %v", pn, err)
		}
	}
	if s.RecvGeneration() != 1 || c.SendGeneration() != 1 || s.Stats().KeyUpdatesReceived != 1 || c.Stats().KeyUpdatesSent != 1 {
		t.Fatalf("after the update: sent %d, followed %d; stats %+v / %+v", c.SendGeneration(), s.RecvGeneration(), c.Stats(), s.Stats())
	}
	if _, err := s.Open(late); err != nil {
		t.Fatalf("a late generation-0 datagram after the update: %v", err)
	}
	// Phase 0 on a generation-1 number that lies between the current
	// generation's lowest and the highest opened fits no generation.
	d := sealCopy(t, c, []byte("x"))
	d2 := sealCopy(t, c, []byte("y"))
	if _, err := s.Open(d2); err != nil {
		t.Fatal(err)
	}
	d[0] ^= 1
	before := s.Stats()
	if _, err := s.Open(d); !errors.Is(err, ErrKeyPhase) {
		t.Fatalf("phase of generation 0 on a generation-1 number: %v, want ErrKeyPhase", err)
	}
	if got := s.Stats(); got.WrongPhase != before.WrongPhase+1 || got.AuthFailed != before.AuthFailed {
		t.Fatalf("stats %+v → %+v", before, got)
	}
	if _, err := s.Open(flipped); !errors.Is(err, ErrReplayed) {
		t.Fatalf("flipped phase on an opened number: %v, want ErrReplayed", err)
	}
	// Push the window past the update: the previous key goes.
	for range WindowSize {
		if _, err := s.Open(sealCopy(t, c, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.PreviousKeysDropped != 1 || s.prev != -1 {
		t.Fatalf("previous key not dropped: %+v", st)
	}
}

// TestLimits: Seal refuses a buffer without room and an exhausted packet
// number space without spending a number; Open refuses everything once
// the integrity limit is reached.
func TestLimits(t *testing.T) {
	c, s := pair(t, Config{}, testSecret())
	for _, buf := range [][]byte{nil, make([]byte, 2, 100), make([]byte, 10, 10+TagLen-1)} {
		if _, err := c.Seal(buf); !errors.Is(err, ErrNoRoom) {
			t.Errorf("Seal(len %d cap %d) = %v, want ErrNoRoom", len(buf), cap(buf), err)
		}
	}
	if c.NextPacketNumber() != 0 {
		t.Fatal("a refused Seal spent a packet number")
	}
	c.pn = MaxPacketNumber + 1
	if _, err := c.Seal(make([]byte, HeaderLen, 64)); !errors.Is(err, ErrExhausted) {
		t.Errorf("Seal past MaxPacketNumber: %v", err)
	}
	c.pn = 0
	d := sealCopy(t, c, []byte("ok"))
	s.forgeries = s.suite.integrityLimit()
	if _, err := openCopy(s, d); !errors.Is(err, ErrIntegrityLimit) || s.Stats().IntegrityLimited != 1 {
		t.Fatalf("at the integrity limit: %v, stats %+v", err, s.Stats())
	}
}

// TestNoAllocs: Seal and Open allocate nothing in steady state, for
// both suites and both sizes of the benchmarks.
func TestNoAllocs(t *testing.T) {
	for _, suite := range suites {
		for _, n := range []int{64, 1200} {
			c, s := pair(t, Config{Suite: suite}, testSecret())
			buf := make([]byte, HeaderLen+n, HeaderLen+n+TagLen)
			allocs := testing.AllocsPerRun(1000, func() {
				d, err := c.Seal(buf[:HeaderLen+n])
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Open(d); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v %d B: %.1f allocations per Seal+Open, want 0", suite, n, allocs)
			}
			// and a refused datagram
			bad := make([]byte, HeaderLen+n+TagLen)
			bad[0] = KindPhase0
			if a := testing.AllocsPerRun(100, func() { s.Open(bad) }); a != 0 {
				t.Errorf("%v %d B: %.1f allocations per refused Open", suite, n, a)
			}
		}
	}
}
