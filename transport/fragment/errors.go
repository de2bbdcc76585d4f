package fragment

import "errors"

// The sentinel errors of this package. Count, Add and NewAssembler return
// them unwrapped (Add and Count must not allocate), except that a
// configuration error wraps ErrInvalidConfig with the offending field. A
// caller counting malformed input by reason needs one errors.Is switch; the
// Assembler also counts every one of them itself (Stats).
var (
	// ErrInvalidConfig is wrapped by every error from
	// AssemblerConfig.Validate and NewAssembler, and returned by Count for a
	// piece size below 1.
	ErrInvalidConfig = errors.New("fragment: invalid configuration")

	// ErrEmpty is returned by Count for a message of zero (or negative)
	// length: there is nothing to split.
	ErrEmpty = errors.New("fragment: empty message")

	// ErrTooLarge reports a message beyond the size limit: Count returns it
	// for a message that needs more than MaxPieces pieces; Add returns it
	// for a piece whose message would exceed the assembler's
	// MaxMessageSize.
	ErrTooLarge = errors.New("fragment: message too large")

	// ErrMalformed is returned by Add for a piece whose fields are out of
	// range: Count 0, Index not below Count, or a Mode that is not a
	// payload-carrying, non-fragment frame type. wire.ParseFragmentFrame
	// never yields such a piece; Add checks anyway.
	ErrMalformed = errors.New("fragment: malformed piece")

	// ErrPieceLength is returned by Add for a piece whose payload length is
	// wrong for its index: every piece but the last must carry exactly the
	// piece size, the last 1 to piece-size bytes.
	ErrPieceLength = errors.New("fragment: bad piece length")

	// ErrMismatch is returned by Add for a piece whose Count or Mode
	// disagrees with the earlier pieces of the same message id. The piece
	// is dropped; the partial assembly is kept.
	ErrMismatch = errors.New("fragment: piece disagrees with its message")

	// ErrInvalidMessage is returned by Add when the last missing piece
	// arrives but the reassembled bytes are not exactly one frame of the
	// pieces' Mode (wire.SkipFrame). The message is discarded, and its id
	// is remembered as completed so its late pieces cannot rebuild it.
	ErrInvalidMessage = errors.New("fragment: reassembled message is not one frame of its mode")
)
