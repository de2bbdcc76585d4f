package rollback

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// histRec is an accepted action as the test remembers it, independently of
// the log (whose ring forgets): the oracle's input.
type histRec struct {
	sender Sender
	typ    ActionTypeID
	e      Entity
	p      []byte
}

// S-F3, property: random sequences of frames with random actions — honest,
// forged, malformed, failing, events, derived — rewound to random targets
// in and around the ring, nested rewinds during replays, and replays that
// add late inputs or drop records. After every rewind the whole store must
// equal the oracle: a fresh store to which the recorded actions of every
// frame before the rewind point are applied from scratch, in order, by
// calling the action types directly. After every replay the log must hold
// exactly the accepted history, and the store must equal the oracle of
// every frame.
func TestRewindMatchesOracle(t *testing.T) {
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	stats := oracleStats{}
	for it := range iterations {
		runOracleScenario(t, uint64(it), &stats)
		if t.Failed() {
			t.Fatalf("scenario seed %d failed", it)
		}
	}
	// The generator must actually reach the interesting cases.
	if stats.rewinds < iterations || stats.agedOut == 0 || stats.nested == 0 || stats.rejected == 0 || stats.failedApply == 0 || stats.lateInputs == 0 {
		t.Fatalf("generator coverage too thin: %+v", stats)
	}
	t.Logf("%d scenarios: %+v", iterations, stats)
}

type oracleStats struct {
	frames, actions, rejected, failedApply      int
	rewinds, agedOut, empty, nested, lateInputs int
	capturesRestored                            int
}

type oracleRun struct {
	t     *testing.T
	rng   *rand.Rand
	w     *world
	start uint32
	hist  [][]histRec // hist[i]: accepted actions of frame start+i
	stats *oracleStats
	rp    replayer

	oreg *Registry[*Store] // the oracle's own registry: a separate session
}

func runOracleScenario(t *testing.T, seed uint64, stats *oracleStats) {
	rng := rand.New(rand.NewPCG(seed, 0x7ee1c0de))
	caps := []int{2, 3, 4, 8, 16}
	r := &oracleRun{
		t:     t,
		rng:   rng,
		w:     newWorld(t, LogConfig{FrameCapacity: caps[rng.IntN(len(caps))]}, 16),
		stats: stats,
	}
	r.oreg, _ = newTestRegistry(t, nil)
	if rng.IntN(3) > 0 {
		r.start = rng.Uint32N(1000)
	}
	frames := 8 + rng.IntN(32)
	for range frames {
		f := r.start + uint32(len(r.hist))
		r.w.begin(t, f)
		var recs []histRec
		for range rng.IntN(6) {
			recs = r.execRandom(recs)
		}
		r.w.close(t)
		r.hist = append(r.hist, recs)
		stats.frames++
		if rng.IntN(3) == 0 {
			r.rewindAndReplay()
		}
	}
	r.rewindAndReplay()
}

// execRandom executes one random action in the open frame and appends it to
// recs if the executor accepted it.
func (r *oracleRun) execRandom(recs []histRec) []histRec {
	rng, w := r.rng, r.w
	sender := Sender(rng.IntN(4))
	switch rng.IntN(6) {
	case 0:
		sender = SenderLocal
	case 1:
		w.x.SetDerived(true)
		defer w.x.SetDerived(false)
	}
	e := w.ents[rng.IntN(len(w.ents))]
	if rng.IntN(20) == 0 {
		e = NoEntity
	}
	var id ActionTypeID
	var p []byte
	switch rng.IntN(8) {
	case 0, 1:
		id = w.ids.move.ID()
		p = w.ids.move.Encode(nil, Move{rng.Int32N(21) - 10, rng.Int32N(21) - 10})
	case 2:
		id, p = w.ids.heal, le32(rng.Int32N(50))
	case 3:
		id, p = w.ids.damage, damagePayload(w.ents[rng.IntN(len(w.ents))], rng.Int32N(30))
	case 4:
		id, p = w.ids.ping, make([]byte, rng.IntN(4))
	case 5:
		id, p = w.ids.setAll, make([]byte, 13)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
	case 6:
		id = w.ids.fail
	case 7:
		id, p = w.ids.checked, []byte{byte(rng.IntN(256))}
	}
	if rng.IntN(25) == 0 && len(p) > 0 {
		p = p[:len(p)-1] // malformed
	}
	err := w.x.Execute(sender, id, e, p)
	r.stats.actions++
	if err != nil {
		r.stats.rejected++
		if errors.Is(err, ErrApplyFailed) {
			r.stats.failedApply++
		}
		return recs
	}
	if w.x.Derived() {
		sender = SenderDerived
	}
	return append(recs, histRec{sender, id, e, p})
}

// oracle builds a fresh store and applies every accepted action of frames
// before `from`, in order, straight through the action types.
func (r *oracleRun) oracle(from uint32) *Store {
	s, err := NewStore(StoreConfig{Components: testComponents, Capacity: 16})
	if err != nil {
		r.t.Fatal(err)
	}
	populate(r.t, s)
	for i, recs := range r.hist {
		f := r.start + uint32(i)
		if f >= from {
			break
		}
		for _, h := range recs {
			typ, _ := r.oreg.Type(h.typ)
			if err := typ.Apply(s, Action{Frame: f, Sender: h.sender, Type: h.typ, Entity: h.e, Payload: h.p}); err != nil {
				r.t.Fatalf("oracle: frame %d: %v", f, err)
			}
		}
	}
	return s
}

func (r *oracleRun) mustMatchOracle(from uint32, what string) {
	r.t.Helper()
	want := r.oracle(from)
	if !bytes.Equal(snapshot(r.w.store), snapshot(want)) {
		r.t.Fatalf("%s (state before frame %d): store differs from oracle: %s", what, from, diffStores(r.w.store, want))
	}
}

// pickFrom picks a first-frame-to-undo in and slightly around the ring.
func (r *oracleRun) pickFrom(hi uint32) uint32 {
	oldest, _ := r.w.log.Oldest()
	lo := int64(oldest) - 2
	v := lo + r.rng.Int64N(int64(hi)+3-lo)
	return uint32(max(v, 0))
}

func (r *oracleRun) rewindAndReplay() {
	t, w := r.t, r.w
	newest, _ := w.log.Newest()
	oldest, _ := w.log.Oldest()
	from := r.pickFrom(newest)
	before := snapshot(w.store)
	plan, err := w.x.PlanRewind(from)
	switch {
	case from < oldest:
		if !errors.Is(err, ErrAgedOut) {
			t.Fatalf("PlanRewind(%d) with oldest %d: %v, want ErrAgedOut", from, oldest, err)
		}
		if !bytes.Equal(snapshot(w.store), before) {
			t.Fatal("aged-out plan changed the state")
		}
		r.stats.agedOut++
		return
	case err != nil:
		t.Fatalf("PlanRewind(%d): %v", from, err)
	case from > newest:
		if !plan.Empty() {
			t.Fatalf("PlanRewind(%d) past newest %d: %+v", from, newest, plan)
		}
		r.stats.empty++
		return
	}
	res, err := w.x.CommitRewind(plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 {
		t.Fatalf("rewind failed %d restores", res.Failed)
	}
	r.stats.rewinds++
	r.stats.capturesRestored += res.Captures
	r.mustMatchOracle(from, "after rewind")

	// Replay, possibly changing history and possibly rewinding again.
	for {
		f, ok := w.log.Replaying()
		if !ok {
			break
		}
		i := f - r.start
		if err := r.rp.read(w.log, f); err != nil {
			t.Fatal(err)
		}
		r.mustHoldHistory(f, r.hist[i])
		if err := w.log.ReopenFrame(f); err != nil {
			t.Fatal(err)
		}
		recs := r.hist[i][:0:0]
		for j, h := range r.hist[i] {
			if r.rng.IntN(8) == 0 {
				continue // this input is withdrawn on the replay
			}
			w.x.SetDerived(h.sender.IsDerived())
			err := w.x.Execute(h.sender, h.typ, h.e, h.p)
			w.x.SetDerived(false)
			if err != nil {
				t.Fatalf("replaying frame %d record %d: %v", f, j, err)
			}
			recs = append(recs, h)
		}
		if r.rng.IntN(3) == 0 {
			recs = r.execRandom(recs) // a late input lands in the past frame
			r.stats.lateInputs++
		}
		w.close(t)
		r.hist[i] = recs
		if r.rng.IntN(5) == 0 {
			next, ok := w.log.Replaying()
			if !ok {
				next = newest + 1
			}
			from2 := r.pickFrom(next - 1)
			plan, err := w.x.PlanRewind(from2)
			if err != nil {
				if errors.Is(err, ErrAgedOut) {
					r.stats.agedOut++
					continue
				}
				t.Fatal(err)
			}
			if _, err := w.x.CommitRewind(plan); err != nil {
				t.Fatal(err)
			}
			if !plan.Empty() {
				r.stats.nested++
				r.mustMatchOracle(from2, "after nested rewind")
			}
		}
	}
	r.mustMatchOracle(newest+1, "after replay")
	for f := from; f <= newest; f++ {
		if w.log.HasFrame(f) {
			if err := r.rp.read(w.log, f); err != nil {
				t.Fatal(err)
			}
			r.mustHoldHistory(f, r.hist[f-r.start])
		}
	}
}

// mustHoldHistory checks the records r.rp read from frame f against the
// accepted history.
func (r *oracleRun) mustHoldHistory(f uint32, want []histRec) {
	r.t.Helper()
	got := r.rp.recs
	if len(got) != len(want) {
		r.t.Fatalf("frame %d holds %d records, history has %d", f, len(got), len(want))
	}
	for i, g := range got {
		h := want[i]
		p := r.rp.buf[g.off : g.off+g.n]
		if g.sender != h.sender || g.typ != h.typ || g.e != h.e || !bytes.Equal(p, h.p) {
			r.t.Fatalf("frame %d record %d = {%v %d %v %x}, history {%v %d %v %x}", f, i, g.sender, g.typ, g.e, p, h.sender, h.typ, h.e, h.p)
		}
	}
}
