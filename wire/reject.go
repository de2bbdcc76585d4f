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
)

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
}

// String returns the reason's name, or "RejectReason(N)" for an unnamed
// value (which allocates).
func (r RejectReason) String() string {
	if int(r) < len(rejectReasonNames) {
		return rejectReasonNames[r]
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
