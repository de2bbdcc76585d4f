package wire

import "strconv"

// FrameType is the first byte of each frame in a session datagram. After
// the channel header a session datagram holds zero or more frames back to
// back; zero frames is an ack-only datagram.
//
// The zero value is not a valid type, so stray zero bytes after the last
// frame are reported as ErrMalformed rather than read as frames.
type FrameType uint8

// The frame types. Values 0 and 9–255 are invalid.
const (
	FrameUnreliable   FrameType = 0x01 // UnreliableFrame
	FrameSequenced    FrameType = 0x02 // SequencedFrame (unreliable, newest wins)
	FrameReliable     FrameType = 0x03 // ReliableFrame (reliable stream message)
	FrameFragment     FrameType = 0x04 // FragmentFrame (one piece of a large message)
	FrameActionStream FrameType = 0x05 // ActionStreamFrame (an action slice)
	FrameKeepAlive    FrameType = 0x06 // KeepAliveFrame (no body)
	FrameDisconnect   FrameType = 0x07 // DisconnectFrame (reason byte)
	// FrameReliablePiece is a ReliablePieceFrame (one piece of a large
	// reliable message).
	FrameReliablePiece FrameType = 0x08
)

// MaxMessageLen is the largest payload length any frame may declare:
// 16 MiB. A single datagram is far smaller, but a frame rebuilt from
// fragments (up to 255 of them, each at most one datagram) can exceed 64 KiB,
// so the cap is set above 255 × the largest UDP payload. A declared length
// above it is ErrTooLarge; one above the bytes that remain is ErrShort.
const MaxMessageLen = 1 << 24

// Fixed bytes before the length varint, per frame type.
const (
	unreliableFixed    = 1                  // type
	sequencedFixed     = 4                  // type, stream, seq u16
	reliableFixed      = 4                  // type, stream, message id u16
	fragmentFixed      = 6                  // type, mode, message id u16, index, count
	actionStreamFixed  = 1                  // type
	keepAliveLen       = KeepAliveFrameLen  // type
	disconnectLen      = DisconnectFrameLen // type, reason
	reliablePieceFixed = 6                  // type, stream, message id u16, index, count
)

// Valid reports whether t is one of the defined frame types.
func (t FrameType) Valid() bool { return t >= FrameUnreliable && t <= FrameReliablePiece }

// HasPayload reports whether frames of type t carry a length-prefixed
// payload (all but KeepAlive and Disconnect).
func (t FrameType) HasPayload() bool {
	return t >= FrameUnreliable && t <= FrameActionStream || t == FrameReliablePiece
}

// Fragmentable reports whether a message of type t may be split into
// Fragment frames (FragmentFrame.Mode): Unreliable, Sequenced and
// ActionStream. A large reliable message travels as ReliablePiece frames
// instead.
func (t FrameType) Fragmentable() bool {
	return t == FrameUnreliable || t == FrameSequenced || t == FrameActionStream
}

var frameTypeNames = [...]string{
	FrameUnreliable:    "Unreliable",
	FrameSequenced:     "Sequenced",
	FrameReliable:      "Reliable",
	FrameFragment:      "Fragment",
	FrameActionStream:  "ActionStream",
	FrameKeepAlive:     "KeepAlive",
	FrameDisconnect:    "Disconnect",
	FrameReliablePiece: "ReliablePiece",
}

// String returns the type's name, or "FrameType(N)" for an invalid value
// (which allocates; the named ones do not).
func (t FrameType) String() string {
	if t.Valid() {
		return frameTypeNames[t]
	}
	return "FrameType(" + strconv.Itoa(int(t)) + ")"
}

// fixedLen returns the bytes a frame of type t has before its length varint
// (or its whole size for the payload-less types), or 0 for an invalid t.
func (t FrameType) fixedLen() int {
	switch t {
	case FrameUnreliable:
		return unreliableFixed
	case FrameSequenced:
		return sequencedFixed
	case FrameReliable:
		return reliableFixed
	case FrameFragment:
		return fragmentFixed
	case FrameActionStream:
		return actionStreamFixed
	case FrameKeepAlive:
		return keepAliveLen
	case FrameDisconnect:
		return disconnectLen
	case FrameReliablePiece:
		return reliablePieceFixed
	}
	return 0
}

// PeekFrameType returns the type of the frame at the front of b without
// consuming it, for dispatching to the matching ParseXFrame. An empty b
// returns ErrShort, an undefined type byte ErrMalformed. It never
// allocates.
func PeekFrameType(b []byte) (FrameType, error) {
	if len(b) == 0 {
		return 0, ErrShort
	}
	t := FrameType(b[0])
	if !t.Valid() {
		return 0, ErrMalformed
	}
	return t, nil
}

// SkipFrame validates the frame at the front of b, whatever its type, and
// returns its type and encoded length, with the errors of the matching
// ParseXFrame. A receiver uses it to check every frame of a datagram before
// acting on any (so a malformed tail does not leave a datagram half
// applied), and to check that a reassembled message is exactly one frame of
// its fragments' mode. Like ParseActionStreamFrame it checks an
// ActionStream frame's framing, not the slice inside (ParseSlice does that
// when the slice is consumed). It never allocates.
func SkipFrame(b []byte) (FrameType, int, error) {
	t, err := PeekFrameType(b)
	if err != nil {
		return 0, 0, err
	}
	var n int
	switch t {
	case FrameUnreliable:
		_, n, err = ParseUnreliableFrame(b)
	case FrameSequenced:
		_, n, err = ParseSequencedFrame(b)
	case FrameReliable:
		_, n, err = ParseReliableFrame(b)
	case FrameFragment:
		_, n, err = ParseFragmentFrame(b)
	case FrameActionStream:
		_, n, err = ParseActionStreamFrame(b)
	case FrameKeepAlive:
		_, n, err = ParseKeepAliveFrame(b)
	case FrameDisconnect:
		_, n, err = ParseDisconnectFrame(b)
	case FrameReliablePiece:
		_, n, err = ParseReliablePieceFrame(b)
	}
	if err != nil {
		return 0, 0, err
	}
	return t, n, nil
}

// FrameLen returns the encoded size of a frame of type t carrying a
// payload of payloadLen bytes: its fixed fields, the length varint and the
// payload. For KeepAlive and Disconnect payloadLen is ignored. It returns 0
// for an invalid t or a negative payloadLen. It allocates nothing.
func FrameLen(t FrameType, payloadLen int) int {
	fixed := t.fixedLen()
	if fixed == 0 || payloadLen < 0 {
		return 0
	}
	if !t.HasPayload() {
		return fixed
	}
	return fixed + UvarintLen(uint64(payloadLen)) + payloadLen
}

// payloadFrameLen is FrameLen for a type with a payload and fixed bytes
// before its length varint: the per-type FrameLen functions use it, so
// each is a few inlined instructions.
func payloadFrameLen(fixed, payloadLen int) int {
	return fixed + UvarintLen(uint64(payloadLen)) + payloadLen
}

// FramePayloadRoom returns the largest payload length L for which a frame
// of type t fits in room bytes (FrameLen(t, L) ≤ room), capped at
// MaxMessageLen. It returns −1 when not even an empty frame fits, or when t
// carries no payload. The fragmenter uses it to size fragments; it loops
// at most MaxVarintLen times and allocates nothing.
func FramePayloadRoom(t FrameType, room int) int {
	if !t.HasPayload() {
		return -1
	}
	r := room - t.fixedLen() // bytes for the length varint plus payload
	for k := 1; k <= MaxVarintLen; k++ {
		l := r - k
		if l < 0 {
			break
		}
		if UvarintLen(uint64(l)) <= k {
			return min(l, MaxMessageLen)
		}
	}
	return -1
}

// appendPayload appends p's length as a varint, then p.
func appendPayload(dst, p []byte) []byte {
	dst = AppendUvarint(dst, uint64(len(p)))
	return append(dst, p...)
}

// parsePayload decodes a length varint at b[off:] and the payload that
// follows it, capped at max bytes. It returns the payload, aliasing b with
// its capacity clipped, and the offset just past it.
func parsePayload(b []byte, off int, max uint64) ([]byte, int, error) {
	// A length of one or two bytes (payloads below 16 KiB: every one that
	// fits a datagram) is decoded here as Uvarint would, with its checks;
	// anything else, and every error, takes the general path.
	if off >= 0 && off < len(b) {
		l, start := uint64(b[off]), off+1
		if l >= 0x80 {
			if start >= len(b) || b[start] >= 0x80 || b[start] == 0 {
				return parsePayloadSlow(b, off, max)
			}
			l = l&0x7f | uint64(b[start])<<7
			start++
		}
		if l <= max && l <= uint64(len(b)-start) {
			end := start + int(l)
			return b[start:end:end], end, nil
		}
	}
	return parsePayloadSlow(b, off, max)
}

// parsePayloadSlow is parsePayload for any length varint, and its errors.
func parsePayloadSlow(b []byte, off int, max uint64) ([]byte, int, error) {
	l, k, err := uvarintMax(b[off:], max)
	if err != nil {
		return nil, 0, err
	}
	start := off + k
	if l > uint64(len(b)-start) {
		return nil, 0, ErrShort
	}
	end := start + int(l)
	return b[start:end:end], end, nil
}
