package wire

import "encoding/binary"

// Reader decodes primitive values from the front of a caller-owned byte
// slice, tracking its position. It is the tool for payloads the transport
// does not interpret itself (game messages, component bytes); the packet
// formats in this package are parsed by their ParseX functions.
//
// A Reader is a small value (a slice and an offset). Methods take a pointer,
// so keep the Reader in a local variable; it never escapes to the heap on
// its own and no method allocates. Every method either succeeds and advances
// past what it read, or returns an error and leaves the position unchanged,
// so a caller may retry a different read. Errors are ErrShort for running
// out of input, and the varint errors documented on Uvarint.
//
// The zero Reader reads from an empty slice. A Reader is not safe for
// concurrent use.
type Reader struct {
	buf []byte
	off int
}

// NewReader returns a Reader positioned at the start of b. The Reader
// aliases b: it never copies or modifies it, and slices returned by Bytes
// and Rest point into it.
func NewReader(b []byte) Reader { return Reader{buf: b} }

// Len returns the number of unread bytes.
func (r *Reader) Len() int { return len(r.buf) - r.off }

// Offset returns the number of bytes read so far, from the start of the
// slice given to NewReader or Reset.
func (r *Reader) Offset() int { return r.off }

// Reset repositions r at the start of b, dropping its previous slice.
func (r *Reader) Reset(b []byte) { *r = Reader{buf: b} }

// Uint8 reads one byte.
func (r *Reader) Uint8() (uint8, error) {
	if r.off >= len(r.buf) {
		return 0, ErrShort
	}
	v := r.buf[r.off]
	r.off++
	return v, nil
}

// Uint16 reads a little-endian uint16.
func (r *Reader) Uint16() (uint16, error) {
	if len(r.buf)-r.off < 2 {
		return 0, ErrShort
	}
	v := binary.LittleEndian.Uint16(r.buf[r.off:])
	r.off += 2
	return v, nil
}

// Uint32 reads a little-endian uint32.
func (r *Reader) Uint32() (uint32, error) {
	if len(r.buf)-r.off < 4 {
		return 0, ErrShort
	}
	v := binary.LittleEndian.Uint32(r.buf[r.off:])
	r.off += 4
	return v, nil
}

// Uint64 reads a little-endian uint64.
func (r *Reader) Uint64() (uint64, error) {
	if len(r.buf)-r.off < 8 {
		return 0, ErrShort
	}
	v := binary.LittleEndian.Uint64(r.buf[r.off:])
	r.off += 8
	return v, nil
}

// Seq reads a Seq as a little-endian uint16.
func (r *Reader) Seq() (Seq, error) {
	v, err := r.Uint16()
	return Seq(v), err
}

// Uvarint reads an unsigned varint with the strictness of the package-level
// Uvarint (minimal encodings only).
func (r *Reader) Uvarint() (uint64, error) {
	v, n, err := Uvarint(r.buf[r.off:])
	if err != nil {
		return 0, err
	}
	r.off += n
	return v, nil
}

// Varint reads a zig-zag signed varint with the strictness of Uvarint.
func (r *Reader) Varint() (int64, error) {
	v, n, err := Varint(r.buf[r.off:])
	if err != nil {
		return 0, err
	}
	r.off += n
	return v, nil
}

// Bytes returns the next n bytes and advances past them. The result aliases
// the Reader's input (no copy), with its capacity clipped to n so appending
// to it cannot overwrite the bytes after it; it stays valid only while the
// caller keeps the input unchanged. n larger than Len returns ErrShort; a
// negative n returns ErrMalformed.
func (r *Reader) Bytes(n int) ([]byte, error) {
	if n < 0 {
		return nil, ErrMalformed
	}
	if n > len(r.buf)-r.off {
		return nil, ErrShort
	}
	end := r.off + n
	b := r.buf[r.off:end:end]
	r.off = end
	return b, nil
}

// Skip advances past the next n bytes without looking at them, with the
// errors of Bytes.
func (r *Reader) Skip(n int) error {
	_, err := r.Bytes(n)
	return err
}

// Rest returns all unread bytes without advancing. Like Bytes, the result
// aliases the input.
func (r *Reader) Rest() []byte { return r.buf[r.off:len(r.buf):len(r.buf)] }
