package wire

// StreamUnordered is the reliable stream id of the reliable-unordered
// stream. Stream ids 1–255 are reliable-ordered streams, each with its own
// order.
const StreamUnordered uint8 = 0

// ReliableFrame carries one message of a reliable stream: delivered exactly
// once, and on an ordered stream (Stream ≠ StreamUnordered) in MessageID
// order. MessageID is the per-stream message sequence number, compared
// with Seq arithmetic; the sender keeps fewer than 32768 messages of a
// stream unacknowledged so the comparison stays unambiguous. Reliability
// itself comes from the channel's per-datagram acks: a sender re-sends the
// messages of a datagram declared lost, and the receiver drops duplicates
// by MessageID.
//
// Payload aliases the decoded input (see the package doc).
type ReliableFrame struct {
	Stream    uint8
	MessageID Seq
	Payload   []byte
}

// Ordered reports whether the frame belongs to an ordered stream.
func (f ReliableFrame) Ordered() bool { return f.Stream != StreamUnordered }

// AppendReliableFrame appends f — FrameReliable, stream id, message id
// (u16 LE), payload length varint, payload — to dst and returns the
// extended slice. It copies the payload and allocates only if dst lacks
// capacity.
func AppendReliableFrame(dst []byte, f ReliableFrame) []byte {
	dst = append(dst, byte(FrameReliable), f.Stream, byte(f.MessageID), byte(f.MessageID>>8))
	return appendPayload(dst, f.Payload)
}

// ReliableFrameLen returns the exact encoded size of f.
func ReliableFrameLen(f ReliableFrame) int { return payloadFrameLen(reliableFixed, len(f.Payload)) }

// ParseReliableFrame decodes a reliable frame from the front of b and
// returns it with the bytes consumed. The payload aliases b. Errors are
// those of ParseUnreliableFrame. It never allocates.
func ParseReliableFrame(b []byte) (ReliableFrame, int, error) {
	// A payload below 128 bytes (a one-byte length) that is all there is
	// decoded inline; parseReliableFrame decodes the rest.
	if len(b) > reliableFixed && b[0] == byte(FrameReliable) && b[reliableFixed] < 0x80 {
		if end := reliableFixed + 1 + int(b[reliableFixed]); end <= len(b) {
			return ReliableFrame{Stream: b[1], MessageID: Seq(b[2]) | Seq(b[3])<<8, Payload: b[reliableFixed+1 : end : end]}, end, nil
		}
	}
	return parseReliableFrame(b)
}

// parseReliableFrame is ParseReliableFrame for any input.
func parseReliableFrame(b []byte) (ReliableFrame, int, error) {
	if len(b) == 0 {
		return ReliableFrame{}, 0, ErrShort
	}
	if FrameType(b[0]) != FrameReliable {
		return ReliableFrame{}, 0, ErrMalformed
	}
	if len(b) < reliableFixed {
		return ReliableFrame{}, 0, ErrShort
	}
	p, n, err := parsePayload(b, reliableFixed, MaxMessageLen)
	if err != nil {
		return ReliableFrame{}, 0, err
	}
	return ReliableFrame{Stream: b[1], MessageID: Seq(b[2]) | Seq(b[3])<<8, Payload: p}, n, nil
}
