package seal

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wireExamplePlain is the session datagram of WIRE.md §6.3 without its
// 9-byte cleartext header: channel header (seq 0x0102, ack 0x00FA) and a
// Reliable frame carrying "hi!".
var wireExamplePlain = []byte{0x10, 0x02, 0x01, 0x08, 0x03, 0x01, 0x07, 0x00, 0x03, 0x68, 0x69, 0x21}

// wireExamplePN is the example datagram's packet number.
const wireExamplePN = 0x0102

func hexRow(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(parts, " ")
}

// wireExample renders the worked example of WIRE.md §13.6 from the code:
// the key schedule of the client's sending direction from the secret
// 00 01 … 1f, and the datagram the client seals as packet number 0x0102.
func wireExample(t *testing.T) string {
	t.Helper()
	secret := testSecret()
	c, err := New(Config{}, Client, secret)
	if err != nil {
		t.Fatal(err)
	}
	c.pn = wireExamplePN
	var sb strings.Builder
	line := func(label string, b []byte) {
		for i := 0; i < len(b); i += 16 {
			l := label
			if i > 0 {
				l = ""
			}
			fmt.Fprintf(&sb, "%-17s %s\n", l, hexRow(b[i:min(i+16, len(b))]))
		}
	}
	ts0, _ := trafficSecret0(secret, clientToServer)
	ts1, _ := nextTrafficSecret(&ts0, clientToServer, 1)
	var k1 keyState
	if err := k1.install(AES128GCM, ts1, 1); err != nil {
		t.Fatal(err)
	}
	var nonce [NonceLen]byte
	line("secret", secret[:])
	line("c2s traffic 0", ts0[:])
	line("c2s key 0", c.sendKey.key[:16])
	line("c2s iv 0", c.sendKey.iv[:])
	line("nonce of 0x0102", c.sendKey.nonce(&nonce, wireExamplePN))
	line("c2s traffic 1", ts1[:])
	line("c2s key 1", k1.key[:16])
	line("c2s iv 1", k1.iv[:])
	line("plaintext", wireExamplePlain)
	d := sealCopy(t, c, wireExamplePlain)
	sb.WriteString("\n")
	notes := []string{"kind 0x80 (phase 0), packet number 0x0102, 12 bytes of ciphertext, tag…", "…tag"}
	for i := 0; i < len(d); i += 16 {
		row := hexRow(d[i:min(i+16, len(d))])
		fmt.Fprintf(&sb, "%04x  %-47s   %s\n", i, row, notes[min(i/16, len(notes)-1)])
	}
	fmt.Fprintf(&sb, "(%d bytes: 3 header, %d ciphertext, 16 tag)\n", len(d), len(wireExamplePlain))
	return sb.String()
}

var writeExample = flag.Bool("seal.writeexample", false, "rewrite the worked example of docs/WIRE.md §13.6 from the code")

// TestWireExample checks that the worked example in docs/WIRE.md §13.6 is
// what the code produces, byte for byte, and that it opens at the server.
func TestWireExample(t *testing.T) {
	want := wireExample(t)
	path := filepath.Join("..", "..", "docs", "WIRE.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, "### 13.6 Worked example")
	if i < 0 {
		t.Fatal("docs/WIRE.md has no \"### 13.6 Worked example\"")
	}
	s = s[i:]
	start := strings.Index(s, "```\n")
	if start < 0 {
		t.Fatal("§13.6 has no code block")
	}
	s = s[start+4:]
	end := strings.Index(s, "```")
	if got := s[:end]; got != want {
		if *writeExample {
			off := len(doc) - len(s)
			out := string(doc[:off]) + want + string(doc[off+end:])
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Fatalf("docs/WIRE.md §13.6 differs from what the code seals (rewrite it: go test ./transport/seal -run TestWireExample -seal.writeexample); the code gives:\n%s", want)
		}
	}
	_, srv := pair(t, Config{}, testSecret())
	c, _ := New(Config{}, Client, testSecret())
	c.pn = wireExamplePN
	if p, err := srv.Open(sealCopy(t, c, wireExamplePlain)); err != nil || string(p) != string(wireExamplePlain) {
		t.Fatalf("the example does not open: %v", err)
	}
}
