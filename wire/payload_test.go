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
