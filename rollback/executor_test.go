package rollback

import (
	"bytes"
	"errors"
	"testing"
)

// S-F1: executing an action with no open frame returns an error — before the
// first frame, and after a frame closed — and changes nothing.
func TestExecuteWithoutOpenFrame(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	e := w.ents[0]
	before := snapshot(w.store)

	if err := w.ids.move.Execute(w.x, 0, e, Move{1, 1}); !errors.Is(err, ErrNoOpenFrame) {
		t.Fatalf("before any frame: err = %v, want ErrNoOpenFrame", err)
	}
	w.begin(t, 1)
	if err := w.ids.move.Execute(w.x, 0, e, Move{1, 1}); err != nil {
		t.Fatal(err)
	}
	w.close(t)
	after1 := snapshot(w.store)
	if err := w.x.Execute(SenderLocal, w.ids.heal, e, le32(5)); !errors.Is(err, ErrNoOpenFrame) {
		t.Fatalf("after CloseFrame: err = %v, want ErrNoOpenFrame", err)
	}
	if bytes.Equal(before, after1) {
		t.Fatal("the in-frame move did not apply")
	}
	if !bytes.Equal(snapshot(w.store), after1) {
		t.Fatal("a refused action changed the state")
	}
	if got := w.x.Rejected(0, RejectNoFrame) + w.x.Rejected(SenderLocal, RejectNoFrame); got != 2 {
		t.Fatalf("no-frame rejections = %d, want 2", got)
	}
	if v, _ := w.log.Frame(1); v.Len() != 1 {
		t.Fatalf("frame 1 holds %d records, want 1", v.Len())
	}
	if err := w.log.CloseFrame(); !errors.Is(err, ErrNoOpenFrame) {
		t.Fatalf("CloseFrame with none open: %v", err)
	}
}

// S-F2: an action declaring component C of entity E records E.C's prior
// bytes; rewinding to f−1 restores them exactly.
func TestCaptureAndRewindRestoresPriorBytes(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	e := w.ents[2] // owned by peer 1
	w.begin(t, 10)
	w.close(t)

	prior := w.comp(t, e, cPos)
	untouched := w.comp(t, e, cHP)
	w.begin(t, 11)
	if err := w.ids.move.Execute(w.x, 1, e, Move{7, -3}); err != nil {
		t.Fatal(err)
	}
	if err := w.ids.move.Execute(w.x, 1, e, Move{1, 1}); err != nil {
		t.Fatal(err)
	}
	w.close(t)
	if bytes.Equal(w.comp(t, e, cPos), prior) {
		t.Fatal("move did not change pos")
	}

	v, err := w.log.Frame(11)
	if err != nil {
		t.Fatal(err)
	}
	rec := v.Record(0)
	if rec.Sender != 1 || rec.Type != w.ids.move.ID() || rec.Entity != e {
		t.Fatalf("record 0 = %+v", rec)
	}
	if rec.PriorLen != 8+captureTrailerSize {
		t.Fatalf("record 0 PriorLen = %d, want %d (pos + trailer)", rec.PriorLen, 8+captureTrailerSize)
	}
	// The captured bytes are exactly E.C before the action.
	s := v.s
	tg, data, rest := lastCapture(s.arena[s.priOff[0] : s.priOff[0]+s.priLen[0]])
	if tg != (Target{e, cPos}) || !bytes.Equal(data, prior) || len(rest) != 0 {
		t.Fatalf("capture = %+v %x (rest %d), want %+v %x", tg, data, len(rest), Target{e, cPos}, prior)
	}

	plan, err := w.x.PlanRewind(11) // rewind to target 10 = undo from 11
	if err != nil {
		t.Fatal(err)
	}
	if plan.Frames != 1 || plan.Records != 2 || plan.Captures != 2 {
		t.Fatalf("plan = %+v, want 1 frame, 2 records, 2 captures", plan)
	}
	res, err := w.x.CommitRewind(plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 || res.Captures != 2 {
		t.Fatalf("result = %+v", res)
	}
	if got := w.comp(t, e, cPos); !bytes.Equal(got, prior) {
		t.Fatalf("pos after rewind = %x, want %x", got, prior)
	}
	if got := w.comp(t, e, cHP); !bytes.Equal(got, untouched) {
		t.Fatalf("hp changed: %x, want %x", got, untouched)
	}
}

// S-F4: a rewind to a frame that aged out of the ring is reported (counter
// + event + error value), not a crash, and changes nothing.
func TestRewindAgedOut(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 8}, 0)
	var events []AgedOut
	w.x.SetHooks(ExecutorHooks{OnAgedOut: func(a AgedOut) { events = append(events, a) }})
	for f := uint32(0); f < 20; f++ {
		w.begin(t, f)
		if err := w.ids.move.Execute(w.x, 0, w.ents[0], Move{1, 0}); err != nil {
			t.Fatal(err)
		}
		w.close(t)
	}
	oldest, _ := w.log.Oldest()
	if oldest != 12 {
		t.Fatalf("oldest = %d, want 12", oldest)
	}
	before := snapshot(w.store)
	for _, from := range []uint32{0, 3, 11} {
		plan, err := w.x.PlanRewind(from)
		if !errors.Is(err, ErrAgedOut) {
			t.Fatalf("PlanRewind(%d): err = %v, want ErrAgedOut", from, err)
		}
		if _, err := w.x.CommitRewind(plan); !errors.Is(err, ErrStalePlan) {
			t.Fatalf("committing the refused plan: %v, want ErrStalePlan", err)
		}
		if !w.log.AgedOut(from) || w.log.HasFrame(from) {
			t.Fatalf("frame %d: AgedOut/HasFrame disagree", from)
		}
	}
	if _, err := w.x.Rewind(5); !errors.Is(err, ErrAgedOut) {
		t.Fatalf("Rewind(5): %v", err)
	}
	if got := w.x.Stats().AgedOut; got != 4 {
		t.Fatalf("ExecutorStats.AgedOut = %d, want 4", got)
	}
	if len(events) != 4 || events[1] != (AgedOut{From: 3, Oldest: 12, Newest: 19}) {
		t.Fatalf("events = %+v", events)
	}
	if !bytes.Equal(snapshot(w.store), before) {
		t.Fatal("an aged-out rewind changed the state")
	}
	if _, ok := w.log.Replaying(); ok {
		t.Fatal("an aged-out rewind left the log replaying")
	}
	// The oldest held frame is still fully rewindable.
	if _, err := w.x.Rewind(12); err != nil {
		t.Fatalf("Rewind(oldest): %v", err)
	}
}

// S-F5: a forged action from peer A on B's entity is rejected (counter and
// event for A); B's state is unchanged; A's own honest actions still apply.
func TestForgedActionRejected(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	const A, B Sender = 0, 1
	aEnt, bEnt := w.ents[0], w.ents[2]
	var rejections []Rejection
	w.x.SetHooks(ExecutorHooks{OnReject: func(r Rejection) { rejections = append(rejections, r) }})

	bBefore := [3][]byte{w.comp(t, bEnt, cPos), w.comp(t, bEnt, cHP), w.comp(t, bEnt, cAlive)}
	aPos := w.comp(t, aEnt, cPos)
	w.begin(t, 1)
	// Forged: A moves B's entity.
	if err := w.ids.move.Execute(w.x, A, bEnt, Move{50, 50}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("forged move: %v, want ErrNotOwner", err)
	}
	// Forged through Touches: A, acting on its own entity, damages B's.
	if err := w.x.Execute(A, w.ids.damage, aEnt, damagePayload(bEnt, 30)); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("forged damage: %v, want ErrNotOwner", err)
	}
	// Forged through the byte-level path with a valid payload.
	if err := w.x.Execute(A, w.ids.heal, bEnt, le32(-99)); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("forged heal: %v, want ErrNotOwner", err)
	}
	// A's honest actions still apply, in the same frame.
	if err := w.ids.move.Execute(w.x, A, aEnt, Move{2, 3}); err != nil {
		t.Fatalf("honest move: %v", err)
	}
	if err := w.x.Execute(A, w.ids.heal, aEnt, le32(5)); err != nil {
		t.Fatalf("honest heal: %v", err)
	}
	w.close(t)

	for c, want := range bBefore {
		if got := w.comp(t, bEnt, ComponentID(c)); !bytes.Equal(got, want) {
			t.Fatalf("B's component %d changed: %x, want %x", c, got, want)
		}
	}
	if got := w.comp(t, aEnt, cPos); i32(got) != i32(aPos)+2 || i32(got[4:]) != i32(aPos[4:])+3 {
		t.Fatalf("A's pos = %x, want moved by (2, 3) from %x", got, aPos)
	}
	if got := w.x.Rejected(A, RejectNotOwner); got != 3 {
		t.Fatalf("A's not-owner rejections = %d, want 3", got)
	}
	if w.x.RejectedBy(B) != 0 {
		t.Fatal("rejections charged to B")
	}
	if len(rejections) != 3 {
		t.Fatalf("%d rejection events, want 3", len(rejections))
	}
	for _, r := range rejections {
		if r.Sender != A || r.Reason != RejectNotOwner || r.Denied != bEnt || r.Frame != 1 {
			t.Fatalf("rejection event %+v", r)
		}
	}
	if v, _ := w.log.Frame(1); v.Len() != 2 {
		t.Fatalf("frame holds %d records, want only A's 2 honest ones", v.Len())
	}
}

// The server (local) and the simulation step (derived) may touch any entity.
func TestLocalAndDerivedMayTouchAnything(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	bEnt := w.ents[2]
	w.begin(t, 1)
	if err := w.x.Execute(SenderLocal, w.ids.damage, w.ents[8], damagePayload(bEnt, 10)); err != nil {
		t.Fatal(err)
	}
	w.x.SetDerived(true)
	if err := w.x.Execute(0, w.ids.damage, w.ents[0], damagePayload(bEnt, 10)); err != nil {
		t.Fatalf("derived mode: %v", err)
	}
	w.x.SetDerived(false)
	w.close(t)
	if hp := i32(w.comp(t, bEnt, cHP)); hp != 80 {
		t.Fatalf("hp = %d, want 80", hp)
	}
}

// Derived mode stamps every record SenderDerived, whatever sender is passed.
func TestDerivedModeStampsSender(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	w.begin(t, 1)
	if err := w.ids.move.Execute(w.x, 0, w.ents[0], Move{1, 1}); err != nil {
		t.Fatal(err)
	}
	w.x.SetDerived(true)
	if !w.x.Derived() {
		t.Fatal("Derived() = false")
	}
	for _, s := range []Sender{0, 3, SenderLocal} {
		if err := w.x.Execute(s, w.ids.heal, w.ents[4], le32(1)); err != nil {
			t.Fatal(err)
		}
	}
	w.x.SetDerived(false)
	if err := w.x.Execute(SenderLocal, w.ids.heal, w.ents[4], le32(1)); err != nil {
		t.Fatal(err)
	}
	w.close(t)
	v, _ := w.log.Frame(1)
	want := []Sender{0, SenderDerived, SenderDerived, SenderDerived, SenderLocal}
	for i, s := range want {
		if got := v.Record(i).Sender; got != s {
			t.Fatalf("record %d sender = %v, want %v", i, got, s)
		}
	}
	if !SenderDerived.IsDerived() || SenderDerived.IsInput() || !SenderLocal.IsInput() || SenderLocal.IsPeer() || !MaxPeerID.IsPeer() {
		t.Fatal("provenance predicates wrong")
	}
}

// S-F6: an action that declares no components is never captured and never
// rewound.
func TestEventNeverCapturedOrRewound(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	w.begin(t, 1)
	w.close(t)
	w.begin(t, 2)
	if err := w.x.Execute(0, w.ids.ping, w.ents[0], []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := w.ids.move.Execute(w.x, 0, w.ents[0], Move{1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := w.x.Execute(SenderLocal, w.ids.ping, NoEntity, nil); err != nil {
		t.Fatal(err)
	}
	w.close(t)
	if w.pings != 2 {
		t.Fatalf("pings = %d, want 2", w.pings)
	}
	v, _ := w.log.Frame(2)
	for _, i := range []int{0, 2} {
		if r := v.Record(i); r.PriorLen != 0 || r.Type != w.ids.ping {
			t.Fatalf("event record %d captured %d bytes", i, r.PriorLen)
		}
	}
	if got := string(v.Record(0).Payload); got != "hello" {
		t.Fatalf("event payload = %q", got)
	}
	if w.x.Stats().Captures != 1 {
		t.Fatalf("captures = %d, want 1 (the move only)", w.x.Stats().Captures)
	}
	restored := 0
	w.x.SetHooks(ExecutorHooks{OnRestoreFailed: func(RestoreFailure) { t.Fatal("restore failure") }})
	plan, err := w.x.PlanRewind(2)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Records != 1 || plan.Captures != 1 {
		t.Fatalf("plan = %+v, want only the move's record and capture", plan)
	}
	res, err := w.x.CommitRewind(plan)
	if err != nil {
		t.Fatal(err)
	}
	restored = res.Captures
	if restored != 1 || w.pings != 2 {
		t.Fatalf("restored %d, pings %d: the rewind touched the event", restored, w.pings)
	}
	// A pure event type declares nothing.
	if typ, _ := w.x.Registry().Type(w.ids.ping); !typ.IsEvent() {
		t.Fatal("ping is not an event")
	}
}

// A failing Apply is undone from its captures and leaves no record.
func TestApplyFailureIsUndone(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	e := w.ents[0]
	hp := w.comp(t, e, cHP)
	var rej []Rejection
	w.x.SetHooks(ExecutorHooks{OnReject: func(r Rejection) { rej = append(rej, r) }})
	w.begin(t, 1)
	err := w.x.Execute(0, w.ids.fail, e, nil)
	if !errors.Is(err, ErrApplyFailed) || !errors.Is(err, errTestApply) {
		t.Fatalf("err = %v, want ErrApplyFailed wrapping the apply error", err)
	}
	if got := w.comp(t, e, cHP); !bytes.Equal(got, hp) {
		t.Fatalf("hp = %x after failed apply, want %x", got, hp)
	}
	if v, _ := w.log.Frame(1); v.Len() != 0 || v.ArenaBytes() != 0 {
		t.Fatalf("failed action left %d records, %d bytes", v.Len(), v.ArenaBytes())
	}
	if len(rej) != 1 || rej[0].Reason != RejectApplyFailed || w.x.Rejected(0, RejectApplyFailed) != 1 {
		t.Fatalf("rejections %+v", rej)
	}
	// A following action still records and rewinds normally.
	if err := w.x.Execute(0, w.ids.heal, e, le32(3)); err != nil {
		t.Fatal(err)
	}
	w.close(t)
	if _, err := w.x.Rewind(1); err != nil {
		t.Fatal(err)
	}
	if got := w.comp(t, e, cHP); !bytes.Equal(got, hp) {
		t.Fatalf("hp = %x after rewind, want %x", got, hp)
	}
}

// Every refusal leaves the state and the log as they were, and is counted
// under its reason for its sender.
func TestRejectionsChangeNothing(t *testing.T) {
	w := newWorld(t, LogConfig{MaxRecordsPerFrame: 3}, 0)
	w.begin(t, 1)
	if err := w.x.Execute(0, w.ids.heal, w.ents[0], le32(1)); err != nil {
		t.Fatal(err)
	}
	stale := NewEntity(w.ents[1].Index(), w.ents[1].Generation()+1)
	cases := []struct {
		name   string
		sender Sender
		id     ActionTypeID
		e      Entity
		p      []byte
		err    error
		reason RejectReason
	}{
		{"unknown type", 2, 200, w.ents[4], nil, ErrUnknownAction, RejectUnknownType},
		{"short payload", 2, w.ids.heal, w.ents[4], []byte{1}, ErrMalformed, RejectMalformed},
		{"long payload", 2, w.ids.heal, w.ents[4], make([]byte, 5), ErrMalformed, RejectMalformed},
		{"check refuses", 2, w.ids.checked, w.ents[4], []byte{0xFF}, ErrMalformed, RejectMalformed},
		{"stale subject", 0, w.ids.heal, stale, le32(1), ErrStaleEntity, RejectStaleEntity},
		{"stale subject (local)", SenderLocal, w.ids.heal, stale, le32(1), ErrStaleEntity, RejectStaleEntity},
		{"stale touched", SenderLocal, w.ids.damage, NoEntity, damagePayload(stale, 1), ErrStaleEntity, RejectStaleEntity},
		{"no entity but writes", SenderLocal, w.ids.heal, NoEntity, le32(1), ErrStaleEntity, RejectStaleEntity},
	}
	for _, c := range cases {
		before, v := snapshot(w.store), mustFrame(t, w.log, 1)
		n, arena := v.Len(), v.ArenaBytes()
		was := w.x.Rejected(c.sender, c.reason)
		if err := w.x.Execute(c.sender, c.id, c.e, c.p); !errors.Is(err, c.err) {
			t.Fatalf("%s: err = %v, want %v", c.name, err, c.err)
		}
		if !bytes.Equal(snapshot(w.store), before) || v.Len() != n || v.ArenaBytes() != arena {
			t.Fatalf("%s: the refusal changed the state or the log", c.name)
		}
		if w.x.Rejected(c.sender, c.reason) != was+1 {
			t.Fatalf("%s: not counted under %v", c.name, c.reason)
		}
	}
	// Frame full: the limit is 3 records.
	for range 2 {
		if err := w.x.Execute(0, w.ids.heal, w.ents[0], le32(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.x.Execute(0, w.ids.heal, w.ents[0], le32(1)); !errors.Is(err, ErrFrameFull) {
		t.Fatalf("4th record: %v, want ErrFrameFull", err)
	}
	if w.x.Rejected(0, RejectFrameFull) != 1 {
		t.Fatal("frame-full not counted")
	}
	if RejectNotOwner.String() != "not-owner" || numRejectReasons.String() != "unknown" {
		t.Fatal("RejectReason.String")
	}
}

// MaxFrameBytes bounds a frame's arena.
func TestFrameByteLimit(t *testing.T) {
	w := newWorld(t, LogConfig{MaxFrameBytes: minMaxFrameBytes}, 0)
	w.begin(t, 1)
	n := 0
	for {
		err := w.x.Execute(SenderLocal, w.ids.setAll, w.ents[9], make([]byte, 13))
		if errors.Is(err, ErrFrameFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	// Each record: 3 captures (8+4+1 bytes + 3 trailers) + 13 payload bytes.
	per := 8 + 4 + 1 + 3*captureTrailerSize + 13
	if want := minMaxFrameBytes / per; n != want {
		t.Fatalf("%d records fit, want %d", n, want)
	}
	if v := mustFrame(t, w.log, 1); v.ArenaBytes() != n*per {
		t.Fatalf("arena %d bytes, want %d", v.ArenaBytes(), n*per)
	}
}

func mustFrame(tb testing.TB, l *ActionLog, f uint32) FrameView {
	tb.Helper()
	v, err := l.Frame(f)
	if err != nil {
		tb.Fatalf("Frame(%d): %v", f, err)
	}
	return v
}

// Calling back into the executor from inside an action or a hook is refused.
func TestReentrantExecuteRefused(t *testing.T) {
	store, _ := NewStore(StoreConfig{Components: testComponents})
	log, _ := NewActionLog(LogConfig{})
	reg := NewRegistry[*Store]()
	var x *Executor[*Store]
	var inner error
	id, err := reg.Register(ActionType[*Store]{
		Name: "nest", MaxSize: 0,
		Apply: func(w *Store, a Action) error {
			inner = x.Execute(SenderLocal, a.Type, NoEntity, nil)
			if _, err := x.PlanRewind(0); !errors.Is(err, ErrReentrant) {
				t.Errorf("PlanRewind inside Apply: %v", err)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if x, err = NewExecutor(reg, log, store); err != nil {
		t.Fatal(err)
	}
	if err := log.BeginFrame(0); err != nil {
		t.Fatal(err)
	}
	if err := x.Execute(SenderLocal, id, NoEntity, nil); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inner, ErrReentrant) {
		t.Fatalf("nested Execute: %v, want ErrReentrant", inner)
	}
	// The guard is released afterwards.
	if err := x.Execute(SenderLocal, id, NoEntity, nil); err != nil {
		t.Fatal(err)
	}
}

// NewExecutor refuses an action type that writes a component the state lacks,
// and freezes the registry.
func TestNewExecutorValidates(t *testing.T) {
	store, _ := NewStore(StoreConfig{Components: testComponents})
	log, _ := NewActionLog(LogConfig{})
	reg := NewRegistry[*Store]()
	if _, err := reg.Register(ActionType[*Store]{
		Name: "bad", Writes: []ComponentID{7},
		Apply: func(*Store, Action) error { return nil },
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewExecutor(reg, log, store); !errors.Is(err, ErrUnknownComponent) {
		t.Fatalf("err = %v, want ErrUnknownComponent", err)
	}
	if _, err := NewExecutor[*Store](nil, log, store); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil registry: %v", err)
	}
	var nilState State
	if _, err := NewExecutor(NewRegistry[State](), log, nilState); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil state: %v", err)
	}
	good := NewRegistry[*Store]()
	if _, err := NewExecutor(good, log, store); err != nil {
		t.Fatal(err)
	}
	if !good.Frozen() {
		t.Fatal("registry not frozen")
	}
	if _, err := good.Register(ActionType[*Store]{Name: "late", Apply: func(*Store, Action) error { return nil }}); !errors.Is(err, ErrRegistryFrozen) {
		t.Fatalf("late register: %v", err)
	}
}

// An action whose Touches names an unknown component is malformed.
func TestTouchesUnknownComponent(t *testing.T) {
	store, _ := NewStore(StoreConfig{Components: testComponents})
	e, _ := store.Create(0)
	log, _ := NewActionLog(LogConfig{})
	reg := NewRegistry[*Store]()
	id, _ := reg.Register(ActionType[*Store]{
		Name: "wild", MaxSize: 2,
		Touches: func(dst []Target, a Action) ([]Target, error) {
			return append(dst, Target{a.Entity, ComponentID(len(a.Payload) * 100)}), nil
		},
		Apply: func(*Store, Action) error { return nil },
	})
	many, _ := reg.Register(ActionType[*Store]{
		Name: "many", MaxSize: 0,
		Touches: func(dst []Target, a Action) ([]Target, error) {
			for range MaxTargets + 1 {
				dst = append(dst, Target{a.Entity, cHP})
			}
			return dst, nil
		},
		Apply: func(*Store, Action) error { return nil },
	})
	x, err := NewExecutor(reg, log, store)
	if err != nil {
		t.Fatal(err)
	}
	_ = log.BeginFrame(0)
	if err := x.Execute(0, id, e, []byte{1}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown touched component: %v", err)
	}
	if err := x.Execute(0, many, e, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("too many targets: %v", err)
	}
	if err := x.Execute(0, id, e, nil); err != nil {
		t.Fatalf("component 0: %v", err)
	}
}
