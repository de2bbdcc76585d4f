package wire

import (
	"bytes"
	"testing"
)

// TestWriterMatchesAppend: each Writer method writes exactly what the
// package-level encoder writes.
func TestWriterMatchesAppend(t *testing.T) {
	r := testRand(4)
	for i := 0; i < 2000; i++ {
		v := randUint64(r)
		w := NewWriter([]byte{0xAA})
		var want []byte = []byte{0xAA}
		w.Uint8(uint8(v))
		want = append(want, uint8(v))
		w.Uint16(uint16(v))
		want = AppendUint16(want, uint16(v))
		w.Uint32(uint32(v))
		want = AppendUint32(want, uint32(v))
		w.Uint64(v)
		want = AppendUint64(want, v)
		w.Seq(Seq(v))
		want = AppendUint16(want, uint16(v))
		w.Uvarint(v)
		want = AppendUvarint(want, v)
		w.Varint(int64(v))
		want = AppendVarint(want, int64(v))
		p := randPayload(r, 100)
		w.Append(p)
		want = append(want, p...)
		if !bytes.Equal(w.Bytes(), want) || w.Len() != len(want) {
			t.Fatalf("writer % x, want % x", w.Bytes(), want)
		}
	}
}

func TestWriterInPlace(t *testing.T) {
	buf := make([]byte, 0, 64)
	w := NewWriter(buf)
	w.Uint64(1)
	w.Uvarint(1 << 40)
	if &w.Bytes()[0] != &buf[:1][0] {
		t.Fatal("writer did not write into the caller's buffer")
	}
	w.Reset(buf[:0])
	if w.Len() != 0 {
		t.Fatal("Reset kept bytes")
	}
	var zero Writer
	zero.Uint8(1)
	if !bytes.Equal(zero.Bytes(), []byte{1}) {
		t.Fatal("zero Writer")
	}
}
