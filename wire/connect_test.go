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
		size: func(ConnectResponse) int { return ConnectResponseLen },
	}
)

func randConnectRequest(r *rand.Rand) ConnectRequest {
	c := ConnectRequest{Version: ProtocolVersion, Nonce: r.Uint64()}
	if r.IntN(2) == 0 {
		c.Resume, c.Token = true, randToken(r)
	}
	return c
}

func randConnectResponse(r *rand.Rand) ConnectResponse {
	q := randConnectRequest(r)
	return ConnectResponse{Version: q.Version, Nonce: q.Nonce, Resume: q.Resume, Token: q.Token, Cookie: randCookie(r)}
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
	want := "01 74 77 69 72 02 00 01 02 03 04 05 06 07 08 00" + zeros(48)
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
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(15, 0x02), ErrMalformed) // reserved flag
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(20, 0x01), ErrMalformed) // token without resume
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(63, 0x01), ErrMalformed) // padding
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, mut(32, 0x80), ErrMalformed) // padding
	// A token with the resume flag is fine.
	if _, _, err := ParseConnectRequest(mut(15, 0x01)); err != nil {
		t.Fatal(err)
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
	}{{0, byte(KindConnectRequest)}, {15, 0x80}, {31, 1}, {52, 1}, {63, 1}} {
		b := append([]byte(nil), ok...)
		b[c.at] = c.v
		mustErr(t, "ParseConnectResponse", ParseConnectResponse, b, ErrMalformed)
	}
	// The cookie occupies bytes 32–51.
	for i := 32; i < 52; i++ {
		b := append([]byte(nil), ok...)
		b[i] = 0x5A
		if _, _, err := ParseConnectResponse(b); err != nil {
			t.Fatalf("cookie byte %d: %v", i, err)
		}
	}
}

func seedsConnectRequest() [][]byte {
	s := encodeAll(connectRequestCodec, connectRequestSamples())
	return append(s, versionedPrefix(KindConnectRequest, 7, 1, 64))
}

func seedsConnectResponse() [][]byte {
	s := encodeAll(connectResponseCodec, connectResponseSamples())
	return append(s, versionedPrefix(KindConnectResponse, 7, 1, 64))
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
		connectResponseCodec.fuzzCheck(t, b)
		if c, _, err := ParseConnectResponse(b); err == nil && (c.Version != ProtocolVersion || (!c.Resume && c.Token != Token{})) {
			t.Fatalf("accepted %+v", c)
		}
	})
}
