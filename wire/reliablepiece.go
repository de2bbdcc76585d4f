package wire

// ReliablePieceFrame carries one piece of a reliable message too large for
// one datagram. Unlike a Fragment, every piece names its reliable stream
// and message id, so the receiver assembles it in that stream's own
// receive window: it is deduplicated by message id like a whole reliable
// message, bounded by the stream's window and byte cap, and never expires
// or is evicted while the session lives — a piece the receiver acked is
// never thrown away, so the sender may trust the datagram's ack.
//
// The pieces are the message payload cut into Count pieces of the same
// size (the last one shorter or equal): piece Index carries bytes
// [Index×P, Index×P+len(Payload)) where P is the piece size both peers
// derive from the MTU. Count is 2..MaxFragments: a message that fits one
// datagram travels as a ReliableFrame; Index is 0..Count−1.
//
// Payload aliases the decoded input (see the package doc).
type ReliablePieceFrame struct {
	Stream    uint8
	MessageID Seq
	Index     uint8
	Count     uint8
	Payload   []byte
}

// AppendReliablePieceFrame appends f — FrameReliablePiece, stream id,
// message id (u16 LE), index, count, payload length varint, payload — to
// dst and returns the extended slice. It copies the payload and allocates
// only if dst lacks capacity. Fields out of range (Count below 2, Index ≥
// Count) are written as given and rejected by ParseReliablePieceFrame.
func AppendReliablePieceFrame(dst []byte, f ReliablePieceFrame) []byte {
	dst = append(dst, byte(FrameReliablePiece), f.Stream, byte(f.MessageID), byte(f.MessageID>>8), f.Index, f.Count)
	return appendPayload(dst, f.Payload)
}

// ReliablePieceFrameLen returns the exact encoded size of f.
func ReliablePieceFrameLen(f ReliablePieceFrame) int {
	return FrameLen(FrameReliablePiece, len(f.Payload))
}

// ParseReliablePieceFrame decodes a reliable piece from the front of b and
// returns it with the bytes consumed. The payload aliases b. A Count below
// 2 or an Index not below Count returns ErrMalformed, and so does an empty
// payload; length errors are those of ParseUnreliableFrame. It never
// allocates.
func ParseReliablePieceFrame(b []byte) (ReliablePieceFrame, int, error) {
	if len(b) == 0 {
		return ReliablePieceFrame{}, 0, ErrShort
	}
	if FrameType(b[0]) != FrameReliablePiece {
		return ReliablePieceFrame{}, 0, ErrMalformed
	}
	if len(b) < reliablePieceFixed {
		return ReliablePieceFrame{}, 0, ErrShort
	}
	index, count := b[4], b[5]
	if count < 2 || index >= count {
		return ReliablePieceFrame{}, 0, ErrMalformed
	}
	p, n, err := parsePayload(b, reliablePieceFixed, MaxMessageLen)
	if err != nil {
		return ReliablePieceFrame{}, 0, err
	}
	if len(p) == 0 {
		return ReliablePieceFrame{}, 0, ErrMalformed
	}
	return ReliablePieceFrame{
		Stream:    b[1],
		MessageID: Seq(b[2]) | Seq(b[3])<<8,
		Index:     index,
		Count:     count,
		Payload:   p,
	}, n, nil
}
