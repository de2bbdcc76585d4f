package wire

import (
	"encoding/binary"
	"strconv"
)

// RejectReason says why a server refused a connection attempt (Reject).
// Every byte value is accepted on the wire — a refused client should stop
// even if it does not know the reason — and values without a name here
// are reported as "RejectReason(N)".
type RejectReason uint8

// Named reject reasons.
const (
	RejectUnspecified     RejectReason = 0 // no reason given
	RejectServerFull      RejectReason = 1 // the server is at its peer limit
	RejectBadCookie       RejectReason = 2 // the echoed cookie did not verify or has expired
	RejectVersionMismatch RejectReason = 3 // the client speaks another ProtocolVersion
	RejectRateLimited     RejectReason = 4 // too many attempts from this address or overall
	RejectUnknownToken    RejectReason = 5 // resume token names no session
	RejectExpiredToken    RejectReason = 6 // resume token's grace window has passed
	RejectInvalidPeerID   RejectReason = 7 // no peer id in 0..MaxPeerID could be assigned
	RejectShuttingDown    RejectReason = 8 // the server accepts no new sessions
	// RejectCleartext: the client asked for cleartext sessions and the
	// server runs encrypted, or the reverse: both ends must set
	// InsecureCleartext alike.
	RejectCleartext RejectReason = 9
	// RejectHandshake: the key exchange failed (a client ephemeral key
	// of low order) or a resume's proof did not verify.
	RejectHandshake RejectReason = 10

	// Refusals of a connect token (docs/WIRE.md §9.6, §14), sent only
	// after the cookie verified. Not to be confused with
	// RejectUnknownToken and RejectExpiredToken, which concern a resume's
	// session token.
	RejectTokenMalformed    RejectReason = 11 // the sealed token does not parse: truncated, bad length, unknown version
	RejectTokenExpired      RejectReason = 12 // the connect token's expiry has passed on the server's clock
	RejectTokenProtocol     RejectReason = 13 // the token was issued for another protocol id
	RejectTokenWrongKey     RejectReason = 14 // sealed under a fleet key this server does not hold (or it holds none)
	RejectTokenTampered     RejectReason = 15 // the token's AEAD tag does not verify
	RejectTokenNotForServer RejectReason = 16 // the token names other servers
	RejectTokenBound        RejectReason = 17 // the token is bound to another client address
	RejectTokenGuardFull    RejectReason = 18 // the server's replay guard holds no free slot
	RejectTokenRequired     RejectReason = 19 // the server admits only clients with a connect token
	RejectTokenLifetime     RejectReason = 20 // the token expires further ahead than the server admits

	// RejectAppBase is the first of the application's reasons: a Reject
	// reason of RejectAppBase + c (128 to 255) says the server's admission
	// hook refused the client with code c, 0 to 127 (AppCode).
	RejectAppBase RejectReason = 128
)

// MaxAppCode is the largest application refusal code a Reject carries.
const MaxAppCode = 127

// RejectApp returns the reason carrying application code c; a code above
// MaxAppCode is sent as MaxAppCode.
func RejectApp(c uint8) RejectReason { return RejectAppBase + RejectReason(min(c, MaxAppCode)) }

// AppCode returns the application's code of a reason of RejectAppBase and
// above, and false for the protocol's reasons.
func (r RejectReason) AppCode() (uint8, bool) {
	if r >= RejectAppBase {
		return uint8(r - RejectAppBase), true
	}
	return 0, false
}

var rejectReasonNames = [...]string{
	RejectUnspecified:     "unspecified",
	RejectServerFull:      "server full",
	RejectBadCookie:       "bad cookie",
	RejectVersionMismatch: "version mismatch",
	RejectRateLimited:     "rate limited",
	RejectUnknownToken:    "unknown token",
	RejectExpiredToken:    "expired token",
	RejectInvalidPeerID:   "invalid peer id",
	RejectShuttingDown:    "shutting down",
	RejectCleartext:       "cleartext mismatch",
	RejectHandshake:       "handshake failed",

	RejectTokenMalformed:    "connect token malformed",
	RejectTokenExpired:      "connect token expired",
	RejectTokenProtocol:     "connect token for another protocol",
	RejectTokenWrongKey:     "connect token under another fleet key",
	RejectTokenTampered:     "connect token tampered",
	RejectTokenNotForServer: "connect token not for this server",
	RejectTokenBound:        "connect token bound to another address",
	RejectTokenGuardFull:    "connect token guard full",
	RejectTokenRequired:     "connect token required",
	RejectTokenLifetime:     "connect token lifetime too long",
}

// String returns the reason's name, "refused by the application (code
// N)" for an application's reason, or "RejectReason(N)" for an unnamed
// value (both allocate).
func (r RejectReason) String() string {
	if int(r) < len(rejectReasonNames) {
		return rejectReasonNames[r]
	}
	if c, ok := r.AppCode(); ok {
		return "refused by the application (code " + strconv.Itoa(int(c)) + ")"
	}
	return "RejectReason(" + strconv.Itoa(int(r)) + ")"
}

// Reject is the server's refusal of a ConnectRequest or ConnectResponse.
// Nonce echoes the client's nonce: a client ignores a Reject whose nonce
// is not that of its current attempt, so an off-path attacker cannot
// abort a handshake by forging one. The encoding is RejectLen (10) bytes,
// smaller than either client message, so the server may send it to an
// unverified address. It is a plain comparable value.
type Reject struct {
	Nonce  uint64
	Reason RejectReason
}

// AppendReject appends the 10-byte encoding of r — KindReject, nonce
// (u64 LE), reason — to dst and returns the extended slice. It allocates
// only if dst lacks capacity.
func AppendReject(dst []byte, r Reject) []byte {
	dst = append(dst, byte(KindReject))
	dst = binary.LittleEndian.AppendUint64(dst, r.Nonce)
	return append(dst, byte(r.Reason))
}

// ParseReject decodes a Reject from the front of b and returns it with
// n = RejectLen. A wrong kind byte returns ErrMalformed, fewer than 10
// bytes ErrShort. It never allocates.
func ParseReject(b []byte) (Reject, int, error) {
	if len(b) == 0 {
		return Reject{}, 0, ErrShort
	}
	if PacketKind(b[0]) != KindReject {
		return Reject{}, 0, ErrMalformed
	}
	if len(b) < RejectLen {
		return Reject{}, 0, ErrShort
	}
	return Reject{Nonce: binary.LittleEndian.Uint64(b[1:]), Reason: RejectReason(b[9])}, RejectLen, nil
}
