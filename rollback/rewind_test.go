package rollback

import (
	"bytes"
	"errors"
	"testing"
)

// Generation safety: a rewind whose capture names an entity that has since
// been destroyed and whose slot was recycled for a new entity never writes
// into the new entity; the skipped restore is counted and reported.
func TestRewindIntoRecycledEntityDetected(t *testing.T) {
	store, err := NewStore(StoreConfig{Components: testComponents, Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	log, _ := NewActionLog(LogConfig{})
	reg, ids := newTestRegistry(t, nil)
	x, err := NewExecutor(reg, log, store)
	if err != nil {
		t.Fatal(err)
	}
	var failures []RestoreFailure
	x.SetHooks(ExecutorHooks{OnRestoreFailed: func(f RestoreFailure) { failures = append(failures, f) }})

	old, _ := store.Create(0)
	_ = log.BeginFrame(1)
	if err := ids.move.Execute(x, 0, old, Move{5, 5}); err != nil {
		t.Fatal(err)
	}
	_ = log.CloseFrame()

	// Outside the rollback machinery, the entity dies and its slot (the
	// only one) is recycled.
	if err := store.Destroy(old); err != nil {
		t.Fatal(err)
	}
	fresh, err := store.Create(1)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Index() != old.Index() || fresh.Generation() == old.Generation() {
		t.Fatalf("slot not recycled: old %v fresh %v", old, fresh)
	}
	pos, _ := store.Component(fresh, cPos)
	put32(pos, 42)
	want := append([]byte(nil), pos...)

	// Direct restore through the stale handle is an error.
	if err := store.RestoreComponent(old, cPos, make([]byte, 8)); !errors.Is(err, ErrStaleEntity) {
		t.Fatalf("RestoreComponent(stale) = %v", err)
	}
	res, err := x.Rewind(1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || x.Stats().RestoreFailures != 1 || x.Stats().CapturesRestored != 0 {
		t.Fatalf("result %+v, stats %+v: the stale restore was not counted", res, x.Stats())
	}
	if len(failures) != 1 || failures[0].Target != (Target{old, cPos}) || failures[0].Frame != 1 || !errors.Is(failures[0].Err, ErrStaleEntity) {
		t.Fatalf("failure events %+v", failures)
	}
	if got, _ := store.Component(fresh, cPos); !bytes.Equal(got, want) {
		t.Fatalf("recycled entity's pos = %x, want %x (untouched)", got, want)
	}
	// Executing against the stale handle is refused as well.
	if err := log.ReopenFrame(1); err != nil {
		t.Fatal(err)
	}
	if err := ids.move.Execute(x, 0, old, Move{1, 1}); !errors.Is(err, ErrStaleEntity) {
		t.Fatalf("execute on stale handle: %v", err)
	}
	if x.Rejected(0, RejectStaleEntity) != 1 {
		t.Fatal("stale execute not counted")
	}
}

// A plan is valid only against the log it was made from, unchanged.
func TestStalePlanRefused(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	for f := uint32(1); f <= 3; f++ {
		w.begin(t, f)
		if err := w.x.Execute(0, w.ids.heal, w.ents[0], le32(1)); err != nil {
			t.Fatal(err)
		}
		w.close(t)
	}
	before := snapshot(w.store)

	plan, err := w.x.PlanRewind(2)
	if err != nil {
		t.Fatal(err)
	}
	w.begin(t, 4) // the log moves on
	w.close(t)
	if _, err := w.x.CommitRewind(plan); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("commit after BeginFrame: %v", err)
	}
	if !bytes.Equal(snapshot(w.store), before) {
		t.Fatal("a stale commit changed the state")
	}

	plan, _ = w.x.PlanRewind(2)
	if _, err := w.x.CommitRewind(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := w.x.CommitRewind(plan); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("second commit: %v", err)
	}
	if _, err := w.x.CommitRewind(RewindPlan{}); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("zero plan: %v", err)
	}
	other := newWorld(t, LogConfig{}, 0)
	oplan, _ := other.x.PlanRewind(0)
	if _, err := w.x.CommitRewind(oplan); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("another log's plan: %v", err)
	}
	// While a frame is open, no plan.
	var r replayer
	_ = r.read(w.log, 2)
	_ = w.log.ReopenFrame(2)
	if _, err := w.x.PlanRewind(2); !errors.Is(err, ErrFrameOpen) {
		t.Fatalf("plan with open frame: %v", err)
	}
}

// Plans that undo nothing: an empty log, a frame newer than the newest.
func TestRewindEmptyPlans(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	plan, err := w.x.PlanRewind(7)
	if err != nil || !plan.Empty() {
		t.Fatalf("empty log: plan %+v, err %v", plan, err)
	}
	if res, err := w.x.CommitRewind(plan); err != nil || res != (RewindResult{}) {
		t.Fatalf("commit empty: %+v %v", res, err)
	}
	w.begin(t, 5)
	w.close(t)
	for _, from := range []uint32{6, 1000} {
		plan, err := w.x.PlanRewind(from)
		if err != nil || !plan.Empty() {
			t.Fatalf("PlanRewind(%d): %+v %v", from, plan, err)
		}
		if _, err := w.x.CommitRewind(plan); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := w.log.Replaying(); ok {
		t.Fatal("an empty rewind started a replay")
	}
	w.begin(t, 6) // and the log carries on
	w.close(t)
}

// A log that starts at frame 0 can undo frame 0 (no signed target needed).
func TestRewindFrameZero(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	before := snapshot(w.store)
	w.begin(t, 0)
	if err := w.ids.move.Execute(w.x, 0, w.ents[0], Move{3, 3}); err != nil {
		t.Fatal(err)
	}
	w.close(t)
	if _, err := w.x.Rewind(0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(w.store), before) {
		t.Fatal("frame 0 not undone")
	}
}

// A rewind during a replay undoes only the frames already replayed again;
// after the replay completes, the log and the state are as if it never
// happened.
func TestNestedRewindDuringReplay(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 0)
	var snaps [][]byte // snaps[f] = state at end of frame f−1
	for f := uint32(0); f < 10; f++ {
		snaps = append(snaps, snapshot(w.store))
		w.begin(t, f)
		if err := w.x.Execute(0, w.ids.heal, w.ents[0], le32(int32(f+1))); err != nil {
			t.Fatal(err)
		}
		if err := w.ids.move.Execute(w.x, 1, w.ents[2], Move{int32(f), 1}); err != nil {
			t.Fatal(err)
		}
		w.close(t)
	}
	final := snapshot(w.store)
	if _, err := w.x.Rewind(4); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(w.store), snaps[4]) {
		t.Fatal("rewind to 4 wrong")
	}
	// New frames wait for the replay.
	if err := w.log.BeginFrame(10); !errors.Is(err, ErrReplayPending) {
		t.Fatalf("BeginFrame during replay: %v", err)
	}
	if err := w.log.ReopenFrame(5); !errors.Is(err, ErrFrameOrder) {
		t.Fatalf("reopen out of order: %v", err)
	}
	// Replay frames 4..6.
	var r replayer
	for f := uint32(4); f <= 6; f++ {
		if err := r.read(w.log, f); err != nil {
			t.Fatal(err)
		}
		if err := w.log.ReopenFrame(f); err != nil {
			t.Fatal(err)
		}
		if v, _ := w.log.Frame(f); v.Len() != 0 {
			t.Fatal("reopened frame kept records")
		}
		if err := r.exec(w.x); err != nil {
			t.Fatal(err)
		}
		w.close(t)
	}
	if !bytes.Equal(snapshot(w.store), snaps[7]) {
		t.Fatal("replay through 6 wrong")
	}
	// Nested: frames 7..9 are still undone, so undoing from 8 is empty and
	// undoing from 5 touches only 5 and 6.
	if plan, _ := w.x.PlanRewind(8); !plan.Empty() {
		t.Fatalf("plan from 8 = %+v, want empty", plan)
	}
	plan, err := w.x.PlanRewind(5)
	if err != nil {
		t.Fatal(err)
	}
	if plan.From != 5 || plan.Through != 6 || plan.Frames != 2 || plan.Captures != 4 {
		t.Fatalf("nested plan = %+v", plan)
	}
	if _, err := w.x.CommitRewind(plan); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(w.store), snaps[5]) {
		t.Fatal("nested rewind wrong")
	}
	if next, ok := w.log.Replaying(); !ok || next != 5 {
		t.Fatalf("replay cursor = %d %v, want 5", next, ok)
	}
	if err := r.replayAll(w.x); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(w.store), final) {
		t.Fatal("state after full replay differs from before the rewinds")
	}
	if _, ok := w.log.Replaying(); ok {
		t.Fatal("still replaying")
	}
	w.begin(t, 10)
	w.close(t)
}

// Rewind cost follows the mutations, not the world: in a store of 2^20
// entities, undoing one action is one capture to restore.
func TestRewindCostFollowsMutations(t *testing.T) {
	w := newWorld(t, LogConfig{}, 1<<20)
	for f := uint32(0); f < 8; f++ {
		w.begin(t, f)
		if f == 3 {
			if err := w.x.Execute(0, w.ids.heal, w.ents[0], le32(1)); err != nil {
				t.Fatal(err)
			}
		}
		w.close(t)
	}
	plan, err := w.x.PlanRewind(0)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Frames != 8 || plan.Records != 1 || plan.Captures != 1 {
		t.Fatalf("plan = %+v, want 8 frames, 1 record, 1 capture", plan)
	}
}
