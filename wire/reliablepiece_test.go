package wire

import (
	"math/rand/v2"
	"testing"
)

var reliablePieceCodec = codec[ReliablePieceFrame]{
	app: AppendReliablePieceFrame, parse: ParseReliablePieceFrame, size: ReliablePieceFrameLen,
}

func randReliablePieceFrame(r *rand.Rand) ReliablePieceFrame {
	count := uint8(2 + r.IntN(254))
	if r.IntN(4) == 0 {
		count = []uint8{2, 3, 255}[r.IntN(3)]
	}
	p := randPayload(r, 1200)
	if len(p) == 0 {
		p = []byte{byte(r.IntN(256))}
	}
	return ReliablePieceFrame{
		Stream:    uint8(r.IntN(256)),
		MessageID: Seq(randUint16(r)),
		Index:     uint8(r.IntN(int(count))),
		Count:     count,
		Payload:   p,
	}
}

func reliablePieceSamples() []ReliablePieceFrame {
	s := []ReliablePieceFrame{
		{Stream: 1, MessageID: 0x0042, Index: 0, Count: 3, Payload: []byte("abc")},
		{Stream: 0, MessageID: 65535, Index: 254, Count: 255, Payload: make([]byte, 1150)},
		{Stream: 255, Index: 1, Count: 2, Payload: []byte{7}},
	}
	r := testRand(46)
	for i := 0; i < 8; i++ {
		s = append(s, randReliablePieceFrame(r))
	}
	return s
}

func TestReliablePieceFrame(t *testing.T) {
	for _, f := range reliablePieceSamples() {
		reliablePieceCodec.roundTrip(t, f)
	}
	r := testRand(47)
	for i := 0; i < 5000; i++ {
		reliablePieceCodec.roundTrip(t, randReliablePieceFrame(r))
	}
	f := ReliablePieceFrame{Stream: 2, MessageID: 0x0107, Index: 1, Count: 3, Payload: []byte{1, 2}}
	if got := hexs(AppendReliablePieceFrame(nil, f)); got != "08 02 07 01 01 03 02 01 02" {
		t.Fatalf("encoding %s", got)
	}
}

func TestReliablePieceFrameErrors(t *testing.T) {
	ok := AppendReliablePieceFrame(nil, ReliablePieceFrame{Stream: 1, Index: 1, Count: 3, Payload: []byte{1}})
	mut := func(i int, v byte) []byte {
		b := append([]byte(nil), ok...)
		b[i] = v
		return b
	}
	mustErr(t, "ParseReliablePieceFrame", ParseReliablePieceFrame, mut(5, 0), ErrMalformed) // count 0
	mustErr(t, "ParseReliablePieceFrame", ParseReliablePieceFrame, mut(5, 1), ErrMalformed) // count 1: a whole message
	mustErr(t, "ParseReliablePieceFrame", ParseReliablePieceFrame, mut(4, 3), ErrMalformed) // index = count
	mustErr(t, "ParseReliablePieceFrame", ParseReliablePieceFrame, mut(0, byte(FrameReliable)), ErrMalformed)
	mustErr(t, "ParseReliablePieceFrame", ParseReliablePieceFrame, []byte{0x08, 1, 0, 0, 0, 2, 0}, ErrMalformed) // empty piece
	mustErr(t, "ParseReliablePieceFrame", ParseReliablePieceFrame, ok[:len(ok)-1], ErrShort)
	mustErr(t, "ParseReliablePieceFrame", ParseReliablePieceFrame, ok[:3], ErrShort)
	// Every (index, count) pair: valid exactly when 2 ≤ count and index < count.
	for c := 0; c < 256; c++ {
		for i := 0; i < 256; i += 17 {
			b := mut(4, byte(i))
			b[5] = byte(c)
			_, _, err := ParseReliablePieceFrame(b)
			if (err == nil) != (c >= 2 && i < c) {
				t.Fatalf("index %d count %d: %v", i, c, err)
			}
		}
	}
}

func seedsReliablePieceFrame() [][]byte { return encodeAll(reliablePieceCodec, reliablePieceSamples()) }

func FuzzParseReliablePieceFrame(f *testing.F) {
	for _, s := range seedsReliablePieceFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		reliablePieceCodec.fuzzCheck(t, b)
		if fr, _, err := ParseReliablePieceFrame(b); err == nil {
			if fr.Count < 2 || fr.Index >= fr.Count || len(fr.Payload) == 0 {
				t.Fatalf("accepted invalid piece %+v", fr)
			}
		}
	})
}
