package wire

import (
	"math/rand/v2"
	"testing"
)

var (
	connectRequestCodec = codec[ConnectRequest]{
		app: AppendConnectRequest, parse: ParseConnectRequest,
		size: func(ConnectRequest) int { return ConnectRequestLen },
	}
	connectResponseCodec = codec[ConnectResponse]{
		app: AppendConnectResponse, parse: ParseConnectResponse,
		size: connectResponseSize,
	}
	// tokenResponseCodec is the ConnectResponse carrying a connect token,
	// which runs to the end of the datagram.
	tokenResponseCodec = codec[ConnectResponse]{
		app: AppendConnectResponse, parse: ParseConnectResponse,
		size: connectResponseSize, whole: true,
	}
)

func connectResponseSize(r ConnectResponse) int {
	if r.ConnectToken != nil {
		return ConnectResponseProofOff + len(r.ConnectToken)
	}
	return ConnectResponseLen
}

// randTokenResponse is a ConnectResponse with a connect token of a
// random length in the wire's bounds.
func randTokenResponse(r *rand.Rand) ConnectResponse {
	c := randConnectResponse(r)
	c.Resume, c.Token, c.Proof = false, Token{}, [16]byte{}
	c.ConnectToken = make([]byte, ConnectTokenMinLen+r.IntN(ConnectTokenMaxLen-ConnectTokenMinLen+1))
	for i := range c.ConnectToken {
		c.ConnectToken[i] = byte(r.Uint32())
	}
	c.Unpinned = r.IntN(2) == 0
	return c
}

func tokenResponseSamples() []ConnectResponse {
	r := testRand(34)
	s := []ConnectResponse{
		{Version: ProtocolVersion, ConnectToken: make([]byte, ConnectTokenMinLen)},
		{Version: ProtocolVersion, ConnectToken: make([]byte, ConnectTokenMaxLen), Unpinned: true},
	}
	for range 4 {
		s = append(s, randTokenResponse(r))
	}
	return s
}

func randConnectRequest(r *rand.Rand) ConnectRequest {
	c := ConnectRequest{Version: ProtocolVersion, Nonce: r.Uint64()}
	if r.IntN(2) == 0 {
		c.Resume, c.Token = true, randToken(r)
	}
	return c
}

func randConnectResponse(r *rand.Rand) ConnectResponse {
	q := randConnectRequest(r)
	c := ConnectResponse{Version: q.Version, Nonce: q.Nonce, Resume: q.Resume, Cleartext: r.IntN(4) == 0, Token: q.Token, Cookie: randCookie(r),
		Suite: uint8(r.IntN(2))}
	for i := range c.Ephemeral {
		c.Ephemeral[i] = byte(r.Uint32())
	}
	if c.Resume {
		for i := range c.Proof {
			c.Proof[i] = byte(r.Uint32())
		}
	}
	return c
}

func connectRequestSamples() []ConnectRequest {
	s := []ConnectRequest{
		{Version: ProtocolVersion},
		{Version: ProtocolVersion, Nonce: 0x0807060504030201},
		{Version: ProtocolVersion, Nonce: ^uint64(0), Resume: true, Token: Token{0xFF, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xFF}},
		{Version: ProtocolVersion, Resume: true}, // resuming with an all-zero token is legal
	}
	r := testRand(30)
	for i := 0; i < 4; i++ {
		s = append(s, randConnectRequest(r))
	}
	return s
}

func connectResponseSamples() []ConnectResponse {
	s := []ConnectResponse{
		{Version: ProtocolVersion},
		{Version: ProtocolVersion, Nonce: 0x0807060504030201, Cookie: Cookie{Bucket: 0x0A0B0C0D, Tag: [16]byte{1, 2, 3}}},
		{Version: ProtocolVersion, Nonce: 9, Resume: true, Token: Token{9: 9}, Cookie: Cookie{Bucket: ^uint32(0)}},
	}
	r := testRand(31)
	for i := 0; i < 4; i++ {
		s = append(s, randConnectResponse(r))
	}
	return s
}

func TestConnectRequest(t *testing.T) {
	for _, c := range connectRequestSamples() {
		connectRequestCodec.roundTrip(t, c)
	}
	r := testRand(32)
	for i := 0; i < 2000; i++ {
		connectRequestCodec.roundTrip(t, randConnectRequest(r))
	}
	// Without Resume the token is not sent.
	b := AppendConnectRequest(nil, ConnectRequest{Version: ProtocolVersion, Token: Token{1, 2, 3}})
	if got, _, err := ParseConnectRequest(b); err != nil || got.Token != (Token{}) || got.Resume {
		t.Fatalf("token leaked without Resume: %+v %v", got, err)
	}
	want := "01 74 77 69 72 03 00 01 02 03 04 05 06 07 08 00" + zeros(48)
	if got := hexs(AppendConnectRequest(nil, ConnectRequest{Version: ProtocolVersion, Nonce: 0x0807060504030201})); got != want {
		t.Fatalf("encoding\n%s\nwant\n%s", got, want)
	}
}

// zeros returns n " 00" groups, for expected hex strings.
func zeros(n int) string {
	s := ""
	for i := 0; i < n; i++ {
		s += " 00"
	}
	return s
}

func TestConnectRequestErrors(t *testing.T) {
	ok := AppendConnectRequest(nil, ConnectRequest{Version: ProtocolVersion, Nonce: 5})
	mut := func(i int, v byte) []byte {
		b := append([]byte(nil), ok...)
		b[i] = v
		return b
	}
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(0, byte(KindConnectResponse)), ErrMalformed)
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(15, 0x04), ErrMalformed) // reserved flag
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(20, 0x01), ErrMalformed) // token without resume
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(63, 0x01), ErrMalformed) // padding
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(32, 0x80), ErrMalformed) // padding
	// A token with the resume flag is fine; so is the cleartext flag.
	if _, _, err := ParseConnectRequest(mut(15, 0x01)); err != nil {
		t.Fatal(err)
	}
	if c, _, err := ParseConnectRequest(mut(15, 0x02)); err != nil || !c.Cleartext {
		t.Fatal(c, err)
	}
}

func TestConnectResponse(t *testing.T) {
	for _, c := range connectResponseSamples() {
		connectResponseCodec.roundTrip(t, c)
	}
	r := testRand(33)
	for i := 0; i < 2000; i++ {
		connectResponseCodec.roundTrip(t, randConnectResponse(r))
	}
	ok := AppendConnectResponse(nil, ConnectResponse{Version: ProtocolVersion})
	for _, c := range []struct {
		at int
		v  byte
	}{{0, byte(KindConnectRequest)}, {15, 0x80}, {15, 0x10}, {15, 0x08}, {15, 0x05}, {31, 1}, {52, 2}, {85, 1}, {100, 1}, {101, 1}, {119, 1}} {
		b := append([]byte(nil), ok...)
		b[c.at] = c.v
		mustErr(t, "ParseConnectResponse", ParseConnectResponse, b, ErrMalformed)
	}
	// The cookie occupies bytes 32–51, the suite 52, the ephemeral key
	// 53–84; a resume's proof 85–100.
	for i := 32; i < 85; i++ {
		if i == 52 {
			continue
		}
		b := append([]byte(nil), ok...)
		b[i] = 0x5A
		if _, _, err := ParseConnectResponse(b); err != nil {
			t.Fatalf("cookie byte %d: %v", i, err)
		}
	}
}

// TestConnectResponseBytes pins the encoding of docs/WIRE.md §9.4.
func TestConnectResponseBytes(t *testing.T) {
	r := ConnectResponse{Version: ProtocolVersion, Nonce: 0x0807060504030201, Resume: true, Token: Token{0: 0xc0, 15: 0xcf},
		Cookie: Cookie{Bucket: 0x0d0c0b0a, Tag: [16]byte{0: 0xa0, 15: 0xaf}}, Suite: SuiteChaCha20Poly1305,
		Ephemeral: PublicKey{0: 0xe0, 31: 0xef}, Proof: [16]byte{0: 0x90, 15: 0x9f}}
	want := "03 74 77 69 72 03 00 01 02 03 04 05 06 07 08 01 c0" + zeros(14) + " cf 0a 0b 0c 0d a0" + zeros(14) + " af 01 e0" +
		zeros(30) + " ef 90" + zeros(14) + " 9f" + zeros(19)
	b := AppendConnectResponse(nil, r)
	if got := hexs(b); got != want {
		t.Fatalf("encoding\n%s\nwant\n%s", got, want)
	}
	if ConnectResponseProofOff != 85 || len(b) != 120 {
		t.Fatal("proof offset or length moved")
	}
	if got, _, err := ParseConnectResponse(b); err != nil || !connectResponseCodec.equal(got, r) {
		t.Fatalf("%+v %v", got, err)
	}
}

// TestConnectResponseToken: with flag bit 2 the connect token takes the
// place of the proof and the padding and runs to the end of the datagram
// (docs/WIRE.md §9.4): 120 to 561 bytes, never with a resume.
func TestConnectResponseToken(t *testing.T) {
	for _, c := range tokenResponseSamples() {
		tokenResponseCodec.roundTrip(t, c)
	}
	r := testRand(35)
	for range 500 {
		tokenResponseCodec.roundTrip(t, randTokenResponse(r))
	}
	tok := make([]byte, 149)
	for i := range tok {
		tok[i] = byte(i)
	}
	b := AppendConnectResponse(nil, ConnectResponse{Version: ProtocolVersion, Nonce: 1, ConnectToken: tok, Unpinned: true})
	if len(b) != 85+149 || b[15] != 0x0c || b[85] != 0 || b[85+148] != 148 {
		t.Fatalf("layout: %d bytes, flags %#x", len(b), b[15])
	}
	if MaxConnectResponseLen != 561 || MaxConnectResponseLen > 576 {
		t.Fatalf("MaxConnectResponseLen %d", MaxConnectResponseLen)
	}
	// Shorter than 120 in all: short; longer than 561: malformed; with
	// the resume flag: malformed.
	mustErr(t, "ParseConnectResponse", ParseConnectResponse, b[:ConnectResponseLen-1], ErrShort)
	long := AppendConnectResponse(nil, ConnectResponse{Version: ProtocolVersion, ConnectToken: make([]byte, ConnectTokenMaxLen+1)})
	mustErr(t, "ParseConnectResponse", ParseConnectResponse, long, ErrMalformed)
	res := append([]byte(nil), b...)
	res[15] |= 0x01
	mustErr(t, "ParseConnectResponse", ParseConnectResponse, res, ErrMalformed)
	// An unpinned resume (of a token session) is fine.
	if c, _, err := ParseConnectResponse(AppendConnectResponse(nil, ConnectResponse{Version: ProtocolVersion, Resume: true, Unpinned: true})); err != nil || !c.Unpinned {
		t.Fatalf("unpinned resume: %+v %v", c, err)
	}
	// A ConnectRequest never carries the token or unpinned flags.
	q := AppendConnectRequest(nil, ConnectRequest{Version: ProtocolVersion})
	for _, f := range []byte{0x04, 0x08} {
		q[15] = f
		mustErr(t, "ParseConnectRequest", ParseConnectRequest, q, ErrMalformed)
	}
}

func seedsConnectRequest() [][]byte {
	s := encodeAll(connectRequestCodec, connectRequestSamples())
	return append(s, versionedPrefix(KindConnectRequest, 7, 1, 64))
}

func seedsConnectResponse() [][]byte {
	s := encodeAll(connectResponseCodec, connectResponseSamples())
	s = append(s, encodeAll(tokenResponseCodec, tokenResponseSamples())...)
	return append(s, versionedPrefix(KindConnectResponse, 7, 1, ConnectResponseLen))
}

func FuzzParseConnectRequest(f *testing.F) {
	for _, s := range seedsConnectRequest() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		connectRequestCodec.fuzzCheck(t, b)
		if c, _, err := ParseConnectRequest(b); err == nil && (c.Version != ProtocolVersion || (!c.Resume && c.Token != Token{})) {
			t.Fatalf("accepted %+v", c)
		}
	})
}

func FuzzParseConnectResponse(f *testing.F) {
	for _, s := range seedsConnectResponse() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, _, err := ParseConnectResponse(b); err == nil && c.ConnectToken != nil {
			tokenResponseCodec.fuzzCheck(t, b)
			if c.Resume || len(c.ConnectToken) < ConnectTokenMinLen || len(c.ConnectToken) > ConnectTokenMaxLen {
				t.Fatalf("accepted %+v", c)
			}
		} else {
			connectResponseCodec.fuzzCheck(t, b)
		}
		if c, _, err := ParseConnectResponse(b); err == nil && (c.Version != ProtocolVersion || (!c.Resume && c.Token != Token{}) || c.Unpinned && c.ConnectToken == nil && !c.Resume) {
			t.Fatalf("accepted %+v", c)
		}
	})
}
