package transport

import "github.com/tickwire/tickwire/wire"

// senderHolds reports whether ch still holds reliable message id of stream
// s: accepted, not yet released as acked. It is the conformance harness's
// one look inside a Channel. Everything else the harness checks goes
// through the exported API (Send results, deliveries, Stats); the exported
// Stats count held messages per channel only, which cannot tell "released
// but never delivered" (a silent loss) from "held for ever" (stranded) for
// one message. If the sender's internals change, this is the only function
// of the harness to adapt.
func senderHolds(ch *Channel, s uint8, id wire.Seq) bool {
	if int(s) >= len(ch.reliable) {
		return false
	}
	return ch.reliable[s].slot(id) != nil
}
