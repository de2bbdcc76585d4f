package wire

import (
	"math/rand/v2"
	"testing"
)

var acceptCodec = codec[Accept]{
	app: AppendAccept, parse: ParseAccept,
	size: func(Accept) int { return AcceptLen },
}

func randAccept(r *rand.Rand) Accept {
	return Accept{
		Nonce:      r.Uint64(),
		PeerID:     uint8(r.IntN(int(MaxPeerID) + 1)),
		Secret:     r.Uint64(),
		Token:      randToken(r),
		MTU:        uint16(576 + r.IntN(1472-576+1)),
		MaxMessage: uint32(r.IntN(MaxMessageLen + 1)),
	}
}

func acceptSamples() []Accept {
	s := []Accept{
		{},
		{Nonce: 0x0807060504030201, PeerID: 3, Secret: 0x1122334455667788, Token: Token{0: 0xC0, 15: 0xCF}, MTU: 1200, MaxMessage: 262144},
		{PeerID: MaxPeerID, MaxMessage: MaxMessageLen, MTU: 0xFFFF},
	}
	r := testRand(36)
	for i := 0; i < 4; i++ {
		s = append(s, randAccept(r))
	}
	return s
}

func TestAccept(t *testing.T) {
	for _, a := range acceptSamples() {
		acceptCodec.roundTrip(t, a)
	}
	r := testRand(37)
	for i := 0; i < 2000; i++ {
		acceptCodec.roundTrip(t, randAccept(r))
	}
	want := "04 01 02 03 04 05 06 07 08 03 88 77 66 55 44 33 22 11 c0" + zeros(14) + " cf b0 04 00 00 04 00"
	if got := hexs(AppendAccept(nil, acceptSamples()[1])); got != want {
		t.Fatalf("encoding\n%s\nwant\n%s", got, want)
	}
}

// TestAcceptPeerID: ids 0–253 are accepted, 254 and 255 — the action log's
// provenance markers — are malformed (scenario S-E4).
func TestAcceptPeerID(t *testing.T) {
	for id := 0; id < 256; id++ {
		b := AppendAccept(nil, Accept{PeerID: uint8(id)})
		_, _, err := ParseAccept(b)
		if (err == nil) != (id <= int(MaxPeerID)) {
			t.Fatalf("peer id %d: %v", id, err)
		}
		if id > int(MaxPeerID) && err != ErrMalformed {
			t.Fatalf("peer id %d: %v, want ErrMalformed", id, err)
		}
	}
	if SenderDerived != 254 || SenderLocal != 255 || MaxPeerID != 253 {
		t.Fatal("provenance constants moved")
	}
	mustErr(t, "ParseAccept", ParseAccept, AppendAccept(nil, Accept{MaxMessage: MaxMessageLen + 1}), ErrTooLarge)
	mustErr(t, "ParseAccept", ParseAccept, append([]byte{byte(KindReject)}, make([]byte, 39)...), ErrMalformed)
}

func seedsAccept() [][]byte { return encodeAll(acceptCodec, acceptSamples()) }

func FuzzParseAccept(f *testing.F) {
	for _, s := range seedsAccept() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		acceptCodec.fuzzCheck(t, b)
		if a, _, err := ParseAccept(b); err == nil && (a.PeerID > MaxPeerID || a.MaxMessage > MaxMessageLen) {
			t.Fatalf("accepted %+v", a)
		}
	})
}
