package wire

import "encoding/binary"

// Accept is the server's answer to a ConnectResponse whose cookie it
// verified: the session exists from now on (docs/WIRE.md §9.5).
//
// Nonce echoes the client's nonce. Ephemeral is the server's ephemeral
// X25519 public key for this handshake and ServerRandom 16 fresh random
// bytes; with the client's ephemeral key and the server's static key they
// give the session secret. Body is the AcceptBody (peer id, session token,
// shared limits) sealed with an AEAD key derived from that secret, so only
// the holder of the server's static key can produce an Accept the client
// takes: the client opens Body before it uses anything in it.
//
// The encoding is AcceptLen (109) bytes: AcceptHeaderLen (57) of
// cleartext, then AcceptSealedLen (52) of sealed body. It is a plain
// comparable value.
type Accept struct {
	Nonce        uint64
	Ephemeral    PublicKey
	ServerRandom [ServerRandomLen]byte
	Body         [AcceptSealedLen]byte
}

// AppendAccept appends the 109-byte encoding of a to dst and returns the
// extended slice. It allocates only if dst lacks capacity.
func AppendAccept(dst []byte, a Accept) []byte {
	dst = append(dst, byte(KindAccept))
	dst = binary.LittleEndian.AppendUint64(dst, a.Nonce)
	dst = append(dst, a.Ephemeral[:]...)
	dst = append(dst, a.ServerRandom[:]...)
	return append(dst, a.Body[:]...)
}

// ParseAccept decodes an Accept from the front of b and returns it with
// n = AcceptLen. A wrong kind byte returns ErrMalformed; fewer than 109
// bytes ErrShort. The body is returned sealed, unchecked. It never
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
	copy(a.Ephemeral[:], b[9:41])
	copy(a.ServerRandom[:], b[41:AcceptHeaderLen])
	copy(a.Body[:], b[AcceptHeaderLen:AcceptLen])
	return a, AcceptLen, nil
}

// AcceptBody is the sealed part of an Accept.
//
// PeerID is the client's id in the action log, 0..MaxPeerID. Token is the
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
// is AcceptBodyLen (36) bytes. It is a plain comparable value.
type AcceptBody struct {
	PeerID           uint8
	Token            Token
	MTU              uint16
	MaxMessage       uint32
	ReliableBytes    uint32
	MaxPartial       uint32
	ReliableWindow   uint16
	SequencedStreams uint16
	OrderedStreams   uint8
}

// AppendAcceptBody appends the 36-byte encoding of a to dst and returns
// the extended slice. It allocates only if dst lacks capacity. A PeerID
// above MaxPeerID or a MaxMessage above MaxMessageLen is written as given
// and rejected by ParseAcceptBody.
func AppendAcceptBody(dst []byte, a AcceptBody) []byte {
	dst = append(dst, a.PeerID)
	dst = append(dst, a.Token[:]...)
	dst = binary.LittleEndian.AppendUint16(dst, a.MTU)
	dst = binary.LittleEndian.AppendUint32(dst, a.MaxMessage)
	dst = binary.LittleEndian.AppendUint32(dst, a.ReliableBytes)
	dst = binary.LittleEndian.AppendUint32(dst, a.MaxPartial)
	dst = binary.LittleEndian.AppendUint16(dst, a.ReliableWindow)
	dst = binary.LittleEndian.AppendUint16(dst, a.SequencedStreams)
	return append(dst, a.OrderedStreams)
}

// ParseAcceptBody decodes an opened AcceptBody from the front of b and
// returns it with n = AcceptBodyLen. A PeerID above MaxPeerID (254 and
// 255 are provenance markers, never peers) returns ErrMalformed; a
// MaxMessage above MaxMessageLen ErrTooLarge; fewer than 36 bytes
// ErrShort. It never allocates.
func ParseAcceptBody(b []byte) (AcceptBody, int, error) {
	if len(b) < AcceptBodyLen {
		return AcceptBody{}, 0, ErrShort
	}
	var a AcceptBody
	a.PeerID = b[0]
	if a.PeerID > MaxPeerID {
		return AcceptBody{}, 0, ErrMalformed
	}
	copy(a.Token[:], b[1:17])
	a.MTU = binary.LittleEndian.Uint16(b[17:])
	a.MaxMessage = binary.LittleEndian.Uint32(b[19:])
	if a.MaxMessage > MaxMessageLen {
		return AcceptBody{}, 0, ErrTooLarge
	}
	a.ReliableBytes = binary.LittleEndian.Uint32(b[23:])
	a.MaxPartial = binary.LittleEndian.Uint32(b[27:])
	a.ReliableWindow = binary.LittleEndian.Uint16(b[31:])
	a.SequencedStreams = binary.LittleEndian.Uint16(b[33:])
	a.OrderedStreams = b[35]
	return a, AcceptBodyLen, nil
}
