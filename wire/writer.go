package wire

// Writer appends primitive values to a caller-owned byte slice. It is the
// counterpart of Reader for payloads the transport does not interpret
// itself; the packet formats have their own AppendX functions, which
// compose with a Writer through Bytes and NewWriter:
//
//	w := wire.NewWriter(buf[:0])
//	w.Uint8(kind)
//	w.Uvarint(n)
//	buf = w.Bytes()
//
// A Writer is a small value holding one slice; the zero Writer appends to a
// nil slice. Methods append to the slice exactly as the built-in append
// does: they write in place while capacity lasts and allocate (growing the
// slice) only when it runs out, so a caller that sizes its buffer for the
// largest datagram never allocates. A Writer is not safe for concurrent use.
type Writer struct {
	buf []byte
}

// NewWriter returns a Writer that appends after the len(dst) bytes already
// in dst. The Writer takes over dst's spare capacity; the caller gets the
// result back from Bytes.
func NewWriter(dst []byte) Writer { return Writer{buf: dst} }

// Bytes returns everything written, including the bytes dst held when the
// Writer was created. The result shares memory with the Writer: further
// writes may overwrite bytes past its length.
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns len(w.Bytes()).
func (w *Writer) Len() int { return len(w.buf) }

// Reset makes w append after the bytes already in dst, dropping its
// previous slice.
func (w *Writer) Reset(dst []byte) { w.buf = dst }

// Uint8 appends one byte.
func (w *Writer) Uint8(v uint8) { w.buf = append(w.buf, v) }

// Uint16 appends v as 2 little-endian bytes.
func (w *Writer) Uint16(v uint16) { w.buf = AppendUint16(w.buf, v) }

// Uint32 appends v as 4 little-endian bytes.
func (w *Writer) Uint32(v uint32) { w.buf = AppendUint32(w.buf, v) }

// Uint64 appends v as 8 little-endian bytes.
func (w *Writer) Uint64(v uint64) { w.buf = AppendUint64(w.buf, v) }

// Seq appends s as a little-endian uint16.
func (w *Writer) Seq(s Seq) { w.buf = AppendUint16(w.buf, uint16(s)) }

// Uvarint appends v as a minimal unsigned varint (1–10 bytes).
func (w *Writer) Uvarint(v uint64) { w.buf = AppendUvarint(w.buf, v) }

// Varint appends v as a minimal zig-zag signed varint (1–10 bytes).
func (w *Writer) Varint(v int64) { w.buf = AppendVarint(w.buf, v) }

// Append copies p to the end of the buffer. The Writer keeps no reference
// to p.
func (w *Writer) Append(p []byte) { w.buf = append(w.buf, p...) }
