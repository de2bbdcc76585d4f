package wire

import "encoding/binary"

// Accept is the server's answer to a ConnectResponse whose cookie it
// verified: the session exists from now on.
//
// Nonce echoes the client's nonce. PeerID is the client's id in the action
// log, 0..MaxPeerID. Secret is the 64-bit session secret every session
// datagram carries in its SessionHeader, in both directions. Token is the
// session token that resumes this session after a connection loss. MTU is
// the largest datagram either side may send and MaxMessage the largest
// message (after reassembly) either side may send; both sides size their
// fragmenters and assemblers from these, so the sender never accepts a
// message the receiver cannot rebuild.
//
// The encoding is AcceptLen (40) bytes. It is a plain comparable value.
type Accept struct {
	Nonce      uint64
	PeerID     uint8
	Secret     uint64
	Token      Token
	MTU        uint16
	MaxMessage uint32
}

// AppendAccept appends the 40-byte encoding of a to dst and returns the
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
	return binary.LittleEndian.AppendUint32(dst, a.MaxMessage)
}

// ParseAccept decodes an Accept from the front of b and returns it with
// n = AcceptLen. A wrong kind byte or a PeerID above MaxPeerID (254 and 255
// are provenance markers, never peers) returns ErrMalformed; a MaxMessage
// above MaxMessageLen ErrTooLarge; fewer than 40 bytes ErrShort. It never
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
	return a, AcceptLen, nil
}
