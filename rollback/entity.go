package rollback

import (
	"strconv"

	"github.com/tickwire/tickwire/wire"
)

// Entity is a generation-tagged entity handle: the slot index in the low 32
// bits and the slot's generation in the high 32 bits.
//
// A slot's generation changes every time its entity is destroyed, so a
// handle kept past the destruction of its entity (in a log record, a
// capture, a game object) no longer matches the slot once it is recycled,
// and every read or write through it fails with ErrStaleEntity instead of
// landing on the slot's new occupant.
//
// Generations start at 1, so the zero value, NoEntity, never names an
// entity. Entity is a plain comparable value; its methods allocate nothing.
type Entity uint64

// NoEntity is the zero Entity. It names no entity; pure events that concern
// no entity carry it.
const NoEntity Entity = 0

// NewEntity packs a slot index and a generation into a handle. It does not
// check that the handle is live; a State does that on use.
func NewEntity(index, generation uint32) Entity {
	return Entity(uint64(generation)<<32 | uint64(index))
}

// Index returns the slot index of e.
func (e Entity) Index() uint32 { return uint32(e) }

// Generation returns the generation of e (0 only for handles that were
// never issued, such as NoEntity).
func (e Entity) Generation() uint32 { return uint32(e >> 32) }

// String formats e as "index.generation", or "none" for NoEntity. It
// allocates; use it for logs and test messages, not on hot paths.
func (e Entity) String() string {
	if e == NoEntity {
		return "none"
	}
	b := make([]byte, 0, 24)
	b = strconv.AppendUint(b, uint64(e.Index()), 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(e.Generation()), 10)
	return string(b)
}

// Sender is the provenance byte every log record carries: who authored it.
//
//	0–253  an input that arrived from that peer (MaxPeerID = 253)
//	254    derived: executed by the local simulation step (SenderDerived)
//	255    an input authored locally, e.g. server-side EnqueueAction (SenderLocal)
//
// Inputs (peers and local) happened once and are reapplied from the log on
// replay. Derived records are recomputed by re-running the step, so a replay
// drops them: reapplying them as well would double their effect on every
// replay. That is why peer ids stop at 253: a peer holding 254 or 255 would
// have its input read back as the simulation's own output, or as the
// server's, and the transport refuses such ids before a session exists.
type Sender uint8

// Provenance values. See Sender. They are the wire's provenance bytes
// (wire.MaxPeerID, wire.SenderDerived, wire.SenderLocal), typed: the values
// are defined once, in package wire, with the record format that carries them.
const (
	// MaxPeerID is the largest sender id a remote peer may hold (253).
	MaxPeerID = Sender(wire.MaxPeerID)
	// SenderDerived (254) marks records executed while the executor is in
	// derived mode (the server's simulation step). Derived senders may mutate
	// any entity.
	SenderDerived = Sender(wire.SenderDerived)
	// SenderLocal (255) marks inputs authored locally (the server's own
	// actions). Local senders may mutate any entity.
	SenderLocal = Sender(wire.SenderLocal)
)

// IsPeer reports whether s is a remote peer id (0–253). Only peers are
// subject to the owner rule.
func (s Sender) IsPeer() bool { return s <= MaxPeerID }

// IsDerived reports whether s is SenderDerived.
func (s Sender) IsDerived() bool { return s == SenderDerived }

// IsInput reports whether a record from s is an input, reapplied from the
// log on replay (every sender but SenderDerived).
func (s Sender) IsInput() bool { return s != SenderDerived }

// String returns "peer N", "derived" or "local". It allocates for peers.
func (s Sender) String() string {
	switch s {
	case SenderDerived:
		return "derived"
	case SenderLocal:
		return "local"
	}
	return "peer " + strconv.Itoa(int(s))
}
