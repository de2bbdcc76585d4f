package rollback

import "testing"

// S-F7: the steady-state tick, execute, rewind and replay paths allocate
// nothing. One iteration is a server-shaped tick: begin a frame, execute a
// mix of actions with capture (typed and byte-level, peer, local and
// derived, a cross-entity Touches action, an event), close it; then plan and
// commit a rewind of the last four frames and replay them (read, reopen,
// re-execute, close), as a late input would force.
func TestNoAllocs(t *testing.T) {
	w := newWorld(t, Config{FrameCapacity: 16}, 0)
	var rp replayer
	dmg := damagePayload(w.ents[3], 1)
	heal := le32(1)
	ping := []byte{1, 2, 3}
	set := make([]byte, 13)
	f := uint32(0)
	tick := func() {
		if err := w.log.BeginFrame(f); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := w.ids.move.Execute(w.x, Sender(i), w.ents[2*i], Move{1, -1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.x.Execute(1, w.ids.heal, w.ents[2], heal); err != nil {
			t.Fatal(err)
		}
		if err := w.x.Execute(SenderLocal, w.ids.damage, w.ents[8], dmg); err != nil {
			t.Fatal(err)
		}
		if err := w.x.Execute(2, w.ids.ping, w.ents[4], ping); err != nil {
			t.Fatal(err)
		}
		w.x.SetDerived(true)
		if err := w.x.Execute(SenderLocal, w.ids.setAll, w.ents[9], set); err != nil {
			t.Fatal(err)
		}
		w.x.SetDerived(false)
		// A forged input is refused without allocating, too.
		if err := w.x.Execute(0, w.ids.heal, w.ents[2], heal); err == nil {
			t.Fatal("forged input accepted")
		}
		if err := w.log.CloseFrame(); err != nil {
			t.Fatal(err)
		}
		f++
		if f < 4 {
			return
		}
		plan, err := w.x.PlanRewind(f - 4)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.x.CommitRewind(plan); err != nil {
			t.Fatal(err)
		}
		if err := rp.replayAll(w.x); err != nil {
			t.Fatal(err)
		}
	}
	// Warm every ring slot and scratch buffer to its working size.
	for range 3 * w.log.FrameCapacity() {
		tick()
	}
	if n := testing.AllocsPerRun(200, tick); n != 0 {
		t.Fatalf("steady-state tick allocates %.1f times", n)
	}
	if w.x.Stats().Rewinds == 0 || w.pings == 0 {
		t.Fatal("the measured path did not run")
	}
}
