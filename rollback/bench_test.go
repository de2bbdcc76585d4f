package rollback

import (
	"testing"
)

// benchWorld is a world with 256 entities, 64 per peer 0–3.
func benchWorld(b *testing.B, cfg LogConfig) (*world, []Entity) {
	b.Helper()
	w := newWorld(b, cfg, 1024)
	ents := make([]Entity, 256)
	for i := range ents {
		e, err := w.store.Create(Sender(i % 4))
		if err != nil {
			b.Fatal(err)
		}
		ents[i] = e
	}
	return w, ents
}

// Actions executed per second with capture, 256 actions per frame (begin
// and close amortized in). Sub-benchmarks per action shape.
func BenchmarkExecute(b *testing.B) {
	heal := le32(1)
	set := make([]byte, 13)
	shapes := []struct {
		name string
		exec func(w *world, e Entity, s Sender) error
	}{
		{"typed-move-1capture", func(w *world, e Entity, s Sender) error {
			return w.ids.move.Execute(w.x, s, e, Move{1, 1})
		}},
		{"bytes-heal-1capture", func(w *world, e Entity, s Sender) error {
			return w.x.Execute(s, w.ids.heal, e, heal)
		}},
		{"bytes-setall-3captures", func(w *world, e Entity, s Sender) error {
			return w.x.Execute(s, w.ids.setAll, e, set)
		}},
		{"event-0captures", func(w *world, e Entity, s Sender) error {
			return w.x.Execute(s, w.ids.ping, e, heal)
		}},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			w, ents := benchWorld(b, LogConfig{})
			f := uint32(0)
			if err := w.log.BeginFrame(f); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				if i == len(ents) {
					i = 0
					_ = w.log.CloseFrame()
					f++
					if err := w.log.BeginFrame(f); err != nil {
						b.Fatal(err)
					}
				}
				if err := sh.exec(w, ents[i], Sender(i%4)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "actions/s")
		})
	}
}

// fill8x256 executes 8 frames of 256 captured actions each (moves and
// heals by the entities' owners).
func fill8x256(b *testing.B, w *world, ents []Entity, first uint32) {
	b.Helper()
	heal := le32(1)
	for f := first; f < first+8; f++ {
		if err := w.log.BeginFrame(f); err != nil {
			b.Fatal(err)
		}
		for i, e := range ents {
			var err error
			if i%2 == 0 {
				err = w.ids.move.Execute(w.x, Sender(i%4), e, Move{1, 2})
			} else {
				err = w.x.Execute(Sender(i%4), w.ids.heal, e, heal)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := w.log.CloseFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

// Plan + commit of a rewind across 8 frames × 256 captured actions (the
// replay that must follow is done with the timer stopped).
func BenchmarkRewind8x256(b *testing.B) {
	w, ents := benchWorld(b, LogConfig{})
	fill8x256(b, w, ents, 0)
	var rp replayer
	for b.Loop() {
		plan, err := w.x.PlanRewind(0)
		if err != nil {
			b.Fatal(err)
		}
		res, err := w.x.CommitRewind(plan)
		if err != nil || res.Captures != 8*256 || res.Failed != 0 {
			b.Fatalf("%+v %v", res, err)
		}
		b.StopTimer()
		if err := rp.replayAll(w.x); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N)*8*256/b.Elapsed().Seconds(), "records/s")
}

// A full rollback as the server does it: rewind 8 frames × 256 actions and
// replay them (read each frame's records, reopen, re-execute, close).
func BenchmarkRewindReplay8x256(b *testing.B) {
	w, ents := benchWorld(b, LogConfig{})
	fill8x256(b, w, ents, 0)
	var rp replayer
	// One untimed round grows the replayer's scratch to its working size.
	if _, err := w.x.Rewind(0); err != nil {
		b.Fatal(err)
	}
	if err := rp.replayAll(w.x); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.x.Rewind(0); err != nil {
			b.Fatal(err)
		}
		if err := rp.replayAll(w.x); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*8*256/b.Elapsed().Seconds(), "records/s")
}

// Begin and close one (empty) frame: the per-tick fixed cost of the log.
func BenchmarkBeginCloseFrame(b *testing.B) {
	l, err := NewActionLog(LogConfig{})
	if err != nil {
		b.Fatal(err)
	}
	f := uint32(0)
	for b.Loop() {
		if err := l.BeginFrame(f); err != nil {
			b.Fatal(err)
		}
		if err := l.CloseFrame(); err != nil {
			b.Fatal(err)
		}
		f++
	}
}

// The decoder gate for payloads from the network.
func BenchmarkValidate(b *testing.B) {
	r, ids := newTestRegistry(b, nil)
	p := ids.move.Encode(nil, Move{3, 4})
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if err := r.Validate(ids.move.ID(), p); err != nil {
			b.Fatal(err)
		}
	}
}
