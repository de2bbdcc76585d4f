package rollback

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// testStep is the deterministic simulation step the orchestration tests
// run on both sides. Every frame it
//
//   - deals 10 damage to the server's entity ents[8] through a derived
//     action (S-G3: exactly −10 per frame however often it is replayed);
//   - heals the peer entity ents[f%8] by pos.x mod 7 when pos.x > 0, so
//     what it derives depends on the inputs of the frame and earlier: a
//     late move changes the step's output on replay;
//   - emits a derived ping event on every 4th frame.
//
// Its events depend on the frame number only, so every side presents the
// same ones: the oracle comparisons can count presentations exactly (see
// TestServerEventsPresentedOnce for events that depend on the state).
//
// It allocates nothing: its payload buffers are made once.
func testStep(w *world) StepFunc {
	dmg := damagePayload(w.ents[8], 10)
	heal := make([]byte, 4)
	return func(f uint32, replay bool) {
		_ = w.x.Execute(SenderLocal, w.ids.damage, NoEntity, dmg)
		e := w.ents[f%8]
		if p, err := w.store.Component(e, cPos); err == nil && i32(p) > 0 {
			put32(heal, i32(p)%7)
			_ = w.x.Execute(SenderLocal, w.ids.heal, e, heal)
		}
		if f%4 == 0 {
			_ = w.x.Execute(SenderLocal, w.ids.ping, NoEntity, nil)
		}
	}
}

// newServerWorld builds a world (64-entity store, the standard entities)
// driven by a Server, with testStep if withStep.
func newServerWorld(tb testing.TB, cfg LogConfig, scfg ServerConfig, withStep bool) (*world, *Server[*Store]) {
	tb.Helper()
	w := newWorld(tb, cfg, 64)
	var step StepFunc
	if withStep {
		step = testStep(w)
	}
	s, err := NewServer(w.x, step, scfg)
	if err != nil {
		tb.Fatal(err)
	}
	return w, s
}

func moveIn(w *world, p int, f uint32, dx, dy int32) Input {
	return Input{Frame: f, Sender: Sender(p), Type: w.ids.move.ID(), Entity: w.ents[2*p], Payload: w.ids.move.Encode(nil, Move{dx, dy})}
}

func healIn(w *world, p int, f uint32, n int32) Input {
	return Input{Frame: f, Sender: Sender(p), Type: w.ids.heal, Entity: w.ents[2*p+1], Payload: le32(n)}
}

func mustSubmit(tb testing.TB, s *Server[*Store], in Input) {
	tb.Helper()
	if err := submitIn(s, in); err != nil {
		tb.Fatalf("Submit(frame %d, %v, type %d): %v", in.Frame, in.Sender, in.Type, err)
	}
}

func mustTick(tb testing.TB, s *Server[*Store], f uint32) {
	tb.Helper()
	if err := s.Tick(f); err != nil {
		tb.Fatalf("Tick(%d): %v", f, err)
	}
}

// sameLogs fails unless a and b hold the same records for every frame in
// [from, to] that both hold.
func sameLogs(tb testing.TB, a, b *ActionLog, from, to uint32) {
	tb.Helper()
	for f := from; f <= to; f++ {
		va, ea := a.Frame(f)
		vb, eb := b.Frame(f)
		if ea != nil || eb != nil {
			continue
		}
		if va.Len() != vb.Len() {
			tb.Fatalf("frame %d: %d records vs %d", f, va.Len(), vb.Len())
		}
		for i := range va.Len() {
			ra, rb := va.Record(i), vb.Record(i)
			if ra.Sender != rb.Sender || ra.Type != rb.Type || ra.Entity != rb.Entity || !bytes.Equal(ra.Payload, rb.Payload) {
				tb.Fatalf("frame %d record %d: {%v %d %v %x} vs {%v %d %v %x}", f, i,
					ra.Sender, ra.Type, ra.Entity, ra.Payload, rb.Sender, rb.Type, rb.Entity, rb.Payload)
			}
		}
	}
}

func sameStores(tb testing.TB, got, want *Store, what string) {
	tb.Helper()
	if !bytes.Equal(snapshot(got), snapshot(want)) {
		tb.Fatalf("%s: stores differ: %s", what, diffStores(got, want))
	}
}

// S-G1 with three peers (S-G7): a late input for frame f triggers exactly
// one rewind, to f−1, and a replay that applies it; retransmissions of
// inputs the log already holds trigger none; several late inputs in one
// tick share one rewind, to before the oldest.
func TestServerLateInputRewindsOnce(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{FrameCapacity: 16}, ServerConfig{}, true)
	var rewinds []RewindEvent
	s.SetHooks(ServerHooks{OnRewind: func(r RewindEvent) { rewinds = append(rewinds, r) }})

	var onTime []Input // every input, for the reference server
	for f := uint32(0); f < 10; f++ {
		for p := range 3 {
			in := moveIn(w, p, f, int32(f%3)+1, 1)
			onTime = append(onTime, in)
			mustSubmit(t, s, in)
		}
		mustTick(t, s, f)
	}
	if len(rewinds) != 0 || s.Stats().Rewinds != 0 {
		t.Fatalf("on-time inputs rewound: %+v", rewinds)
	}

	// Peer 1's heal for frame 5 arrives while the server is at frame 9.
	late := healIn(w, 1, 5, 7)
	now := moveIn(w, 2, 10, 1, 1)
	onTime = append(onTime, late, now)
	mustSubmit(t, s, late)
	mustSubmit(t, s, now)
	mustTick(t, s, 10)
	if len(rewinds) != 1 {
		t.Fatalf("late input: %d rewinds, want 1", len(rewinds))
	}
	if r := rewinds[0]; r.From != 5 || r.Through != 9 || r.Frames != 5 || r.Sender != 1 {
		t.Fatalf("rewind = %+v, want frames 5..9 (to the end of 4) for peer 1", r)
	}
	if v := mustFrame(t, w.log, 5); !v.Contains(1, w.ids.heal, w.ents[3], le32(7)) {
		t.Fatal("the replay of frame 5 did not apply the late input")
	}
	if st := s.Stats(); st.FramesReplayed != 5 || st.InputsLate != 1 || st.InputsApplied != 32 {
		t.Fatalf("stats after the late input: %+v", st)
	}

	// Retransmissions of inputs the log holds: no rewind.
	mustSubmit(t, s, late)
	mustSubmit(t, s, onTime[9]) // peer 0's move for frame 3
	mustSubmit(t, s, now)
	mustTick(t, s, 11)
	if len(rewinds) != 1 {
		t.Fatalf("retransmissions forced a rewind: %+v", rewinds[1:])
	}
	if st := s.Stats(); st.Duplicates != 3 || st.InputsApplied != 32 {
		t.Fatalf("retransmissions: duplicates %d, applied %d; want 3, 32", st.Duplicates, st.InputsApplied)
	}
	if p := s.Peer(1); p.Duplicates != 1 || p.Late != 2 {
		t.Fatalf("peer 1 stats %+v", p)
	}

	// Two late inputs from peers 0 and 2, for frames 7 and 4: one rewind,
	// to before the older.
	a, b := healIn(w, 0, 7, 3), healIn(w, 2, 4, 9)
	onTime = append(onTime, a, b)
	mustSubmit(t, s, a)
	mustSubmit(t, s, b)
	mustTick(t, s, 12)
	if len(rewinds) != 2 || rewinds[1].From != 4 || rewinds[1].Through != 11 {
		t.Fatalf("two late inputs: rewinds %+v, want one more, frames 4..11", rewinds)
	}

	// The result equals a server that got every input on time.
	rw, ref := newServerWorld(t, LogConfig{FrameCapacity: 16}, ServerConfig{}, true)
	slices.SortStableFunc(onTime, func(x, y Input) int { return int(x.Frame) - int(y.Frame) })
	i := 0
	for f := uint32(0); f <= 12; f++ {
		for ; i < len(onTime) && onTime[i].Frame == f; i++ {
			mustSubmit(t, ref, onTime[i])
		}
		mustTick(t, ref, f)
	}
	sameStores(t, w.store, rw.store, "late vs on-time")
	sameLogs(t, w.log, rw.log, 0, 12)
	if ref.Stats().Rewinds != 0 {
		t.Fatal("the reference rewound")
	}
}

// S-G2 with four peers (S-G7): replay order within a frame is a stable
// sort by sender, so servers fed the same inputs in different arrival
// orders — peers interleaved differently, late by different amounts,
// duplicated — reach byte-identical state and logs.
func TestServerArrivalOrderDeterministic(t *testing.T) {
	const frames, capacity = 24, 16
	rng := rand.New(rand.NewPCG(7, 11))
	w0, _ := newServerWorld(t, LogConfig{FrameCapacity: capacity}, ServerConfig{}, true)
	type batch struct {
		frame uint32
		ins   []Input
	}
	var batches []batch
	for f := uint32(0); f < frames; f++ {
		for p := range 4 {
			b := batch{frame: f}
			// Two inputs per peer and frame that do not commute: set
			// everything, then move.
			set := make([]byte, 13)
			for i := range set {
				set[i] = byte(rng.Uint32())
			}
			b.ins = append(b.ins,
				Input{Frame: f, Sender: Sender(p), Type: w0.ids.setAll, Entity: w0.ents[2*p], Payload: set},
				moveIn(w0, p, f, rng.Int32N(9)-4, rng.Int32N(9)-4))
			batches = append(batches, b)
		}
	}

	// arrival(i) gives batch i's delivery frames (before that frame's Tick).
	run := func(name string, arrival func(i int, b batch) []uint32, shuffle bool) (*world, *Server[*Store]) {
		w, s := newServerWorld(t, LogConfig{FrameCapacity: capacity}, ServerConfig{}, true)
		byTick := make(map[uint32][]int)
		for i, b := range batches {
			for _, a := range arrival(i, b) {
				byTick[a] = append(byTick[a], i)
			}
		}
		r := rand.New(rand.NewPCG(uint64(len(name)), 3))
		for f := uint32(0); f < frames+capacity; f++ {
			idx := byTick[f]
			if shuffle {
				r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			}
			for _, i := range idx {
				for _, in := range batches[i].ins {
					if err := submitIn(s, in); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				}
			}
			mustTick(t, s, f)
		}
		return w, s
	}
	wa, sa := run("in order", func(i int, b batch) []uint32 { return []uint32{b.frame} }, false)
	// Peers in reverse order within every tick, late by 0–5 frames, every
	// third batch retransmitted two frames later.
	slices.Reverse(batches)
	wb, sb := run("reversed, late", func(i int, b batch) []uint32 {
		late := b.frame + uint32((i*7)%6)
		if i%3 == 0 {
			return []uint32{late, late + 2}
		}
		return []uint32{late}
	}, false)
	// Random order within every tick, random lateness within the ring,
	// random retransmissions (some before the late copy).
	wc, sc := run("random", func(i int, b batch) []uint32 {
		late := b.frame + uint32(rng.IntN(capacity-2))
		if rng.IntN(4) == 0 {
			return []uint32{b.frame, late}
		}
		return []uint32{late}
	}, true)

	sameStores(t, wb.store, wa.store, "reversed/late vs in order")
	sameStores(t, wc.store, wa.store, "random vs in order")
	last := uint32(frames + capacity - 1)
	sameLogs(t, wb.log, wa.log, 0, last)
	sameLogs(t, wc.log, wa.log, 0, last)
	if sa.Stats().Rewinds != 0 || sb.Stats().Rewinds == 0 || sc.Stats().Rewinds == 0 {
		t.Fatalf("rewinds: in order %d, reversed %d, random %d", sa.Stats().Rewinds, sb.Stats().Rewinds, sc.Stats().Rewinds)
	}
	if sb.Stats().Duplicates == 0 || sc.Stats().Duplicates == 0 {
		t.Fatal("the retransmissions were not exercised")
	}
}

// S-G3 with three peers (S-G7): the step's hp −= 10 goes through a derived
// action; across any number of replays it subtracts exactly 10 per frame —
// a replay drops the derived records and re-runs the step, never both —
// and the step's derived event is presented once per frame.
func TestServerDerivedRecomputed(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{FrameCapacity: 32}, ServerConfig{}, true)
	target := w.ents[8]
	const frames = 60
	for f := uint32(0); f < frames; f++ {
		if f >= 12 {
			// A late input every tick, for a frame 3..11 behind, from peers
			// 0, 1, 2 in turn: every tick rewinds and replays many frames.
			p := int(f % 3)
			mustSubmit(t, s, healIn(w, p, f-3-f%9, int32(f)))
		}
		mustSubmit(t, s, moveIn(w, int(f%3), f, 1, 0))
		mustTick(t, s, f)
		if hp := i32(w.comp(t, target, cHP)); hp != 100-10*int32(f+1) {
			t.Fatalf("after frame %d: hp = %d, want %d", f, hp, 100-10*int32(f+1))
		}
	}
	st := s.Stats()
	if st.Rewinds != frames-12 || st.FramesReplayed < 3*(frames-12) {
		t.Fatalf("replays not exercised: %+v", st)
	}
	if st.DerivedDropped == 0 {
		t.Fatal("no derived record was dropped from history")
	}
	for f := uint32(frames - 32); f < frames; f++ {
		v := mustFrame(t, w.log, f)
		n := 0
		for i := range v.Len() {
			r := v.Record(i)
			if r.Sender == SenderDerived && r.Type == w.ids.damage {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("frame %d holds %d derived damage records, want 1", f, n)
		}
	}
	if want := frames / 4; w.pings != want {
		t.Fatalf("the step's ping was presented %d times, want %d (once per 4th frame)", w.pings, want)
	}
}

// S-G4 with three peers (S-G7): EnqueueAction applies exactly once, on the
// next first-time frame; it is replayed from the log afterwards (never
// re-queued); calling it — or Submit, or Tick — from inside the step is an
// error.
func TestServerEnqueueAction(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	inner := testStep(w)
	var stepErrs []error
	var s *Server[*Store]
	step := func(f uint32, replay bool) {
		inner(f, replay)
		if f == 4 {
			stepErrs = append(stepErrs,
				s.EnqueueAction(w.ids.heal, w.ents[9], le32(1000)),
				s.Submit(f+1, 0, w.ids.heal, w.ents[1], le32(1)),
				s.Tick(f+1))
		}
	}
	var err error
	if s, err = NewServer(w.x, step, ServerConfig{}); err != nil {
		t.Fatal(err)
	}
	server := w.ents[9]
	for f := uint32(0); f < 3; f++ {
		mustTick(t, s, f)
	}
	if err := s.EnqueueAction(w.ids.heal, server, le32(5)); err != nil {
		t.Fatal(err)
	}
	if s.QueuedActions() != 1 {
		t.Fatal("not queued")
	}
	// A tick that simulates no new frame leaves it queued.
	mustTick(t, s, 2)
	if s.QueuedActions() != 1 || i32(w.comp(t, server, cHP)) != 100 {
		t.Fatal("applied without a first-time frame")
	}
	mustTick(t, s, 3)
	if hp := i32(w.comp(t, server, cHP)); hp != 105 || s.QueuedActions() != 0 {
		t.Fatalf("after frame 3: hp %d, queued %d", hp, s.QueuedActions())
	}
	if v := mustFrame(t, w.log, 3); !v.Contains(SenderLocal, w.ids.heal, server, le32(5)) {
		t.Fatal("frame 3 does not hold the local input")
	}
	// Replays across frame 3, from three peers' late inputs, reapply it
	// from the log: still exactly +5.
	for f := uint32(4); f < 12; f++ {
		mustSubmit(t, s, healIn(w, int(f%3), 2, int32(f)))
		mustTick(t, s, f)
		if hp := i32(w.comp(t, server, cHP)); hp != 105 {
			t.Fatalf("after frame %d: hp %d, want 105", f, hp)
		}
	}
	st := s.Stats()
	if st.LocalQueued != 1 || st.LocalApplied != 1 || st.Rewinds != 8 || st.HistoryReplayed == 0 {
		t.Fatalf("stats %+v", st)
	}
	// From inside the step (at frame 4, first time and every replay):
	// ErrInStep, and nothing was queued.
	if len(stepErrs) == 0 {
		t.Fatal("the step never reached frame 4")
	}
	for _, err := range stepErrs {
		if !errors.Is(err, ErrInStep) {
			t.Fatalf("call from inside the step: %v, want ErrInStep", err)
		}
	}
	if s.QueuedActions() != 0 || s.Pending() != 0 || st.LocalQueued != 1 {
		t.Fatal("a call from inside the step queued something")
	}
	if err := s.EnqueueAction(w.ids.heal, server, []byte{1}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("malformed EnqueueAction: %v", err)
	}
	if err := s.EnqueueAction(999, server, nil); !errors.Is(err, ErrUnknownAction) {
		t.Fatalf("unknown EnqueueAction: %v", err)
	}
}

// S-G4 with a server peer id: EnqueueAction records under ServerPeer,
// subject to the owner rule, and no remote peer may submit under that id.
func TestServerEnqueueAsServerPeer(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{}, ServerConfig{HasServerPeer: true, ServerPeer: 3, MaxQueuedActions: 2}, false)
	mustTick(t, s, 0)
	if err := s.EnqueueAction(w.ids.heal, w.ents[6], le32(5)); err != nil { // peer 3's entity
		t.Fatal(err)
	}
	if err := s.EnqueueAction(w.ids.heal, w.ents[0], le32(5)); err != nil { // peer 0's: refused on execution
		t.Fatal(err)
	}
	if err := s.EnqueueAction(w.ids.heal, w.ents[0], le32(5)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third EnqueueAction: %v, want ErrQueueFull", err)
	}
	mustTick(t, s, 1)
	if v := mustFrame(t, w.log, 1); v.Len() != 1 || v.Record(0).Sender != 3 {
		t.Fatalf("frame 1 holds %d records; want the one heal, under peer 3", v.Len())
	}
	if st := s.Stats(); st.LocalApplied != 1 || st.LocalRejected != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := submitIn(s, healIn(w, 3, 2, 1)); !errors.Is(err, ErrNotPeer) {
		t.Fatalf("Submit as the server's peer id: %v, want ErrNotPeer", err)
	}
}

// S-G5 with three peers (S-G7): inputs too old for the ring, too far ahead,
// or over the pending budget (total, per peer, bytes) are dropped and
// counted by reason, in total, per peer and through the hook; so are
// forged senders, malformed payloads and foreign entities.
func TestServerDropsByReason(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{FrameCapacity: 8}, ServerConfig{
		MaxFutureFrames: 4, MaxPendingTotal: 9, MaxPendingPerPeer: 4,
	}, false)
	var hooked [numDropReasons]int
	s.SetHooks(ServerHooks{OnDrop: func(d InputDrop) { hooked[d.Reason]++ }})
	for f := uint32(0); f < 20; f++ {
		mustTick(t, s, f)
	}
	// The ring holds frames 12..19.
	cases := []struct {
		in     Input
		want   error
		reason DropReason
	}{
		{healIn(w, 0, 11, 1), ErrTooOld, DropTooOld},
		{healIn(w, 1, 2, 1), ErrTooOld, DropTooOld},
		{healIn(w, 2, 24, 1), ErrTooFarAhead, DropTooFarAhead},
		{healIn(w, 0, 1<<31, 1), ErrTooFarAhead, DropTooFarAhead},
		{Input{Frame: 20, Sender: SenderDerived, Type: w.ids.heal, Entity: w.ents[0], Payload: le32(1)}, ErrNotPeer, DropNotPeer},
		{Input{Frame: 20, Sender: SenderLocal, Type: w.ids.heal, Entity: w.ents[0], Payload: le32(1)}, ErrNotPeer, DropNotPeer},
		{Input{Frame: 20, Sender: 0, Type: 999, Entity: w.ents[0]}, ErrUnknownAction, DropMalformed},
		{Input{Frame: 20, Sender: 0, Type: w.ids.heal, Entity: w.ents[0], Payload: []byte{1}}, ErrMalformed, DropMalformed},
		{Input{Frame: 20, Sender: 0, Type: w.ids.checked, Entity: w.ents[0], Payload: []byte{0xFF}}, ErrMalformed, DropMalformed},
		{Input{Frame: 20, Sender: 0, Type: w.ids.heal, Entity: w.ents[2], Payload: le32(1)}, ErrNotOwner, DropNotOwner},
		{Input{Frame: 20, Sender: 0, Type: w.ids.heal, Entity: NewEntity(40, 1), Payload: le32(1)}, ErrStaleEntity, DropNotOwner},
	}
	for i, c := range cases {
		if err := submitIn(s, c.in); !errors.Is(err, c.want) {
			t.Fatalf("case %d: %v, want %v", i, err, c.want)
		}
	}
	// Accepted at the edges: the oldest held frame and the farthest future.
	mustSubmit(t, s, healIn(w, 0, 12, 1))
	mustSubmit(t, s, healIn(w, 0, 23, 1))
	// Peer 0 has 2 queued; two more reach its cap of 4, the fifth is over.
	mustSubmit(t, s, healIn(w, 0, 20, 1))
	mustSubmit(t, s, healIn(w, 0, 21, 1))
	if err := submitIn(s, healIn(w, 0, 22, 1)); !errors.Is(err, ErrPendingFull) {
		t.Fatalf("over the per-peer cap: %v", err)
	}
	// Peers 1 and 2 fill the total of 9; the tenth input is over.
	for i := range 5 {
		mustSubmit(t, s, healIn(w, 1+i%2, 20, int32(i)))
	}
	if err := submitIn(s, healIn(w, 2, 21, 1)); !errors.Is(err, ErrPendingFull) {
		t.Fatalf("over the total: %v", err)
	}

	want := [numDropReasons]uint64{
		DropTooOld: 2, DropTooFarAhead: 2, DropNotPeer: 2, DropMalformed: 3, DropNotOwner: 2,
		DropPeerFull: 1, DropPendingFull: 1,
	}
	st := s.Stats()
	if st.dropped != want {
		t.Fatalf("dropped by reason %v, want %v", st.dropped, want)
	}
	for r := range numDropReasons {
		if uint64(hooked[r]) != want[r] {
			t.Fatalf("hook saw %d %v drops, want %d", hooked[r], r, want[r])
		}
	}
	if p0 := s.Peer(0); p0.Dropped(DropTooOld) != 1 || p0.Dropped(DropPeerFull) != 1 || p0.Dropped(DropNotOwner) != 2 || p0.Pending != 4 {
		t.Fatalf("peer 0 %+v", p0)
	}
	if st.DroppedTotal() != 13 || st.InputsAccepted != 9 {
		t.Fatalf("dropped %d accepted %d", st.DroppedTotal(), st.InputsAccepted)
	}

	// The byte budget.
	w2, s2 := newServerWorld(t, LogConfig{}, ServerConfig{MaxPendingBytes: minMaxPendingBytes}, false)
	big := make([]byte, 16)
	n := 0
	for ; ; n++ {
		big[0], big[1] = byte(n), byte(n>>8)
		err := s2.Submit(0, Sender(n%3), w2.ids.ping, NoEntity, big)
		if errors.Is(err, ErrPendingFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != minMaxPendingBytes/16 || s2.Stats().Dropped(DropPendingFull) != 1 {
		t.Fatalf("byte budget admitted %d inputs of 16 bytes", n)
	}
	// A tick consumes the queue and frees the budget.
	mustTick(t, s2, 0)
	if s2.Pending() != 0 || w2.pings != n {
		t.Fatalf("after the tick: pending %d, pings %d", s2.Pending(), w2.pings)
	}
	for p := range Sender(3) {
		if s2.Peer(p).Pending != 0 {
			t.Fatalf("peer %d still counts pending inputs", p)
		}
	}
	if err := s2.Submit(1, 0, w2.ids.ping, NoEntity, big); err != nil {
		t.Fatal(err)
	}
}

// MaxRewindFrames bounds lateness below the ring and defines final frames.
func TestServerMaxRewindFrames(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{FrameCapacity: 16}, ServerConfig{MaxRewindFrames: 4}, false)
	if _, ok := s.FinalThrough(); ok {
		t.Fatal("final frame before any tick")
	}
	for f := uint32(0); f < 10; f++ {
		mustTick(t, s, f)
	}
	if err := submitIn(s, healIn(w, 0, 5, 1)); !errors.Is(err, ErrTooOld) {
		t.Fatalf("5 frames late with MaxRewindFrames 4: %v", err)
	}
	mustSubmit(t, s, healIn(w, 0, 6, 1))
	mustTick(t, s, 10)
	if st := s.Stats(); st.MaxRewindFrames != 4 {
		t.Fatalf("rewind depth %d, want 4", st.MaxRewindFrames)
	}
	if f, ok := s.FinalThrough(); !ok || f != 6 {
		t.Fatalf("FinalThrough = %d %v, want 6", f, ok)
	}
	if _, err := NewServer(w.x, nil, ServerConfig{MaxRewindFrames: 17}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("MaxRewindFrames beyond the ring: %v", err)
	}
}

// Identical inputs for one frame from one sender are one input, whether
// they arrive in one tick or across ticks.
func TestServerIdenticalInputsCollapse(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{}, ServerConfig{}, false)
	in := healIn(w, 0, 0, 5)
	mustSubmit(t, s, in)
	mustSubmit(t, s, in)
	mustSubmit(t, s, healIn(w, 1, 0, 5)) // same payload, another peer: distinct
	mustTick(t, s, 0)
	if hp := i32(w.comp(t, w.ents[1], cHP)); hp != 105 {
		t.Fatalf("hp %d, want 105", hp)
	}
	if st := s.Stats(); st.Duplicates != 1 || st.InputsApplied != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// An aged-out replay target (the log lost a frame under the server) is
// reported and counted, not a crash.
func TestServerAgedOutReplayTarget(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{FrameCapacity: 8}, ServerConfig{}, true)
	var drops []InputDrop
	s.SetHooks(ServerHooks{OnDrop: func(d InputDrop) { drops = append(drops, d) }})
	for f := uint32(0); f < 10; f++ {
		mustTick(t, s, f)
	}
	mustSubmit(t, s, healIn(w, 2, 7, 1))
	mustSubmit(t, s, healIn(w, 1, 11, 1))
	w.log.Reset()
	mustTick(t, s, 11)
	if len(drops) != 1 || drops[0].Reason != DropAgedOut || drops[0].Frame != 7 || drops[0].Sender != 2 {
		t.Fatalf("drops %+v, want one aged-out input for frame 7", drops)
	}
	if st := s.Stats(); st.Dropped(DropAgedOut) != 1 || st.Rewinds != 0 || st.InputsApplied != 1 {
		t.Fatalf("stats %+v", st)
	}
	if f, ok := s.Frame(); !ok || f != 11 {
		t.Fatalf("Frame() = %d %v", f, ok)
	}
}

// Buffer depth per peer and the time-dilation feedback derived from it.
func TestServerBufferDepthAndDilation(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{FrameCapacity: 32}, ServerConfig{MaxFutureFrames: 32}, false)
	mustTick(t, s, 1)
	lead := [4]int{6, -1, 2, 25} // frames ahead of the server's newest
	for f := uint32(2); f < 60; f++ {
		for p, l := range lead {
			mustSubmit(t, s, healIn(w, p, uint32(int(f)-1+l), int32(f)))
			// A retransmission of an older frame is not a sample.
			if f > 3 {
				_ = submitIn(s, healIn(w, p, uint32(int(f)-3+l), int32(f-2)))
			}
		}
		mustTick(t, s, f)
	}
	want := [4]float64{-0.04, 0.03, 0, -0.05}
	for p := range 4 {
		ps := s.Peer(Sender(p))
		if ps.LastDepth != lead[p] || ps.AvgDepth != float64(lead[p]) || ps.Samples != 58 {
			t.Fatalf("peer %d: %+v, want depth %d over 58 samples", p, ps, lead[p])
		}
		if d := s.TimeDilation(Sender(p)); d < want[p]-1e-9 || d > want[p]+1e-9 || ps.TimeDilation != d {
			t.Fatalf("peer %d dilation %g, want %g", p, d, want[p])
		}
	}
	if s.TimeDilation(9) != 0 || s.TimeDilation(SenderLocal) != 0 {
		t.Fatal("dilation without samples")
	}
	// A wild frame number is one clipped sample; it does not hide the
	// samples that follow.
	if err := submitIn(s, healIn(w, 2, 1<<31, 1)); !errors.Is(err, ErrTooFarAhead) {
		t.Fatal(err)
	}
	if ps := s.Peer(2); ps.LastDepth != 33 || ps.NewestFrame != 60 || ps.Samples != 59 {
		t.Fatalf("after a wild frame: %+v", ps)
	}
	mustSubmit(t, s, healIn(w, 2, 61, 1))
	if ps := s.Peer(2); ps.LastDepth != 2 || ps.Samples != 60 {
		t.Fatalf("after the wild frame: %+v", ps)
	}
	// Late by more than the rewind window: a clipped sample.
	if err := submitIn(s, Input{Frame: 10, Sender: 5, Type: w.ids.ping}); !errors.Is(err, ErrTooOld) {
		t.Fatal(err)
	}
	if ps := s.Peer(5); ps.LastDepth != -33 || ps.Samples != 1 || s.TimeDilation(5) != 0.05 {
		t.Fatalf("peer 5 %+v", ps)
	}
}

// Tick refuses to go backwards, and calls from hooks inside Tick.
func TestServerTickErrors(t *testing.T) {
	w, s := newServerWorld(t, LogConfig{}, ServerConfig{FirstFrame: 5}, false)
	mustSubmit(t, s, healIn(w, 0, 5, 1))
	if err := submitIn(s, healIn(w, 0, 4, 1)); !errors.Is(err, ErrTooOld) {
		t.Fatalf("before FirstFrame: %v", err)
	}
	mustTick(t, s, 7) // simulates 5, 6, 7
	if oldest, _ := w.log.Oldest(); oldest != 5 {
		t.Fatalf("first frame %d, want 5", oldest)
	}
	if err := s.Tick(6); !errors.Is(err, ErrFrameOrder) {
		t.Fatalf("Tick backwards: %v", err)
	}
	mustTick(t, s, 7) // the newest again: allowed
	var inHook error
	s.SetHooks(ServerHooks{OnFrame: func(uint32, bool) { inHook = submitIn(s, healIn(w, 0, 9, 1)) }})
	mustTick(t, s, 8)
	if !errors.Is(inHook, ErrInStep) {
		t.Fatalf("Submit from a hook inside Tick: %v", inHook)
	}
	if st := s.Stats(); st.FramesSimulated != 4 || st.InputsApplied != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := w.log.BeginFrame(9); err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(9); !errors.Is(err, ErrFrameOpen) {
		t.Fatalf("Tick with a frame left open: %v", err)
	}
	if _, err := NewServer(w.x, nil, ServerConfig{}); !errors.Is(err, ErrFrameOpen) {
		t.Fatalf("NewServer on an open frame: %v", err)
	}
}

func TestServerConfigValidate(t *testing.T) {
	good := []ServerConfig{{}, {MaxFutureFrames: 1, MaxPendingTotal: 1, MaxPendingPerPeer: 1, MaxPendingBytes: minMaxPendingBytes, MaxQueuedActions: 1}, {HasServerPeer: true, ServerPeer: MaxPeerID}, {TargetBufferFrames: 0.5, DilationGain: 1, MaxTimeDilation: 1}}
	for i, c := range good {
		if err := c.Validate(); err != nil {
			t.Fatalf("good %d: %v", i, err)
		}
	}
	bad := []ServerConfig{
		{MaxFutureFrames: -1}, {MaxFutureFrames: maxMaxFutureFrames + 1}, {MaxPendingTotal: -3},
		{MaxPendingPerPeer: maxMaxPendingTotal + 1}, {MaxPendingBytes: 10}, {MaxQueuedActions: -1},
		{MaxRewindFrames: -1}, {ChecksumEvery: -1},
		{HasServerPeer: true, ServerPeer: SenderDerived}, {TargetBufferFrames: -1},
		{DilationGain: 2}, {MaxTimeDilation: nan()},
	}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("bad %d (%+v): %v", i, c, err)
		}
	}
	d := ServerConfig{}.WithDefaults()
	if d.MaxFutureFrames != defaultMaxFutureFrames || d.MaxPendingTotal != defaultMaxPendingTotal || d.MaxTimeDilation != defaultMaxTimeDilation {
		t.Fatalf("defaults %+v", d)
	}
	if DropTooOld.String() != "too-old" || numDropReasons.String() != "unknown" {
		t.Fatal("DropReason.String")
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

// Events on the server: a replay re-executes the frame's event records and
// re-runs the step without presenting their events again; an event that is
// new on the replay — a late event input, or one the step emits only now,
// because the late input changed the state — is presented there, once.
func TestServerEventsPresentedOnce(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	var s *Server[*Store]
	watched := w.ents[1] // peer 0's
	step := func(f uint32, replay bool) {
		if hp, _ := w.store.Component(watched, cHP); i32(hp) > 120 {
			_ = w.x.Execute(SenderLocal, w.ids.ping, watched, []byte{byte(f)})
		}
	}
	var err error
	if s, err = NewServer(w.x, step, ServerConfig{}); err != nil {
		t.Fatal(err)
	}
	for f := uint32(0); f < 6; f++ {
		mustSubmit(t, s, Input{Frame: f, Sender: 1, Type: w.ids.ping, Entity: w.ents[2], Payload: []byte{byte(f)}})
		mustTick(t, s, f)
	}
	if w.pings != 6 {
		t.Fatalf("pings %d, want 6", w.pings)
	}
	// A late heal for frame 3 lifts hp above 120 from frame 3 on: the step
	// now emits a ping on frames 3, 4, 5 (new: presented), the late ping
	// input for frame 2 is new too, peer 1's pings are not.
	mustSubmit(t, s, healIn(w, 0, 3, 30))
	mustSubmit(t, s, Input{Frame: 2, Sender: 2, Type: w.ids.ping, Entity: w.ents[4], Payload: []byte{9}})
	mustTick(t, s, 6) // replays 2..5, simulates 6 (step pings again)
	if w.pings != 6+3+1+1 {
		t.Fatalf("after the correction: pings %d, want 11", w.pings)
	}
	// Further replays across those frames present nothing again.
	for f := uint32(7); f < 12; f++ {
		mustSubmit(t, s, healIn(w, 2, 1+f%3, int32(f)))
		mustTick(t, s, f) // one new step ping per frame
	}
	if want := 11 + 5; w.pings != want {
		t.Fatalf("after more replays: pings %d, want %d", w.pings, want)
	}
	if st := w.x.Stats(); st.EventsSuppressed == 0 {
		t.Fatal("no event was suppressed on replay")
	}
}
