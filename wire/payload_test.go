package wire

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestParsePayloadFastPath: parsePayload's inline decoding of one- and
// two-byte lengths returns exactly what the general path (Uvarint, then
// the bounds checks) returns — the same payload with the same capacity,
// offset and error — on random encodings around every boundary: short
// input, a zero continuation byte, lengths at the cap and past the input.
func TestParsePayloadFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 20000)
	for i := 0; i < 200000; i++ {
		n := rng.IntN(40)
		if rng.IntN(8) == 0 {
			n = rng.IntN(len(buf))
		}
		b := buf[:n]
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		off := 0
		if n > 0 {
			off = rng.IntN(n + 1)
		}
		if off < n && rng.IntN(2) == 0 {
			// A plausible length: one or two bytes, near what remains.
			l := max(0, n-off-1-rng.IntN(4)+rng.IntN(4))
			if rng.IntN(3) == 0 {
				l = rng.IntN(1 << 15)
			}
			enc := AppendUvarint(nil, uint64(l))
			copy(b[off:], enc)
		}
		maxLen := []uint64{MaxMessageLen, 0, 1, 127, 128, 300, uint64(rng.IntN(20000))}[rng.IntN(7)]
		p1, k1, err1 := parsePayload(b, off, maxLen)
		p2, k2, err2 := parsePayloadSlow(b, off, maxLen)
		if k1 != k2 || !errors.Is(err1, err2) || (err1 == nil) != (err2 == nil) ||
			len(p1) != len(p2) || cap(p1) != cap(p2) || len(p1) > 0 && &p1[0] != &p2[0] {
			t.Fatalf("iteration %d: b % x, off %d, max %d: fast (%d B, cap %d, %d, %v), general (%d B, cap %d, %d, %v)",
				i, b[:min(len(b), 16)], off, maxLen, len(p1), cap(p1), k1, err1, len(p2), cap(p2), k2, err2)
		}
	}
}

// TestParseReliableFrameFastPath: ParseReliableFrame's and
// ParseUnreliableFrame's inline decoding of a short payload gives exactly
// what the general decoders give.
func TestParseReliableFrameFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200000; i++ {
		b := make([]byte, rng.IntN(140))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if len(b) > 0 && rng.IntN(4) != 0 {
			b[0] = byte(FrameReliable)
		}
		if len(b) > reliableFixed && rng.IntN(2) == 0 {
			b[reliableFixed] = byte(max(0, len(b)-reliableFixed-1-rng.IntN(3)+rng.IntN(3)))
		}
		f1, n1, err1 := ParseReliableFrame(b)
		f2, n2, err2 := parseReliableFrame(b)
		if n1 != n2 || err1 != err2 || f1.Stream != f2.Stream || f1.MessageID != f2.MessageID ||
			len(f1.Payload) != len(f2.Payload) || cap(f1.Payload) != cap(f2.Payload) || len(f1.Payload) > 0 && &f1.Payload[0] != &f2.Payload[0] {
			t.Fatalf("% x: fast %+v %d %v, general %+v %d %v", b, f1, n1, err1, f2, n2, err2)
		}
		u1, n1, err1 := ParseUnreliableFrame(b)
		u2, n2, err2 := parseUnreliableFrame(b)
		if len(b) > 0 && rng.IntN(2) == 0 {
			b[0] = byte(FrameUnreliable)
			if len(b) > unreliableFixed && rng.IntN(2) == 0 {
				b[unreliableFixed] = byte(max(0, len(b)-unreliableFixed-1-rng.IntN(3)+rng.IntN(3)))
			}
			u1, n1, err1 = ParseUnreliableFrame(b)
			u2, n2, err2 = parseUnreliableFrame(b)
		}
		if n1 != n2 || err1 != err2 || len(u1.Payload) != len(u2.Payload) || cap(u1.Payload) != cap(u2.Payload) ||
			len(u1.Payload) > 0 && &u1.Payload[0] != &u2.Payload[0] {
			t.Fatalf("% x: fast %d %v, general %d %v", b, n1, err1, n2, err2)
		}
	}
}
