package token

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// TestRoundTrip: for random parameters, Issue → AppendBinary →
// UnmarshalBinary → Open gives back every parameter, on both sides, and
// the sizes are the formula's.
func TestRoundTrip(t *testing.T) {
	seed := testSeed(t, 1)
	r := rand.New(rand.NewPCG(seed, 0))
	key := testKey()
	var priv Private
	for i := range 300 {
		p := randomParams(r)
		tok, err := Issue(key, p, seededReader(seed+uint64(i)))
		if err != nil {
			t.Fatalf("token %d: Issue: %v", i, err)
		}
		if want := sealedLen(p.Servers, len(p.UserData)); len(tok.Sealed) != want || want > MaxSealedLen {
			t.Fatalf("token %d: sealed %d bytes, formula %d (max %d)", i, len(tok.Sealed), want, MaxSealedLen)
		}
		enc, err := tok.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) != tok.EncodedLen() {
			t.Fatalf("token %d: encoded %d bytes, EncodedLen %d", i, len(enc), tok.EncodedLen())
		}
		var got Token
		if err := got.UnmarshalBinary(enc); err != nil {
			t.Fatalf("token %d: UnmarshalBinary: %v", i, err)
		}
		if got.ProtocolID != p.ProtocolID || !got.Created.Equal(p.Created) || !got.Expires.Equal(p.Expires) ||
			got.Timeout != p.Timeout || !slices.Equal(got.Servers, p.Servers) ||
			got.ClientKey != tok.ClientKey || got.ServerKey != tok.ServerKey || !bytes.Equal(got.Sealed, tok.Sealed) {
			t.Fatalf("token %d: decoded public part differs:\n got %+v\nwant %+v (params %+v)", i, got, tok, p)
		}
		v := mustVerifier(t, p.ProtocolID, key)
		if err := v.Open(got.Sealed, p.Created, &priv); err != nil {
			t.Fatalf("token %d: Open: %v", i, err)
		}
		if priv.ClientID != p.ClientID || priv.Timeout != p.Timeout || priv.ProtocolID != p.ProtocolID ||
			!priv.Expires.Equal(p.Expires) || !slices.Equal(priv.Servers(), p.Servers) ||
			!bytes.Equal(priv.UserData(), p.UserData) || priv.KeyMaterial() != got.KeyMaterial() {
			t.Fatalf("token %d: opened private part differs from the params %+v", i, p)
		}
		for _, s := range p.Servers {
			if err := priv.CheckServer(s); err != nil {
				t.Fatalf("token %d: CheckServer(%v): %v", i, s, err)
			}
		}
		if priv.ID() != [TagLen]byte(tok.Sealed[len(tok.Sealed)-TagLen:]) {
			t.Fatalf("token %d: ID is not the tag", i)
		}
	}
}

// TestEveryBitFlipFails: flipping any single bit of a sealed token makes
// Open refuse it, for a small token and a full one.
func TestEveryBitFlipFails(t *testing.T) {
	key := testKey()
	full := baseParams()
	full.UserData = bytes.Repeat([]byte{0xab}, MaxUserData)
	full.Servers = nil
	for i := range 4 {
		full.Servers = append(full.Servers, netip.AddrPortFrom(netip.MustParseAddr(fmt.Sprintf("2001:db8::%d", i+1)), 7000))
	}
	for _, p := range []Params{baseParams(), full} {
		tok := mustIssue(t, key, p, 7)
		v := mustVerifier(t, p.ProtocolID, key)
		var priv Private
		if err := v.Open(tok.Sealed, t0, &priv); err != nil {
			t.Fatal(err)
		}
		reasons := map[string]int{}
		b := slices.Clone(tok.Sealed)
		for bit := range 8 * len(b) {
			b[bit/8] ^= 1 << (bit % 8)
			err := v.Open(b, t0, &priv)
			b[bit/8] ^= 1 << (bit % 8)
			if err == nil {
				t.Fatalf("%d-byte token: flipping bit %d (byte %d) still opens", len(b), bit, bit/8)
			}
			if priv.err.Reason == nil || !wiped(&priv) {
				t.Fatalf("a refused Open left data in the Private, or no reason")
			}
			reasons[sentinelName(err)]++
		}
		t.Logf("%d-byte token, %d bit flips refused: %v", len(b), 8*len(b), reasons)
		if reasons["ErrTampered"] == 0 || reasons["ErrProtocol"] != 64 || reasons["ErrWrongKey"] != 32 || reasons["ErrVersion"] != 8 {
			t.Errorf("unexpected refusal reasons %v", reasons)
		}
	}
}

// sentinelName names the package sentinel err wraps.
func sentinelName(err error) string {
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrShort", ErrShort}, {"ErrVersion", ErrVersion}, {"ErrMalformed", ErrMalformed},
		{"ErrProtocol", ErrProtocol}, {"ErrWrongKey", ErrWrongKey}, {"ErrExpired", ErrExpired},
		{"ErrTampered", ErrTampered},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "other: " + err.Error()
}

// TestOpenRefusals: each way a token can be bad has its own sentinel, and
// the message carries the numbers.
func TestOpenRefusals(t *testing.T) {
	key := testKey()
	p := baseParams()
	tok := mustIssue(t, key, p, 1)
	v := mustVerifier(t, p.ProtocolID, key)
	other, _ := GenerateKey()
	mod := func(f func(b []byte) []byte) []byte { return f(slices.Clone(tok.Sealed)) }
	otherKeyTok := mustIssue(t, other, p, 1)
	// A token of another key carrying our key id: the id is associated
	// data, so the tag fails.
	collided := slices.Clone(otherKeyTok.Sealed)
	id := key.ID()
	copy(collided[3:7], id[:])
	cases := []struct {
		name   string
		sealed []byte
		now    time.Time
		v      *Verifier
		want   error
		msg    string
	}{
		{"truncated by one", tok.Sealed[:len(tok.Sealed)-1], t0, v, ErrShort, fmt.Sprintf("%d bytes of a %d-byte sealed token", len(tok.Sealed)-1, len(tok.Sealed))},
		{"two bytes", tok.Sealed[:2], t0, v, ErrShort, "sealed token of 2 bytes"},
		{"empty", nil, t0, v, ErrShort, "0 bytes"},
		{"trailing byte", append(slices.Clone(tok.Sealed), 0), t0, v, ErrMalformed, "1 bytes after"},
		{"version 2", mod(func(b []byte) []byte { b[0] = 2; return b }), t0, v, ErrVersion, "version 2"},
		{"length field too small", mod(func(b []byte) []byte { b[1], b[2] = 10, 0; return b }), t0, v, ErrMalformed, "length field 10"},
		{"wrong protocol", tok.Sealed, t0, mustVerifier(t, 7, key), ErrProtocol, "this server speaks 0x7"},
		{"wrong key", tok.Sealed, t0, mustVerifier(t, p.ProtocolID, other), ErrWrongKey, "key id"},
		{"expiry beyond 9999", mod(func(b []byte) []byte { b[22] = 0x7f; return b }), t0, v, ErrMalformed, "after the year 9999"},
		{"expired at its second", tok.Sealed, p.Expires, v, ErrExpired, "expired 0 s ago"},
		{"expired 12 s ago", tok.Sealed, p.Expires.Add(12 * time.Second), v, ErrExpired, "expired 12 s ago"},
		{"tampered ciphertext", mod(func(b []byte) []byte { b[60] ^= 1; return b }), t0, v, ErrTampered, "does not verify"},
		{"tampered expiry", mod(func(b []byte) []byte { b[15]++; return b }), t0, v, ErrTampered, "does not verify"},
		{"tampered tag", mod(func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }), t0, v, ErrTampered, "does not verify"},
		{"other key, our key id", collided, t0, v, ErrTampered, "does not verify"},
	}
	for _, c := range cases {
		var priv Private
		err := c.v.Open(c.sealed, c.now, &priv)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %v with %q", c.name, err, c.want, c.msg)
		}
	}
	// A second before expiry it opens.
	var priv Private
	if err := v.Open(tok.Sealed, p.Expires.Add(-time.Second), &priv); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
}

// TestRotation: a Verifier holding the new key and the old opens tokens
// of both, picking the key by id.
func TestRotation(t *testing.T) {
	oldK, _ := GenerateKey()
	newK, _ := GenerateKey()
	p := baseParams()
	v := mustVerifier(t, p.ProtocolID, newK, oldK)
	var priv Private
	for _, k := range []Key{oldK, newK} {
		if err := v.Open(mustIssue(t, k, p, 3).Sealed, t0, &priv); err != nil {
			t.Fatalf("key %v: %v", k, err)
		}
	}
	if _, err := NewVerifier(1); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("no keys: %v", err)
	}
	if _, err := NewVerifier(1, oldK, oldK); !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "keys 1 and 2") {
		t.Errorf("the same key twice: %v", err)
	}
	if _, err := NewVerifier(1, oldK, Key{}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("a zero key: %v", err)
	}
	if _, err := NewVerifier(1, make([]Key, MaxVerifierKeys+1)...); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("too many keys: %v", err)
	}
}

// TestIssueParams: Issue refuses what the format cannot hold, with the
// numbers, and takes exactly what fits MaxSealedLen.
func TestIssueParams(t *testing.T) {
	key := testKey()
	v6 := func(n int) []netip.AddrPort {
		var a []netip.AddrPort
		for i := range n {
			a = append(a, netip.AddrPortFrom(netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", i+1)), 7000))
		}
		return a
	}
	v4 := func(n int) []netip.AddrPort {
		var a []netip.AddrPort
		for i := range n {
			a = append(a, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 7000))
		}
		return a
	}
	full := bytes.Repeat([]byte{1}, MaxUserData)
	ok := []struct {
		name    string
		servers []netip.AddrPort
		ud      []byte
		size    int
	}{
		{"256 B, 4 IPv6", v6(4), full, 474},
		{"256 B, 11 IPv4", v4(11), full, 475},
		{"no user data, 17 IPv6", v6(17), nil, 465},
		{"no user data, 32 IPv4", v4(32), nil, 366},
		{"smallest", v4(1), nil, MinSealedLen},
	}
	for _, c := range ok {
		p := baseParams()
		p.Servers, p.UserData = c.servers, c.ud
		tok, err := Issue(key, p, seededReader(1))
		if err != nil || len(tok.Sealed) != c.size {
			t.Errorf("%s: %v, %d bytes, want %d", c.name, err, len(tok.Sealed), c.size)
		}
	}
	bad := []struct {
		name string
		f    func(p *Params)
		msg  string
	}{
		{"256 B, 5 IPv6", func(p *Params) { p.Servers, p.UserData = v6(5), full }, "would be 493 bytes, over MaxSealedLen 476"},
		{"no user data, 18 IPv6", func(p *Params) { p.Servers, p.UserData = v6(18), nil }, "would be 484 bytes"},
		{"no servers", func(p *Params) { p.Servers = nil }, "0 server addresses, want 1 to 32"},
		{"33 servers", func(p *Params) { p.Servers, p.UserData = v4(33), nil }, "33 server addresses"},
		{"port 0", func(p *Params) { p.Servers = []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:0")} }, "port 0"},
		{"zone", func(p *Params) { p.Servers = []netip.AddrPort{netip.MustParseAddrPort("[fe80::1%eth0]:1")} }, "zone"},
		{"unset", func(p *Params) { p.Servers = []netip.AddrPort{{}} }, "not set"},
		{"repeat", func(p *Params) {
			p.Servers = []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:1"), netip.MustParseAddrPort("[::ffff:192.0.2.1]:1")}
		}, "repeats address 1"},
		{"user data 257", func(p *Params) { p.UserData = make([]byte, 257) }, "257 bytes of user data, want at most 256"},
		{"expires at created", func(p *Params) { p.Expires = p.Created }, "0 s after Created"},
		{"created before 1970", func(p *Params) { p.Created = time.Unix(-5, 0) }, "5 s before 1970"},
		{"expires after 9999", func(p *Params) { p.Expires = time.Unix(MaxExpires+1, 0) }, "after the year 9999"},
		{"negative timeout", func(p *Params) { p.Timeout = -1 }, "Timeout -1ns"},
		{"timeout too long", func(p *Params) { p.Timeout = MaxTimeout + time.Millisecond }, "Timeout"},
	}
	for _, c := range bad {
		p := baseParams()
		c.f(&p)
		_, err := Issue(key, p, seededReader(1))
		if !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want ErrInvalidParams with %q", c.name, err, c.msg)
		}
	}
	if _, err := Issue(Key{}, baseParams(), nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("zero key: %v", err)
	}
	if _, err := Issue(key, baseParams(), bytes.NewReader(make([]byte, 10))); err == nil || !strings.Contains(err.Error(), "randomness") {
		t.Errorf("short randomness: %v", err)
	}
	// An IPv4-mapped server address is stored as IPv4.
	p := baseParams()
	p.Servers = []netip.AddrPort{netip.MustParseAddrPort("[::ffff:192.0.2.9]:5")}
	tok := mustIssue(t, key, p, 1)
	if tok.Servers[0] != netip.MustParseAddrPort("192.0.2.9:5") {
		t.Errorf("mapped address kept as %v", tok.Servers[0])
	}
}

// TestCheckServer: the server's own address must be among the token's.
func TestCheckServer(t *testing.T) {
	key := testKey()
	p := baseParams()
	var priv Private
	if err := mustVerifier(t, p.ProtocolID, key).Open(mustIssue(t, key, p, 1).Sealed, t0, &priv); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"192.0.2.1:7000", "[::ffff:192.0.2.1]:7000", "[2001:db8::1]:7000"} {
		if err := priv.CheckServer(netip.MustParseAddrPort(a)); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	for _, a := range []string{"192.0.2.1:7001", "192.0.2.2:7000", "[2001:db8::2]:7000"} {
		err := priv.CheckServer(netip.MustParseAddrPort(a))
		if !errors.Is(err, ErrNotForServer) || !strings.Contains(err.Error(), "names 2 server addresses") {
			t.Errorf("%s: %v", a, err)
		}
	}
}

// TestPublicTruncation: every strict prefix of a public token is refused
// with ErrShort or ErrMalformed, and so is the token with a byte more.
func TestPublicTruncation(t *testing.T) {
	enc, err := func() ([]byte, error) { tok := mustIssue(t, testKey(), baseParams(), 1); return tok.MarshalBinary() }()
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(enc) {
		var tok Token
		err := tok.UnmarshalBinary(enc[:n])
		if !errors.Is(err, ErrShort) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d of %d bytes: %v", n, len(enc), err)
		}
	}
	var tok Token
	if err := tok.UnmarshalBinary(append(enc, 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a trailing byte: %v", err)
	}
}

// TestKeyText: the text form round-trips; bad lengths say their numbers.
func TestKeyText(t *testing.T) {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := k.MarshalText()
	for _, s := range []string{string(txt), string(txt) + "\n", "  " + strings.TrimPrefix(string(txt), KeyTextPrefix) + "\r\n", strings.ToUpper(strings.TrimPrefix(string(txt), KeyTextPrefix))} {
		got, err := ParseKey(s)
		if err != nil || got != k {
			t.Errorf("ParseKey(%q): %v", s, err)
		}
	}
	var u Key
	if err := u.UnmarshalText(txt); err != nil || u != k {
		t.Errorf("UnmarshalText: %v", err)
	}
	hex := strings.TrimPrefix(string(txt), KeyTextPrefix)
	for _, c := range []struct{ in, msg string }{
		{hex[:62], "31 bytes (62 hex digits), want 32 bytes (64 hex digits)"},
		{hex + "00", "33 bytes (66 hex digits)"},
		{hex[:63], "63 hex digits (an odd number)"},
		{"", "0 bytes"},
		{"zz" + hex[2:], "character 1 is not a hex digit"},
		{strings.Repeat("0", 64), "all-zero"},
	} {
		_, err := ParseKey(c.in)
		if !errors.Is(err, ErrKeyText) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ParseKey(%q): %v, want %q", c.in, err, c.msg)
		}
		if err != nil && len(c.in) > 8 && strings.Contains(err.Error(), c.in[2:10]) {
			t.Errorf("the error quotes the key text: %v", err)
		}
	}
	if s := fmt.Sprint(k); strings.Contains(s, hex[:8]) || !strings.Contains(s, "redacted") {
		t.Errorf("String leaks the key: %s", s)
	}
	if s := fmt.Sprintf("%x", k); strings.Contains(s, hex[:8]) {
		t.Errorf("%%x leaks the key: %s", s)
	}
}

// TestNoAllocs: Open accepting or refusing, CheckServer and a ReplayGuard Admit
// in steady state allocate nothing.
func TestNoAllocs(t *testing.T) {
	key := testKey()
	p := baseParams()
	tok := mustIssue(t, key, p, 1)
	v := mustVerifier(t, p.ProtocolID, key)
	priv := new(Private)
	from := netip.MustParseAddrPort("198.51.100.7:5000")
	if n := testing.AllocsPerRun(200, func() {
		if err := v.Open(tok.Sealed, t0, priv); err != nil {
			t.Fatal(err)
		}
		if err := priv.CheckServer(p.Servers[1]); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Open + CheckServer: %v allocations, want 0", n)
	}
	forged := slices.Clone(tok.Sealed)
	forged[60] ^= 1
	wrong := mustVerifier(t, 9, key)
	if n := testing.AllocsPerRun(200, func() {
		if err := v.Open(forged, t0, priv); !errors.Is(err, ErrTampered) {
			t.Fatal(err)
		}
		if err := wrong.Open(tok.Sealed, t0, priv); !errors.Is(err, ErrProtocol) {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Open refusing: %v allocations, want 0", n)
	}
	g, _ := NewReplayGuard(GuardConfig{Capacity: 64})
	// Fill and churn the guard: tokens expire one a second.
	toks := make([]Private, 256)
	for i := range toks {
		pp := p
		pp.Expires = t0.Add(time.Duration(i+1) * time.Second)
		if err := v.Open(mustIssue(t, key, pp, uint64(i)).Sealed, t0, &toks[i]); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	if n := testing.AllocsPerRun(200, func() {
		now := t0.Add(time.Duration(i) * time.Second)
		if err := g.Admit(&toks[i%len(toks)], from, now); err != nil && i < len(toks) {
			t.Fatal(err)
		}
		i++
	}); n != 0 {
		t.Errorf("ReplayGuard.Admit: %v allocations, want 0", n)
	}
}

// TestRefusalWipes: a refusal after an accepted token leaves no trace of
// it in the Private, and a never-opened Private is neither admitted by a
// guard nor names a server.
func TestRefusalWipes(t *testing.T) {
	key := testKey()
	p := baseParams()
	tok := mustIssue(t, key, p, 1)
	v := mustVerifier(t, p.ProtocolID, key)
	var priv Private
	if err := v.Open(tok.Sealed, t0, &priv); err != nil {
		t.Fatal(err)
	}
	if err := v.Open(tok.Sealed[:10], t0, &priv); !errors.Is(err, ErrShort) {
		t.Fatal(err)
	}
	if !wiped(&priv) {
		t.Fatal("a refusal after an accepted token left its data")
	}
	var zero Private
	g, _ := NewReplayGuard(GuardConfig{Capacity: 1})
	if err := g.Admit(&zero, netip.MustParseAddrPort("192.0.2.1:1"), t0); !errors.Is(err, ErrExpired) || g.Len() != 0 {
		t.Fatalf("a never-opened Private: %v, %d entries", err, g.Len())
	}
	if err := zero.CheckServer(netip.MustParseAddrPort("192.0.2.1:7000")); !errors.Is(err, ErrNotForServer) {
		t.Fatalf("a never-opened Private names a server: %v", err)
	}
}

// TestVerifierConcurrent: one Verifier opens tokens from several
// goroutines at once (run with -race).
func TestVerifierConcurrent(t *testing.T) {
	key := testKey()
	p := baseParams()
	v := mustVerifier(t, p.ProtocolID, key)
	toks := make([]Token, 4)
	for i := range toks {
		toks[i] = mustIssue(t, key, p, uint64(i))
	}
	done := make(chan error, len(toks))
	for i := range toks {
		go func() {
			var priv Private
			for range 200 {
				if err := v.Open(toks[i].Sealed, t0, &priv); err != nil {
					done <- err
					return
				}
				if priv.KeyMaterial() != toks[i].KeyMaterial() {
					done <- errors.New("keys of another token")
					return
				}
			}
			done <- nil
		}()
	}
	for range toks {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A private part that decrypts but does not parse (only a holder of the
// fleet key can seal one) is refused without leaving its session keys or
// client id in the Private; and a clock that is not set (before 1970)
// refuses every token instead of finding none expired.
func TestRefusalWipesUnparsedPrivate(t *testing.T) {
	key := testKey()
	p := baseParams()
	tok := mustIssue(t, key, p, 1)
	// The private part with no server address, resealed under the key.
	plain := appendPrivate(nil, 42, 10000, &tok.ClientKey, &tok.ServerKey, tok.Servers, nil)
	plain = append(plain[:76:76], 0, 7, 0, 1, 2, 3, 4, 5, 6, 7) // address count 0; 7 bytes of user data, so the length passes
	sealed := bytes.Clone(tok.Sealed[:SealedHeaderLen])
	binary.LittleEndian.PutUint16(sealed[1:], uint16(SealedHeaderLen+len(plain)+TagLen))
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		t.Fatal(err)
	}
	sealed = aead.Seal(sealed, sealed[adLen:SealedHeaderLen], plain, sealed[:adLen])
	v := mustVerifier(t, p.ProtocolID, key)
	var priv Private
	if err := v.Open(sealed, t0, &priv); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a private part without addresses: %v, want ErrMalformed", err)
	}
	if !wiped(&priv) {
		t.Fatalf("the refused private part stayed in the Private: client id %d, keys set %v", priv.ClientID, priv.ClientKey != SessionKey{})
	}
	if err := v.Open(tok.Sealed, time.Time{}, &priv); !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "clock is not set") {
		t.Fatalf("Open at the zero time: %v, want ErrInvalidParams", err)
	}
}

// Keys print redacted, whatever the verb and however they are reached: a
// Key, a Token or a Private logged with %v, %+v or %#v shows no key byte.
func TestKeysPrintRedacted(t *testing.T) {
	key := testKey()
	p := baseParams()
	tok := mustIssue(t, key, p, 1)
	v := mustVerifier(t, p.ProtocolID, key)
	var priv Private
	if err := v.Open(tok.Sealed, t0, &priv); err != nil {
		t.Fatal(err)
	}
	secrets := [][]byte{key[:], tok.ClientKey[:], tok.ServerKey[:]}
	for _, x := range []any{key, tok, &tok, &priv, priv.ClientKey, priv.ServerKey} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x"} {
			out := fmt.Sprintf(verb, x)
			for _, sec := range secrets {
				dec := strings.Trim(fmt.Sprint(sec[:4]), "[]")               // "160 161 162 163"
				gox := strings.Trim(fmt.Sprintf("%#v", sec[:4]), "[]byte{}") // "0xa0, 0xa1, …"
				if strings.Contains(out, hex.EncodeToString(sec[:8])) || strings.Contains(out, dec) || strings.Contains(out, gox) {
					t.Fatalf("%s of %T prints key bytes: %s", verb, x, out)
				}
			}
		}
	}
}

// wiped reports whether p holds nothing but its last refusal.
func wiped(p *Private) bool {
	q := *p
	q.err = OpenError{}
	return q == Private{}
}
