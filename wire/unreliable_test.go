package wire

import "testing"

var unreliableCodec = codec[UnreliableFrame]{
	app: AppendUnreliableFrame, parse: ParseUnreliableFrame, size: UnreliableFrameLen,
}

func unreliableSamples() []UnreliableFrame {
	s := []UnreliableFrame{{Payload: []byte{}}, {Payload: []byte("hello")}, {Payload: make([]byte, 300)}}
	r := testRand(10)
	for i := 0; i < 8; i++ {
		s = append(s, UnreliableFrame{Payload: randPayload(r, 200)})
	}
	return s
}

func TestUnreliableFrame(t *testing.T) {
	for _, f := range unreliableSamples() {
		unreliableCodec.roundTrip(t, f)
	}
	r := testRand(11)
	for i := 0; i < 5000; i++ {
		unreliableCodec.roundTrip(t, UnreliableFrame{Payload: randPayload(r, 1<<10)})
	}
	if got := hexs(AppendUnreliableFrame(nil, UnreliableFrame{Payload: []byte{0xAB, 0xCD}})); got != "01 02 ab cd" {
		t.Fatalf("encoding %s", got)
	}
	mustErr(t, "ParseUnreliableFrame", ParseUnreliableFrame, []byte{0x01, 0x05, 1, 2}, ErrShort)
	mustErr(t, "ParseUnreliableFrame", ParseUnreliableFrame, []byte{0x02, 0x00}, ErrMalformed)
	mustErr(t, "ParseUnreliableFrame", ParseUnreliableFrame, []byte{0x01, 0x80, 0x00}, ErrMalformed)
	// 2^24 + 1 declared: over MaxMessageLen, whatever follows.
	mustErr(t, "ParseUnreliableFrame", ParseUnreliableFrame, AppendUvarint([]byte{0x01}, MaxMessageLen+1), ErrTooLarge)
	mustErr(t, "ParseUnreliableFrame", ParseUnreliableFrame, AppendUvarint([]byte{0x01}, MaxMessageLen), ErrShort)
	mustErr(t, "ParseUnreliableFrame", ParseUnreliableFrame, []byte{0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, ErrOverflow)
}

func seedsUnreliableFrame() [][]byte { return encodeAll(unreliableCodec, unreliableSamples()) }

func FuzzParseUnreliableFrame(f *testing.F) {
	for _, s := range seedsUnreliableFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { unreliableCodec.fuzzCheck(t, b) })
}

// encodeAll returns the encoding of each sample, for fuzz seeds.
func encodeAll[T any](c codec[T], vs []T) [][]byte {
	out := make([][]byte, 0, len(vs))
	for _, v := range vs {
		out = append(out, c.app(nil, v))
	}
	return out
}
