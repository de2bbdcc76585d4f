package main

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/token"
)

// runCmd runs the CLI with args and returns its exit code and output.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestKeygen: keygen prints a fleet key that ParseKey reads back, a new
// one each time; --x25519 prints a key pair whose public half is the
// private half's.
func TestKeygen(t *testing.T) {
	code, out1, errOut := runCmd(t, "keygen")
	if code != exitOK || errOut != "" {
		t.Fatalf("keygen: exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out1, token.KeyTextPrefix) || strings.Count(out1, "\n") != 1 {
		t.Fatalf("keygen printed %q, want one fleet-key: line", out1)
	}
	k1, err := token.ParseKey(out1)
	if err != nil {
		t.Fatal(err)
	}
	_, out2, _ := runCmd(t, "keygen")
	if k2, _ := token.ParseKey(out2); k2 == k1 {
		t.Fatal("two keygen runs printed the same key")
	}

	code, out, errOut := runCmd(t, "keygen", "--x25519")
	if code != exitOK || errOut != "" {
		t.Fatalf("keygen --x25519: exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], x25519PrivatePrefix) || !strings.HasPrefix(lines[1], x25519PublicPrefix) {
		t.Fatalf("keygen --x25519 printed %q", out)
	}
	privB, err1 := hex.DecodeString(strings.TrimPrefix(lines[0], x25519PrivatePrefix))
	pubB, err2 := hex.DecodeString(strings.TrimPrefix(lines[1], x25519PublicPrefix))
	if err1 != nil || err2 != nil {
		t.Fatalf("not hex: %v %v", err1, err2)
	}
	priv, err := ecdh.X25519().NewPrivateKey(privB)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(priv.PublicKey().Bytes(), pubB) {
		t.Fatal("the public line is not the private key's public key")
	}
	if code, _, _ := runCmd(t, "keygen", "extra"); code != exitUsage {
		t.Errorf("keygen with an argument: exit %d, want %d", code, exitUsage)
	}
	if code, _, errOut := runCmd(t, "keygen", "-h"); code != exitOK || !strings.Contains(errOut, "x25519-public:") {
		t.Errorf("keygen -h: exit %d, %q", code, errOut)
	}
}

// TestToken: a token printed from a keygen file decodes, and a server
// holding the key opens it and finds what the flags said.
func TestToken(t *testing.T) {
	_, keyText, _ := runCmd(t, "keygen")
	key, _ := token.ParseKey(keyText)
	keyFile := filepath.Join(t.TempDir(), "fleet.key")
	if err := os.WriteFile(keyFile, []byte(keyText), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:7000"), netip.MustParseAddrPort("[::1]:7000")}
	before := time.Now().Truncate(time.Second)
	for _, c := range []struct {
		name string
		args []string
		dec  func(string) ([]byte, error)
	}{
		{"--key file", []string{"--key", keyFile}, base64.RawURLEncoding.DecodeString},
		{"--key-hex, --hex", []string{"--key-hex", strings.TrimPrefix(strings.TrimSpace(keyText), token.KeyTextPrefix), "--hex"}, hex.DecodeString},
	} {
		args := append([]string{"token"}, c.args...)
		args = append(args, "--protocol-id", "0x1122", "--client-id", "42", "--server", "127.0.0.1:7000, [::1]:7000",
			"--expire", "90s", "--timeout", "5s", "--user-data-hex", "6869")
		code, out, errOut := runCmd(t, args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", c.name, code, errOut)
		}
		b, err := c.dec(strings.TrimSuffix(out, "\n"))
		if err != nil || strings.Count(out, "\n") != 1 {
			t.Fatalf("%s: printed %q: %v", c.name, out, err)
		}
		var tok token.Token
		if err := tok.UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if tok.ProtocolID != 0x1122 || tok.Timeout != 5*time.Second || !slices.Equal(tok.Servers, servers) ||
			tok.Expires.Sub(tok.Created) != 90*time.Second || tok.Created.Before(before) || tok.Created.After(time.Now()) {
			t.Fatalf("%s: token %+v", c.name, tok)
		}
		v, err := token.NewVerifier(0x1122, key)
		if err != nil {
			t.Fatal(err)
		}
		var priv token.Private
		if err := v.Open(tok.Sealed, tok.Created, &priv); err != nil {
			t.Fatalf("%s: Open: %v", c.name, err)
		}
		if priv.ClientID != 42 || string(priv.UserData()) != "hi" || priv.KeyMaterial() != tok.KeyMaterial() || priv.CheckServer(servers[1]) != nil {
			t.Fatalf("%s: private part %+v", c.name, priv)
		}
	}
}

// TestTokenUsage: bad flags exit 2 and say what is wrong.
func TestTokenUsage(t *testing.T) {
	keyHex := strings.Repeat("ab", 32)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--client-id", "1", "--server", "127.0.0.1:1"}, "--key FILE or --key-hex HEX is required"},
		{[]string{"--key", "x", "--key-hex", keyHex, "--client-id", "1", "--server", "127.0.0.1:1"}, "not both"},
		{[]string{"--key-hex", "abcd", "--client-id", "1", "--server", "127.0.0.1:1"}, "2 bytes (4 hex digits), want 32 bytes"},
		{[]string{"--key", filepath.Join(t.TempDir(), "missing"), "--client-id", "1", "--server", "127.0.0.1:1"}, "--key:"},
		{[]string{"--key-hex", keyHex, "--server", "127.0.0.1:1"}, "--client-id is required"},
		{[]string{"--key-hex", keyHex, "--client-id", "-1", "--server", "127.0.0.1:1"}, "--client-id \"-1\""},
		{[]string{"--key-hex", keyHex, "--client-id", "1"}, "--server is required"},
		{[]string{"--key-hex", keyHex, "--client-id", "1", "--server", "localhost:1"}, "want IP:PORT"},
		{[]string{"--key-hex", keyHex, "--client-id", "1", "--server", "127.0.0.1:0"}, "port 0"},
		{[]string{"--key-hex", keyHex, "--client-id", "1", "--server", "127.0.0.1:1", "--expire", "1500ms"}, "--expire 1.5s"},
		{[]string{"--key-hex", keyHex, "--client-id", "1", "--server", "127.0.0.1:1", "--timeout", "-1s"}, "--timeout -1s"},
		{[]string{"--key-hex", keyHex, "--client-id", "1", "--server", "127.0.0.1:1", "--user-data-hex", "zz"}, "--user-data-hex"},
		{[]string{"--key-hex", keyHex, "--client-id", "1", "--server", "127.0.0.1:1", "--user-data-hex", strings.Repeat("00", 257)}, "257 bytes, want at most 256"},
		{[]string{"--key-hex", keyHex, "--client-id", "1", "--server", "[2001:db8::1]:1,[2001:db8::2]:1,[2001:db8::3]:1,[2001:db8::4]:1,[2001:db8::5]:1", "--user-data-hex", strings.Repeat("00", 256)}, "over MaxSealedLen 476"},
		{[]string{"--key-hex", keyHex, "--protocol-id", "x"}, "protocol-id"},
	} {
		code, out, errOut := runCmd(t, append([]string{"token"}, c.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.msg) {
			t.Errorf("token %q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, exitUsage, c.msg)
		}
	}
}

// What `tickwire keygen --x25519` prints is what `tickwire server --key`
// and `tickwire client --server-key` read: the whole output as the key
// file, its public line as the pinned key, and the bare hex as well.
func TestKeygenX25519FeedsServerAndClient(t *testing.T) {
	code, out, errOut := runCmd(t, "keygen", "--x25519")
	if code != exitOK {
		t.Fatalf("keygen --x25519: exit %d: %s", code, errOut)
	}
	path := filepath.Join(t.TempDir(), "server.key")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	priv, err := readPrivateKey(path)
	if err != nil {
		t.Fatalf("the keygen output as a --key file: %v", err)
	}
	var pubLine string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, x25519PublicPrefix) {
			pubLine = strings.TrimSpace(line)
		}
	}
	for _, s := range []string{pubLine, strings.TrimPrefix(pubLine, x25519PublicPrefix)} {
		pub, err := parsePublicKey(s)
		if err != nil || !pub.Equal(priv.PublicKey()) {
			t.Fatalf("--server-key %q: %v, or not the key file's public key", s, err)
		}
	}
	if _, err := parsePublicKey("x25519-public:abcd"); err == nil || !strings.Contains(err.Error(), "2 bytes, want 32") {
		t.Fatalf("a short key: %v", err)
	}
}
