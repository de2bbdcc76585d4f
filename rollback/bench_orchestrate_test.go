package rollback

import "testing"

// peerWorld is a store of n entities, entity i owned by peer i%peers,
// with the test registry, a log and an executor.
func peerWorld(b testing.TB, n, peers int, cfg LogConfig) (*Executor[*Store], *Store, []Entity, actionIDs) {
	b.Helper()
	store, err := NewStore(StoreConfig{Components: testComponents, Capacity: n})
	if err != nil {
		b.Fatal(err)
	}
	ents := make([]Entity, n)
	for i := range ents {
		if ents[i], err = store.Create(Sender(i % peers)); err != nil {
			b.Fatal(err)
		}
	}
	reg, ids := newTestRegistry(b, nil)
	l, err := NewActionLog(cfg)
	if err != nil {
		b.Fatal(err)
	}
	x, err := NewExecutor(reg, l, store)
	if err != nil {
		b.Fatal(err)
	}
	return x, store, ents, ids
}

// A server tick at steady state with 64 peers, one input each for the next
// frame (a typed move of the peer's entity, 1 capture): 64 Submits (screen,
// copy) plus one Tick (sort, execute, begin/close, compact). No step, no
// rewind: the orchestration's per-input and per-tick overhead.
func BenchmarkServerTick64Peers(b *testing.B) {
	x, _, ents, ids := peerWorld(b, 64, 64, LogConfig{})
	s, err := NewServer(x, nil, ServerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	move := ids.move.Encode(nil, Move{1, 1})
	f := uint32(0)
	tick := func() {
		for p := range 64 {
			if err := s.Submit(f, Sender(p), ids.move.ID(), ents[p], move); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Tick(f); err != nil {
			b.Fatal(err)
		}
		f++
	}
	for range 3 * x.Log().FrameCapacity() { // warm the ring
		tick()
	}
	before := s.Stats().InputsApplied
	for b.Loop() {
		tick()
	}
	if got := s.Stats().InputsApplied - before; got != uint64(64*b.N) {
		b.Fatalf("applied %d inputs, want %d", got, 64*b.N)
	}
	b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "inputs/s")
}

// A late input forces a rollback through Tick: 4 peers × 64 entities send
// 256 inputs per frame (moves and heals, 1 capture each); every tick one
// input arrives for frame current−7, so Tick rewinds 8 frames of ~256
// records, replays them (history read, reopen, re-execute, close) with the
// late input merged, then simulates the new frame of 256 inputs.
func BenchmarkServerRewindReplay8x256(b *testing.B) {
	x, _, ents, ids := peerWorld(b, 256, 4, LogConfig{})
	s, err := NewServer(x, nil, ServerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	move := ids.move.Encode(nil, Move{1, 2})
	heal := le32(1)
	late := make([]byte, 4)
	n := int32(0)
	f := uint32(0)
	tick := func(withLate bool) {
		for i, e := range ents {
			var err error
			if i%2 == 0 {
				err = s.Submit(f, Sender(i%4), ids.move.ID(), e, move)
			} else {
				err = s.Submit(f, Sender(i%4), ids.heal, e, heal)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if withLate {
			n++
			put32(late, n) // a new input each time, never a retransmission
			if err := s.Submit(f-8, 1, ids.heal, ents[1], late); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Tick(f); err != nil {
			b.Fatal(err)
		}
		f++
	}
	for range 8 {
		tick(false)
	}
	for range 3 * x.Log().FrameCapacity() {
		tick(true)
	}
	before := s.Stats()
	for b.Loop() {
		tick(true)
	}
	st := s.Stats()
	if st.Rewinds-before.Rewinds != uint64(b.N) || st.FramesReplayed-before.FramesReplayed != uint64(8*b.N) {
		b.Fatalf("%d rewinds, %d frames replayed for %d ticks", st.Rewinds-before.Rewinds, st.FramesReplayed-before.FramesReplayed, b.N)
	}
	b.ReportMetric(float64(st.HistoryReplayed-before.HistoryReplayed)/b.Elapsed().Seconds(), "replayed-records/s")
}

// A client tick at steady state: the server's records for the frame four
// back arrive with another peer's input it did not predict (remote
// prediction off), so the client rewinds four frames, applies the
// authoritative frame, replays three predicted frames (own input + the
// test step) and predicts the next.
func BenchmarkClientReconcile4(b *testing.B) {
	var w *world
	move := make([]byte, 0, 8)
	sample := func(f uint32, in *InputBuffer) {
		move = w.ids.move.Encode(move[:0], Move{int32(f % 5), 1})
		if err := in.Add(w.ids.move.ID(), w.ents[0], move); err != nil {
			b.Fatal(err)
		}
	}
	w, c := newClientWorld(b, LogConfig{}, 0, sample, true, ClientConfig{NoRemotePrediction: true})
	if err := c.InstallSnapshot(0); err != nil {
		b.Fatal(err)
	}
	recs := make([]Record, 0, 64)
	extra := make([]byte, 4)
	present := uint32(0)
	tick := func() {
		present++
		if present > 4 {
			f := present - 4
			recs = appendFrameRecords(b, w.log, f, recs[:0])
			put32(extra, int32(f))
			recs = append(recs, Record{Sender: 1, Type: w.ids.heal, Entity: w.ents[3], Payload: extra})
			if err := c.Confirm(f, recs); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Tick(present); err != nil {
			b.Fatal(err)
		}
	}
	for range 3 * w.log.FrameCapacity() {
		tick()
	}
	before := c.Stats().Rewinds
	for b.Loop() {
		tick()
	}
	if got := c.Stats().Rewinds - before; got != uint64(b.N) {
		b.Fatalf("%d rewinds for %d ticks", got, b.N)
	}
}

// A client tick at steady state with two other peers holding their inputs
// (a move each, every frame): the client predicts both by repeat-last, the
// server's records for the frame four back equal the prediction, so the
// tick reconciles by comparison alone (a hit, no rewind) and predicts the
// next frame — two remote inputs, its own, the test step.
func BenchmarkClientPredictRemote2(b *testing.B) {
	var w *world
	move := make([]byte, 0, 8)
	sample := func(f uint32, in *InputBuffer) {
		move = w.ids.move.Encode(move[:0], Move{int32(f % 5), 1})
		if err := in.Add(w.ids.move.ID(), w.ents[2], move); err != nil {
			b.Fatal(err)
		}
	}
	w, c := newClientWorld(b, LogConfig{}, 1, sample, true, ClientConfig{})
	if err := c.InstallSnapshot(0); err != nil {
		b.Fatal(err)
	}
	held0, held2 := moveIn(w, 0, 0, 1, 0), moveIn(w, 2, 0, 0, -1)
	recs := make([]Record, 0, 64)
	present := uint32(0)
	tick := func() {
		present++
		if present > 4 {
			f := present - 4
			recs = appendFrameRecords(b, w.log, f, recs[:0])
			if f == 1 { // the first frame: the peers' held inputs, where the server's sort puts them
				recs = append([]Record{{Sender: 0, Type: held0.Type, Entity: held0.Entity, Payload: held0.Payload}}, recs...)
				recs = append(recs[:2], append([]Record{{Sender: 2, Type: held2.Type, Entity: held2.Entity, Payload: held2.Payload}}, recs[2:]...)...)
			}
			if err := c.Confirm(f, recs); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Tick(present); err != nil {
			b.Fatal(err)
		}
	}
	for range 3 * w.log.FrameCapacity() {
		tick()
	}
	before := c.Stats()
	b.ReportAllocs()
	for b.Loop() {
		tick()
	}
	st := c.Stats()
	if st.Rewinds != before.Rewinds || st.PredictionHits-before.PredictionHits != uint64(b.N) || st.RemoteInputsPredicted-before.RemoteInputsPredicted != 2*uint64(b.N) {
		b.Fatalf("%d ticks: %d rewinds, %d hits, %d remote inputs predicted", b.N, st.Rewinds-before.Rewinds, st.PredictionHits-before.PredictionHits, st.RemoteInputsPredicted-before.RemoteInputsPredicted)
	}
}

// appendFrameRecords appends the records of frame f of log to dst.
func appendFrameRecords(tb testing.TB, log *ActionLog, f uint32, dst []Record) []Record {
	tb.Helper()
	v, err := log.Frame(f)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range v.Len() {
		dst = append(dst, v.Record(i))
	}
	return dst
}
