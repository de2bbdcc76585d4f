package wire

import "strconv"

// PacketKind is the first byte of every tickwire datagram. It decides how
// the rest is parsed: one of the five handshake messages, or a session
// datagram (session header, channel header, frames).
//
// The zero value is not a valid kind, so a datagram of zero bytes is never
// mistaken for a message.
type PacketKind uint8

// The packet kinds. Values 0 and 7–255 are invalid.
const (
	KindConnectRequest  PacketKind = 0x01 // client → server: ConnectRequest
	KindChallenge       PacketKind = 0x02 // server → client: Challenge
	KindConnectResponse PacketKind = 0x03 // client → server: ConnectResponse
	KindAccept          PacketKind = 0x04 // server → client: Accept
	KindReject          PacketKind = 0x05 // server → client: Reject
	KindSession         PacketKind = 0x06 // either way: session datagram
)

// Valid reports whether k is one of the defined packet kinds.
func (k PacketKind) Valid() bool { return k >= KindConnectRequest && k <= KindSession }

var packetKindNames = [...]string{
	KindConnectRequest:  "ConnectRequest",
	KindChallenge:       "Challenge",
	KindConnectResponse: "ConnectResponse",
	KindAccept:          "Accept",
	KindReject:          "Reject",
	KindSession:         "Session",
}

// String returns the kind's name, or "PacketKind(N)" for an invalid value
// (which allocates; the named ones do not).
func (k PacketKind) String() string {
	if k.Valid() {
		return packetKindNames[k]
	}
	return "PacketKind(" + strconv.Itoa(int(k)) + ")"
}

// ParsePacketKind reads the packet kind byte at the front of b and returns
// it with n = 1. An empty b returns ErrShort; a byte that is not a defined
// kind returns ErrMalformed. It is the first call on every received
// datagram and never allocates.
func ParsePacketKind(b []byte) (PacketKind, int, error) {
	if len(b) == 0 {
		return 0, 0, ErrShort
	}
	k := PacketKind(b[0])
	if !k.Valid() {
		return 0, 0, ErrMalformed
	}
	return k, 1, nil
}
