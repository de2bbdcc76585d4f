package wire

import "encoding/binary"

// SessionHeaderLen is the size of an encoded SessionHeader: the packet kind
// byte and the 8-byte secret.
const SessionHeaderLen = 9

// SessionHeader opens every session datagram: the KindSession byte and the
// 64-bit secret the server handed out in Accept. The transport compares the
// secret (in constant time) with the one stored for the source address
// before any byte of the datagram reaches channel state, so a datagram from
// an address without a session, or with a wrong secret, is dropped after
// reading 9 bytes.
//
// It is a plain comparable value; the zero value is secret 0.
type SessionHeader struct {
	Secret uint64
}

// AppendSessionHeader appends the 9-byte encoding of h (KindSession, then
// the secret little-endian) to dst and returns the extended slice. It
// allocates only if dst lacks capacity.
func AppendSessionHeader(dst []byte, h SessionHeader) []byte {
	dst = append(dst, byte(KindSession))
	return binary.LittleEndian.AppendUint64(dst, h.Secret)
}

// ParseSessionHeader decodes a session header from the front of b and
// returns it with n = SessionHeaderLen. A first byte other than KindSession
// returns ErrMalformed (dispatch on ParsePacketKind first); fewer than 9
// bytes return ErrShort. It never allocates.
func ParseSessionHeader(b []byte) (SessionHeader, int, error) {
	if len(b) == 0 {
		return SessionHeader{}, 0, ErrShort
	}
	if PacketKind(b[0]) != KindSession {
		return SessionHeader{}, 0, ErrMalformed
	}
	if len(b) < SessionHeaderLen {
		return SessionHeader{}, 0, ErrShort
	}
	return SessionHeader{Secret: binary.LittleEndian.Uint64(b[1:])}, SessionHeaderLen, nil
}
