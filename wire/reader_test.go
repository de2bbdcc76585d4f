package wire

import (
	"bytes"
	"testing"
)

func TestReaderSequence(t *testing.T) {
	var w Writer
	w.Uint8(7)
	w.Uint16(0xBEEF)
	w.Uint32(0xDEADBEEF)
	w.Uint64(0x0123456789ABCDEF)
	w.Seq(65535)
	w.Uvarint(300)
	w.Varint(-5)
	w.Append([]byte("tail"))
	r := NewReader(w.Bytes())

	if v, err := r.Uint8(); err != nil || v != 7 {
		t.Fatalf("Uint8 = %d, %v", v, err)
	}
	if v, err := r.Uint16(); err != nil || v != 0xBEEF {
		t.Fatalf("Uint16 = %x, %v", v, err)
	}
	if v, err := r.Uint32(); err != nil || v != 0xDEADBEEF {
		t.Fatalf("Uint32 = %x, %v", v, err)
	}
	if v, err := r.Uint64(); err != nil || v != 0x0123456789ABCDEF {
		t.Fatalf("Uint64 = %x, %v", v, err)
	}
	if v, err := r.Seq(); err != nil || v != 65535 {
		t.Fatalf("Seq = %d, %v", v, err)
	}
	if v, err := r.Uvarint(); err != nil || v != 300 {
		t.Fatalf("Uvarint = %d, %v", v, err)
	}
	if v, err := r.Varint(); err != nil || v != -5 {
		t.Fatalf("Varint = %d, %v", v, err)
	}
	if r.Offset() != 1+2+4+8+2+2+1 || r.Len() != 4 {
		t.Fatalf("Offset %d Len %d", r.Offset(), r.Len())
	}
	if !bytes.Equal(r.Rest(), []byte("tail")) {
		t.Fatalf("Rest = %q", r.Rest())
	}
	if _, err := r.Bytes(5); err != ErrShort {
		t.Fatalf("Bytes past end: %v", err)
	}
	if _, err := r.Bytes(-1); err != ErrMalformed {
		t.Fatalf("Bytes(-1): %v", err)
	}
	p, err := r.Bytes(4)
	if err != nil || string(p) != "tail" || r.Len() != 0 {
		t.Fatalf("Bytes(4) = %q, %v, Len %d", p, err, r.Len())
	}
	for _, f := range []func() error{
		func() error { _, err := r.Uint8(); return err },
		func() error { _, err := r.Uint16(); return err },
		func() error { _, err := r.Uint32(); return err },
		func() error { _, err := r.Uint64(); return err },
		func() error { _, err := r.Seq(); return err },
		func() error { _, err := r.Uvarint(); return err },
		func() error { _, err := r.Varint(); return err },
		func() error { return r.Skip(1) },
	} {
		if err := f(); err != ErrShort {
			t.Fatalf("read at end: %v, want ErrShort", err)
		}
	}
	var zero Reader
	if _, err := zero.Uint8(); err != ErrShort || zero.Len() != 0 {
		t.Fatal("zero Reader is not empty")
	}
}

// TestReaderBytesAliasing pins the documented aliasing: Bytes returns a
// window onto the input, and its capacity is clipped so appending to it
// cannot clobber the following bytes.
func TestReaderBytesAliasing(t *testing.T) {
	in := []byte{1, 2, 3, 4, 5}
	r := NewReader(in)
	p, _ := r.Bytes(2)
	in[0] = 9
	if p[0] != 9 {
		t.Fatal("Bytes copied instead of aliasing")
	}
	if cap(p) != 2 {
		t.Fatalf("cap = %d, want 2", cap(p))
	}
	_ = append(p, 0xEE)
	if in[2] != 3 {
		t.Fatal("append to an aliased payload overwrote the input")
	}
	r.Reset([]byte{42})
	if v, err := r.Uint8(); v != 42 || err != nil || r.Offset() != 1 {
		t.Fatal("Reset did not reposition")
	}
}

// TestReaderErrorKeepsPosition: a failed read leaves the position alone.
func TestReaderErrorKeepsPosition(t *testing.T) {
	r := NewReader([]byte{0x01, 0x80, 0x80})
	if _, err := r.Uint8(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Uvarint(); err != ErrShort || r.Offset() != 1 {
		t.Fatalf("err %v offset %d", err, r.Offset())
	}
	if _, err := r.Uint32(); err != ErrShort || r.Offset() != 1 {
		t.Fatalf("err %v offset %d", err, r.Offset())
	}
	if v, err := r.Uint16(); err != nil || v != 0x8080 {
		t.Fatalf("after failures: %x %v", v, err)
	}
}

func seedsReader() [][]byte {
	var w Writer
	w.Uint8(8)
	w.Append([]byte{0, 1, 2, 3, 4, 5, 6, 7}) // ops
	w.Uint8(1)
	w.Uint16(2)
	w.Uint32(3)
	w.Uint64(4)
	w.Uvarint(300)
	w.Varint(-300)
	w.Append([]byte("payload"))
	return [][]byte{w.Bytes(), {0}, {3, 0x15, 0x25, 0x05, 0x80}}
}

// FuzzReader drives a Reader with a sequence of operations taken from the
// input (first byte: op count; then one byte per op; the rest is the data)
// and checks each against the package-level decoders on the remaining
// bytes: same value, same advance, position unchanged on error.
func FuzzReader(f *testing.F) {
	for _, s := range seedsReader() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		nops := min(int(b[0]), len(b)-1)
		ops, data := b[1:1+nops], b[1+nops:]
		r := NewReader(data)
		for _, op := range ops {
			off := r.Offset()
			rest := data[off:]
			var adv int
			var err error
			switch op % 8 {
			case 0:
				var v uint8
				v, err = r.Uint8()
				if err == nil {
					adv = 1
					if v != rest[0] {
						t.Fatal("Uint8 value")
					}
				}
			case 1:
				var v uint16
				v, err = r.Uint16()
				if w, n, e := Uint16(rest); e != err || (err == nil && w != v) {
					t.Fatal("Uint16 disagrees")
				} else {
					adv = n
				}
			case 2:
				var v uint32
				v, err = r.Uint32()
				if w, n, e := Uint32(rest); e != err || (err == nil && w != v) {
					t.Fatal("Uint32 disagrees")
				} else {
					adv = n
				}
			case 3:
				var v uint64
				v, err = r.Uint64()
				if w, n, e := Uint64(rest); e != err || (err == nil && w != v) {
					t.Fatal("Uint64 disagrees")
				} else {
					adv = n
				}
			case 4:
				var v uint64
				v, err = r.Uvarint()
				if w, n, e := Uvarint(rest); e != err || (err == nil && w != v) {
					t.Fatal("Uvarint disagrees")
				} else {
					adv = n
				}
			case 5:
				var v int64
				v, err = r.Varint()
				if w, n, e := Varint(rest); e != err || (err == nil && w != v) {
					t.Fatal("Varint disagrees")
				} else {
					adv = n
				}
			case 6:
				n := int(op>>3) - 2 // includes −2, −1 to exercise ErrMalformed
				var p []byte
				p, err = r.Bytes(n)
				if err == nil {
					adv = n
					if !bytes.Equal(p, rest[:n]) || cap(p) != n {
						t.Fatal("Bytes window")
					}
				} else if (n < 0) != (err == ErrMalformed) {
					t.Fatalf("Bytes(%d): %v", n, err)
				}
			case 7:
				if !bytes.Equal(r.Rest(), rest) {
					t.Fatal("Rest")
				}
			}
			if err != nil && !isSentinel(err) {
				t.Fatalf("non-sentinel error %v", err)
			}
			if r.Offset() != off+adv {
				t.Fatalf("op %d: offset %d, want %d (err %v)", op, r.Offset(), off+adv, err)
			}
			if r.Offset()+r.Len() != len(data) {
				t.Fatal("Offset + Len != input length")
			}
		}
	})
}
