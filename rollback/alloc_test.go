package rollback

import "testing"

// S-F7: the steady-state tick, execute, rewind and replay paths allocate
// nothing — in the executor, through Server.Tick and through the Client —
// and neither do replication's pack and unpack (the links over
// back-to-back channels: rollback/link's TestNoAllocsLinks).
func TestNoAllocs(t *testing.T) {
	t.Run("executor", testNoAllocsExecutor)
	t.Run("server", testNoAllocsServer)
	t.Run("client", testNoAllocsClient)
	t.Run("pack", testNoAllocsPack)
	t.Run("unpack", testNoAllocsUnpack)
	t.Run("held", testNoAllocsHeld)
}

// One iteration is a join's worth of holding: a snapshot is announced
// (AwaitSnapshot), twelve overlapping slices arrive and are held frame by frame,
// the snapshot is installed (Reset) and the 16 frames held are applied.
func testNoAllocsHeld(t *testing.T) {
	w, r := streamWorld(t, 30)
	var slices [][]byte
	for k := uint32(1); k <= 12; k++ {
		slices = append(slices, packRange(t, r, 5, k, k+4))
	}
	tg := newRecTarget(t, 5)
	tg.noCopy = true
	rv := newTestReceiver(t, w, tg, ReceiverConfig{})
	none := func(uint32) ([]Record, bool) { return nil, false }
	op := func() {
		rv.AwaitSnapshot(0, none)
		for _, b := range slices {
			if err := rv.Unpack(b); err != nil {
				t.Fatal(err)
			}
		}
		tg.started = false
		if err := rv.Reset(0); err != nil {
			t.Fatal(err)
		}
	}
	_ = rv.Reset(0)
	for range 4 {
		op()
	}
	before := rv.Stats()
	if allocs := testing.AllocsPerRun(100, op); allocs != 0 {
		t.Fatalf("holding and applying a join's frames allocates %.1f times", allocs)
	}
	if st := rv.Stats(); st.Held-before.Held < 100*16 || st.Frames-before.Frames < 100*16 || st.HeldNow != 0 {
		t.Fatalf("the measured path did not run: %+v", st)
	}
}

// One iteration is a server-shaped tick: begin a frame, execute a mix of
// actions with capture (typed and byte-level, peer, local and derived, a
// cross-entity Touches action, an event), close it; then plan and commit a
// rewind of the last four frames and replay them (read, reopen, re-execute,
// close), as a late input would force.
func testNoAllocsExecutor(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 0)
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

// One iteration is a server tick at steady state: four peers' inputs for
// the next frame, a late input three frames back (a rewind and a replay of
// three frames), a retransmission of an input the log holds (no rewind), a
// server-authored action every fourth tick, the step (derived actions, an
// event) and a state checksum on every simulated and replayed frame.
func testNoAllocsServer(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	s, err := NewServer(w.x, testStep(w), ServerConfig{Checksum: w.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	move := w.ids.move.Encode(nil, Move{1, -1})
	heal := make([]byte, 4)
	local := make([]byte, 4)
	put32(local, 2)
	f := uint32(0)
	n := int32(0)
	tick := func() {
		for p := range 4 {
			if err := s.Submit(f, Sender(p), w.ids.move.ID(), w.ents[2*p], move); err != nil {
				t.Fatal(err)
			}
		}
		if f >= 4 {
			n++
			put32(heal, n)
			if err := s.Submit(f-3, 1, w.ids.heal, w.ents[3], heal); err != nil {
				t.Fatal(err)
			}
			if err := s.Submit(f-2, 0, w.ids.move.ID(), w.ents[0], move); err != nil {
				t.Fatal(err)
			}
		}
		if f%4 == 0 {
			if err := s.EnqueueAction(w.ids.heal, w.ents[9], local); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Tick(f); err != nil {
			t.Fatal(err)
		}
		f++
	}
	for range 3 * w.log.FrameCapacity() {
		tick()
	}
	before := s.Stats()
	if allocs := testing.AllocsPerRun(200, tick); allocs != 0 {
		t.Fatalf("steady-state Server.Tick allocates %.1f times", allocs)
	}
	st := s.Stats()
	if st.Rewinds-before.Rewinds < 200 || st.Duplicates == before.Duplicates || st.LocalApplied == before.LocalApplied {
		t.Fatalf("the measured path did not run: %+v", st)
	}
}

// One iteration is a client tick at steady state: the authoritative
// records of the frame four back arrive — about half of them exactly as
// predicted (no rewind), the others with another peer's input the client
// mispredicted, repeating its last known one (a rewind and a replay of four
// frames) — then the client reconciles and predicts the next frame
// (sampler, own input, the other peer's predicted input, step, checksum),
// and the network layer collects the unconfirmed inputs.
func testNoAllocsClient(t *testing.T) {
	var w *world
	move := make([]byte, 0, 8)
	sample := func(f uint32, in *InputBuffer) {
		move = w.ids.move.Encode(move[:0], Move{int32(f % 5), 1})
		if err := in.Add(w.ids.move.ID(), w.ents[0], move); err != nil {
			t.Fatal(err)
		}
	}
	w = newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	c, err := NewClient(w.x, 0, sample, testStep(w), ClientConfig{Checksum: w.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	recs := make([]Record, 0, 64)
	pending := make([]Input, 0, 64)
	extra := make([]byte, 4)
	present := uint32(0)
	tick := func() {
		present++
		if present > 4 {
			f := present - 4
			v, err := w.log.Frame(f)
			if err != nil {
				t.Fatal(err)
			}
			// The server's frame: the client's own input and the step as
			// predicted, and peer 1's heal, held for two frames in every
			// four — predicted right on the second (repeat-last), wrong
			// on the first and the third.
			recs = recs[:0]
			for i := range v.Len() {
				if r := v.Record(i); r.Sender == 0 {
					recs = append(recs, r)
				}
			}
			if f%4 < 2 {
				put32(extra, 7)
				recs = append(recs, Record{Sender: 1, Type: w.ids.heal, Entity: w.ents[3], Payload: extra})
			}
			for i := range v.Len() {
				if r := v.Record(i); r.Sender == SenderDerived {
					recs = append(recs, r)
				}
			}
			if err := c.Confirm(f, recs); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Tick(present); err != nil {
			t.Fatal(err)
		}
		pending = c.PendingInputs(pending[:0])
	}
	for range 3 * w.log.FrameCapacity() {
		tick()
	}
	before := c.Stats()
	if allocs := testing.AllocsPerRun(200, tick); allocs != 0 {
		t.Fatalf("steady-state Client predict+reconcile allocates %.1f times", allocs)
	}
	st := c.Stats()
	t.Logf("over 200 ticks: %d rewinds, %d prediction hits, %d remote inputs predicted", st.Rewinds-before.Rewinds, st.PredictionHits-before.PredictionHits, st.RemoteInputsPredicted-before.RemoteInputsPredicted)
	if st.Rewinds-before.Rewinds < 50 || st.PredictionHits-before.PredictionHits < 50 || st.RemoteInputsPredicted == before.RemoteInputsPredicted || len(pending) != 4 {
		t.Fatalf("the measured path did not run: %+v, %d pending", st, len(pending))
	}
}
