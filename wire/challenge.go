package wire

import "encoding/binary"

// Challenge is the server's stateless answer to a ConnectRequest: the
// client's nonce, echoed so the client can tell a genuine reply from a
// forged one, and the Cookie the client must echo in its ConnectResponse.
// Its encoding (ChallengeLen, 29 bytes) is smaller than the 64-byte
// request. It is a plain comparable value.
type Challenge struct {
	Nonce  uint64
	Cookie Cookie
}

// AppendChallenge appends the 29-byte encoding of c — KindChallenge, nonce
// (u64 LE), cookie bucket (u32 LE), cookie tag — to dst and returns the
// extended slice. It allocates only if dst lacks capacity.
func AppendChallenge(dst []byte, c Challenge) []byte {
	dst = append(dst, byte(KindChallenge))
	dst = binary.LittleEndian.AppendUint64(dst, c.Nonce)
	dst = binary.LittleEndian.AppendUint32(dst, c.Cookie.Bucket)
	return append(dst, c.Cookie.Tag[:]...)
}

// ParseChallenge decodes a Challenge from the front of b and returns it
// with n = ChallengeLen. A wrong kind byte returns ErrMalformed, fewer than
// 29 bytes ErrShort. It never allocates.
func ParseChallenge(b []byte) (Challenge, int, error) {
	if len(b) == 0 {
		return Challenge{}, 0, ErrShort
	}
	if PacketKind(b[0]) != KindChallenge {
		return Challenge{}, 0, ErrMalformed
	}
	if len(b) < ChallengeLen {
		return Challenge{}, 0, ErrShort
	}
	var c Challenge
	c.Nonce = binary.LittleEndian.Uint64(b[1:])
	c.Cookie.Bucket = binary.LittleEndian.Uint32(b[9:])
	copy(c.Cookie.Tag[:], b[13:ChallengeLen])
	return c, ChallengeLen, nil
}
