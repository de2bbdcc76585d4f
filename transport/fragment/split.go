package fragment

import "github.com/tickwire/tickwire/wire"

// Sizes and limits of the fragmenter.
const (
	// MaxPieces is the most pieces one message is split into
	// (wire.MaxFragments).
	MaxPieces = wire.MaxFragments

	// DatagramOverhead is the worst-case bytes a datagram spends before its
	// first frame: the session header (wire.SessionHeaderLen, 9) and the
	// channel header at its largest (wire.ChannelHeaderMaxLen, 9). Pieces
	// are sized against the worst case, so a piece fits whatever the ack
	// state is when it is (re)sent.
	DatagramOverhead = wire.SessionHeaderLen + wire.ChannelHeaderMaxLen

	// MinMTU and MaxMTU bound AssemblerConfig.MTU. MinMTU is the smallest
	// datagram the architecture configures (576); MaxMTU is the largest UDP
	// payload over IPv4 (65507).
	MinMTU = 576
	MaxMTU = 65507
)

// PieceSize returns the payload bytes every piece but the last carries
// when datagrams are at most mtu bytes: the largest P for which
//
//	DatagramOverhead + wire.FrameLen(wire.FrameFragment, P) ≤ mtu
//
// where FrameLen(FrameFragment, P) = 6 fixed bytes (type, mode, message id
// u16, index, count) + the length varint of P + P. It is
// wire.FramePayloadRoom(wire.FrameFragment, mtu − 18): for the default MTU
// of 1200 that is 1200 − 18 − 6 − 2 = 1174. It returns 0 when mtu is too
// small for a one-byte piece (below 26). Sender and receiver both derive it
// from the negotiated MTU, so they agree on it without sending it. It
// allocates nothing.
func PieceSize(mtu int) int {
	if mtu > MaxMTU {
		mtu = MaxMTU // keeps the result in int range; no real MTU is larger
	}
	p := wire.FramePayloadRoom(wire.FrameFragment, mtu-DatagramOverhead)
	if p < 1 {
		return 0
	}
	return p
}

// MaxMessageSize returns the largest message, in bytes, that can be split
// at the given MTU: MaxPieces × PieceSize(mtu) (299 370 at MTU 1200). A
// negotiated maximum message size may be lower; it is never higher in
// effect, because Count refuses more than MaxPieces pieces.
func MaxMessageSize(mtu int) int { return MaxPieces * PieceSize(mtu) }

// Count returns the number of pieces, 1 to MaxPieces, a message of msgLen
// bytes is split into with the given piece size: ⌈msgLen / pieceSize⌉. A
// message of exactly pieceSize bytes is one piece; one byte more is two.
// It returns ErrTooLarge when the message needs more than MaxPieces pieces,
// ErrEmpty when msgLen < 1 and ErrInvalidConfig when pieceSize < 1. It
// allocates nothing.
func Count(msgLen, pieceSize int) (int, error) {
	switch {
	case pieceSize < 1:
		return 0, ErrInvalidConfig
	case msgLen < 1:
		return 0, ErrEmpty
	}
	n := (msgLen-1)/pieceSize + 1 // no overflow, unlike (msgLen+pieceSize−1)/pieceSize
	if n > MaxPieces {
		return 0, ErrTooLarge
	}
	return n, nil
}

// Piece returns the bytes of msg that piece i carries: msg[i×pieceSize :
// min((i+1)×pieceSize, len(msg))], aliasing msg. Every piece but the last
// is exactly pieceSize bytes long. Use it to budget a datagram:
// wire.FrameLen(wire.FrameFragment, len(Piece(…))) is the size of the
// piece's frame. It panics if pieceSize < 1, msg is empty or i is outside
// [0, ⌈len(msg)/pieceSize⌉) — arguments the caller has validated with
// Count, not input from the network.
func Piece(msg []byte, pieceSize, i int) []byte {
	if pieceSize < 1 || len(msg) < 1 || i < 0 || i > (len(msg)-1)/pieceSize {
		panic("fragment: Piece index out of range")
	}
	off := i * pieceSize
	end := min(off+pieceSize, len(msg))
	return msg[off:end:end]
}

// AppendPiece appends the wire encoding of piece i of msg — a
// wire.FragmentFrame with the given mode and message id, Index i, Count
// Count(len(msg), pieceSize) and payload Piece(msg, pieceSize, i) — to dst
// and returns the extended slice. Calling it for i = 0 … Count−1 splits a
// message with no allocation beyond growing dst (none when dst has room
// for wire.FrameLen(wire.FrameFragment, pieceSize) more bytes).
//
// msg must be the complete frame encoding of type mode (wire's contract for
// fragmented messages); AppendPiece does not check its content. It panics
// if Count(len(msg), pieceSize) fails or i is out of range: the caller
// checks the message with Count before splitting it.
func AppendPiece(dst, msg []byte, pieceSize int, mode wire.FrameType, id wire.Seq, i int) []byte {
	n, err := Count(len(msg), pieceSize)
	if err != nil {
		panic("fragment: AppendPiece of a message Count refuses: " + err.Error())
	}
	if i < 0 || i >= n {
		panic("fragment: AppendPiece index out of range")
	}
	off := i * pieceSize
	end := min(off+pieceSize, len(msg))
	return wire.AppendFragmentFrame(dst, wire.FragmentFrame{
		Mode:      mode,
		MessageID: id,
		Index:     uint8(i),
		Count:     uint8(n),
		Payload:   msg[off:end],
	})
}
