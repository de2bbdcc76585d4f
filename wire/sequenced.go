package wire

// SequencedFrame carries one unreliable-sequenced message: the receiver
// delivers it only if its Seq is newer (Seq.Newer) than the last one it
// delivered on the same Stream, and drops it otherwise — newest wins. Each
// of the 256 streams has its own sequence space, so unrelated state (say,
// player input and camera) does not make each other stale.
//
// Payload aliases the decoded input (see the package doc).
type SequencedFrame struct {
	Stream  uint8
	Seq     Seq
	Payload []byte
}

// AppendSequencedFrame appends f — FrameSequenced, stream, seq (u16 LE),
// payload length varint, payload — to dst and returns the extended slice.
// It copies the payload and allocates only if dst lacks capacity.
func AppendSequencedFrame(dst []byte, f SequencedFrame) []byte {
	dst = append(dst, byte(FrameSequenced), f.Stream, byte(f.Seq), byte(f.Seq>>8))
	return appendPayload(dst, f.Payload)
}

// SequencedFrameLen returns the exact encoded size of f.
func SequencedFrameLen(f SequencedFrame) int { return payloadFrameLen(sequencedFixed, len(f.Payload)) }

// ParseSequencedFrame decodes a sequenced frame from the front of b and
// returns it with the bytes consumed. The payload aliases b. Errors are
// those of ParseUnreliableFrame. It never allocates.
func ParseSequencedFrame(b []byte) (SequencedFrame, int, error) {
	if len(b) == 0 {
		return SequencedFrame{}, 0, ErrShort
	}
	if FrameType(b[0]) != FrameSequenced {
		return SequencedFrame{}, 0, ErrMalformed
	}
	if len(b) < sequencedFixed {
		return SequencedFrame{}, 0, ErrShort
	}
	p, n, err := parsePayload(b, sequencedFixed, MaxMessageLen)
	if err != nil {
		return SequencedFrame{}, 0, err
	}
	return SequencedFrame{Stream: b[1], Seq: Seq(b[2]) | Seq(b[3])<<8, Payload: p}, n, nil
}
