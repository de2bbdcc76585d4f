package token

import "errors"

// The package's sentinel errors. Every error a function returns wraps one
// of them (test with errors.Is) and carries the numbers: sizes, ids,
// seconds. Verifier.Open refuses a token with exactly one of ErrShort,
// ErrVersion, ErrMalformed, ErrProtocol, ErrWrongKey, ErrExpired and
// ErrTampered, so a server can count each reason apart.
var (
	// ErrShort: the sealed token is shorter than its header says, or
	// than the smallest token (truncated).
	ErrShort = errors.New("token: truncated")

	// ErrVersion: the token's version byte is not Version.
	ErrVersion = errors.New("token: unknown version")

	// ErrMalformed: the bytes cannot be a token: a length outside the
	// limits, bytes after the end, an address family other than 4 or 6,
	// port 0, a count or length out of range. After a successful AEAD
	// open it means the issuer holding the fleet key wrote a bad private
	// part.
	ErrMalformed = errors.New("token: malformed")

	// ErrProtocol: the token was issued for another protocol id.
	ErrProtocol = errors.New("token: wrong protocol id")

	// ErrWrongKey: the token's key id names none of the verifier's fleet
	// keys; no decryption was tried.
	ErrWrongKey = errors.New("token: sealed under another fleet key")

	// ErrExpired: the token's expiry has passed on the verifier's clock.
	ErrExpired = errors.New("token: expired")

	// ErrTampered: the AEAD tag does not verify: a byte of the token was
	// changed, or it was sealed under another key whose 4-byte key id
	// collides with one of ours.
	ErrTampered = errors.New("token: authentication failed")

	// ErrNotForServer: Private.CheckServer found the server's address
	// among none of the token's server addresses.
	ErrNotForServer = errors.New("token: not issued for this server")

	// ErrBoundElsewhere: ReplayGuard.Admit saw a token that was first
	// used from another client address.
	ErrBoundElsewhere = errors.New("token: already used from another address")

	// ErrLifetime: ReplayGuard.Admit saw a token that expires further
	// ahead than the guard's MaxLifetime.
	ErrLifetime = errors.New("token: expires too far ahead")

	// ErrGuardFull: ReplayGuard.Admit found every slot held by an
	// unexpired token. The guard refuses rather than forget a token,
	// which would let it be replayed.
	ErrGuardFull = errors.New("token: replay guard full")

	// ErrInvalidParams: Issue was given parameters the format cannot
	// hold or that make no sense (no server address, expiry not after
	// creation, too much user data, a token over MaxSealedLen).
	ErrInvalidParams = errors.New("token: invalid parameters")

	// ErrKeyText: ParseKey was given text that is not a fleet key.
	ErrKeyText = errors.New("token: invalid fleet key text")
)
