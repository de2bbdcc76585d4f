package rollback

// ComponentID identifies a component type of a State. Ids are dense,
// 0..NumComponents()−1, in registration order, and that order is the wire
// order: two ends of a session must build their states with the same
// component types in the same order.
type ComponentID uint16

// Target names one (entity, component) pair an action mutates. The executor
// captures each target's bytes before the action applies, and a rewind
// restores them.
type Target struct {
	// Entity is the entity mutated.
	Entity Entity
	// Component is the component of Entity mutated.
	Component ComponentID
}

// State is the replicated world as the rollback machinery sees it: a set of
// entities, each with an owner and with components that serialize to bytes.
// The executor uses it to authorize actions (Owner), to capture prior state
// before an action applies (AppendComponent), and a rewind uses it to put
// the captured bytes back (RestoreComponent). Everything else about the
// world — how components are laid out, how game code reads them — is the
// implementation's business; Store is the reference implementation.
//
// An implementation must be deterministic: the same calls in the same order
// leave the same bytes. It is used from one goroutine at a time (the one that
// owns the executor) and need not be safe for concurrent use.
//
// Entity lifetime is not part of this interface and is not rewindable; see
// the package doc ("Spawning") for how to model spawns and despawns so that
// they roll back.
type State interface {
	// NumComponents returns the number of component types. Component ids
	// run from 0 to NumComponents()−1 in wire order. It must not change
	// after an executor has been built on the state.
	NumComponents() int

	// Owner returns the sender that owns e: a peer id (0–253) for an entity
	// a peer controls, or SenderLocal for an entity no peer owns. It returns
	// ErrStaleEntity (possibly wrapped) when e is not live.
	Owner(e Entity) (Sender, error)

	// AppendComponent appends the serialized bytes of component c of
	// entity e to dst and returns the extended slice, like append. It must
	// not shrink dst or modify dst[:len(dst)], and it must not retain dst.
	// On error it returns dst unchanged (or any extension, which the
	// caller discards) and an error: ErrStaleEntity when e is not live,
	// ErrUnknownComponent when c is out of range. Cost should be
	// proportional to the component's size; it is called once per declared
	// pair of every executed action.
	AppendComponent(dst []byte, e Entity, c ComponentID) ([]byte, error)

	// RestoreComponent overwrites component c of entity e with src, which
	// holds bytes a previous AppendComponent produced for the same
	// component — or, for snapshots and state bursts, bytes that arrived
	// from the network, so it must validate src and return ErrMalformed
	// rather than panic. It must copy src and not retain it. It returns
	// ErrStaleEntity when e is not live: a rewind never writes into an
	// entity whose slot has been recycled.
	RestoreComponent(e Entity, c ComponentID, src []byte) error
}
