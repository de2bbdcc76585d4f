package wire

import (
	"math/rand/v2"
	"testing"
)

var fragmentCodec = codec[FragmentFrame]{
	app: AppendFragmentFrame, parse: ParseFragmentFrame, size: FragmentFrameLen,
}

var fragmentModes = []FrameType{FrameUnreliable, FrameSequenced, FrameActionStream}

func randFragmentFrame(r *rand.Rand) FragmentFrame {
	count := uint8(1 + r.IntN(255))
	if r.IntN(4) == 0 {
		count = []uint8{1, 2, 255}[r.IntN(3)]
	}
	return FragmentFrame{
		Mode:      fragmentModes[r.IntN(len(fragmentModes))],
		MessageID: Seq(randUint16(r)),
		Index:     uint8(r.IntN(int(count))),
		Count:     count,
		Payload:   randPayload(r, 1200),
	}
}

func fragmentSamples() []FragmentFrame {
	s := []FragmentFrame{
		{Mode: FrameSequenced, MessageID: 0x0042, Index: 0, Count: 3, Payload: []byte("abc")},
		{Mode: FrameActionStream, MessageID: 65535, Index: 254, Count: 255, Payload: make([]byte, 1150)},
		{Mode: FrameUnreliable, Index: 0, Count: 1, Payload: []byte{}},
	}
	r := testRand(16)
	for i := 0; i < 8; i++ {
		s = append(s, randFragmentFrame(r))
	}
	return s
}

func TestFragmentFrame(t *testing.T) {
	for _, f := range fragmentSamples() {
		fragmentCodec.roundTrip(t, f)
	}
	r := testRand(17)
	for i := 0; i < 5000; i++ {
		fragmentCodec.roundTrip(t, randFragmentFrame(r))
	}
	f := FragmentFrame{Mode: FrameUnreliable, MessageID: 0x0042, Index: 1, Count: 3, Payload: []byte{1, 2}}
	if got := hexs(AppendFragmentFrame(nil, f)); got != "04 01 42 00 01 03 02 01 02" {
		t.Fatalf("encoding %s", got)
	}
}

func TestFragmentFrameErrors(t *testing.T) {
	ok := AppendFragmentFrame(nil, FragmentFrame{Mode: FrameUnreliable, Index: 1, Count: 3, Payload: []byte{1}})
	mut := func(i int, v byte) []byte {
		b := append([]byte(nil), ok...)
		b[i] = v
		return b
	}
	mustErr(t, "ParseFragmentFrame", ParseFragmentFrame, mut(5, 0), ErrMalformed) // count 0
	mustErr(t, "ParseFragmentFrame", ParseFragmentFrame, mut(4, 3), ErrMalformed) // index = count
	mustErr(t, "ParseFragmentFrame", ParseFragmentFrame, mut(4, 9), ErrMalformed) // index > count
	for _, m := range []byte{0, byte(FrameReliable), byte(FrameFragment), byte(FrameKeepAlive), byte(FrameDisconnect), byte(FrameReliablePiece), 9, 0xFF} {
		mustErr(t, "ParseFragmentFrame", ParseFragmentFrame, mut(1, m), ErrMalformed)
		mustErr(t, "ParseFragmentFrame", ParseFragmentFrame, []byte{0x04, m}, ErrMalformed)
	}
	mustErr(t, "ParseFragmentFrame", ParseFragmentFrame, []byte{0x03}, ErrMalformed)
	mustErr(t, "ParseFragmentFrame", ParseFragmentFrame, ok[:len(ok)-1], ErrShort)
	// Every (index, count) pair: valid exactly when index < count.
	for c := 0; c < 256; c++ {
		for i := 0; i < 256; i += 17 {
			b := mut(4, byte(i))
			b[5] = byte(c)
			_, _, err := ParseFragmentFrame(b)
			if (err == nil) != (c > 0 && i < c) {
				t.Fatalf("index %d count %d: %v", i, c, err)
			}
		}
	}
}

func seedsFragmentFrame() [][]byte { return encodeAll(fragmentCodec, fragmentSamples()) }

func FuzzParseFragmentFrame(f *testing.F) {
	for _, s := range seedsFragmentFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fragmentCodec.fuzzCheck(t, b)
		if fr, _, err := ParseFragmentFrame(b); err == nil {
			if fr.Count == 0 || fr.Index >= fr.Count || !fr.Mode.Fragmentable() {
				t.Fatalf("accepted invalid fragment %+v", fr)
			}
		}
	})
}
