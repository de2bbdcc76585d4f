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
// the handshake instead of meeting with mismatched limits. Version 3: the
// handshake agrees on session keys by X25519 (ConnectResponse carries the
// client's ephemeral key, 120 bytes; Accept the server's and a sealed
// body, 109 bytes) and session datagrams are sealed (docs/WIRE.md §9, §13).
const ProtocolVersion uint16 = 3

// PublicKeyLen is the size of an X25519 public key on the wire.
const PublicKeyLen = 32

// PublicKey is an X25519 public key as it travels: 32 bytes, RFC 7748.
// The wire only carries the bytes; the transport checks them.
type PublicKey [PublicKeyLen]byte

// ServerRandomLen is the size of the server randomness in Accept: 128
// bits, fresh per handshake, mixed into the session secret.
const ServerRandomLen = 16

// ResumeProofLen is the size of the resume proof in ConnectResponse.
const ResumeProofLen = 16

// Cipher suites a ConnectResponse can ask for (the transport's
// seal.Suite values).
const (
	SuiteAES128GCM        uint8 = 0
	SuiteChaCha20Poly1305 uint8 = 1
)

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
	ConnectResponseLen = 120
	// MaxConnectResponseLen is the largest ConnectResponse: one carrying
	// a connect token of ConnectTokenMaxLen bytes (85 + 476 = 561), within
	// the 576-byte minimum MTU.
	MaxConnectResponseLen = ConnectResponseProofOff + ConnectTokenMaxLen
	AcceptLen             = 109
	RejectLen             = 10
	// AcceptBodyLen is the plaintext of Accept's sealed body (AcceptBody);
	// AcceptSealedLen that body sealed, with its 16-byte AEAD tag.
	AcceptBodyLen   = 36
	AcceptTagLen    = 16
	AcceptSealedLen = AcceptBodyLen + AcceptTagLen
	// AcceptHeaderLen is the cleartext front of an Accept (kind, nonce,
	// server ephemeral key, server random): the sealed body's associated
	// data and the part of the Accept in the handshake transcript.
	AcceptHeaderLen = 1 + 8 + PublicKeyLen + ServerRandomLen
)

// Sizes of the sealed connect token a ConnectResponse carries (flag bit
// 2; docs/WIRE.md §9.4, §14.2). The wire checks only these bounds; the
// transport's token verifier checks the token (package transport/token:
// MinSealedLen 149 to MaxSealedLen 476). ConnectTokenMinLen keeps the
// message at least ConnectResponseLen long, so it still outweighs any
// reply: a shorter token part is ErrShort here, a longer one ErrMalformed.
const (
	ConnectTokenMinLen = ConnectResponseLen - ConnectResponseProofOff // 35
	ConnectTokenMaxLen = 476
)

// helloPrefixLen is the part of ConnectRequest and ConnectResponse every
// protocol version keeps in place: kind, magic, version, nonce.
const helloPrefixLen = 15

// Client hello flag bits (offset 15 of ConnectRequest and ConnectResponse).
const (
	helloFlagResume    = 0x01 // Token holds a resume token
	helloFlagCleartext = 0x02 // the client asks for cleartext sessions (insecure mode)
	// helloFlagToken (ConnectResponse only): a sealed connect token
	// follows the ephemeral key, in place of the resume proof.
	helloFlagToken = 0x04
	// helloFlagUnpinned (ConnectResponse only, with helloFlagToken or
	// helloFlagResume): the client pins no server key; the key schedule
	// omits es.
	helloFlagUnpinned = 0x08
	// Flags a ConnectRequest may set, and a ConnectResponse; the rest are
	// reserved, must be zero.
	requestFlags  = helloFlagResume | helloFlagCleartext
	responseFlags = requestFlags | helloFlagToken | helloFlagUnpinned
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

// appendResume appends the flags byte (with extra, the ConnectResponse's
// further bits, or'ed in) and the token field: the token when resume is
// set, zeros otherwise.
func appendResume(dst []byte, resume, cleartext bool, t *Token, extra byte) []byte {
	flags := extra
	if cleartext {
		flags |= helloFlagCleartext
	}
	if !resume {
		var zero [TokenLen]byte
		dst = append(dst, flags)
		return append(dst, zero[:]...)
	}
	dst = append(dst, flags|helloFlagResume)
	return append(dst, t[:]...)
}

// parseResume reads the flags byte and token field at b[0:17]; the caller
// has checked the length. A flag outside allowed, or an absent token that
// is not all zeros, is ErrMalformed. flags is the whole byte.
func parseResume(b []byte, allowed byte) (resume, cleartext bool, t Token, flags byte, err error) {
	flags = b[0]
	if flags&^allowed != 0 {
		return false, false, Token{}, 0, ErrMalformed
	}
	copy(t[:], b[1:1+TokenLen])
	resume = flags&helloFlagResume != 0
	if !resume && t != (Token{}) {
		return false, false, Token{}, 0, ErrMalformed
	}
	return resume, flags&helloFlagCleartext != 0, t, flags, nil
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
