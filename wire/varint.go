package wire

import (
	"encoding/binary"
	"math/bits"
)

// MaxVarintLen is the longest valid varint encoding: 10 bytes carry 64 bits.
const MaxVarintLen = 10

// AppendUvarint appends v to dst as an unsigned LEB128 varint — 7 bits per
// byte, least significant group first, high bit set on every byte but the
// last — and returns the extended slice. The encoding is always minimal
// (1 to MaxVarintLen bytes, UvarintLen(v) of them). It allocates only if dst
// lacks capacity.
func AppendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// UvarintLen returns the number of bytes AppendUvarint writes for v, 1 to
// MaxVarintLen. It is a few instructions and allocates nothing.
func UvarintLen(v uint64) int {
	return (bits.Len64(v|1) + 6) / 7
}

// Uvarint decodes an unsigned LEB128 varint from the front of b and returns
// the value and the number of bytes read.
//
// Only the minimal encoding of each value is accepted, so every value has
// exactly one encoding:
//   - ErrShort: b ends while the continuation bit is still set (or b is
//     empty);
//   - ErrOverflow: the tenth byte is above 1, or has the continuation bit
//     set (the value would need more than 64 bits);
//   - ErrMalformed: a multi-byte encoding whose last byte is 0x00, i.e. a
//     value padded with a redundant zero group.
//
// Single-byte values (0–127) take an inlined fast path. It never allocates.
func Uvarint(b []byte) (v uint64, n int, err error) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1, nil
	}
	return uvarintSlow(b)
}

// uvarintSlow decodes what Uvarint's one-byte fast path does not: b is
// empty or b[0] has the continuation bit set. It is kept out of line so
// that the fast path stays small, and has no loop: bytes 1–8 are read with
// one 8-byte load (from a zero-padded copy when fewer remain), and bytes 9
// and 10 are handled explicitly.
//
//go:noinline
func uvarintSlow(b []byte) (uint64, int, error) {
	// Two bytes (128–16383) is the common case: payload lengths of
	// full-size datagrams.
	if len(b) >= 2 && b[1] < 0x80 {
		if b[1] == 0 {
			return 0, 0, ErrMalformed
		}
		return uint64(b[0]&0x7f) | uint64(b[1])<<7, 2, nil
	}
	var x uint64
	if len(b) >= 8 {
		x = binary.LittleEndian.Uint64(b)
	} else {
		var tmp [8]byte
		copy(tmp[:], b)
		x = binary.LittleEndian.Uint64(tmp[:])
	}
	if stop := ^x & 0x8080808080808080; stop != 0 {
		k := uint(bits.TrailingZeros64(stop)) >> 3 // index of the last byte
		if int(k) >= len(b) {
			return 0, 0, ErrShort // the stop came from the zero padding
		}
		if k > 0 && byte(x>>(8*k)) == 0 {
			return 0, 0, ErrMalformed
		}
		return gather7(x & (^uint64(0) >> (56 - 8*k))), int(k) + 1, nil
	}
	// Eight continuation bytes: 56 bits so far.
	v := gather7(x)
	if len(b) < 9 {
		return 0, 0, ErrShort
	}
	if c := b[8]; c < 0x80 {
		if c == 0 {
			return 0, 0, ErrMalformed
		}
		return v | uint64(c)<<56, 9, nil
	}
	v |= uint64(b[8]&0x7f) << 56
	if len(b) < 10 {
		return 0, 0, ErrShort
	}
	switch c := b[9]; c {
	case 0:
		return 0, 0, ErrMalformed
	case 1:
		return v | 1<<63, 10, nil
	}
	return 0, 0, ErrOverflow // bit 64 and beyond, or an 11th byte
}

// gather7 packs the low 7 bits of each byte of x into a 56-bit value, byte
// 0 lowest.
func gather7(x uint64) uint64 {
	return x&0x7f | x>>1&(0x7f<<7) | x>>2&(0x7f<<14) | x>>3&(0x7f<<21) |
		x>>4&(0x7f<<28) | x>>5&(0x7f<<35) | x>>6&(0x7f<<42) | x>>7&(0x7f<<49)
}

// AppendVarint appends the signed v to dst zig-zag encoded (0, −1, 1, −2, …
// map to 0, 1, 2, 3, …) as an unsigned varint, so small magnitudes of either
// sign take one byte. It allocates only if dst lacks capacity.
func AppendVarint(dst []byte, v int64) []byte {
	return AppendUvarint(dst, zigzag(v))
}

// VarintLen returns the number of bytes AppendVarint writes for v.
func VarintLen(v int64) int { return UvarintLen(zigzag(v)) }

// Varint decodes a zig-zag signed varint from the front of b, with the same
// strictness and errors as Uvarint. It never allocates.
func Varint(b []byte) (v int64, n int, err error) {
	u, n, err := Uvarint(b)
	return unzigzag(u), n, err
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// uvarintMax decodes an unsigned varint and rejects values above max with
// ErrTooLarge.
func uvarintMax(b []byte, max uint64) (uint64, int, error) {
	v, n, err := Uvarint(b)
	if err != nil {
		return 0, 0, err
	}
	if v > max {
		return 0, 0, ErrTooLarge
	}
	return v, n, nil
}
