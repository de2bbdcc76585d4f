package wire

// UnreliableFrame carries one unreliable, unordered message: delivered at
// most once, possibly not at all, in any order.
//
// Payload aliases the decoded input (see the package doc); AppendUnreliable
// copies it.
type UnreliableFrame struct {
	Payload []byte
}

// AppendUnreliableFrame appends f — FrameUnreliable, the payload length as
// a varint, the payload — to dst and returns the extended slice. It copies
// the payload and allocates only if dst lacks capacity.
func AppendUnreliableFrame(dst []byte, f UnreliableFrame) []byte {
	dst = append(dst, byte(FrameUnreliable))
	return appendPayload(dst, f.Payload)
}

// UnreliableFrameLen returns the exact encoded size of f.
func UnreliableFrameLen(f UnreliableFrame) int {
	return payloadFrameLen(unreliableFixed, len(f.Payload))
}

// ParseUnreliableFrame decodes an unreliable frame from the front of b and
// returns it with the bytes consumed. The payload aliases b. A wrong type
// byte returns ErrMalformed; a length above MaxMessageLen ErrTooLarge; a
// length above the bytes remaining ErrShort. It never allocates.
func ParseUnreliableFrame(b []byte) (UnreliableFrame, int, error) {
	// A payload below 128 bytes (a one-byte length) is decoded inline;
	// parseUnreliableFrame decodes the rest.
	if len(b) > unreliableFixed && b[0] == byte(FrameUnreliable) && b[unreliableFixed] < 0x80 {
		if end := unreliableFixed + 1 + int(b[unreliableFixed]); end <= len(b) {
			return UnreliableFrame{Payload: b[unreliableFixed+1 : end : end]}, end, nil
		}
	}
	return parseUnreliableFrame(b)
}

// parseUnreliableFrame is ParseUnreliableFrame for any input.
func parseUnreliableFrame(b []byte) (UnreliableFrame, int, error) {
	if len(b) < unreliableFixed {
		return UnreliableFrame{}, 0, ErrShort
	}
	if FrameType(b[0]) != FrameUnreliable {
		return UnreliableFrame{}, 0, ErrMalformed
	}
	p, n, err := parsePayload(b, unreliableFixed, MaxMessageLen)
	if err != nil {
		return UnreliableFrame{}, 0, err
	}
	return UnreliableFrame{Payload: p}, n, nil
}
