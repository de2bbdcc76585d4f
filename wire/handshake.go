package wire

import "encoding/binary"

// ProtocolMagic identifies a tickwire handshake. It is the little-endian
// reading of the bytes "twir" and sits at offset 1 of ConnectRequest and
// ConnectResponse; any other value makes the message ErrMalformed, so
// stray traffic on the port is dropped after five bytes.
const ProtocolMagic uint32 = 0x72697774

// ProtocolVersion is the version of the formats in this package. A client
// sends it in ConnectRequest and ConnectResponse; a server that parses
// another version gets ErrVersion and answers RejectVersionMismatch.
// Version 2: the Accept carries every limit both ends share (53 bytes,
// was 40), so a client and a server of different versions are refused at
// the handshake instead of meeting with mismatched limits.
const ProtocolVersion uint16 = 2

// TokenLen is the size of a session token.
const TokenLen = 16

// Token is an opaque 16-byte session token. The server hands one out in
// Accept; a client that lost its connection presents it in ConnectRequest
// and ConnectResponse to resume the session inside the grace window. The
// wire only carries the bytes; the transport generates them from a
// cryptographic source and compares them in constant time.
type Token [TokenLen]byte

// CookieTagLen is the size of a cookie's truncated MAC tag.
const CookieTagLen = 16

// Cookie is the server's stateless proof-of-address. The server computes
// Tag as HMAC-SHA256(key, client address ‖ Bucket ‖ client nonce)
// truncated to 16 bytes, where Bucket is a coarse time bucket; it sends
// the cookie in Challenge and verifies the copy the client echoes in
// ConnectResponse by recomputing the MAC, so it stores nothing per
// unverified client. The wire only carries the bytes.
type Cookie struct {
	Bucket uint32
	Tag    [CookieTagLen]byte
}

// Encoded sizes of the handshake messages. Each is fixed. Both client
// messages are padded to 64 bytes, so every reply a server sends to an
// address it has not yet verified (Challenge 29 bytes, Reject 10 bytes) is
// smaller than the datagram that caused it: the handshake cannot be used
// to amplify traffic toward a spoofed source.
const (
	ConnectRequestLen  = 64
	ChallengeLen       = 29
	ConnectResponseLen = 64
	AcceptLen          = 53
	RejectLen          = 10
)

// helloPrefixLen is the part of ConnectRequest and ConnectResponse every
// protocol version keeps in place: kind, magic, version, nonce.
const helloPrefixLen = 15

// Client hello flag bits (offset 15 of ConnectRequest and ConnectResponse).
const (
	helloFlagResume   = 0x01 // Token holds a resume token
	helloFlagReserved = 0xFE // must be zero
)

// appendHelloPrefix appends kind, magic, version and nonce.
func appendHelloPrefix(dst []byte, k PacketKind, version uint16, nonce uint64) []byte {
	dst = append(dst, byte(k))
	dst = binary.LittleEndian.AppendUint32(dst, ProtocolMagic)
	dst = binary.LittleEndian.AppendUint16(dst, version)
	return binary.LittleEndian.AppendUint64(dst, nonce)
}

// parseHelloPrefix checks kind and magic and reads version and nonce. It
// returns ErrVersion, with version and nonce set, for a foreign version.
func parseHelloPrefix(b []byte, k PacketKind) (version uint16, nonce uint64, err error) {
	if len(b) == 0 {
		return 0, 0, ErrShort
	}
	if PacketKind(b[0]) != k {
		return 0, 0, ErrMalformed
	}
	if len(b) < 5 {
		return 0, 0, ErrShort
	}
	if binary.LittleEndian.Uint32(b[1:]) != ProtocolMagic {
		return 0, 0, ErrMalformed
	}
	if len(b) < helloPrefixLen {
		return 0, 0, ErrShort
	}
	version = binary.LittleEndian.Uint16(b[5:])
	nonce = binary.LittleEndian.Uint64(b[7:])
	if version != ProtocolVersion {
		return version, nonce, ErrVersion
	}
	return version, nonce, nil
}

// appendResume appends the flags byte and the token field: the token when
// resume is set, zeros otherwise.
func appendResume(dst []byte, resume bool, t *Token) []byte {
	if !resume {
		var zero [1 + TokenLen]byte
		return append(dst, zero[:]...)
	}
	dst = append(dst, helloFlagResume)
	return append(dst, t[:]...)
}

// parseResume reads the flags byte and token field at b[0:17]; the caller
// has checked the length. An absent token must be all zeros.
func parseResume(b []byte) (resume bool, t Token, err error) {
	flags := b[0]
	if flags&helloFlagReserved != 0 {
		return false, Token{}, ErrMalformed
	}
	copy(t[:], b[1:1+TokenLen])
	resume = flags&helloFlagResume != 0
	if !resume && t != (Token{}) {
		return false, Token{}, ErrMalformed
	}
	return resume, t, nil
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
