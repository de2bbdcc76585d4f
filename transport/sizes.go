package transport

import "github.com/tickwire/tickwire/transport/fragment"

// maxFraming is the most bytes a message frame adds around its payload
// (a sequenced or reliable frame: 4 fixed bytes and a length varint of at
// most 4 bytes for lengths below wire.MaxMessageLen).
const maxFraming = 8

// datagramOverhead is the worst-case header size of a session datagram:
// the session header and a channel header with a full ack and all four
// ack-bits bytes.
const datagramOverhead = fragment.DatagramOverhead

// MaxMessageSizeFor returns the largest message payload that 255 fragments
// carry at this MTU, after framing: the default and the upper bound of
// Config.MaxMessageSize. Both peers derive it from the negotiated MTU, so
// whatever the sender accepts the receiver can reassemble (S-C3).
func MaxMessageSizeFor(mtu int) int {
	return fragment.MaxMessageSize(mtu) - maxFraming
}
