package rollback

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// frameRecords copies frame f's records out of l, as the network layer
// will hand a confirmed frame to the client.
func frameRecords(tb testing.TB, l *ActionLog, f uint32) []Record {
	tb.Helper()
	v := mustFrame(tb, l, f)
	recs := make([]Record, v.Len())
	for i := range recs {
		r := v.Record(i)
		r.Payload = bytes.Clone(r.Payload)
		r.PriorLen = 0
		recs[i] = r
	}
	return recs
}

// copyStore makes dst's state equal to src's: the stand-in for installing
// a snapshot (same entities, same capacity).
func copyStore(dst, src *Store) {
	for c := range src.cols {
		copy(dst.cols[c], src.cols[c])
	}
	copy(dst.owner, src.owner)
}

// newClientWorld builds a world (same entities as newServerWorld's) driven
// by a Client of peer.
func newClientWorld(tb testing.TB, cfg LogConfig, peer Sender, sample Sampler, withStep bool, ccfg ClientConfig) (*world, *Client[*Store]) {
	tb.Helper()
	w := newWorld(tb, cfg, 64)
	var step StepFunc
	if withStep {
		step = testStep(w)
	}
	c, err := NewClient(w.x, peer, sample, step, ccfg)
	if err != nil {
		tb.Fatal(err)
	}
	return w, c
}

// moveSampler gives peer p's inputs: a move of its first entity every
// frame, a heal of its second every 3rd frame.
func moveSampler(w **world, p int) Sampler {
	return func(f uint32, in *InputBuffer) {
		e := (*w).ents[2*p]
		if err := in.Add((*w).ids.move.ID(), e, (*w).ids.move.Encode(nil, Move{int32(f%3) + 1, -1})); err != nil {
			panic(err)
		}
		if f%3 == 0 {
			if err := in.Add((*w).ids.heal, (*w).ents[2*p+1], le32(int32(f))); err != nil {
				panic(err)
			}
		}
	}
}

// S-H7: before its initial snapshot is installed the client samples
// nothing, predicts nothing and applies no action-stream frame.
func TestClientGateBeforeSnapshot(t *testing.T) {
	var w *world
	sampled := 0
	inner := moveSampler(&w, 0)
	sample := func(f uint32, in *InputBuffer) { sampled++; inner(f, in) }
	w, c := newClientWorld(t, LogConfig{}, 0, sample, true, ClientConfig{})
	before := snapshot(w.store)
	recs := []Record{{Sender: 1, Type: w.ids.heal, Entity: w.ents[3], Payload: le32(5)}}

	if c.Ready() {
		t.Fatal("ready before the snapshot")
	}
	if err := c.Tick(1); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Tick: %v, want ErrNotReady", err)
	}
	if err := c.Confirm(1, recs); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Confirm: %v, want ErrNotReady", err)
	}
	if err := c.Reconcile(); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Reconcile: %v, want ErrNotReady", err)
	}
	if sampled != 0 || !bytes.Equal(snapshot(w.store), before) || w.pings != 0 {
		t.Fatal("the client predicted or applied something before its snapshot")
	}
	if _, ok := w.log.Newest(); ok {
		t.Fatal("the client began a frame before its snapshot")
	}
	if c.Stats().ConfirmRefused != 1 {
		t.Fatalf("stats %+v", c.Stats())
	}

	// The snapshot: the state at the end of frame 10.
	if err := c.InstallSnapshot(10); err != nil {
		t.Fatal(err)
	}
	if !c.Ready() || c.Baseline() != 10 || c.Present() != 10 || c.Confirmed() != 10 {
		t.Fatal("snapshot not installed at frame 10")
	}
	if err := c.Confirm(7, recs); err != nil { // at or before the baseline: ignored
		t.Fatal(err)
	}
	if err := c.Tick(11); err != nil {
		t.Fatal(err)
	}
	if sampled != 1 || c.Present() != 11 {
		t.Fatalf("sampled %d, present %d", sampled, c.Present())
	}
	if err := c.Confirm(11, recs); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(12); err != nil {
		t.Fatal(err)
	}
	// 100, +5 confirmed at frame 11, +5 predicted at frame 12 (peer 1
	// repeats its heal).
	if c.Confirmed() != 11 || i32(w.comp(t, w.ents[3], cHP)) != 110 {
		t.Fatalf("confirmed %d, hp %d", c.Confirmed(), i32(w.comp(t, w.ents[3], cHP)))
	}
	if st := c.Stats(); st.ConfirmDuplicates != 1 || st.FramesConfirmed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A confirmation equal to the prediction, on top of confirmed state, needs
// no rewind; one that differs rewinds to before it and replays the own
// unconfirmed inputs (and the step) to the present. (Other peers' inputs
// are not predicted here, so the present holds peer 1's one heal only;
// TestClientPredictsRemoteInputs covers their prediction.)
func TestClientPredictionHitAndMiss(t *testing.T) {
	var w *world
	w, c := newClientWorld(t, LogConfig{}, 0, moveSampler(&w, 0), false, ClientConfig{NoRemotePrediction: true})
	var rewinds []RewindEvent
	var confirmed []uint32
	c.SetHooks(ClientHooks{
		OnRewind:    func(r RewindEvent) { rewinds = append(rewinds, r) },
		OnConfirmed: func(f uint32) { confirmed = append(confirmed, f) },
	})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(4); err != nil {
		t.Fatal(err)
	}
	if got := c.PendingInputs(nil); len(got) != 5 || got[0].Frame != 1 || got[0].Sender != 0 || got[4].Frame != 4 {
		t.Fatalf("pending inputs %+v", got)
	}
	// Frame 1 as predicted.
	if err := c.Confirm(1, frameRecords(t, w.log, 1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(4); err != nil {
		t.Fatal(err)
	}
	if len(rewinds) != 0 || c.Confirmed() != 1 || c.Stats().PredictionHits != 1 {
		t.Fatalf("hit: rewinds %v, confirmed %d", rewinds, c.Confirmed())
	}
	if got := c.PendingInputs(nil); len(got) != 4 || got[0].Frame != 2 {
		t.Fatalf("pending inputs after confirming frame 1: %+v", got)
	}

	// Frame 2 as the server saw it: peer 1 healed too, and the own move
	// never arrived.
	ref, refS := newServerWorld(t, LogConfig{}, ServerConfig{FirstFrame: 1}, false)
	mustSubmit(t, refS, Input{Frame: 1, Sender: 0, Type: w.ids.move.ID(), Entity: w.ents[0], Payload: w.ids.move.Encode(nil, Move{2, -1})})
	mustTick(t, refS, 1)
	mustSubmit(t, refS, healIn(ref, 1, 2, 40))
	mustTick(t, refS, 2)
	if err := c.Confirm(2, frameRecords(t, ref.log, 2)); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(5); err != nil {
		t.Fatal(err)
	}
	if len(rewinds) != 1 || rewinds[0].From != 2 || rewinds[0].Through != 4 {
		t.Fatalf("miss: rewinds %+v, want one over frames 2..4", rewinds)
	}
	if c.Confirmed() != 2 || i32(w.comp(t, w.ents[3], cHP)) != 140 {
		t.Fatalf("confirmed %d, peer 1's hp %d", c.Confirmed(), i32(w.comp(t, w.ents[3], cHP)))
	}
	// Predicted frames 3..5 kept their own inputs; frame 2's move is gone.
	want := int32(0) + 2 + 0 + 1 + 2 + 3 // frames 1 (x2), 2 (lost), 3 (x1), 4 (x2), 5 (x3)
	if x := i32(w.comp(t, w.ents[0], cPos)); x != want {
		t.Fatalf("pos.x %d, want %d", x, want)
	}
	if len(confirmed) != 2 || confirmed[0] != 1 || confirmed[1] != 2 {
		t.Fatalf("OnConfirmed %v", confirmed)
	}
}

// Confirmations may arrive in any order: a later frame is applied at once
// (on top of predicted earlier frames) and joins the confirmed run when the
// frames before it are confirmed — by a rewind if they were mispredicted,
// without one if they were predicted exactly. (Other peers' inputs are
// not predicted here, so frames 4 and 5 do not repeat peer 1's heal.)
func TestClientOutOfOrderConfirmations(t *testing.T) {
	var w *world
	w, c := newClientWorld(t, LogConfig{}, 0, moveSampler(&w, 0), true, ClientConfig{NoRemotePrediction: true})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(5); err != nil {
		t.Fatal(err)
	}
	predicted := map[uint32][]Record{}
	for f := uint32(1); f <= 5; f++ {
		predicted[f] = frameRecords(t, w.log, f)
	}
	// Frame 3 differs from the prediction (peer 1 healed): rewind 3..5.
	three := append(predicted[3], Record{Sender: 1, Type: w.ids.heal, Entity: w.ents[3], Payload: le32(9)})
	if err := c.Confirm(3, three); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if c.Confirmed() != 0 || c.Stats().Rewinds != 1 || c.Stats().FramesConfirmed != 1 {
		t.Fatalf("after frame 3: confirmed %d, %+v", c.Confirmed(), c.Stats())
	}
	// Frames 2 then 1, as predicted: no rewind, and 3 joins the run.
	for _, f := range []uint32{2, 1} {
		if err := c.Confirm(f, predicted[f]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if c.Confirmed() != 3 || c.Stats().Rewinds != 1 || c.Stats().PredictionHits != 2 {
		t.Fatalf("after frames 2, 1: confirmed %d, %+v", c.Confirmed(), c.Stats())
	}
	if hp := i32(w.comp(t, w.ents[3], cHP)); hp != 109+3 { // +3: the step heals ents[3] at frame 3
		t.Fatalf("hp %d", hp)
	}
}

// A different version of a frame the client already applied is a
// correction: it is replayed from that frame; the same version again is a
// duplicate; a correction the ring can no longer apply is refused.
func TestClientCorrection(t *testing.T) {
	var w *world
	w, c := newClientWorld(t, LogConfig{FrameCapacity: 8}, 0, moveSampler(&w, 0), true, ClientConfig{})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(4); err != nil {
		t.Fatal(err)
	}
	v1 := frameRecords(t, w.log, 2)
	for f := uint32(1); f <= 3; f++ {
		if err := c.Confirm(f, frameRecords(t, w.log, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Tick(5); err != nil {
		t.Fatal(err)
	}
	if c.Confirmed() != 3 || c.Stats().Rewinds != 0 {
		t.Fatalf("confirmed %d, %+v", c.Confirmed(), c.Stats())
	}
	hp := i32(w.comp(t, w.ents[3], cHP))
	// The server accepted a late heal for frame 2 after sending it.
	v2 := append(v1, Record{Sender: 1, Type: w.ids.heal, Entity: w.ents[3], Payload: le32(20)})
	if err := c.Confirm(2, v2); err != nil {
		t.Fatal(err)
	}
	if c.Confirmed() != 1 {
		t.Fatalf("confirmed %d after a correction of frame 2, want 1", c.Confirmed())
	}
	if err := c.Confirm(2, v2); err != nil { // staged: the same again
		t.Fatal(err)
	}
	if err := c.Tick(5); err != nil {
		t.Fatal(err)
	}
	if got := i32(w.comp(t, w.ents[3], cHP)); got != hp+20 || c.Confirmed() != 3 {
		t.Fatalf("hp %d (was %d), confirmed %d", got, hp, c.Confirmed())
	}
	if err := c.Confirm(2, v2); err != nil { // applied: the same again
		t.Fatal(err)
	}
	st := c.Stats()
	if st.ConfirmCorrections != 1 || st.ConfirmDuplicates != 2 || st.Rewinds != 1 || st.FramesReplayed != 4 {
		t.Fatalf("stats %+v", st)
	}
	// Frame 1 has left the ring once frame 9 is simulated.
	for f := uint32(4); f <= 8; f++ {
		if err := c.Confirm(f, frameRecords(t, w.log, f)); err != nil {
			t.Fatal(err)
		}
		if err := c.Tick(f + 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Confirm(1, v2[:1]); !errors.Is(err, ErrTooOld) {
		t.Fatalf("correction of an aged-out frame: %v, want ErrTooOld", err)
	}
}

// The client stops predicting MaxPredictionFrames beyond its newest
// confirmed frame, and resumes as confirmations arrive; confirmations for
// frames it has not reached yet are applied when it reaches them, without
// sampling.
func TestClientPredictionLimit(t *testing.T) {
	var w *world
	sampled := map[uint32]int{}
	inner := moveSampler(&w, 0)
	w, c := newClientWorld(t, LogConfig{FrameCapacity: 8}, 0, func(f uint32, in *InputBuffer) { sampled[f]++; inner(f, in) }, false, ClientConfig{MaxPredictionFrames: 4})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(10); !errors.Is(err, ErrPredictionLimit) {
		t.Fatalf("Tick(10): %v, want ErrPredictionLimit", err)
	}
	if c.Present() != 4 || len(sampled) != 4 {
		t.Fatalf("present %d, sampled %v", c.Present(), sampled)
	}
	// Confirm 1 and 2 as predicted, and 6 (ahead of the present).
	for f := uint32(1); f <= 2; f++ {
		if err := c.Confirm(f, frameRecords(t, w.log, f)); err != nil {
			t.Fatal(err)
		}
	}
	ahead := []Record{{Sender: 1, Type: w.ids.heal, Entity: w.ents[3], Payload: le32(3)}}
	if err := c.Confirm(6, ahead); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(10); !errors.Is(err, ErrPredictionLimit) {
		t.Fatalf("Tick(10): %v", err)
	}
	// Frames 1 and 2 confirm without a rewind; the client predicts 5,
	// applies 6 from the server's records (not sampled), and stops before
	// 7 = 2+4+1. Frame 6 counts as confirmed only once 3..5 are.
	if c.Present() != 6 || sampled[6] != 0 || sampled[5] != 1 || c.Confirmed() != 2 {
		t.Fatalf("present %d confirmed %d sampled %v", c.Present(), c.Confirmed(), sampled)
	}
	if i32(w.comp(t, w.ents[3], cHP)) != 103 {
		t.Fatal("frame 6's authoritative record was not applied")
	}
	if st := c.Stats(); st.PredictionStalls != 2 || st.FramesConfirmed != 3 || st.FramesPredicted != 5 {
		t.Fatalf("stats %+v", st)
	}
	if err := c.Tick(3); !errors.Is(err, ErrFrameOrder) {
		t.Fatalf("Tick backwards: %v", err)
	}
}

// Confirm refuses, without staging anything, what it cannot use.
func TestClientConfirmValidates(t *testing.T) {
	w, c := newClientWorld(t, LogConfig{FrameCapacity: 8}, 0, nil, false, ClientConfig{MaxStagedBytes: minMaxPendingBytes})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	good := Record{Sender: 1, Type: w.ids.heal, Entity: w.ents[3], Payload: le32(5)}
	cases := []struct {
		frame uint32
		recs  []Record
		want  error
	}{
		{1, []Record{good, {Sender: 1, Type: 999}}, ErrMalformed},
		{1, []Record{{Sender: 1, Type: w.ids.heal, Payload: []byte{1}}}, ErrMalformed},
		{9, []Record{good}, ErrTooFarAhead},
		{1, []Record{{Type: w.ids.ping, Payload: make([]byte, 16)}, {Type: w.ids.ping, Payload: make([]byte, 16)}}, nil},
	}
	for i, cs := range cases {
		if err := c.Confirm(cs.frame, cs.recs); !errors.Is(err, cs.want) {
			t.Fatalf("case %d: %v, want %v", i, err, cs.want)
		}
	}
	big := make([]Record, 64)
	for i := range big {
		big[i] = Record{Type: w.ids.ping, Payload: []byte{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}
	}
	if err := c.Confirm(2, big); !errors.Is(err, ErrPendingFull) {
		t.Fatalf("over the staging budget: %v", err)
	}
	// A second version of a staged frame replaces it; the same version
	// again is a duplicate.
	for range 2 {
		if err := c.Confirm(1, []Record{good}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Tick(1); err != nil {
		t.Fatal(err)
	}
	if w.pings != 0 || c.Confirmed() != 1 || i32(w.comp(t, w.ents[3], cHP)) != 105 {
		t.Fatalf("pings %d confirmed %d", w.pings, c.Confirmed())
	}
	if st := c.Stats(); st.ConfirmRefused != 4 || st.ConfirmDuplicates != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// The input buffer refuses what the server would not treat as one input.
func TestClientInputBuffer(t *testing.T) {
	var errs []error
	var w *world
	sample := func(f uint32, in *InputBuffer) {
		heal := le32(1)
		errs = append(errs,
			in.Add(w.ids.heal, w.ents[1], heal),
			in.Add(w.ids.heal, w.ents[1], heal),
			in.Add(w.ids.heal, w.ents[1], []byte{1}),
			in.Add(999, w.ents[1], nil),
			in.Add(w.ids.heal, w.ents[1], le32(2)),
			in.Add(w.ids.heal, w.ents[1], le32(3)))
		if in.Frame() != f {
			panic("Frame")
		}
	}
	w, c := newClientWorld(t, LogConfig{}, 0, sample, false, ClientConfig{MaxInputsPerFrame: 2})
	if err := c.in.Add(w.ids.heal, w.ents[1], le32(1)); !errors.Is(err, ErrNoOpenFrame) {
		t.Fatalf("Add outside the sampler: %v", err)
	}
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(1); err != nil {
		t.Fatal(err)
	}
	want := []error{nil, ErrDuplicateInput, ErrMalformed, ErrUnknownAction, nil, ErrQueueFull}
	for i, e := range want {
		if !errors.Is(errs[i], e) || (e == nil && errs[i] != nil) {
			t.Fatalf("Add %d: %v, want %v", i, errs[i], e)
		}
	}
	if hp := i32(w.comp(t, w.ents[1], cHP)); hp != 103 {
		t.Fatalf("hp %d, want 103", hp)
	}
	if st := c.Stats(); st.InputsSampled != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Events on the client: its own predicted events, its step's events and
// the events of unpredicted records in the server's frames are each
// presented exactly once, however often their frames are replayed; an
// event its step emits only after a correction is presented on the replay
// that brings it.
func TestClientEventsPresentedOnce(t *testing.T) {
	const lead, last = 3, 40
	watched := 3 // ents[3], peer 1's: a server-only heal at frame 12 lifts it over 120
	alarmStep := func(w *world) StepFunc {
		return func(f uint32, replay bool) {
			if f%4 == 0 {
				_ = w.x.Execute(SenderLocal, w.ids.ping, NoEntity, nil)
			}
			if hp, _ := w.store.Component(w.ents[watched], cHP); i32(hp) > 120 {
				_ = w.x.Execute(SenderLocal, w.ids.ping, w.ents[watched], nil)
			}
		}
	}
	sw := newWorld(t, LogConfig{FrameCapacity: 32}, 64)
	s, err := NewServer(sw.x, alarmStep(sw), ServerConfig{FirstFrame: 1, MaxRewindFrames: 6})
	if err != nil {
		t.Fatal(err)
	}
	cw := newWorld(t, LogConfig{FrameCapacity: 32}, 64)
	sample := func(f uint32, in *InputBuffer) {
		_ = in.Add(cw.ids.move.ID(), cw.ents[0], cw.ids.move.Encode(nil, Move{1, 0}))
		if f%5 == 0 {
			_ = in.Add(cw.ids.ping, cw.ents[0], []byte{byte(f)})
		}
	}
	c, err := NewClient(cw.x, 0, sample, alarmStep(cw), ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	var toServer [][]Input // by arrival tick
	for tick := uint32(1); ; tick++ {
		if tick < last {
			// Peer 1: a ping every 3rd frame, the heal at frame 12, on time.
			if tick%3 == 0 {
				mustSubmit(t, s, Input{Frame: tick, Sender: 1, Type: sw.ids.ping, Entity: sw.ents[2], Payload: []byte{byte(tick)}})
			}
			if tick == 12 {
				mustSubmit(t, s, healIn(sw, 1, 12, 30))
			}
		}
		if int(tick) < len(toServer) {
			for _, in := range toServer[tick] {
				_ = submitIn(s, in)
			}
		}
		mustTick(t, s, tick)
		if ft, ok := s.FinalThrough(); ok && ft >= 1 && ft <= last {
			if err := c.Confirm(ft, frameRecords(t, sw.log, ft)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Tick(min(tick+lead, last)); err != nil {
			t.Fatal(err)
		}
		for len(toServer) <= int(tick)+1 {
			toServer = append(toServer, nil)
		}
		toServer[tick+1] = c.PendingInputs(nil)
		for i := range toServer[tick+1] {
			toServer[tick+1][i].Payload = bytes.Clone(toServer[tick+1][i].Payload)
		}
		if c.Confirmed() == last {
			break
		}
	}
	// Presented: own pings (frames 5, 10, …), peer 1's (3, 6, …), the
	// step's frame pings (4, 8, …) and its alarm on every frame from 12.
	want := last/5 + (last-1)/3 + last/4 + (last - 12 + 1)
	if cw.pings != want {
		t.Fatalf("client presented %d events, want %d", cw.pings, want)
	}
	if st := c.Stats(); st.Rewinds == 0 || cw.x.Stats().EventsSuppressed == 0 {
		t.Fatalf("replays not exercised: %+v", st)
	}
	sameLogs(t, cw.log, sw.log, last-20, last)
}

// The client's checksum of a confirmed frame is compared with the server's
// final one: equal states verify, a difference is a desync reported with
// its frame.
func TestClientChecksumDesync(t *testing.T) {
	sw := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	s, err := NewServer(sw.x, testStep(sw), ServerConfig{FirstFrame: 1, MaxRewindFrames: 4, Checksum: sw.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	cw := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	c, err := NewClient(cw.x, 0, nil, testStep(cw), ClientConfig{Checksum: cw.store.Checksum, ChecksumEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	var desyncs []Desync
	c.SetHooks(ClientHooks{OnDesync: func(d Desync) { desyncs = append(desyncs, d) }})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	for f := uint32(1); f <= 12; f++ {
		mustSubmit(t, s, healIn(sw, 1, f, int32(f)))
		mustTick(t, s, f)
	}
	for f := uint32(1); f <= 8; f++ {
		if err := c.Confirm(f, frameRecords(t, sw.log, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Tick(8); err != nil {
		t.Fatal(err)
	}
	for f := uint32(2); f <= 8; f += 2 {
		sum, final, ok := s.Checksum(f)
		if !ok || !final {
			t.Fatalf("server checksum of frame %d: ok %v final %v", f, ok, final)
		}
		if err := c.VerifyChecksum(f, sum); err != nil {
			t.Fatalf("frame %d: %v", f, err)
		}
	}
	if _, final, _ := s.Checksum(9); final {
		t.Fatal("frame 9 final with MaxRewindFrames 4 at frame 12")
	}
	sum, _, _ := s.Checksum(6)
	err = c.VerifyChecksum(6, sum^1)
	if !errors.Is(err, ErrDesync) || len(desyncs) != 1 || desyncs[0].Frame != 6 || desyncs[0].Remote != sum^1 {
		t.Fatalf("corrupted checksum: %v, %+v", err, desyncs)
	}
	for _, f := range []uint32{7, 10, 0} { // not a checksum frame, not confirmed, the baseline
		if err := c.VerifyChecksum(f, 0); !errors.Is(err, ErrFrameNotHeld) {
			t.Fatalf("frame %d: %v, want ErrFrameNotHeld", f, err)
		}
	}
	if st := c.Stats(); st.ChecksumsVerified != 4 || st.Desyncs != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A real divergence: the client's state is corrupted behind the
	// executor's back; the next confirmed frame's checksum disagrees.
	hp, _ := cw.store.Component(cw.ents[9], cHP)
	put32(hp, 7)
	if err := c.Confirm(9, frameRecords(t, sw.log, 9)); err != nil {
		t.Fatal(err)
	}
	if err := c.Confirm(10, frameRecords(t, sw.log, 10)); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(10); err != nil {
		t.Fatal(err)
	}
	mustTick(t, s, 14)
	sum, final, _ := s.Checksum(10)
	if err := c.VerifyChecksum(10, sum); !final || !errors.Is(err, ErrDesync) {
		t.Fatalf("diverged state: final %v, %v", final, err)
	}
}

// The client's prediction, corrected by reconciliation, converges to the
// server's state although the authoritative records differ from the
// prediction all the time: two other peers the client cannot predict (late
// by up to 3 frames), the client's own inputs lost in transit (resent until
// confirmed; some arrive too late and are dropped by the server), confirmed
// frames arriving out of order, and a snapshot of frame 5 installed only
// once frame 5 is final, at tick 13 (stream frames before it refused,
// S-H7). Checksums of final frames agree throughout, and at the end the
// client's state at frame M equals the server's state at frame M byte for
// byte.
func TestClientReconcilesToServer(t *testing.T) {
	const (
		lead, last = 4, 150 // the client runs 4 frames ahead; play ends at 150
		rewindMax  = 8
		install    = 5
	)
	rng := rand.New(rand.NewPCG(2024, 5))
	sw := newWorld(t, LogConfig{FrameCapacity: 32}, 64)
	s, err := NewServer(sw.x, testStep(sw), ServerConfig{FirstFrame: 1, MaxRewindFrames: rewindMax, Checksum: sw.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	var atLast []byte
	atInstall, err := NewStore(StoreConfig{Components: testComponents, Capacity: 64})
	if err != nil {
		t.Fatal(err)
	}
	s.SetHooks(ServerHooks{OnFrame: func(f uint32, _ bool) {
		switch f { // the last close of a frame leaves its final state
		case last:
			atLast = snapshot(sw.store)
		case install:
			copyStore(atInstall, sw.store)
		}
	}})
	cw := newWorld(t, LogConfig{FrameCapacity: 32}, 64)
	crng := rand.New(rand.NewPCG(99, 1))
	sample := func(f uint32, in *InputBuffer) {
		if f > last-10 {
			return
		}
		_ = in.Add(cw.ids.move.ID(), cw.ents[0], cw.ids.move.Encode(nil, Move{crng.Int32N(5) - 1, crng.Int32N(3) - 1}))
		if crng.IntN(3) == 0 {
			_ = in.Add(cw.ids.heal, cw.ents[1], le32(crng.Int32N(9)))
		}
		if crng.IntN(4) == 0 {
			_ = in.Add(cw.ids.damage, cw.ents[1], damagePayload(cw.ents[0], crng.Int32N(5)))
		}
	}
	c, err := NewClient(cw.x, 0, sample, testStep(cw), ClientConfig{Checksum: cw.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}

	type confirmMsg struct {
		frame uint32
		recs  []Record
		sum   uint64
	}
	toServer := map[uint32][][]Input{}    // arrival tick → packets
	toClient := map[uint32][]confirmMsg{} // arrival tick → confirmed frames
	others := map[uint32][]Input{}        // arrival tick → peers 1, 2
	verified, notReady, outOfOrder := 0, 0, 0
	sums := map[uint32]uint64{} // server checksums awaiting the client's confirmation
	for tick := uint32(1); ; tick++ {
		// Peers 1 and 2: most frames an input, up to 3 frames late.
		if tick <= last-10 {
			for p := 1; p <= 2; p++ {
				if rng.IntN(4) > 0 {
					in := moveIn(sw, p, tick, rng.Int32N(7)-2, 1)
					if rng.IntN(3) == 0 {
						in = Input{Frame: tick, Sender: Sender(p), Type: sw.ids.damage, Entity: sw.ents[2*p], Payload: damagePayload(sw.ents[2*p+1], 3)}
					}
					at := tick + uint32(rng.IntN(4))
					others[at] = append(others[at], in)
				}
			}
		}
		for _, in := range others[tick] {
			mustSubmit(t, s, in)
		}
		for _, pkt := range toServer[tick] {
			for _, in := range pkt {
				_ = submitIn(s, in) // retransmissions, some too old
			}
		}
		mustTick(t, s, tick)

		// The server sends each frame once it is final, with its checksum;
		// delivery takes 2–4 ticks, so frames may arrive out of order.
		if ft, ok := s.FinalThrough(); ok && ft >= 1 {
			sum, final, _ := s.Checksum(ft)
			if !final {
				t.Fatalf("frame %d not final", ft)
			}
			at := tick + 2 + uint32(rng.IntN(3))
			toClient[at] = append(toClient[at], confirmMsg{ft, frameRecords(t, sw.log, ft), sum})
		}

		if tick == install+rewindMax { // frame 5 is final now
			copyStore(cw.store, atInstall)
			if err := c.InstallSnapshot(install); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range toClient[tick] {
			if c.Ready() && m.frame > c.Confirmed()+1 {
				outOfOrder++
			}
			err := c.Confirm(m.frame, m.recs)
			if !c.Ready() {
				if !errors.Is(err, ErrNotReady) {
					t.Fatalf("Confirm before the snapshot: %v", err)
				}
				notReady++
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.frame > install {
				sums[m.frame] = m.sum
			}
		}
		target := min(tick+lead, last)
		if err := c.Tick(target); err != nil && !(errors.Is(err, ErrNotReady) && !c.Ready()) {
			t.Fatalf("client Tick(%d): %v", target, err)
		}
		for f, sum := range sums {
			if f <= c.Confirmed() {
				if err := c.VerifyChecksum(f, sum); err != nil {
					t.Fatalf("frame %d: %v", f, err)
				}
				delete(sums, f)
				verified++
			}
		}
		delete(toClient, tick)
		if c.Ready() && rng.IntN(5) > 0 { // 20 % of the client's packets are lost
			pkt := c.PendingInputs(nil)
			for i := range pkt {
				pkt[i].Payload = bytes.Clone(pkt[i].Payload)
			}
			at := tick + 1 + uint32(rng.IntN(2))
			toServer[at] = append(toServer[at], pkt)
		}
		if c.Confirmed() == last {
			break
		}
		if tick > 3*last {
			t.Fatalf("no convergence: confirmed %d", c.Confirmed())
		}
	}
	if c.Present() != last || atLast == nil {
		t.Fatalf("present %d", c.Present())
	}
	if !bytes.Equal(snapshot(cw.store), atLast) {
		t.Fatal("the client's state at the last frame differs from the server's")
	}
	cs, ss := c.Stats(), s.Stats()
	if cs.Rewinds == 0 || cs.PredictionHits == 0 || cs.ConfirmedRejected != 0 || notReady == 0 || outOfOrder == 0 || verified < last-install-10 {
		t.Fatalf("client stats %+v, refused before snapshot %d, out of order %d, verified %d", cs, notReady, outOfOrder, verified)
	}
	if ss.Rewinds == 0 || ss.Dropped(DropTooOld) == 0 || ss.Duplicates == 0 {
		t.Fatalf("server stats %+v", ss)
	}
	t.Logf("client %+v", cs)
	t.Logf("server rewinds %d, too old %d, duplicates %d", ss.Rewinds, ss.Dropped(DropTooOld), ss.Duplicates)
}

// A refused own input leaves the prediction wherever it is: still
// unconfirmed (frame 5: out of PendingInputs), in a staged confirmation
// that put it back (frame 4), or in a frame already applied (frame 2:
// corrected, replayed). Afterwards the client equals a client whose
// sampler never gave those inputs, fed the same confirmations.
func TestClientRefused(t *testing.T) {
	refused := map[uint32]bool{2: true, 4: true, 5: true}
	var wa, wb *world
	full := moveSampler(&wa, 0)
	wa, a := newClientWorld(t, LogConfig{}, 0, full, true, ClientConfig{Checksum: func() uint64 { return wa.store.Checksum() }})
	inner := moveSampler(&wb, 0)
	wb, b := newClientWorld(t, LogConfig{}, 0, func(f uint32, in *InputBuffer) {
		if !refused[f] {
			inner(f, in)
		}
	}, true, ClientConfig{})
	for _, c := range []*Client[*Store]{a, b} {
		if err := c.InstallSnapshot(0); err != nil {
			t.Fatal(err)
		}
		if err := c.Tick(6); err != nil {
			t.Fatal(err)
		}
	}
	// The server's frames: b's, which never had the refused inputs.
	server := func(f uint32) []Record {
		v := mustFrame(t, wb.log, f)
		var recs []Record
		for i := range v.Len() {
			r := v.Record(i)
			r.Payload = bytes.Clone(r.Payload)
			recs = append(recs, r)
		}
		return recs
	}
	confirm := func(c *Client[*Store], f uint32, recs []Record) {
		t.Helper()
		if err := c.Confirm(f, recs); err != nil {
			t.Fatal(err)
		}
	}
	mine := func(f uint32) Input { // a's input for f the server refused
		for _, in := range a.PendingInputs(nil) {
			if in.Frame == f {
				in.Payload = bytes.Clone(in.Payload)
				return in
			}
		}
		t.Fatalf("no input for frame %d", f)
		return Input{}
	}
	in2, in4, in5 := mine(2), mine(4), mine(5)
	// Frames 1–3 confirmed as a predicted them (the refusal of frame 2's
	// input not known yet), frame 4 staged with its input put back.
	for f := uint32(1); f <= 3; f++ {
		v := mustFrame(t, wa.log, f)
		var recs []Record
		for i := range v.Len() {
			r := v.Record(i)
			r.Payload = bytes.Clone(r.Payload)
			recs = append(recs, r)
		}
		confirm(a, f, recs)
	}
	if err := a.Reconcile(); err != nil {
		t.Fatal(err)
	}
	confirm(a, 4, append(server(4), Record{Sender: 0, Type: in4.Type, Entity: in4.Entity, Payload: in4.Payload}))
	if a.Confirmed() != 3 {
		t.Fatalf("confirmed %d", a.Confirmed())
	}
	for _, in := range []Input{in2, in4, in5} {
		if err := a.Refused(in.Frame, in.Type, in.Entity, in.Payload); err != nil {
			t.Fatalf("Refused(frame %d): %v", in.Frame, err)
		}
	}
	for _, in := range a.PendingInputs(nil) {
		if refused[in.Frame] {
			t.Fatalf("refused input of frame %d still pending", in.Frame)
		}
	}
	if a.Stats().ConfirmCorrections != 1 {
		t.Fatalf("frame 2 not corrected: %+v", a.Stats())
	}
	for f := uint32(1); f <= 6; f++ {
		if f > 4 {
			confirm(a, f, server(f))
		}
		confirm(b, f, server(f))
	}
	for _, c := range []*Client[*Store]{a, b} {
		if err := c.Tick(6); err != nil {
			t.Fatal(err)
		}
		if c.Confirmed() != 6 {
			t.Fatalf("confirmed %d", c.Confirmed())
		}
	}
	sameStores(t, wa.store, wb.store, "client after the refusals")
	sameLogs(t, wa.log, wb.log, 1, 6)
	if err := a.Refused(0, in2.Type, in2.Entity, in2.Payload); err != nil { // before the baseline: ignored
		t.Fatal(err)
	}
}
