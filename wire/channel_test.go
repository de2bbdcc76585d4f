package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

var channelCodec = codec[ChannelHeader]{
	app:   AppendChannelHeader,
	parse: ParseChannelHeader,
	size:  ChannelHeaderLen,
}

// refAppendChannelHeader is the slow, literal reading of docs/WIRE.md, used
// as the oracle for the optimized encoder.
func refAppendChannelHeader(dst []byte, h ChannelHeader) []byte {
	if h.NoAck {
		return append(dst, 0x20, byte(int(h.Seq)%256), byte(int(h.Seq)/256))
	}
	distance := (int(h.Seq) - int(h.Ack) + 65536) % 65536
	shortAck := distance < 256
	var present [4]bool
	prefix := 0
	for i := 0; i < 4; i++ {
		b := (h.AckBits >> (8 * i)) & 0xFF
		present[i] = b != 0xFF
		if present[i] {
			prefix += 1 << i
		}
	}
	if shortAck {
		prefix += 16
	}
	out := []byte{byte(prefix), byte(int(h.Seq) % 256), byte(int(h.Seq) / 256)}
	if shortAck {
		out = append(out, byte(distance))
	} else {
		out = append(out, byte(int(h.Ack)%256), byte(int(h.Ack)/256))
	}
	for i := 0; i < 4; i++ {
		if present[i] {
			out = append(out, byte(h.AckBits>>(8*i)))
		}
	}
	if h.AckDelay != 0 && len(out) < 9 { // never a 10-byte header
		out[0] += 64
		out = append(out, h.AckDelay)
	}
	return append(dst, out...)
}

func randChannelHeader(r *rand.Rand) ChannelHeader {
	h := ChannelHeader{Seq: Seq(randUint16(r))}
	if r.IntN(10) == 0 {
		h.NoAck = true // Ack and AckBits stay zero: what the decoder returns
		return h
	}
	switch r.IntN(4) {
	case 0:
		h.Ack = h.Seq.Add(-[]int{0, 1, 255, 256, 257, 32768, 65535}[r.IntN(7)])
	case 1:
		h.Ack = h.Seq.Add(-r.IntN(256))
	default:
		h.Ack = Seq(randUint16(r))
	}
	for i := 0; i < 4; i++ {
		var b uint32
		switch r.IntN(3) {
		case 0:
			b = 0xFF
		case 1:
			b = []uint32{0x00, 0xFE, 0x7F, 0x01}[r.IntN(4)]
		default:
			b = r.Uint32() & 0xFF
		}
		h.AckBits |= b << (8 * i)
	}
	switch r.IntN(3) {
	case 0:
		h.AckDelay = []uint8{1, 50, 255}[r.IntN(3)]
	case 1:
		h.AckDelay = uint8(r.Uint32())
	}
	if len(refAppendChannelHeader(nil, ChannelHeader{Seq: h.Seq, Ack: h.Ack, AckBits: h.AckBits})) == ChannelHeaderMaxLen {
		h.AckDelay = 0 // no room: the decoder returns 0
	}
	return h
}

func channelSamples() []ChannelHeader {
	s := []ChannelHeader{
		{},
		{Seq: 100, Ack: 99, AckBits: 0xFFFFFFFF}, // steady, lossless
		{Seq: 0, Ack: 65535, AckBits: 0xFFFFFFFF}, // across the wrap
		{Seq: 1000, Ack: 40000, AckBits: 0},       // worst case
		{Seq: 500, Ack: 245, AckBits: 0x12345678}, // distance 255: short
		{Seq: 500, Ack: 244, AckBits: 0xFFFF00FF}, // distance 256: full
		{Seq: 7, Ack: 7, AckBits: 0xFFFFFFFE},
		{Seq: 0x1234, Ack: 0x1230, AckBits: 0xFFFFFFFF, AckDelay: 30}, // delayed ack: 3 ms
		{Seq: 1000, Ack: 40000, AckBits: 0xFF000000, AckDelay: 255},   // the largest header with a delay
		{Seq: 0, NoAck: true},                                         // first datagram, nothing received yet
		{Seq: 65535, NoAck: true},                                     // NoAck later in the seq space
	}
	r := testRand(6)
	for i := 0; i < 24; i++ {
		s = append(s, randChannelHeader(r))
	}
	return s
}

func TestChannelHeaderRoundTrip(t *testing.T) {
	for _, h := range channelSamples() {
		channelCodec.roundTrip(t, h)
	}
	r := testRand(7)
	for i := 0; i < 50000; i++ {
		h := randChannelHeader(r)
		enc := channelCodec.roundTrip(t, h)
		if ref := refAppendChannelHeader(nil, h); string(ref) != string(enc) {
			t.Fatalf("%+v: % x, reference % x", h, enc, ref)
		}
	}
}

// TestChannelHeaderAllShapes covers every combination of the four
// present/omitted ack-bits bytes with both ack forms.
func TestChannelHeaderAllShapes(t *testing.T) {
	for mask := 0; mask < 16; mask++ {
		for _, d := range []int{0, 255, 256, 32768} {
			h := ChannelHeader{Seq: 1234, Ack: Seq(1234).Add(-d), AckBits: 0xFFFFFFFF}
			for i := 0; i < 4; i++ {
				if mask&(1<<i) != 0 {
					h.AckBits &^= 0xFF << (8 * i)
					h.AckBits |= uint32(0x11*(i+1)) << (8 * i)
				}
			}
			enc := channelCodec.roundTrip(t, h)
			want := 4 + popcount4(mask)
			if d > 255 {
				want++
			}
			if len(enc) != want || int(enc[0]&0x0F) != mask {
				t.Fatalf("mask %04b d=%d: % x", mask, d, enc)
			}
		}
	}
}

func popcount4(m int) int { return m&1 + m>>1&1 + m>>2&1 + m>>3&1 }

// TestChannelHeaderSize pins the sizes docs/WIRE.md promises: 4 bytes for
// a lossless steady stream, 9 in the worst case, never outside [3, 9].
func TestChannelHeaderSize(t *testing.T) {
	steady := ChannelHeader{Seq: 5000, Ack: 4990, AckBits: 0xFFFFFFFF}
	if n := len(AppendChannelHeader(nil, steady)); n != 4 {
		t.Fatalf("steady header is %d bytes, want 4", n)
	}
	worst := ChannelHeader{Seq: 5000, Ack: 1000, AckBits: 0}
	if n := len(AppendChannelHeader(nil, worst)); n != 9 {
		t.Fatalf("worst header is %d bytes, want 9", n)
	}
	// The ack delay never makes it 10: there it is not sent.
	withDelay := worst
	withDelay.AckDelay = 7
	if enc := AppendChannelHeader(nil, withDelay); len(enc) != 9 || string(enc) != string(AppendChannelHeader(nil, worst)) || ChannelHeaderLen(withDelay) != 9 {
		t.Fatalf("worst header with an ack delay: % x", enc)
	}
	if ChannelHeaderLen(steady) != ChannelHeaderSteadyLen || ChannelHeaderLen(worst) != ChannelHeaderMaxLen {
		t.Fatal("ChannelHeaderSteadyLen/MaxLen do not match the encoder")
	}
	noAck := ChannelHeader{Seq: 5000, Ack: 4990, AckBits: 0x1234, NoAck: true} // Ack, AckBits ignored
	if n := len(AppendChannelHeader(nil, noAck)); n != 3 || ChannelHeaderLen(noAck) != ChannelHeaderMinLen {
		t.Fatalf("NoAck header is %d bytes, want 3", n)
	}
	r := testRand(8)
	for i := 0; i < 10000; i++ {
		n := ChannelHeaderLen(randChannelHeader(r))
		if n < ChannelHeaderMinLen || n > ChannelHeaderMaxLen {
			t.Fatalf("length %d", n)
		}
	}
}

// TestChannelHeaderExamples pins the worked examples in docs/WIRE.md.
func TestChannelHeaderExamples(t *testing.T) {
	cases := []struct {
		h   ChannelHeader
		hex string
	}{
		{ChannelHeader{Seq: 0x1234, Ack: 0x1230, AckBits: 0xFFFFFFFF}, "10 34 12 04"},
		{ChannelHeader{Seq: 0x1234, Ack: 0x0230, AckBits: 0x00F0FF0F}, "0d 34 12 30 02 0f f0 00"},
		{ChannelHeader{Seq: 0x1234, Ack: 0x0230, AckBits: 0x00000000}, "0f 34 12 30 02 00 00 00 00"},
		{ChannelHeader{Seq: 0x0003, Ack: 0xFFFE, AckBits: 0xFFFFFFDF}, "11 03 00 05 df"},
		{ChannelHeader{Seq: 0x1234, NoAck: true}, "20 34 12"},
		{ChannelHeader{Seq: 0x1234, Ack: 0x1230, AckBits: 0xFFFFFFFF, AckDelay: 30}, "50 34 12 04 1e"},
		{ChannelHeader{Seq: 0x0003, Ack: 0xFFFE, AckBits: 0xFFFFFFDF, AckDelay: 0xFF}, "51 03 00 05 df ff"},
	}
	for _, c := range cases {
		if got := hexs(channelCodec.roundTrip(t, c.h)); got != c.hex {
			t.Errorf("%+v: %s, want %s", c.h, got, c.hex)
		}
	}
}

func TestChannelHeaderErrors(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want error
	}{
		{nil, ErrShort},
		{[]byte{0x10, 1, 0}, ErrShort},
		{[]byte{0x50, 1, 0, 0}, ErrShort},                       // ack-delay byte missing
		{[]byte{0x50, 1, 0, 0, 0}, ErrMalformed},                // ack delay 0 must be omitted
		{[]byte{0x60, 1, 0}, ErrMalformed},                      // NoAck with an ack delay
		{[]byte{0x4f, 1, 0, 0, 1, 0, 0, 0, 0, 5}, ErrMalformed}, // a 10-byte header
		{[]byte{0x20, 1}, ErrShort},                             // NoAck: seq cut
		{[]byte{0x30, 1, 0, 0}, ErrMalformed},                   // NoAck with short ack
		{[]byte{0x21, 1, 0, 0}, ErrMalformed},                   // NoAck with ack bits
		{[]byte{0x80}, ErrMalformed},                            // reserved bit 7
		{[]byte{0x11, 1, 0, 0}, ErrShort},                       // ack-bits byte 0 missing
		{[]byte{0x11, 1, 0, 0, 0xFF}, ErrMalformed},             // 0xFF must be omitted
		{[]byte{0x00, 0x34, 0x12, 0x30, 0x12}, ErrMalformed},    // full ack, distance 4
		{[]byte{0x00, 0x34, 0x12, 0x35, 0x11}, ErrMalformed},    // full ack, distance 255
		{[]byte{0x00, 0x34, 0x12, 0x34}, ErrShort},
	} {
		mustErr(t, "ParseChannelHeader", ParseChannelHeader, c.in, c.want)
	}
	// Distance 256 in full form is the smallest legal long ack.
	if _, n, err := ParseChannelHeader([]byte{0x00, 0x34, 0x12, 0x34, 0x11}); err != nil || n != 5 {
		t.Fatalf("distance 256: n=%d err=%v", n, err)
	}
}

// TestChannelHeaderNoAck: a NoAck header carries only the seq; whatever
// Ack and AckBits the caller left in the struct are not sent, and the
// decoder reports them as zero with NoAck set.
func TestChannelHeaderNoAck(t *testing.T) {
	for _, seq := range []Seq{0, 1, 255, 256, 65535} {
		enc := AppendChannelHeader(nil, ChannelHeader{Seq: seq, Ack: seq - 3, AckBits: 0xDEADBEEF, AckDelay: 9, NoAck: true})
		h, n, err := ParseChannelHeader(enc)
		if err != nil || n != 3 || h != (ChannelHeader{Seq: seq, NoAck: true}) {
			t.Fatalf("seq %d: %+v %d %v", seq, h, n, err)
		}
	}
	// A header with an ack never decodes as NoAck.
	r := testRand(9)
	for i := 0; i < 1000; i++ {
		h := randChannelHeader(r)
		got, _, _ := ParseChannelHeader(AppendChannelHeader(nil, h))
		if got.NoAck != h.NoAck {
			t.Fatalf("%+v decoded with NoAck=%v", h, got.NoAck)
		}
	}
}

// TestChannelHeaderAckBitsMeaning checks the documented meaning of the
// fields on the receive history of scenario S-B1: seqs {n, n−1, n−5}
// received → ack n, bits 0 and 4.
func TestChannelHeaderAckBitsMeaning(t *testing.T) {
	n := Seq(2)
	received := map[Seq]bool{n: true, n.Add(-1): true, n.Add(-5): true}
	h := ChannelHeader{Seq: 9, Ack: n}
	for i := 0; i < 32; i++ {
		if received[h.Ack.Add(-1-i)] {
			h.AckBits |= 1 << i
		}
	}
	if h.AckBits != 1|1<<4 {
		t.Fatalf("bits %032b", h.AckBits)
	}
	got, _, err := ParseChannelHeader(AppendChannelHeader(nil, h))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 32; i++ {
		s := got.Ack.Add(-1 - i)
		if (got.AckBits>>i&1 == 1) != received[s] {
			t.Fatalf("bit %d (seq %d) wrong", i, s)
		}
	}
}

// TestAckDelayUnits: durations round down to whole 100 µs units and clamp
// to the byte.
func TestAckDelayUnits(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want uint8
	}{{-time.Millisecond, 0}, {0, 0}, {99 * time.Microsecond, 0}, {100 * time.Microsecond, 1},
		{3 * time.Millisecond, 30}, {MaxAckDelay, 255}, {time.Second, 255}} {
		if got := AckDelayUnits(c.d); got != c.want {
			t.Errorf("AckDelayUnits(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func seedsChannelHeader() [][]byte {
	var s [][]byte
	for _, h := range channelSamples() {
		s = append(s, AppendChannelHeader(nil, h))
	}
	return s
}

func FuzzParseChannelHeader(f *testing.F) {
	for _, s := range seedsChannelHeader() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		channelCodec.fuzzCheck(t, b)
		if h, _, err := ParseChannelHeader(b); err == nil {
			if ref := refAppendChannelHeader(nil, h); string(ref) != string(AppendChannelHeader(nil, h)) {
				t.Fatalf("%+v: encoder disagrees with the reference", h)
			}
		}
	})
}

// TestChannelHeaderFastPaths: AppendChannelHeader's and
// ParseChannelHeader's inline handling of the steady header gives exactly
// what the general encoder and decoder give, on random headers biased to
// the steady shape and on random bytes biased to its prefixes.
func TestChannelHeaderFastPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		h := ChannelHeader{Seq: Seq(rng.Uint32()), AckBits: rng.Uint32(), AckDelay: uint8(rng.Uint32())}
		h.Ack = h.Seq - Seq(rng.IntN(300))
		if rng.IntN(2) == 0 {
			h.AckBits = ^uint32(0)
		}
		if rng.IntN(3) == 0 {
			h.AckDelay = 0
		}
		h.NoAck = rng.IntN(10) == 0
		pre := make([]byte, rng.IntN(3), 2+rng.IntN(12))
		if got, want := AppendChannelHeader(pre, h), appendChannelHeader(pre, h); !bytes.Equal(got, want) {
			t.Fatalf("%+v: fast % x, general % x", h, got, want)
		}
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if len(b) > 0 && rng.IntN(2) == 0 {
			b[0] = []byte{chanShortAck, chanShortAck | chanAckDelay, 0, chanAckDelay}[rng.IntN(4)]
			if len(b) > 4 && rng.IntN(4) == 0 {
				b[4] = 0
			}
			if len(b) > 5 && rng.IntN(4) == 0 {
				b[5] = 0
			}
			if len(b) > 4 && rng.IntN(4) == 0 {
				ack := Seq(b[1]) | Seq(b[2])<<8 - Seq(rng.IntN(300)) // near the distance's limit
				b[3], b[4] = byte(ack), byte(ack>>8)
			}
		}
		h1, n1, err1 := ParseChannelHeader(b)
		h2, n2, err2 := parseChannelHeader(b)
		if h1 != h2 || n1 != n2 || err1 != err2 {
			t.Fatalf("% x: fast %+v %d %v, general %+v %d %v", b, h1, n1, err1, h2, n2, err2)
		}
	}
}
