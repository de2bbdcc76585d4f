package wire

import "encoding/binary"

// AppendUint16 appends v as 2 little-endian bytes to dst and returns the
// extended slice. It allocates only if dst lacks capacity.
func AppendUint16(dst []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(dst, v) }

// AppendUint32 appends v as 4 little-endian bytes to dst and returns the
// extended slice. It allocates only if dst lacks capacity.
func AppendUint32(dst []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(dst, v) }

// AppendUint64 appends v as 8 little-endian bytes to dst and returns the
// extended slice. It allocates only if dst lacks capacity.
func AppendUint64(dst []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(dst, v) }

// Uint16 decodes a little-endian uint16 from the front of b and returns it
// with n = 2. A b shorter than 2 bytes returns ErrShort. It never allocates.
func Uint16(b []byte) (v uint16, n int, err error) {
	if len(b) < 2 {
		return 0, 0, ErrShort
	}
	return binary.LittleEndian.Uint16(b), 2, nil
}

// Uint32 decodes a little-endian uint32 from the front of b and returns it
// with n = 4. A b shorter than 4 bytes returns ErrShort. It never allocates.
func Uint32(b []byte) (v uint32, n int, err error) {
	if len(b) < 4 {
		return 0, 0, ErrShort
	}
	return binary.LittleEndian.Uint32(b), 4, nil
}

// Uint64 decodes a little-endian uint64 from the front of b and returns it
// with n = 8. A b shorter than 8 bytes returns ErrShort. It never allocates.
func Uint64(b []byte) (v uint64, n int, err error) {
	if len(b) < 8 {
		return 0, 0, ErrShort
	}
	return binary.LittleEndian.Uint64(b), 8, nil
}
