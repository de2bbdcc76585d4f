package wire

import "encoding/binary"

// Accept is the server's answer to a ConnectResponse whose cookie it
// verified: the session exists from now on.
//
// Nonce echoes the client's nonce. PeerID is the client's id in the action
// log, 0..MaxPeerID. Secret is the 64-bit session secret every session
// datagram carries in its SessionHeader, in both directions. Token is the
// session token that resumes this session after a connection loss.
//
// The rest are the limits both ends of the session must share, announced
// by the server and adopted by the client, so that neither side ever sends
// what the other cannot take — a reliable message the receiver dropped
// after its datagram was acked would be lost for good:
//
//   - MTU: the largest datagram either side may send.
//   - MaxMessage: the largest message (after reassembly) either side may
//     send; both size their fragmenters and assemblers from MTU and
//     MaxMessage, so the sender never accepts a message the receiver
//     cannot rebuild.
//   - ReliableBytes: the byte cap of one reliable stream's send window,
//     which is also the receiver's out-of-order buffer.
//   - MaxPartial: how many fragmented messages the receiver reassembles at
//     once (the sender keeps at most half of them reliable and in flight).
//   - ReliableWindow: the most messages a reliable stream holds unacked,
//     which is also the receiver's reorder window.
//   - SequencedStreams: the number of unreliable-sequenced streams.
//   - OrderedStreams: the number of reliable-ordered streams.
//
// The wire carries the values as given; their ranges are the transport's
// (a client refuses an Accept whose limits are out of range). The encoding
// is AcceptLen (53) bytes. It is a plain comparable value.
type Accept struct {
	Nonce            uint64
	PeerID           uint8
	Secret           uint64
	Token            Token
	MTU              uint16
	MaxMessage       uint32
	ReliableBytes    uint32
	MaxPartial       uint32
	ReliableWindow   uint16
	SequencedStreams uint16
	OrderedStreams   uint8
}

// AppendAccept appends the 53-byte encoding of a to dst and returns the
// extended slice. It allocates only if dst lacks capacity. A PeerID above
// MaxPeerID or a MaxMessage above MaxMessageLen is written as given and
// rejected by ParseAccept.
func AppendAccept(dst []byte, a Accept) []byte {
	dst = append(dst, byte(KindAccept))
	dst = binary.LittleEndian.AppendUint64(dst, a.Nonce)
	dst = append(dst, a.PeerID)
	dst = binary.LittleEndian.AppendUint64(dst, a.Secret)
	dst = append(dst, a.Token[:]...)
	dst = binary.LittleEndian.AppendUint16(dst, a.MTU)
	dst = binary.LittleEndian.AppendUint32(dst, a.MaxMessage)
	dst = binary.LittleEndian.AppendUint32(dst, a.ReliableBytes)
	dst = binary.LittleEndian.AppendUint32(dst, a.MaxPartial)
	dst = binary.LittleEndian.AppendUint16(dst, a.ReliableWindow)
	dst = binary.LittleEndian.AppendUint16(dst, a.SequencedStreams)
	return append(dst, a.OrderedStreams)
}

// ParseAccept decodes an Accept from the front of b and returns it with
// n = AcceptLen. A wrong kind byte or a PeerID above MaxPeerID (254 and 255
// are provenance markers, never peers) returns ErrMalformed; a MaxMessage
// above MaxMessageLen ErrTooLarge; fewer than 53 bytes ErrShort. It never
// allocates.
func ParseAccept(b []byte) (Accept, int, error) {
	if len(b) == 0 {
		return Accept{}, 0, ErrShort
	}
	if PacketKind(b[0]) != KindAccept {
		return Accept{}, 0, ErrMalformed
	}
	if len(b) < AcceptLen {
		return Accept{}, 0, ErrShort
	}
	var a Accept
	a.Nonce = binary.LittleEndian.Uint64(b[1:])
	a.PeerID = b[9]
	if a.PeerID > MaxPeerID {
		return Accept{}, 0, ErrMalformed
	}
	a.Secret = binary.LittleEndian.Uint64(b[10:])
	copy(a.Token[:], b[18:34])
	a.MTU = binary.LittleEndian.Uint16(b[34:])
	a.MaxMessage = binary.LittleEndian.Uint32(b[36:])
	if a.MaxMessage > MaxMessageLen {
		return Accept{}, 0, ErrTooLarge
	}
	a.ReliableBytes = binary.LittleEndian.Uint32(b[40:])
	a.MaxPartial = binary.LittleEndian.Uint32(b[44:])
	a.ReliableWindow = binary.LittleEndian.Uint16(b[48:])
	a.SequencedStreams = binary.LittleEndian.Uint16(b[50:])
	a.OrderedStreams = b[52]
	return a, AcceptLen, nil
}
