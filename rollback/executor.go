package rollback

import (
	"errors"
	"fmt"
)

// RejectReason says why the executor refused an action.
type RejectReason uint8

// Reasons for refusing an action. Each is counted per sender.
const (
	// RejectNoFrame: no frame was open (S-F1). Error ErrNoOpenFrame.
	RejectNoFrame RejectReason = iota
	// RejectUnknownType: the type id is not registered. ErrUnknownAction.
	RejectUnknownType
	// RejectMalformed: the payload failed the type's size bounds or Check,
	// or its Touches failed or named too many pairs or an unknown
	// component. ErrMalformed.
	RejectMalformed
	// RejectNotOwner: a peer named an entity it does not own (S-F5).
	// ErrNotOwner.
	RejectNotOwner
	// RejectStaleEntity: a named entity is not live. ErrStaleEntity.
	RejectStaleEntity
	// RejectFrameFull: the open frame is at its record or byte limit.
	// ErrFrameFull.
	RejectFrameFull
	// RejectApplyFailed: the type's Apply returned an error; the action was
	// undone. ErrApplyFailed.
	RejectApplyFailed

	// numRejectReasons is the number of reasons.
	numRejectReasons
)

var rejectReasonNames = [numRejectReasons]string{
	"no-frame", "unknown-type", "malformed", "not-owner", "stale-entity", "frame-full", "apply-failed",
}

// String returns a short name such as "not-owner".
func (r RejectReason) String() string {
	if r < numRejectReasons {
		return rejectReasonNames[r]
	}
	return "unknown"
}

// Rejection describes one refused action, as passed to ExecutorHooks.OnReject.
type Rejection struct {
	// Frame is the open frame, or 0 when Reason is RejectNoFrame.
	Frame uint32
	// Sender is the sender the action would have been recorded under.
	Sender Sender
	// Type is the action type id as passed to Execute.
	Type ActionTypeID
	// Entity is the subject entity as passed to Execute.
	Entity Entity
	// Denied is the entity the owner or liveness check failed on (for
	// RejectNotOwner and RejectStaleEntity; it may differ from Entity when a
	// touched entity failed), NoEntity otherwise.
	Denied Entity
	// Reason says why.
	Reason RejectReason
}

// AgedOut describes a refused rewind plan, as passed to ExecutorHooks.OnAgedOut.
type AgedOut struct {
	// From is the first frame the plan was asked to undo.
	From uint32
	// Oldest is the oldest frame the ring held.
	Oldest uint32
	// Newest is the newest frame the ring held.
	Newest uint32
}

// RestoreFailure describes one capture a rewind (or the undo of a failed
// Apply) could not put back, as passed to ExecutorHooks.OnRestoreFailed.
type RestoreFailure struct {
	// Frame is the frame of the record the capture belongs to.
	Frame uint32
	// Target is the pair that could not be restored.
	Target Target
	// Err is the State's error: ErrStaleEntity when the entity was
	// destroyed (and perhaps its slot recycled) since the capture.
	Err error
}

// ExecutorHooks are optional callbacks for events the executor reports. They run
// synchronously on the executor's goroutine, must not call the executor's
// Execute or rewind methods (those return ErrReentrant), and should be
// cheap: OnReject may run once per input under attack.
type ExecutorHooks struct {
	// OnReject is called for every action Execute refuses (S-F5).
	OnReject func(Rejection)
	// OnAgedOut is called when PlanRewind refuses a frame that has left
	// the ring (S-F4).
	OnAgedOut func(AgedOut)
	// OnRestoreFailed is called for every capture a rewind, or the undo of
	// a failed Apply, could not restore (a stale entity).
	OnRestoreFailed func(RestoreFailure)
}

// ExecutorStats are the executor's running totals. Read them with Executor.ExecutorStats.
type ExecutorStats struct {
	// Executed counts actions applied and recorded.
	Executed uint64
	// Rejected counts actions refused, all senders and reasons (see
	// Executor.Rejected for the breakdown).
	Rejected uint64
	// Captures counts (entity, component) pairs captured before applying.
	Captures uint64
	// CapturedBytes counts component bytes captured (bookkeeping excluded).
	CapturedBytes uint64
	// Rewinds counts committed rewinds that undid at least one frame.
	Rewinds uint64
	// FramesUndone counts the frames those rewinds undid.
	FramesUndone uint64
	// RecordsUndone counts the records with captured state they undid;
	// records that captured nothing (events) are not counted.
	RecordsUndone uint64
	// CapturesRestored counts the (entity, component) pairs they restored.
	CapturesRestored uint64
	// RestoreFailures counts captures that could not be restored, almost
	// always because the entity is no longer live (its slot may have been
	// recycled): the write is refused, never misdirected.
	RestoreFailures uint64
	// AgedOut counts rewind plans refused because the first frame to undo
	// had left the ring (S-F4).
	AgedOut uint64
	// EventsSuppressed counts pure events executed in replay mode and
	// recorded without calling Apply, because they had been presented
	// already (see SetReplay). They are included in Executed.
	EventsSuppressed uint64
}

// Executor is the only legal mutator of a State under rollback. It executes
// actions into the log's open frame: it validates the payload, authorizes
// the sender against the owner of every entity the action names, captures
// the prior bytes of every declared (entity, component) pair into the
// frame's arena, records the action, then applies it. It also rewinds
// (PlanRewind, CommitRewind), restoring captured bytes newest first.
//
// Owner rule: a peer (0–253) may only execute actions whose subject entity
// and touched entities it owns; SenderLocal (255) and SenderDerived (254)
// may act on anything. Refusals are counted per sender and reason and
// reported to ExecutorHooks.OnReject.
//
// Derived mode (SetDerived) stamps every executed action SenderDerived,
// whatever sender the caller passes: the server turns it on around its
// simulation step so the step's output is recorded as derived, recomputed on
// replay rather than reapplied. Replay mode (SetReplay) marks re-executions
// of a frame: Action.Replay is set, and pure events already presented to the
// game are recorded without calling Apply again.
//
// An Executor, its ActionLog and its State belong to one goroutine; none of
// them is safe for concurrent use. Execute, PlanRewind and CommitRewind
// allocate nothing in steady state (the frame arena and scratch slices grow
// to their working size and are then reused); the only allocation on any
// path is the error wrapping a failed Apply.
type Executor[S State] struct {
	types []ActionType[S]
	reg   *Registry[S]
	log   *ActionLog
	state S

	derived bool
	replay  bool
	busy    bool

	// presented, in replay mode, says whether a pure event was presented
	// before (see setPresented).
	presented func(Action) bool

	targets []Target
	scratch []byte // encode buffer for Handle.Execute

	hooks    ExecutorHooks
	stats    ExecutorStats
	rejected [256][numRejectReasons]uint64
}

// NewExecutor builds an executor that runs the actions of reg against state,
// recording into log. It freezes reg. It checks that every declared
// component exists in state. The caller keeps using log (to begin and close
// frames) and state (to read it); it must not mutate the state's components
// other than through the executor, or a rewind will not undo it.
func NewExecutor[S State](reg *Registry[S], log *ActionLog, state S) (*Executor[S], error) {
	if reg == nil || log == nil || any(state) == nil {
		return nil, fmt.Errorf("%w: NewExecutor needs a registry, a log and a state", ErrInvalidConfig)
	}
	n := state.NumComponents()
	for id, t := range reg.types {
		for _, c := range t.Writes {
			if int(c) >= n {
				return nil, fmt.Errorf("%w: action %q (id %d) writes component %d, state has %d", ErrUnknownComponent, t.Name, id, c, n)
			}
		}
	}
	reg.freeze()
	return &Executor[S]{
		types:   reg.types,
		reg:     reg,
		log:     log,
		state:   state,
		targets: make([]Target, 0, MaxTargets),
	}, nil
}

// Log returns the executor's log.
func (x *Executor[S]) Log() *ActionLog { return x.log }

// State returns the executor's state.
func (x *Executor[S]) State() S { return x.state }

// Registry returns the executor's (frozen) registry.
func (x *Executor[S]) Registry() *Registry[S] { return x.reg }

// SetHooks replaces the executor's hooks.
func (x *Executor[S]) SetHooks(h ExecutorHooks) { x.hooks = h }

// SetDerived turns derived mode on or off. While on, every executed action
// is recorded with sender SenderDerived, which may act on any entity.
func (x *Executor[S]) SetDerived(on bool) { x.derived = on }

// Derived reports whether derived mode is on.
func (x *Executor[S]) Derived() bool { return x.derived }

// SetReplay turns replay mode on or off. Replay mode marks re-executions of
// a frame this side executed before (a rollback replay): every action is
// passed to its type's functions with Action.Replay set, and a pure event
// (a type that declares no pairs, see ActionType.IsEvent) is recorded
// without calling its Apply — an event changes no state, and its
// presentation to the game (a sound, a hit marker) happened when it first
// executed. If a presentation function is installed (the Server and the
// Client install one) and it reports that the event was not presented
// before, Apply is called after all, with Replay false. Server and Client drive replay mode; other
// callers rarely need it.
func (x *Executor[S]) SetReplay(on bool) { x.replay = on }

// Replay reports whether replay mode is on.
func (x *Executor[S]) Replay() bool { return x.replay }

// setPresented installs fn, which replay mode consults for every pure
// event it executes: fn(a) reports whether this exact event (a.Sender,
// a.Type, a.Entity, a.Payload, in frame a.Frame) was presented to the game
// before. true: the event is recorded without Apply
// (ExecutorStats.EventsSuppressed); false: Apply runs with Action.Replay
// false, a first presentation. A nil fn (the default) treats every event in
// replay mode as presented. fn runs on the executor's goroutine inside
// Execute, must not call the executor, and must not retain a.Payload. Server
// and Client install their own.
func (x *Executor[S]) setPresented(fn func(a Action) bool) { x.presented = fn }

// Stats returns a copy of the running totals.
func (x *Executor[S]) Stats() ExecutorStats { return x.stats }

// Rejected returns how many actions from sender were refused for reason.
func (x *Executor[S]) Rejected(sender Sender, reason RejectReason) uint64 {
	if reason >= numRejectReasons {
		return 0
	}
	return x.rejected[sender][reason]
}

// RejectedBy returns how many actions from sender were refused, all reasons.
func (x *Executor[S]) RejectedBy(sender Sender) uint64 {
	var n uint64
	for _, c := range x.rejected[sender] {
		n += c
	}
	return n
}

// Execute runs one action of type id on entity e with payload, from sender,
// in the open frame, and records it. payload is copied into the frame's
// arena; the caller keeps ownership of it. Steps, in order:
//
//  1. A frame must be open (ErrNoOpenFrame, S-F1).
//  2. id must be registered (ErrUnknownAction) and payload must pass its
//     size bounds and Check (ErrMalformed).
//  3. The declared pairs are e × Writes plus whatever Touches adds.
//  4. If sender is a peer, it must own e (unless e is NoEntity) and every
//     touched entity (ErrNotOwner, ErrStaleEntity; S-F5).
//  5. The prior bytes of every declared pair are captured into the arena
//     (S-F2); an action that declares nothing captures nothing and a rewind
//     never touches it (S-F6).
//  6. The record is appended (ErrFrameFull if the frame is at its limits)
//     and Apply runs on the arena's copy of the payload (in replay mode, a
//     pure event that was presented before is recorded without Apply; see
//     SetReplay). If Apply fails, the captured pairs are restored, the
//     record dropped, and an error wrapping ErrApplyFailed and Apply's
//     error is returned.
//
// Refusals in steps 1–6 change neither the state nor the log, are counted
// per sender and reason, go to ExecutorHooks.OnReject, and return the bare sentinel
// (no allocation). Cost: the type's functions plus one copy per captured
// pair and of the payload.
func (x *Executor[S]) Execute(sender Sender, id ActionTypeID, e Entity, payload []byte) error {
	if x.busy {
		return ErrReentrant
	}
	x.busy = true
	defer x.idle()
	return x.execute(sender, id, e, payload)
}

func (x *Executor[S]) idle() { x.busy = false }

func (x *Executor[S]) execute(sender Sender, id ActionTypeID, e Entity, payload []byte) error {
	if x.derived {
		sender = SenderDerived
	}
	s := x.log.open
	if s == nil {
		return x.reject(Rejection{Sender: sender, Type: id, Entity: e, Reason: RejectNoFrame}, ErrNoOpenFrame)
	}
	rej := Rejection{Frame: s.num, Sender: sender, Type: id, Entity: e}
	if int(id) >= len(x.types) {
		rej.Reason = RejectUnknownType
		return x.reject(rej, ErrUnknownAction)
	}
	t := &x.types[id]
	if err := t.checkPayload(payload); err != nil {
		rej.Reason = RejectMalformed
		return x.reject(rej, ErrMalformed)
	}
	a := Action{Frame: s.num, Sender: sender, Type: id, Entity: e, Payload: payload}

	targets := x.targets[:0]
	for _, c := range t.Writes {
		targets = append(targets, Target{Entity: e, Component: c})
	}
	if t.Touches != nil {
		var err error
		targets, err = t.Touches(targets, a)
		if targets != nil {
			x.targets = targets[:0]
		}
		if err != nil || len(targets) > MaxTargets {
			rej.Reason = RejectMalformed
			return x.reject(rej, ErrMalformed)
		}
	}
	if len(s.sender) >= x.log.cfg.MaxRecordsPerFrame {
		rej.Reason = RejectFrameFull
		return x.reject(rej, ErrFrameFull)
	}

	// Owner rule (S-F5): checked in full before anything is written.
	if sender.IsPeer() {
		if e != NoEntity {
			if reason, err := x.authorize(sender, e); err != nil {
				rej.Reason, rej.Denied = reason, e
				return x.reject(rej, err)
			}
		}
		for _, tg := range targets {
			if tg.Entity == e {
				continue
			}
			if reason, err := x.authorize(sender, tg.Entity); err != nil {
				rej.Reason, rej.Denied = reason, tg.Entity
				return x.reject(rej, err)
			}
		}
	}

	// Capture (S-F2): the prior bytes of every declared pair, each followed
	// by its trailer, form the record's prior span.
	base := len(s.arena)
	limit := x.log.cfg.MaxFrameBytes
	var captured uint64
	for _, tg := range targets {
		before := len(s.arena)
		out, err := x.state.AppendComponent(s.arena, tg.Entity, tg.Component)
		if err != nil {
			s.arena = s.arena[:base]
			rej.Denied = tg.Entity
			if errors.Is(err, ErrStaleEntity) {
				rej.Reason = RejectStaleEntity
				return x.reject(rej, ErrStaleEntity)
			}
			rej.Reason = RejectMalformed
			return x.reject(rej, ErrMalformed)
		}
		if len(out) < before {
			panic("rollback: State.AppendComponent shrank its destination")
		}
		n := len(out) - before
		s.arena = appendTrailer(out, tg, n)
		captured += uint64(n)
		if len(s.arena) > limit {
			s.arena = s.arena[:base]
			rej.Reason = RejectFrameFull
			return x.reject(rej, ErrFrameFull)
		}
	}
	priLen := len(s.arena) - base
	payOff := len(s.arena)
	s.arena = append(s.arena, payload...)
	if len(s.arena) > limit {
		s.arena = s.arena[:base]
		rej.Reason = RejectFrameFull
		return x.reject(rej, ErrFrameFull)
	}
	ncap := len(targets)
	s.appendRecord(sender, id, e, uint32(payOff), uint32(len(payload)), uint32(base), uint32(priLen), ncap)
	x.log.version++

	a.Payload = s.arena[payOff:len(s.arena):len(s.arena)]
	if x.replay {
		a.Replay = true
		if ncap == 0 && t.IsEvent() {
			if x.presented == nil || x.presented(a) {
				// Presented when it first executed: record, do not re-present.
				x.stats.Executed++
				x.stats.EventsSuppressed++
				return nil
			}
			a.Replay = false // an event this side has never presented
		}
	}
	if err := t.Apply(x.state, a); err != nil {
		x.restoreSpan(s.num, s.arena[base:base+priLen])
		s.dropLast(ncap, base)
		rej.Reason = RejectApplyFailed
		x.reject(rej, ErrApplyFailed)
		return fmt.Errorf("%w: action %q: %w", ErrApplyFailed, t.Name, err)
	}
	x.stats.Executed++
	x.stats.Captures += uint64(ncap)
	x.stats.CapturedBytes += captured
	return nil
}

func (x *Executor[S]) authorize(sender Sender, e Entity) (RejectReason, error) {
	owner, err := x.state.Owner(e)
	if err != nil {
		return RejectStaleEntity, ErrStaleEntity
	}
	if owner != sender {
		return RejectNotOwner, ErrNotOwner
	}
	return 0, nil
}

func (x *Executor[S]) reject(r Rejection, err error) error {
	x.stats.Rejected++
	x.rejected[r.Sender][r.Reason]++
	if x.hooks.OnReject != nil {
		x.hooks.OnReject(r)
	}
	return err
}

// restoreSpan puts back every capture of one record's prior span, newest
// first, and returns how many it restored. Failures are counted and
// reported, never fatal: a stale entity's capture is skipped.
func (x *Executor[S]) restoreSpan(frame uint32, span []byte) int {
	restored := 0
	for len(span) > 0 {
		t, data, rest := lastCapture(span)
		span = rest
		if err := x.state.RestoreComponent(t.Entity, t.Component, data); err != nil {
			x.stats.RestoreFailures++
			if x.hooks.OnRestoreFailed != nil {
				x.hooks.OnRestoreFailed(RestoreFailure{Frame: frame, Target: t, Err: err})
			}
			continue
		}
		restored++
	}
	return restored
}
