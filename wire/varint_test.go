package wire

import (
	"encoding/binary"
	"math"
	"testing"
)

var (
	uvarintCodec = codec[uint64]{app: AppendUvarint, parse: Uvarint, size: UvarintLen}
	varintCodec  = codec[int64]{app: AppendVarint, parse: Varint, size: VarintLen}
)

// uvarintEdges are the values on each side of every length boundary.
func uvarintEdges() []uint64 {
	vs := []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1, 1 << 63}
	for k := uint(7); k < 64; k += 7 {
		vs = append(vs, 1<<k-1, 1<<k, 1<<k+1)
	}
	return vs
}

func TestUvarintRoundTrip(t *testing.T) {
	for _, v := range uvarintEdges() {
		enc := uvarintCodec.roundTrip(t, v)
		// Differential: the standard library writes the same LEB128 bytes.
		if want := binary.AppendUvarint(nil, v); string(enc) != string(want) {
			t.Fatalf("%d: % x, encoding/binary % x", v, enc, want)
		}
	}
	r := testRand(2)
	for i := 0; i < 20000; i++ {
		v := randUint64(r)
		enc := uvarintCodec.roundTrip(t, v)
		if want := binary.AppendUvarint(nil, v); string(enc) != string(want) {
			t.Fatalf("%d: % x, encoding/binary % x", v, enc, want)
		}
	}
}

func TestUvarintLen(t *testing.T) {
	for k := 1; k <= MaxVarintLen; k++ {
		lo := uint64(0)
		if k > 1 {
			lo = 1 << (7 * (k - 1))
		}
		if got := UvarintLen(lo); got != k {
			t.Errorf("UvarintLen(%d) = %d, want %d", lo, got, k)
		}
		if k < MaxVarintLen {
			hi := uint64(1)<<(7*k) - 1
			if got := UvarintLen(hi); got != k {
				t.Errorf("UvarintLen(%d) = %d, want %d", hi, got, k)
			}
		}
	}
}

func TestVarintRoundTrip(t *testing.T) {
	vals := []int64{0, -1, 1, -2, 2, 63, -64, 64, -65, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for _, v := range vals {
		enc := varintCodec.roundTrip(t, v)
		if want := binary.AppendVarint(nil, v); string(enc) != string(want) {
			t.Fatalf("%d: % x, encoding/binary % x", v, enc, want)
		}
	}
	// Zig-zag: small magnitudes of either sign take one byte.
	for v := int64(-64); v <= 63; v++ {
		if VarintLen(v) != 1 {
			t.Fatalf("VarintLen(%d) = %d, want 1", v, VarintLen(v))
		}
	}
	r := testRand(3)
	for i := 0; i < 20000; i++ {
		varintCodec.roundTrip(t, int64(randUint64(r)))
	}
}

func TestUvarintErrors(t *testing.T) {
	cases := []struct {
		in   []byte
		want error
	}{
		{nil, ErrShort},
		{[]byte{0x80}, ErrShort},
		{[]byte{0xFF, 0xFF}, ErrShort},
		{[]byte{0x80, 0x00}, ErrMalformed},       // 0 with a redundant group
		{[]byte{0xFF, 0x80, 0x00}, ErrMalformed}, // 127 padded to 3 bytes
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, ErrMalformed},
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02}, ErrOverflow}, // 65 bits
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x81}, ErrOverflow}, // 11 bytes
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, ErrOverflow},
	}
	for _, c := range cases {
		mustErr(t, "Uvarint", Uvarint, c.in, c.want)
		mustErr(t, "Varint", Varint, c.in, c.want)
	}
	// The largest value is accepted.
	if v, n, err := Uvarint([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}); err != nil || n != 10 || v != math.MaxUint64 {
		t.Fatalf("max: %d %d %v", v, n, err)
	}
}

func seedsUvarint() [][]byte {
	var s [][]byte
	for _, v := range uvarintEdges() {
		s = append(s, AppendUvarint(nil, v))
	}
	return append(s, []byte{0x80, 0x00}, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02},
		[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x87}) // found by the fuzzer
}

// FuzzUvarint checks the decoder's strictness against encoding/binary,
// which accepts non-minimal encodings: wherever it decodes a value, ours
// either agrees or the input was non-minimal.
func FuzzUvarint(f *testing.F) {
	for _, s := range seedsUvarint() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		uvarintCodec.fuzzCheck(t, b)
		v, n, err := Uvarint(b)
		sv, sn := binary.Uvarint(b)
		switch {
		case err == nil:
			if sv != v || sn != n {
				t.Fatalf("% x: ours %d/%d, encoding/binary %d/%d", b, v, n, sv, sn)
			}
		case sn > 0:
			if err != ErrMalformed || UvarintLen(sv) >= sn {
				t.Fatalf("% x: encoding/binary reads %d in %d bytes, ours fails with %v", b, sv, sn, err)
			}
		case sn == 0 && err != ErrShort && !(err == ErrOverflow && len(b) >= MaxVarintLen):
			// encoding/binary reports ten continuation bytes at the end of
			// the input as short; no continuation could make them valid,
			// so ours says ErrOverflow at once.
			t.Fatalf("% x: encoding/binary says short, ours %v", b, err)
		case sn < 0 && err != ErrOverflow:
			t.Fatalf("% x: encoding/binary says overflow, ours %v", b, err)
		}
	})
}

func seedsVarint() [][]byte {
	var s [][]byte
	for _, v := range []int64{0, -1, 1, 63, -64, 64, math.MaxInt64, math.MinInt64} {
		s = append(s, AppendVarint(nil, v))
	}
	return s
}

func FuzzVarint(f *testing.F) {
	for _, s := range seedsVarint() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		varintCodec.fuzzCheck(t, b)
		if v, n, err := Varint(b); err == nil {
			if sv, sn := binary.Varint(b); sv != v || sn != n {
				t.Fatalf("% x: ours %d/%d, encoding/binary %d/%d", b, v, n, sv, sn)
			}
		}
	})
}
