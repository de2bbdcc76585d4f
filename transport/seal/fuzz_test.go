package seal

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var writeSeeds = flag.Bool("seal.writeseeds", false, "rewrite testdata/fuzz/FuzzOpen from the current code")

// fuzzReceiver is the server of the fuzz session after it opened
// fuzzWarm datagrams of the client, and the client, for more.
func fuzzReceiver(t testing.TB, suite Suite) (client, server *Session) {
	c, s := pair(t, Config{Suite: suite}, testSecret())
	for i := range fuzzWarm {
		if _, err := s.Open(sealCopy(t, c, []byte{byte(i)})); err != nil {
			t.Fatal(err)
		}
	}
	return c, s
}

const fuzzWarm = 4

// FuzzOpen feeds untrusted bytes to Open of a session that has opened a
// few datagrams. The first input byte picks the suite; the rest is the
// datagram. Open must not panic, must count each call exactly once, and
// may succeed only on a genuine datagram of the session — which then
// opens to its own plaintext once, and is a replay the second time.
func FuzzOpen(f *testing.F) {
	f.Add([]byte{0})
	f.Add(append([]byte{0}, make([]byte, Overhead)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		suite := Suite(in[0] & 1)
		_, s := fuzzReceiver(t, suite)
		d := bytes.Clone(in[1:])
		before := s.Stats()
		plain, err := s.Open(d)
		after := s.Stats()
		if got := after.Opened + after.Refused() - before.Opened - before.Refused(); got != 1 {
			t.Fatalf("one Open counted %d times: %+v → %+v", got, before, after)
		}
		if err != nil {
			return
		}
		// Only a datagram the client sealed can open: re-seal its
		// plaintext at its packet number and compare.
		c2, _ := fuzzReceiver(t, suite)
		pn := reconstruct(fuzzWarm, uint64(in[2])|uint64(in[3])<<8)
		c2.pn = pn
		re := sealCopy(t, c2, plain)
		if !bytes.Equal(re, in[1:]) {
			t.Fatalf("Open accepted bytes the sender did not seal:\n got % x\nwant % x", in[1:], re)
		}
		if _, err := s.Open(bytes.Clone(in[1:])); err != ErrReplayed {
			t.Fatalf("the second Open of a datagram: %v, want ErrReplayed", err)
		}
	})
}

// TestWriteFuzzSeeds rewrites the checked-in seeds of FuzzOpen (with
// -seal.writeseeds), and otherwise checks that the genuine datagrams among
// them still open, so the corpus keeps reaching past the tag check.
func TestWriteFuzzSeeds(t *testing.T) {
	type seed struct {
		name string
		in   []byte
	}
	var all []seed
	for _, suite := range suites {
		c, _ := fuzzReceiver(t, suite)
		for _, n := range []int{0, 1, 64} {
			d := sealCopy(t, c, bytes.Repeat([]byte{0x5a}, n))
			all = append(all, seed{fmt.Sprintf("genuine-%v-%d", suite, n), append([]byte{byte(suite)}, d...)})
			x := bytes.Clone(d)
			x[len(x)-1] ^= 1
			all = append(all, seed{fmt.Sprintf("bad-tag-%v-%d", suite, n), append([]byte{byte(suite)}, x...)})
			x = bytes.Clone(d)
			x[0] ^= 1
			all = append(all, seed{fmt.Sprintf("flipped-phase-%v-%d", suite, n), append([]byte{byte(suite)}, x...)})
		}
		old := sealCopy(t, c, nil)
		old[1], old[2] = 0, 0 // packet number 0, opened during warm-up
		all = append(all, seed{fmt.Sprintf("replay-%v", suite), append([]byte{byte(suite)}, old...)})
		all = append(all, seed{fmt.Sprintf("short-%v", suite), []byte{byte(suite), KindPhase0, 4, 0}})
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	if *writeSeeds {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s.in)
			if err := os.WriteFile(filepath.Join(dir, s.name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range all {
		body, err := os.ReadFile(filepath.Join(dir, s.name))
		if err != nil {
			t.Fatalf("seed %s: %v (regenerate: go test ./transport/seal -run TestWriteFuzzSeeds -seal.writeseeds)", s.name, err)
		}
		if want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s.in); string(body) != want {
			t.Fatalf("seed %s differs from what the code seals now (regenerate: go test ./transport/seal -run TestWriteFuzzSeeds -seal.writeseeds)", s.name)
		}
		_, r := fuzzReceiver(t, Suite(s.in[0]))
		_, err = r.Open(bytes.Clone(s.in[1:]))
		if genuine := strings.HasPrefix(s.name, "genuine-"); genuine != (err == nil) {
			t.Fatalf("seed %s: Open = %v", s.name, err)
		}
	}
}
