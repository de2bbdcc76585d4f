package wire

import (
	"math/rand/v2"
	"testing"
)

var (
	acceptCodec = codec[Accept]{
		app: AppendAccept, parse: ParseAccept,
		size: func(Accept) int { return AcceptLen },
	}
	acceptBodyCodec = codec[AcceptBody]{
		app: AppendAcceptBody, parse: ParseAcceptBody,
		size: func(AcceptBody) int { return AcceptBodyLen },
	}
)

func randAccept(r *rand.Rand) Accept {
	a := Accept{Nonce: r.Uint64()}
	for i := range a.Ephemeral {
		a.Ephemeral[i] = byte(r.Uint32())
	}
	for i := range a.ServerRandom {
		a.ServerRandom[i] = byte(r.Uint32())
	}
	for i := range a.Body {
		a.Body[i] = byte(r.Uint32())
	}
	return a
}

func randAcceptBody(r *rand.Rand) AcceptBody {
	return AcceptBody{
		PeerID:     uint8(r.IntN(int(MaxPeerID) + 1)),
		Token:      randToken(r),
		MTU:        uint16(576 + r.IntN(1472-576+1)),
		MaxMessage: uint32(r.IntN(MaxMessageLen + 1)),
		// The wire takes every value of the limit fields; ranges are the
		// transport's.
		ReliableBytes:    r.Uint32(),
		MaxPartial:       r.Uint32(),
		ReliableWindow:   uint16(r.Uint32()),
		SequencedStreams: uint16(r.Uint32()),
		OrderedStreams:   uint8(r.Uint32()),
	}
}

func acceptSamples() []Accept {
	s := []Accept{{}, {Nonce: 0x0807060504030201, Ephemeral: PublicKey{0: 0xe0, 31: 0xff}, ServerRandom: [16]byte{0: 0x50, 15: 0x5f},
		Body: [AcceptSealedLen]byte{0: 0xb0, 51: 0xb3}}}
	r := testRand(36)
	for i := 0; i < 4; i++ {
		s = append(s, randAccept(r))
	}
	return s
}

func acceptBodySamples() []AcceptBody {
	s := []AcceptBody{
		{},
		{PeerID: 3, Token: Token{0: 0xC0, 15: 0xCF}, MTU: 1200, MaxMessage: 262144,
			ReliableBytes: 1 << 20, MaxPartial: 8, ReliableWindow: 256, SequencedStreams: 4, OrderedStreams: 4},
		{PeerID: MaxPeerID, MaxMessage: MaxMessageLen, MTU: 0xFFFF,
			ReliableBytes: ^uint32(0), MaxPartial: ^uint32(0), ReliableWindow: 0xFFFF, SequencedStreams: 0xFFFF, OrderedStreams: 0xFF},
	}
	r := testRand(38)
	for i := 0; i < 4; i++ {
		s = append(s, randAcceptBody(r))
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
		acceptBodyCodec.roundTrip(t, randAcceptBody(r))
	}
	for _, a := range acceptBodySamples() {
		acceptBodyCodec.roundTrip(t, a)
	}
	want := "04 01 02 03 04 05 06 07 08 e0" + zeros(30) + " ff 50" + zeros(14) + " 5f b0" + zeros(50) + " b3"
	if got := hexs(AppendAccept(nil, acceptSamples()[1])); got != want {
		t.Fatalf("encoding\n%s\nwant\n%s", got, want)
	}
	want = "03 c0" + zeros(14) + " cf b0 04 00 00 04 00 00 00 10 00 08 00 00 00 00 01 04 00 04"
	if got := hexs(AppendAcceptBody(nil, acceptBodySamples()[1])); got != want {
		t.Fatalf("body encoding\n%s\nwant\n%s", got, want)
	}
	if AcceptHeaderLen+AcceptSealedLen != AcceptLen || AcceptBodyLen+AcceptTagLen != AcceptSealedLen {
		t.Fatal("Accept sizes disagree")
	}
}

// TestAcceptPeerID: ids 0–253 are accepted, 254 and 255 — the action log's
// provenance markers — are malformed (scenario S-E4).
func TestAcceptPeerID(t *testing.T) {
	for id := 0; id < 256; id++ {
		b := AppendAcceptBody(nil, AcceptBody{PeerID: uint8(id)})
		_, _, err := ParseAcceptBody(b)
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
	mustErr(t, "ParseAcceptBody", ParseAcceptBody, AppendAcceptBody(nil, AcceptBody{MaxMessage: MaxMessageLen + 1}), ErrTooLarge)
	mustErr(t, "ParseAccept", ParseAccept, append([]byte{byte(KindReject)}, make([]byte, AcceptLen-1)...), ErrMalformed)
}

// TestAcceptLimitOffsets pins where each limit sits in the Accept body, so
// a field cannot move without docs/WIRE.md §9.5 moving with it.
func TestAcceptLimitOffsets(t *testing.T) {
	b := AppendAcceptBody(nil, AcceptBody{MTU: 0x0102, MaxMessage: 0x030405, ReliableBytes: 0x06070809,
		MaxPartial: 0x0A0B0C0D, ReliableWindow: 0x0E0F, SequencedStreams: 0x1011, OrderedStreams: 0x12})
	for _, c := range []struct {
		off  int
		want []byte
	}{
		{17, []byte{0x02, 0x01}},
		{19, []byte{0x05, 0x04, 0x03, 0x00}},
		{23, []byte{0x09, 0x08, 0x07, 0x06}},
		{27, []byte{0x0D, 0x0C, 0x0B, 0x0A}},
		{31, []byte{0x0F, 0x0E}},
		{33, []byte{0x11, 0x10}},
		{35, []byte{0x12}},
	} {
		if got := b[c.off : c.off+len(c.want)]; string(got) != string(c.want) {
			t.Fatalf("offset %d: % x, want % x", c.off, got, c.want)
		}
	}
	// An Accept of protocol version 2 (53 bytes) is short.
	mustErr(t, "ParseAccept", ParseAccept, append([]byte{byte(KindAccept)}, make([]byte, 52)...), ErrShort)
}

func seedsAccept() [][]byte { return encodeAll(acceptCodec, acceptSamples()) }

func seedsAcceptBody() [][]byte { return encodeAll(acceptBodyCodec, acceptBodySamples()) }

func FuzzParseAccept(f *testing.F) {
	for _, s := range seedsAccept() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		acceptCodec.fuzzCheck(t, b)
	})
}

func FuzzParseAcceptBody(f *testing.F) {
	for _, s := range seedsAcceptBody() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		acceptBodyCodec.fuzzCheck(t, b)
		if a, _, err := ParseAcceptBody(b); err == nil && (a.PeerID > MaxPeerID || a.MaxMessage > MaxMessageLen) {
			t.Fatalf("accepted %+v", a)
		}
	})
}
