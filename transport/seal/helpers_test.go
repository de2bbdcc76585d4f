package seal

import (
	"bytes"
	"flag"
	"fmt"
	"testing"
)

var seedFlag = flag.Uint64("seed", 0, "run only this seed of the randomized seal tests (0: each test's own)")

// seeds returns the seeds a randomized test runs: its own n seeds from
// first, or only -seed.
func seeds(first uint64, n int) []uint64 {
	if *seedFlag != 0 {
		return []uint64{*seedFlag}
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// repro is the one-line reproduction of a randomized test's seed.
func repro(test string, seed uint64) string {
	return fmt.Sprintf("reproduce: go test ./transport/seal -run '^%s$' -seed=%d", test, seed)
}

var suites = []Suite{AES128GCM, ChaCha20Poly1305}

// testSecret is a fixed secret: the bytes 00 01 … 1f.
func testSecret() *Secret {
	var s Secret
	for i := range s {
		s[i] = byte(i)
	}
	return &s
}

// pair returns the client and server Sessions of one session.
func pair(t testing.TB, cfg Config, secret *Secret) (client, server *Session) {
	t.Helper()
	c, err := New(cfg, Client, secret)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Server, secret)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// sealCopy seals plain with s into a fresh buffer of exact capacity.
func sealCopy(t testing.TB, s *Session, plain []byte) []byte {
	t.Helper()
	buf := make([]byte, HeaderLen+len(plain), HeaderLen+len(plain)+TagLen)
	copy(buf[HeaderLen:], plain)
	out, err := s.Seal(buf)
	if err != nil {
		t.Fatalf("Seal(%d bytes): %v", len(plain), err)
	}
	return out
}

// openCopy opens a copy of d with s, leaving d intact.
func openCopy(s *Session, d []byte) ([]byte, error) {
	return s.Open(bytes.Clone(d))
}
