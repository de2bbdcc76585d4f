package wire

import "testing"

var sessionCodec = codec[SessionHeader]{
	app:   AppendSessionHeader,
	parse: ParseSessionHeader,
	size:  func(SessionHeader) int { return SessionHeaderLen },
}

func TestSessionHeader(t *testing.T) {
	enc := sessionCodec.roundTrip(t, SessionHeader{Secret: 0x0807060504030201})
	if got := hexs(enc); got != "06 01 02 03 04 05 06 07 08" {
		t.Fatalf("encoding %s", got)
	}
	r := testRand(5)
	for i := 0; i < 1000; i++ {
		sessionCodec.roundTrip(t, SessionHeader{Secret: randUint64(r)})
	}
	mustErr(t, "ParseSessionHeader", ParseSessionHeader, []byte{byte(KindConnectRequest), 1, 2, 3, 4, 5, 6, 7, 8}, ErrMalformed)
	mustErr(t, "ParseSessionHeader", ParseSessionHeader, []byte{0x00}, ErrMalformed)
}

func seedsSessionHeader() [][]byte {
	return [][]byte{
		AppendSessionHeader(nil, SessionHeader{}),
		AppendSessionHeader(nil, SessionHeader{Secret: 0xDEADBEEFCAFEF00D}),
	}
}

func FuzzParseSessionHeader(f *testing.F) {
	for _, s := range seedsSessionHeader() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { sessionCodec.fuzzCheck(t, b) })
}
