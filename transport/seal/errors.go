package seal

import "errors"

// The sentinel errors of this package. Open and Seal return them
// unwrapped (the hot path must not allocate); configuration and key
// errors wrap ErrInvalidConfig or ErrSecret with the offending numbers.
// Every error Open returns is also counted in Stats under its own reason,
// so a caller needs no errors.Is switch to keep counters.
var (
	// ErrInvalidConfig is wrapped by every error of Config.Validate and
	// New.
	ErrInvalidConfig = errors.New("seal: invalid configuration")

	// ErrSecret is wrapped by DeriveSecret for input key material or a
	// server random that is too short.
	ErrSecret = errors.New("seal: secret too short")

	// ErrShort: the datagram is shorter than Overhead, so it cannot hold a
	// header and a tag (Stats.Short).
	ErrShort = errors.New("seal: datagram too short")

	// ErrMalformed: the first byte is not a sealed kind byte (KindPhase0
	// or KindPhase1): a reserved bit is set (Stats.Malformed).
	ErrMalformed = errors.New("seal: not a sealed datagram")

	// ErrAuth: the tag does not verify. The datagram was tampered with,
	// truncated, sealed under another key, or its packet number was too
	// far from the highest authenticated one to reconstruct
	// (Stats.AuthFailed).
	ErrAuth = errors.New("seal: authentication failed")

	// ErrReplayed: a datagram with this packet number was already opened
	// (Stats.Replayed).
	ErrReplayed = errors.New("seal: replayed packet number")

	// ErrTooOld: the packet number is WindowSize or more behind the
	// highest authenticated one, so the replay window cannot tell whether
	// it was seen (Stats.TooOld).
	ErrTooOld = errors.New("seal: packet number below the replay window")

	// ErrKeyPhase: the datagram names the previous key generation, which
	// the receiver has already discarded (Stats.WrongPhase).
	ErrKeyPhase = errors.New("seal: key phase of a discarded key")

	// ErrIntegrityLimit: the session has seen more forgeries than the
	// cipher's integrity limit allows (RFC 9001 §6.6); every later Open
	// fails with it, and the caller must end the session
	// (Stats.IntegrityLimited).
	ErrIntegrityLimit = errors.New("seal: AEAD integrity limit reached, end the session")

	// ErrNoRoom: the caller's buffer passed to Seal is shorter than
	// HeaderLen or has less than TagLen bytes of spare capacity. A
	// programming error of the caller; nothing is sealed and no packet
	// number is spent.
	ErrNoRoom = errors.New("seal: buffer has no room for the header or the tag")

	// ErrExhausted: the sender's packet numbers reached MaxPacketNumber.
	// At ten million datagrams a second that takes 14,000 years; the
	// session must end rather than reuse a nonce.
	ErrExhausted = errors.New("seal: packet numbers exhausted")
)
