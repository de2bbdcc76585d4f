package rollback

import (
	"fmt"
	"hash/fnv"
	"math"
)

// Action-type limits.
const (
	// MaxPayloadSize is the largest action payload in bytes.
	MaxPayloadSize = math.MaxUint16
	// MaxTargets is the most (entity, component) pairs one action may
	// declare, counting ActionType.Writes and whatever Touches adds.
	MaxTargets = 64
	// maxActionTypes is the most action types one registry holds.
	maxActionTypes = math.MaxUint16
)

// ActionTypeID identifies an action type within one Registry: its
// registration index. Ids are per registry, never global.
type ActionTypeID uint16

// Action is one action as an action type's functions see it. It is passed
// by value; Payload aliases a buffer owned by the caller (during Check and
// Touches) or by the log's frame arena (during Apply) and is valid only for
// the duration of the call: copy what must outlive it.
type Action struct {
	// Frame is the frame the action executes in.
	Frame uint32
	// Sender is the provenance stamped on the record (SenderDerived in
	// derived mode, whatever the caller passed).
	Sender Sender
	// Type is the action's type id.
	Type ActionTypeID
	// Entity is the action's subject: the entity Writes applies to and the
	// one the owner rule checks first. NoEntity for actions about no entity.
	Entity Entity
	// Payload is the encoded payload, already checked against the type's
	// MinSize/MaxSize and Check.
	Payload []byte
	// Replay is true while the executor is in replay mode
	// (Executor.SetReplay): the action is a re-execution, by a rollback
	// replay, of a frame this side has executed before, and its effect on
	// the game has been presented already. Apply of a pure event is then
	// not called at all unless the event was never presented (see
	// the presentation function Server and Client install), in which case Replay is false. Server and
	// Client set replay mode; a game reads the flag to tell a first
	// presentation from a re-simulation.
	Replay bool
}

// ActionType describes one kind of action over a state of type S, at the
// byte level: an action is a type id, a subject entity and a payload of
// bytes, and the type's functions do their work on those bytes. (For typed
// payloads, see TypedAction, which builds an ActionType from an encoder and
// a decoder.)
//
// The functions must be deterministic functions of their arguments and the
// state, must not retain Payload, must not call back into the executor, and
// should not allocate: they run for every execution and every replay.
type ActionType[S State] struct {
	// Name identifies the type in errors and lookups; unique and non-empty.
	Name string

	// MinSize is the shortest payload accepted (0 ≤ MinSize ≤ MaxSize).
	// The executor refuses any payload outside [MinSize, MaxSize] before
	// running any function of the type, so a function may index up to
	// MinSize bytes without checking.
	MinSize int
	// MaxSize is the longest payload accepted (≤ MaxPayloadSize).
	MaxSize int

	// Writes lists the components of the subject entity (Action.Entity)
	// that Apply may change. Empty Writes and nil Touches make the type a
	// pure event: never captured, never rewound (S-F6).
	Writes []ComponentID

	// Check, if set, validates a payload that passed the size bounds: it is
	// the decoder gate for bytes from the network. It returns a non-nil
	// error to refuse the payload (reported as ErrMalformed); it must not
	// panic on any input of an allowed length.
	Check func(payload []byte) error

	// Touches, if set, appends further (entity, component) pairs the
	// action mutates — typically other entities named in the payload — to
	// dst and returns it. The owner rule applies to every pair. An error,
	// or more than MaxTargets pairs in all, refuses the action as
	// ErrMalformed.
	Touches func(dst []Target, a Action) ([]Target, error)

	// Apply performs the action on w. It must change only the pairs
	// declared through Writes and Touches: anything else is not captured
	// and is not undone by a rewind. If it returns an error, the executor
	// restores every declared pair and drops the record (ErrApplyFailed).
	Apply func(w S, a Action) error
}

func (t *ActionType[S]) validate() error {
	switch {
	case t.Name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidActionType)
	case t.Apply == nil:
		return fmt.Errorf("%w: %q has no Apply", ErrInvalidActionType, t.Name)
	case t.MinSize < 0 || t.MinSize > t.MaxSize || t.MaxSize > MaxPayloadSize:
		return fmt.Errorf("%w: %q payload bounds [%d, %d] outside [0, %d]", ErrInvalidActionType, t.Name, t.MinSize, t.MaxSize, MaxPayloadSize)
	case len(t.Writes) > MaxTargets:
		return fmt.Errorf("%w: %q declares %d writes, max %d", ErrInvalidActionType, t.Name, len(t.Writes), MaxTargets)
	}
	for i, c := range t.Writes {
		for _, d := range t.Writes[:i] {
			if c == d {
				return fmt.Errorf("%w: %q declares component %d twice", ErrInvalidActionType, t.Name, c)
			}
		}
	}
	return nil
}

// IsEvent reports whether t declares no pairs at all (no Writes, no
// Touches): its actions are pure events, never captured and never rewound.
func (t *ActionType[S]) IsEvent() bool { return len(t.Writes) == 0 && t.Touches == nil }

// Registry holds the action types of one session. Registration order is the
// type id, and that order is part of the wire contract: both ends of a
// session must register the same types in the same order (Fingerprint helps
// check it). Each registry numbers its own types from 0; nothing is shared
// between registries or held in package state.
//
// Register every type before building an executor: NewExecutor freezes the
// registry, so ids can never change under a running session. A Registry is
// not safe for concurrent registration; once frozen it is read-only and may
// be shared by any number of executors (and goroutines).
type Registry[S State] struct {
	types  []ActionType[S]
	byName map[string]ActionTypeID
	frozen bool
}

// NewRegistry returns an empty registry.
func NewRegistry[S State]() *Registry[S] {
	return &Registry[S]{byName: make(map[string]ActionTypeID)}
}

// Register adds t and returns its id, the number of types registered
// before it. The registry keeps its own copy of t.Writes. Errors wrap
// ErrInvalidActionType or are ErrRegistryFrozen.
func (r *Registry[S]) Register(t ActionType[S]) (ActionTypeID, error) {
	if r.frozen {
		return 0, ErrRegistryFrozen
	}
	if err := t.validate(); err != nil {
		return 0, err
	}
	if _, dup := r.byName[t.Name]; dup {
		return 0, fmt.Errorf("%w: name %q registered twice", ErrInvalidActionType, t.Name)
	}
	if len(r.types) >= maxActionTypes {
		return 0, fmt.Errorf("%w: registry holds %d types already", ErrInvalidActionType, maxActionTypes)
	}
	t.Writes = append([]ComponentID(nil), t.Writes...)
	id := ActionTypeID(len(r.types))
	r.types = append(r.types, t)
	r.byName[t.Name] = id
	return id, nil
}

// Len returns the number of registered types.
func (r *Registry[S]) Len() int { return len(r.types) }

// Lookup returns the id of the type called name.
func (r *Registry[S]) Lookup(name string) (ActionTypeID, bool) {
	id, ok := r.byName[name]
	return id, ok
}

// Type returns a copy of the description of type id. Its Writes slice is
// the registry's: do not modify it.
func (r *Registry[S]) Type(id ActionTypeID) (ActionType[S], bool) {
	if int(id) >= len(r.types) {
		return ActionType[S]{}, false
	}
	return r.types[id], true
}

// Frozen reports whether the registry has been frozen.
func (r *Registry[S]) Frozen() bool { return r.frozen }

// freeze stops further registration. NewExecutor calls it.
func (r *Registry[S]) freeze() { r.frozen = true }

// Validate checks a payload that claims to be of type id, as it would
// arrive from the network: ErrUnknownAction for an unregistered id,
// ErrMalformed for a length outside the type's bounds or a payload its
// Check refuses. It never panics on any input (provided Check does not),
// allocates nothing, and costs the type's Check. Execute performs the same
// checks; call Validate to screen input before queueing it.
func (r *Registry[S]) Validate(id ActionTypeID, payload []byte) error {
	if int(id) >= len(r.types) {
		return ErrUnknownAction
	}
	return r.types[id].checkPayload(payload)
}

func (t *ActionType[S]) checkPayload(payload []byte) error {
	if len(payload) < t.MinSize || len(payload) > t.MaxSize {
		return ErrMalformed
	}
	if t.Check != nil && t.Check(payload) != nil {
		return ErrMalformed
	}
	return nil
}

// Fingerprint returns a 64-bit FNV-1a hash of every type's name, payload
// bounds and Writes, in id order. Two registries with equal fingerprints
// almost certainly agree on the wire meaning of every type id; a session
// handshake can compare them. Functions are not hashed.
func (r *Registry[S]) Fingerprint() uint64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(v uint64) {
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		h.Write(b[:])
	}
	put(uint64(len(r.types)))
	for _, t := range r.types {
		put(uint64(len(t.Name)))
		h.Write([]byte(t.Name))
		put(uint64(t.MinSize))
		put(uint64(t.MaxSize))
		put(uint64(len(t.Writes)))
		for _, c := range t.Writes {
			put(uint64(c))
		}
		if t.Touches != nil {
			put(1)
		} else {
			put(0)
		}
	}
	return h.Sum64()
}

// TypedAction describes an action type whose payload is a Go value of type
// P, with an encoder and a decoder for its bytes. Typed builds the
// byte-level ActionType from it, and RegisterTyped registers it and returns
// a Handle for executing values of P.
//
// The log and the wire only ever hold the encoded bytes; P exists only for
// the duration of a call. Decode runs once to check the payload and once
// more for each of Touches and Apply, so it should be a few loads and
// shifts, and it must return an error, never panic, on any input of an
// allowed length: its input may come from the network.
type TypedAction[S State, P any] struct {
	// Name is as in ActionType.
	Name string
	// MinSize bounds the encoded payload length from below, as in
	// ActionType. For a fixed-size encoding set MinSize = MaxSize.
	MinSize int
	// MaxSize bounds the encoded payload length from above.
	MaxSize int
	// Writes lists the subject entity's components Apply may change, as
	// in ActionType.
	Writes []ComponentID

	// Encode appends the encoding of p to dst and returns it. Required.
	Encode func(dst []byte, p P) []byte
	// Decode parses a payload. Required.
	Decode func(src []byte) (P, error)
	// Touches is as in ActionType, with the decoded payload. Optional.
	Touches func(dst []Target, a Action, p P) ([]Target, error)
	// Apply is as in ActionType, with the decoded payload. Required.
	Apply func(w S, a Action, p P) error
}

// Typed builds the byte-level ActionType for t. It returns an error
// wrapping ErrInvalidActionType if Encode, Decode or Apply is nil.
func Typed[S State, P any](t TypedAction[S, P]) (ActionType[S], error) {
	if t.Encode == nil || t.Decode == nil || t.Apply == nil {
		return ActionType[S]{}, fmt.Errorf("%w: typed action %q needs Encode, Decode and Apply", ErrInvalidActionType, t.Name)
	}
	decode, apply, touches := t.Decode, t.Apply, t.Touches
	at := ActionType[S]{
		Name:    t.Name,
		MinSize: t.MinSize,
		MaxSize: t.MaxSize,
		Writes:  t.Writes,
		Check: func(payload []byte) error {
			_, err := decode(payload)
			return err
		},
		Apply: func(w S, a Action) error {
			p, err := decode(a.Payload)
			if err != nil {
				return err
			}
			return apply(w, a, p)
		},
	}
	if touches != nil {
		at.Touches = func(dst []Target, a Action) ([]Target, error) {
			p, err := decode(a.Payload)
			if err != nil {
				return dst, err
			}
			return touches(dst, a, p)
		}
	}
	return at, nil
}

// Handle is a registered typed action type: its registry, id and encoder.
// The zero Handle executes nothing (ErrUnknownAction) and must not Encode.
type Handle[S State, P any] struct {
	reg    *Registry[S]
	id     ActionTypeID
	encode func(dst []byte, p P) []byte
}

// RegisterTyped registers Typed(t) in r and returns its handle.
func RegisterTyped[S State, P any](r *Registry[S], t TypedAction[S, P]) (Handle[S, P], error) {
	at, err := Typed(t)
	if err != nil {
		return Handle[S, P]{}, err
	}
	id, err := r.Register(at)
	if err != nil {
		return Handle[S, P]{}, err
	}
	return Handle[S, P]{reg: r, id: id, encode: t.Encode}, nil
}

// ID returns the type id.
func (h Handle[S, P]) ID() ActionTypeID { return h.id }

// Encode appends the encoding of p to dst (for building wire messages or
// queues of pending input).
func (h Handle[S, P]) Encode(dst []byte, p P) []byte { return h.encode(dst, p) }

// Execute encodes p into the executor's scratch buffer and executes it, as
// x.Execute(sender, h.ID(), e, payload) would. It allocates nothing once the
// scratch buffer has grown to the largest payload. It returns
// ErrUnknownAction, without counting a rejection, if x was not built from
// the registry h came from.
func (h Handle[S, P]) Execute(x *Executor[S], sender Sender, e Entity, p P) error {
	if h.reg == nil || x.reg != h.reg {
		return ErrUnknownAction
	}
	if x.busy {
		return ErrReentrant
	}
	x.scratch = h.encode(x.scratch[:0], p)
	return x.Execute(sender, h.id, e, x.scratch)
}
