package wire

import "errors"

// The sentinel errors every decoder in this package returns. Decoders return
// them unwrapped, so a comparison with == works as well as errors.Is; callers
// that add context (a packet kind, a peer) wrap them with %w at their own
// boundary. Counting a drop by reason is one errors.Is switch.
//
// On any error a decoder returns the zero value and n = 0 (the one exception,
// ErrVersion, is documented on the handshake parsers that return it).
var (
	// ErrShort reports that the input ends before the encoding does: the
	// bytes seen so far are a valid beginning, more would be needed. A length
	// field declaring more bytes than remain is also ErrShort, because it is
	// indistinguishable from a truncated datagram.
	ErrShort = errors.New("wire: input truncated")

	// ErrMalformed reports bytes that cannot be a valid encoding however
	// much input follows: an unknown packet kind or frame type, reserved
	// bits set, a fragment index not below its count, a zero count, a wrong
	// protocol magic, non-zero padding, or a non-minimal (non-canonical)
	// encoding of a value that has a shorter one.
	ErrMalformed = errors.New("wire: malformed encoding")

	// ErrOverflow reports a varint that does not fit in 64 bits: more than
	// MaxVarintLen bytes, or a tenth byte above 1.
	ErrOverflow = errors.New("wire: varint overflows 64 bits")

	// ErrTooLarge reports a well-formed value beyond a documented limit of
	// its format: an action type above 65535, a payload length above
	// MaxMessageLen or MaxActionPayloadLen, a slice spanning more than
	// MaxSliceFrames frames, and so on.
	ErrTooLarge = errors.New("wire: value exceeds format limit")

	// ErrVersion reports a handshake message whose protocol magic is ours
	// but whose version is not ProtocolVersion. The parser still returns the
	// fields every version keeps at the same offsets (Version and Nonce), so
	// the server can answer with a Reject carrying RejectVersionMismatch.
	ErrVersion = errors.New("wire: unsupported protocol version")
)
