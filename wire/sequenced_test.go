package wire

import (
	"math/rand/v2"
	"testing"
)

var sequencedCodec = codec[SequencedFrame]{
	app: AppendSequencedFrame, parse: ParseSequencedFrame, size: SequencedFrameLen,
}

func randSequencedFrame(r *rand.Rand) SequencedFrame {
	return SequencedFrame{Stream: uint8(r.Uint32()), Seq: Seq(randUint16(r)), Payload: randPayload(r, 300)}
}

func sequencedSamples() []SequencedFrame {
	s := []SequencedFrame{
		{Payload: []byte{}},
		{Stream: 255, Seq: 65535, Payload: []byte("pos")},
		{Stream: 3, Seq: 0x0102, Payload: make([]byte, 128)},
	}
	r := testRand(12)
	for i := 0; i < 8; i++ {
		s = append(s, randSequencedFrame(r))
	}
	return s
}

func TestSequencedFrame(t *testing.T) {
	for _, f := range sequencedSamples() {
		sequencedCodec.roundTrip(t, f)
	}
	r := testRand(13)
	for i := 0; i < 5000; i++ {
		sequencedCodec.roundTrip(t, randSequencedFrame(r))
	}
	if got := hexs(AppendSequencedFrame(nil, SequencedFrame{Stream: 2, Seq: 0x0304, Payload: []byte{9}})); got != "02 02 04 03 01 09" {
		t.Fatalf("encoding %s", got)
	}
	mustErr(t, "ParseSequencedFrame", ParseSequencedFrame, []byte{0x01, 0, 0, 0, 0}, ErrMalformed)
	mustErr(t, "ParseSequencedFrame", ParseSequencedFrame, []byte{0x02, 0, 0, 0, 3, 1}, ErrShort)
}

func seedsSequencedFrame() [][]byte { return encodeAll(sequencedCodec, sequencedSamples()) }

func FuzzParseSequencedFrame(f *testing.F) {
	for _, s := range seedsSequencedFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { sequencedCodec.fuzzCheck(t, b) })
}
