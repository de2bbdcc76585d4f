package fragment

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// randBytes is a fixed pseudo-random source of payload bytes, larger than
// the largest message at MTU 1472 (255 × 1446 = 368 730 bytes).
var randBytes = func() []byte {
	b := make([]byte, 400_000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// fixedLens are the bytes before the length varint of the frame types a
// fragmented message can be.
var fixedLens = []struct {
	t     wire.FrameType
	fixed int
}{
	{wire.FrameUnreliable, 1},
	{wire.FrameSequenced, 4},
	{wire.FrameActionStream, 1},
}

// appendFrameOfLen appends a valid frame encoding of exactly n bytes
// (n ≥ 2) to dst, its payload taken from randBytes at offset seed, and
// returns it with its type. Not every n is reachable with one frame type
// (1 + varint(p) + p skips 130, for example), so it tries types with
// different fixed-field lengths until one fits exactly.
func appendFrameOfLen(tb testing.TB, dst []byte, n, seed int) ([]byte, wire.FrameType) {
	tb.Helper()
	for _, c := range fixedLens {
		p := wire.FramePayloadRoom(c.t, n)
		if p < 0 || wire.FrameLen(c.t, p) != n {
			continue
		}
		start := len(dst)
		dst = append(dst, byte(c.t))
		for range c.fixed - 1 {
			dst = append(dst, byte(seed))
		}
		dst = wire.AppendUvarint(dst, uint64(p))
		off := seed % (len(randBytes) - p + 1)
		dst = append(dst, randBytes[off:off+p]...)
		if len(dst)-start != n {
			tb.Fatalf("built a %d-byte frame, want %d", len(dst)-start, n)
		}
		return dst, c.t
	}
	tb.Fatalf("no frame type has an encoding of exactly %d bytes", n)
	return nil, 0
}

// frameOfLen returns a new valid frame of exactly n bytes and its type.
func frameOfLen(tb testing.TB, n, seed int) ([]byte, wire.FrameType) {
	tb.Helper()
	return appendFrameOfLen(tb, make([]byte, 0, n), n, seed)
}

// split encodes every piece of msg with AppendPiece and decodes it back
// with wire.ParseFragmentFrame, checking the decoder takes the whole
// encoding. Each returned frame's payload aliases its own encoding.
func split(tb testing.TB, msg []byte, ps int, mode wire.FrameType, id wire.Seq) []wire.FragmentFrame {
	tb.Helper()
	n, err := Count(len(msg), ps)
	if err != nil {
		tb.Fatalf("Count(%d, %d): %v", len(msg), ps, err)
	}
	out := make([]wire.FragmentFrame, n)
	for i := range n {
		enc := AppendPiece(nil, msg, ps, mode, id, i)
		f, k, err := wire.ParseFragmentFrame(enc)
		if err != nil || k != len(enc) {
			tb.Fatalf("piece %d/%d: ParseFragmentFrame = %d of %d bytes, %v", i, n, k, len(enc), err)
		}
		out[i] = f
	}
	return out
}

func newAssembler(tb testing.TB, cfg AssemblerConfig) *Assembler {
	tb.Helper()
	a, err := NewAssembler(cfg)
	if err != nil {
		tb.Fatalf("NewAssembler(%+v): %v", cfg, err)
	}
	return a
}

// feed adds pieces in order at tick and returns the messages delivered,
// copied, failing on any error.
func feed(tb testing.TB, a *Assembler, pieces []wire.FragmentFrame, tick time.Duration) [][]byte {
	tb.Helper()
	var got [][]byte
	for _, f := range pieces {
		msg, err := a.Add(f, tick)
		if err != nil {
			tb.Fatalf("Add(id %d, piece %d/%d): %v", f.MessageID, f.Index, f.Count, err)
		}
		if msg != nil {
			got = append(got, append([]byte(nil), msg...))
		}
	}
	return got
}
