package wire

import (
	"math/rand/v2"
	"testing"
)

var reliableCodec = codec[ReliableFrame]{
	app: AppendReliableFrame, parse: ParseReliableFrame, size: ReliableFrameLen,
}

func randReliableFrame(r *rand.Rand) ReliableFrame {
	return ReliableFrame{Stream: uint8(r.Uint32()), MessageID: Seq(randUint16(r)), Payload: randPayload(r, 300)}
}

func reliableSamples() []ReliableFrame {
	s := []ReliableFrame{
		{Payload: []byte{}},
		{Stream: StreamUnordered, MessageID: 7, Payload: []byte("chat")},
		{Stream: 1, MessageID: 0x0100, Payload: []byte{0xDE, 0xAD, 0xBE, 0xEF}},
		{Stream: 255, MessageID: 65535, Payload: make([]byte, 200)},
	}
	r := testRand(14)
	for i := 0; i < 8; i++ {
		s = append(s, randReliableFrame(r))
	}
	return s
}

func TestReliableFrame(t *testing.T) {
	for _, f := range reliableSamples() {
		reliableCodec.roundTrip(t, f)
	}
	r := testRand(15)
	for i := 0; i < 5000; i++ {
		reliableCodec.roundTrip(t, randReliableFrame(r))
	}
	f := ReliableFrame{Stream: 1, MessageID: 0x0100, Payload: []byte{0xDE, 0xAD, 0xBE, 0xEF}}
	if got := hexs(AppendReliableFrame(nil, f)); got != "03 01 00 01 04 de ad be ef" {
		t.Fatalf("encoding %s", got)
	}
	if !f.Ordered() || (ReliableFrame{}).Ordered() {
		t.Fatal("Ordered")
	}
	mustErr(t, "ParseReliableFrame", ParseReliableFrame, []byte{0x04, 0, 0, 0, 0}, ErrMalformed)
	mustErr(t, "ParseReliableFrame", ParseReliableFrame, []byte{0x03, 0, 0, 0, 0x81}, ErrShort)
}

func seedsReliableFrame() [][]byte { return encodeAll(reliableCodec, reliableSamples()) }

func FuzzParseReliableFrame(f *testing.F) {
	for _, s := range seedsReliableFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { reliableCodec.fuzzCheck(t, b) })
}
