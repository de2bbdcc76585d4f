package wire

import (
	"encoding/binary"
	"testing"
)

var (
	uint16Codec = codec[uint16]{app: AppendUint16, parse: Uint16, size: func(uint16) int { return 2 }}
	uint32Codec = codec[uint32]{app: AppendUint32, parse: Uint32, size: func(uint32) int { return 4 }}
	uint64Codec = codec[uint64]{app: AppendUint64, parse: Uint64, size: func(uint64) int { return 8 }}
)

func TestFixedRoundTrip(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xFF, 0x100, 0xFFFF, 0x10000, 0xFFFFFFFF, 1 << 32, ^uint64(0)} {
		uint16Codec.roundTrip(t, uint16(v))
		uint32Codec.roundTrip(t, uint32(v))
		uint64Codec.roundTrip(t, v)
	}
	r := testRand(1)
	for i := 0; i < 10000; i++ {
		v := r.Uint64()
		uint16Codec.roundTrip(t, uint16(v))
		uint32Codec.roundTrip(t, uint32(v))
		uint64Codec.roundTrip(t, v)
	}
}

func TestFixedLittleEndian(t *testing.T) {
	if got := hexs(AppendUint16(nil, 0x0102)); got != "02 01" {
		t.Errorf("AppendUint16 = %s", got)
	}
	if got := hexs(AppendUint32(nil, 0x01020304)); got != "04 03 02 01" {
		t.Errorf("AppendUint32 = %s", got)
	}
	if got := hexs(AppendUint64(nil, 0x0102030405060708)); got != "08 07 06 05 04 03 02 01" {
		t.Errorf("AppendUint64 = %s", got)
	}
}

func seedsFixed() [][]byte {
	return [][]byte{{}, {1}, {1, 2}, {1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}}
}

// FuzzFixedInts checks the three fixed-width decoders against
// encoding/binary and their encoders.
func FuzzFixedInts(f *testing.F) {
	for _, s := range seedsFixed() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		uint16Codec.fuzzCheck(t, b)
		uint32Codec.fuzzCheck(t, b)
		uint64Codec.fuzzCheck(t, b)
		if v, _, err := Uint16(b); err == nil && v != binary.LittleEndian.Uint16(b) {
			t.Fatal("Uint16 disagrees with encoding/binary")
		}
		if v, _, err := Uint32(b); err == nil && v != binary.LittleEndian.Uint32(b) {
			t.Fatal("Uint32 disagrees with encoding/binary")
		}
		if v, _, err := Uint64(b); err == nil && v != binary.LittleEndian.Uint64(b) {
			t.Fatal("Uint64 disagrees with encoding/binary")
		}
	})
}
