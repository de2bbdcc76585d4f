package transport

import (
	"bytes"
	"crypto/ecdh"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/token"
	"github.com/tickwire/tickwire/wire"
)

// handshakeExample runs the key exchange of docs/WIRE.md §9.8 with fixed
// keys and randomness and returns its values as the document shows them.
func handshakeExample(t testing.TB) string {
	key := func(b byte) *ecdh.PrivateKey {
		k, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{b}, 32))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	s, ec, es := key(0x11), key(0x22), key(0x33)
	var cookie wire.Cookie
	cookie.Bucket = 0x0d0c0b0a
	for i := range cookie.Tag {
		cookie.Tag[i] = byte(0xa0 + i)
	}
	r := wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: 0x0807060504030201, Cookie: cookie,
		Ephemeral: wire.PublicKey(ec.PublicKey().Bytes())}
	resp := wire.AppendConnectResponse(nil, r)
	a := wire.Accept{Nonce: r.Nonce, Ephemeral: wire.PublicKey(es.PublicKey().Bytes())}
	for i := range a.ServerRandom {
		a.ServerRandom[i] = byte(0x50 + i)
	}
	hdr := wire.AppendAccept(nil, a)[:wire.AcceptHeaderLen]

	// The server's side.
	dhS, err := staticDH(s, r.Ephemeral[:])
	if err != nil {
		t.Fatal(err)
	}
	ikm, err := handshakeIKM(es, r.Ephemeral[:], dhS, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	th, secret, accept := workedAccept(t, ikm, resp, hdr, &a)

	// The client's side agrees.
	dhC, err := staticDH(ec, s.PublicKey().Bytes())
	if err != nil || !bytes.Equal(dhC, dhS) {
		t.Fatal("es differs", err)
	}
	ikmC, err := handshakeIKM(ec, a.Ephemeral[:], dhC, nil, nil)
	if err != nil || !bytes.Equal(ikmC, ikm) {
		t.Fatal("ee differs", err)
	}
	var plain [wire.AcceptBodyLen]byte
	if !openAcceptBody(&secret, accept[:wire.AcceptHeaderLen], &a.Body, &plain) {
		t.Fatal("the client cannot open the body")
	}
	proof := resumeProof(&secret, resp)

	var sb strings.Builder
	line := func(name string, b []byte) { hexLines(&sb, name, b) }
	line("s (server static)", bytes.Repeat([]byte{0x11}, 32))
	line("S = pub(s)", s.PublicKey().Bytes())
	line("e_c", bytes.Repeat([]byte{0x22}, 32))
	line("E_c = pub(e_c)", ec.PublicKey().Bytes())
	line("e_s", bytes.Repeat([]byte{0x33}, 32))
	line("E_s = pub(e_s)", es.PublicKey().Bytes())
	line("es", dhS)
	line("ee", ikm[32:])
	line("transcript", th[:])
	line("secret", secret[:])
	line("resume proof", proof[:])
	sb.WriteString("\nConnectResponse\n")
	dump(&sb, resp)
	sb.WriteString("\nAccept\n")
	dump(&sb, accept)
	return sb.String()
}

// dump writes b as offset-prefixed hex lines of 16 bytes.
func dump(sb *strings.Builder, b []byte) {
	for i := 0; i < len(b); i += 16 {
		fmt.Fprintf(sb, "%04x  % x\n", i, b[i:min(i+16, len(b))])
	}
}

// TestHandshakeWorkedExample pins the worked example of docs/WIRE.md §9.9:
// the document's hex is this output.
func TestHandshakeWorkedExample(t *testing.T) {
	got := handshakeExample(t)
	doc := readWire(t)
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if l != "" && !strings.Contains(doc, l) {
			t.Fatalf("docs/WIRE.md §9.9 lacks the line\n%s\nof the example:\n%s", l, got)
		}
	}
}

// readWire returns docs/WIRE.md.
func readWire(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join("..", "docs", "WIRE.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPrintHandshakeExample prints the example (go test -run
// TestPrintHandshakeExample -v), for the document.
func TestPrintHandshakeExample(t *testing.T) { t.Log("\n" + handshakeExample(t)) }

// tokenHandshakeExample is the worked example of docs/WIRE.md §9.10: the
// handshake of §9.9's keys and randomness by a client that presents the
// connect token of §14.5 and pins no server key, so ikm = ee ‖ token
// keys.
func tokenHandshakeExample(t testing.TB) string {
	key := func(b byte) *ecdh.PrivateKey {
		k, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{b}, 32))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	ec, es := key(0x22), key(0x33)
	var fk token.Key
	for i := range fk {
		fk[i] = byte(i)
	}
	rnd := make([]byte, 2*token.SessionKeyLen+token.NonceLen)
	for i := range rnd {
		rnd[i] = byte(0xa0 + i)
	}
	created := time.Unix(1796083200, 0)
	tok, err := token.Issue(fk, token.Params{ProtocolID: 0x1122334455667788, ClientID: 42, Created: created,
		Expires: created.Add(time.Hour), Timeout: 10 * time.Second,
		Servers: []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:7000")}, UserData: []byte("hi")}, bytes.NewReader(rnd))
	if err != nil {
		t.Fatal(err)
	}
	var cookie wire.Cookie
	cookie.Bucket = 0x0d0c0b0a
	for i := range cookie.Tag {
		cookie.Tag[i] = byte(0xa0 + i)
	}
	r := wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: 0x0807060504030201, Cookie: cookie,
		Ephemeral: wire.PublicKey(ec.PublicKey().Bytes()), ConnectToken: tok.Sealed, Unpinned: true}
	resp := wire.AppendConnectResponse(nil, r)
	a := wire.Accept{Nonce: r.Nonce, Ephemeral: wire.PublicKey(es.PublicKey().Bytes())}
	for i := range a.ServerRandom {
		a.ServerRandom[i] = byte(0x50 + i)
	}
	hdr := wire.AppendAccept(nil, a)[:wire.AcceptHeaderLen]

	// The server's side: the token opens with the fleet key and gives the
	// key material; no es (the client pins no key).
	v, err := token.NewVerifier(0x1122334455667788, fk)
	if err != nil {
		t.Fatal(err)
	}
	var priv token.Private
	if err := v.Open(r.ConnectToken, created.Add(time.Minute), &priv); err != nil {
		t.Fatal(err)
	}
	if err := priv.CheckServer(netip.MustParseAddrPort("192.0.2.1:7000")); err != nil {
		t.Fatal(err)
	}
	km := priv.KeyMaterial()
	ikm, err := handshakeIKM(es, r.Ephemeral[:], nil, nil, km[:])
	if err != nil {
		t.Fatal(err)
	}
	th, secret, accept := workedAccept(t, ikm, resp, hdr, &a)

	// The client's side agrees, from its public token's keys.
	ckm := tok.KeyMaterial()
	ikmC, err := handshakeIKM(ec, a.Ephemeral[:], nil, nil, ckm[:])
	if err != nil || !bytes.Equal(ikmC, ikm) {
		t.Fatal("ikm differs", err)
	}
	var plain [wire.AcceptBodyLen]byte
	if !openAcceptBody(&secret, accept[:wire.AcceptHeaderLen], &a.Body, &plain) {
		t.Fatal("the client cannot open the body")
	}

	var sb strings.Builder
	line := func(name string, b []byte) { hexLines(&sb, name, b) }
	line("ikm = ee ‖ keys", ikm)
	line("transcript", th[:])
	line("secret", secret[:])
	sb.WriteString("\nConnectResponse with the token\n")
	dump(&sb, resp)
	sb.WriteString("\nAccept\n")
	dump(&sb, accept)
	return sb.String()
}

// TestTokenHandshakeWorkedExample pins the worked example of
// docs/WIRE.md §9.10.
func TestTokenHandshakeWorkedExample(t *testing.T) {
	got := tokenHandshakeExample(t)
	doc := readWire(t)
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if l != "" && !strings.Contains(doc, l) {
			t.Fatalf("docs/WIRE.md §9.10 lacks the line\n%s\nof the example:\n%s", l, got)
		}
	}
}

// TestPrintTokenHandshakeExample prints the example of §9.10 (go test -run
// TestPrintTokenHandshakeExample -v), for the document.
func TestPrintTokenHandshakeExample(t *testing.T) { t.Log("\n" + tokenHandshakeExample(t)) }

// workedAccept is the server's last step in both worked examples: the
// transcript of resp and the Accept header hdr, the session secret from
// ikm, and the Accept a with the example's body (peer 3, token c0…cf, the
// default limits) sealed into it, as bytes.
func workedAccept(t testing.TB, ikm, resp, hdr []byte, a *wire.Accept) ([32]byte, seal.Secret, []byte) {
	t.Helper()
	th := transcript(resp, hdr)
	secret, err := seal.DeriveSecret(ikm, a.ServerRandom[:], th[:])
	if err != nil {
		t.Fatal(err)
	}
	body := wire.AcceptBody{PeerID: 3, Token: wire.Token{0: 0xc0, 15: 0xcf}}
	limitsOf(Config{}).announce(&body)
	if err := sealAcceptBody(&secret, hdr, wire.AppendAcceptBody(nil, body), &a.Body); err != nil {
		t.Fatal(err)
	}
	return th, secret, wire.AppendAccept(nil, *a)
}

// hexLines writes b to sb as the worked examples of docs/WIRE.md §9 show
// a value: 16 bytes a line, name on the first.
func hexLines(sb *strings.Builder, name string, b []byte) {
	for i := 0; i < len(b); i += 16 {
		label := ""
		if i == 0 {
			label = name
		}
		fmt.Fprintf(sb, "%-18s% x\n", label, b[i:min(i+16, len(b))])
	}
}
