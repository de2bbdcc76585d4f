package token

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wireExampleParams are the worked example's parameters (docs/WIRE.md
// §14.5).
func wireExampleParams() Params {
	return Params{
		ProtocolID: 0x1122334455667788,
		ClientID:   42,
		Created:    t0,
		Expires:    t0.Add(time.Hour),
		Timeout:    10 * time.Second,
		Servers:    []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:7000")},
		UserData:   []byte("hi"),
	}
}

// wireExampleRand is the example's randomness: the bytes a0, a1, … in
// order, so the client key is a0…bf, the server key c0…df and the nonce
// e0…f7.
func wireExampleRand() *bytes.Reader {
	b := make([]byte, 2*SessionKeyLen+NonceLen)
	for i := range b {
		b[i] = byte(0xa0 + i)
	}
	return bytes.NewReader(b)
}

func hexRow(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(parts, " ")
}

// dump renders b as offset-prefixed rows of 16 bytes, each row annotated
// by the notes of the fields that start in it.
func dump(sb *strings.Builder, b []byte, fields []struct {
	at   int
	note string
}) {
	for i := 0; i < len(b); i += 16 {
		var notes []string
		for _, f := range fields {
			if f.at >= i && f.at < i+16 {
				notes = append(notes, f.note)
			}
		}
		note := strings.Join(notes, ", ")
		if note == "" {
			note = "…"
		}
		fmt.Fprintf(sb, "%04x  %-47s   %s\n", i, hexRow(b[i:min(i+16, len(b))]), note)
	}
}

type field = struct {
	at   int
	note string
}

// wireExample renders the worked example of WIRE.md §14.5 from the code.
func wireExample(t *testing.T) string {
	t.Helper()
	p := wireExampleParams()
	tok, err := Issue(testKey(), p, wireExampleRand())
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	id := testKey().ID()
	fmt.Fprintf(&sb, "fleet key         %s\n                  %s\n", hexRow(keyBytes()[:16]), hexRow(keyBytes()[16:]))
	fmt.Fprintf(&sb, "key id            %s\n\n", hexRow(id[:]))
	plain := appendPrivate(nil, p.ClientID, 10000, &tok.ClientKey, &tok.ServerKey, tok.Servers, p.UserData)
	fmt.Fprintf(&sb, "private part (plaintext, %d bytes)\n", len(plain))
	dump(&sb, plain, []field{{0, "client id 42"}, {8, "timeout 10000 ms"}, {12, "client key a0…bf"}, {44, "server key c0…df"},
		{76, "1 address"}, {77, "IPv4 192.0.2.1"}, {82, "port 7000"}, {84, "user data: 2 bytes"}, {86, `"hi"`}})
	fmt.Fprintf(&sb, "\nsealed token (%d bytes)\n", len(tok.Sealed))
	n := len(tok.Sealed)
	dump(&sb, tok.Sealed, []field{{0, "version 1"}, {1, fmt.Sprintf("length %d", n)}, {3, "key id"}, {7, "protocol id 0x1122334455667788"},
		{15, "expires 1796086800"}, {23, "nonce e0…f7"}, {47, "ciphertext"}, {n - TagLen, "tag"}})
	enc, err := tok.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&sb, "\npublic token (%d bytes)\n", len(enc))
	dump(&sb, enc, []field{{0, "version 1"}, {1, "created 1796083200"}, {9, "timeout 10000 ms"}, {13, "client key"}, {45, "server key"},
		{77, "1 address: 192.0.2.1:7000"}, {85, "sealed token"}})
	return sb.String()
}

var writeExample = flag.Bool("token.writeexample", false, "rewrite the worked example of docs/WIRE.md §14.5 from the code")

// TestWireExample checks that the worked example in docs/WIRE.md §14.5 is
// what the code issues, byte for byte, and that it opens.
func TestWireExample(t *testing.T) {
	want := wireExample(t)
	path := filepath.Join("..", "..", "docs", "WIRE.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, "### 14.5 Worked example")
	if i < 0 {
		t.Fatal(`docs/WIRE.md has no "### 14.5 Worked example"`)
	}
	s = s[i:]
	start := strings.Index(s, "```\n")
	if start < 0 {
		t.Fatal("§14.5 has no code block")
	}
	s = s[start+4:]
	end := strings.Index(s, "```")
	if got := s[:end]; got != want {
		if !*writeExample {
			t.Fatalf("docs/WIRE.md §14.5 differs from what the code issues (rewrite it: go test ./transport/token -run TestWireExample -token.writeexample); the code gives:\n%s", want)
		}
		off := len(doc) - len(s)
		if err := os.WriteFile(path, []byte(string(doc[:off])+want+string(doc[off+end:])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tok, _ := Issue(testKey(), wireExampleParams(), wireExampleRand())
	var priv Private
	if err := mustVerifier(t, 0x1122334455667788, testKey()).Open(tok.Sealed, t0, &priv); err != nil || priv.ClientID != 42 || string(priv.UserData()) != "hi" {
		t.Fatalf("the example does not open: %v", err)
	}
}

func keyBytes() []byte { k := testKey(); return k[:] }
