package transport

import (
	"github.com/tickwire/tickwire/transport/fragment"
	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/wire"
)

// maxFraming is the most bytes a message frame adds around its payload
// (a sequenced or reliable frame: 4 fixed bytes and a length varint of at
// most 4 bytes for lengths below wire.MaxMessageLen).
const maxFraming = 8

// datagramOverhead is the worst-case header size of a cleartext session
// datagram: the session header and a channel header with a full ack and
// all four ack-bits bytes.
const datagramOverhead = fragment.DatagramOverhead

// sealHeaderLen is the cleartext header of a sealed datagram, the room a
// sealed channel leaves at the front of each datagram for Seal.
const sealHeaderLen = seal.HeaderLen

// sealGrowth is how many more bytes a sealed datagram spends on session
// framing than a cleartext one: 19 (3 header + 16 tag) against 9.
const sealGrowth = seal.Overhead - wire.SessionHeaderLen

// framing is the datagram geometry of a channel at an MTU.
type framing struct {
	limit     int // bytes before sealing: MTU, or MTU − seal.TagLen
	single    int // frame bytes after the largest channel header
	pieceSize int // fragment piece size
}

// framingFor returns the geometry of sealed or cleartext datagrams at mtu.
// A sealed datagram's payload room is MTU − 19 (seal.Overhead) against
// MTU − 9, so its piece size is 10 bytes less (1164 at MTU 1200). Both
// peers derive it from the negotiated MTU and the session's mode.
func framingFor(mtu int, sealed bool) framing {
	if sealed {
		return framing{
			limit:     mtu - seal.TagLen,
			single:    mtu - seal.TagLen - sealHeaderLen - wire.ChannelHeaderMaxLen,
			pieceSize: fragment.PieceSize(mtu - sealGrowth),
		}
	}
	return framing{limit: mtu, single: mtu - datagramOverhead, pieceSize: fragment.PieceSize(mtu)}
}

// MaxMessageSizeFor returns the largest message payload that 255 fragments
// carry at this MTU, after framing: the default and the upper bound of
// Config.MaxMessageSize. It is sized for sealed datagrams (pieces 10 bytes
// smaller than cleartext ones), in either mode, so a config's limits do
// not depend on InsecureCleartext. Both peers derive it from the
// negotiated MTU, so whatever the sender accepts the receiver can
// reassemble (S-C3).
func MaxMessageSizeFor(mtu int) int {
	return fragment.MaxPieces*framingFor(mtu, true).pieceSize - maxFraming
}
