package token

import (
	"encoding/hex"
	"strconv"
)

// OpenError is the error Verifier.Open returns for a refused token: its
// reason, one of the package's sentinels (Unwrap returns it, so errors.Is
// works), and the numbers the message cites, formatted only when Error is
// called. Open returns a pointer into the caller's Private, so a refusal
// allocates nothing either (a flood of junk tokens costs the server no
// garbage): the error is valid until that Private is passed to Open
// again. Copy it (e := *err.(*OpenError)) or format it to keep it longer.
type OpenError struct {
	// Reason is the sentinel: ErrShort, ErrVersion, ErrMalformed,
	// ErrProtocol, ErrWrongKey, ErrExpired or ErrTampered — or
	// ErrInvalidParams for an Open at a time not after 1970 (a clock
	// that is not set, which would find no token expired).
	Reason error

	what   what
	a, b   uint64
	keyID  [KeyIDLen]byte
	detail error // a private part that does not parse
}

// what selects the message of an OpenError.
type what uint8

const (
	whatNone      what = iota
	whatTooShort       // a: len
	whatTruncated      // a: len, b: length field
	whatVersion        // a: version
	whatLength         // a: length field
	whatTrailing       // a: extra bytes, b: length
	whatProtocol       // a: token's, b: ours
	whatKeyID          // keyID, a: keys held
	whatExpiry         // a: expiry beyond MaxExpires
	whatExpired        // a: seconds ago
	whatTag            // a: len
	whatPrivate        // detail
	whatClock          // b: the year now is in
)

// Error formats the refusal with its numbers ("token: expired: 12 s
// ago").
func (e *OpenError) Error() string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	s := e.Reason.Error() + ": "
	switch e.what {
	case whatTooShort:
		return s + "sealed token of " + u(e.a) + " bytes, want at least " + strconv.Itoa(MinSealedLen)
	case whatTruncated:
		return s + u(e.a) + " bytes of a " + u(e.b) + "-byte sealed token"
	case whatVersion:
		return s + "sealed token version " + u(e.a) + ", want " + strconv.Itoa(Version)
	case whatLength:
		return s + "sealed token length field " + u(e.a) + ", want " + strconv.Itoa(MinSealedLen) + " to " + strconv.Itoa(MaxSealedLen)
	case whatTrailing:
		return s + u(e.a) + " bytes after the " + u(e.b) + "-byte sealed token"
	case whatProtocol:
		return s + "token for protocol 0x" + strconv.FormatUint(e.a, 16) + ", this server speaks 0x" + strconv.FormatUint(e.b, 16)
	case whatKeyID:
		return s + "key id " + hex.EncodeToString(e.keyID[:]) + ", this server holds " + u(e.a) + " other keys"
	case whatExpiry:
		return s + "expiry " + u(e.a) + " (unix s) after the year 9999"
	case whatExpired:
		return s + "token expired " + u(e.a) + " s ago"
	case whatTag:
		return s + "the " + u(e.a) + "-byte token's tag does not verify"
	case whatClock:
		return s + "Open at a time in the year " + u(e.b) + ", before 1970: the clock is not set"
	case whatPrivate:
		return e.detail.Error() + " (in a private part that verified: the issuer's bug)"
	}
	return e.Reason.Error()
}

// Unwrap returns the Reason sentinel.
func (e *OpenError) Unwrap() error { return e.Reason }
