package rollback

import (
	"testing"
)

// denseLog is a log of frames 1..frames, each with perFrame moves by
// distinct peers (0..perFrame−1) on their own entities, over a world of
// 64 entities (entity i owned by peer i).
func denseLog(tb testing.TB, frames uint32, perFrame int) (*Executor[*Store], []Entity, actionIDs) {
	tb.Helper()
	x, _, ents, ids := peerWorld(tb, 64, 64, LogConfig{})
	for f := uint32(1); f <= frames; f++ {
		if err := x.Log().BeginFrame(f); err != nil {
			tb.Fatal(err)
		}
		for p := range perFrame {
			if err := ids.move.Execute(x, Sender(p), ents[p], Move{int32(f), int32(p)}); err != nil {
				tb.Fatal(err)
			}
		}
		if err := x.Log().CloseFrame(); err != nil {
			tb.Fatal(err)
		}
	}
	return x, ents, ids
}

// PackForPeer of 8 frames × 32 records (moves: 14 bytes each on the wire):
// "slice" packs all 8 frames into one slice (budget 64 KiB); "packet"
// packs what fits one datagram's payload (1,150 bytes: 2 frames).
func BenchmarkPackForPeer(b *testing.B) {
	x, _, _ := denseLog(b, 8, 32)
	for _, c := range []struct {
		name   string
		budget int
		frames int
	}{{"8x32/slice", 64 << 10, 8}, {"8x32/packet", 1150, 2}} {
		b.Run(c.name, func(b *testing.B) {
			r, _ := NewReplicator(x.Log(), nil)
			_ = r.AddPeer(40, 0)
			buf := make([]byte, 0, 64<<10)
			pk, _, _ := r.PackForPeer(40, 8, buf, c.budget)
			b.SetBytes(int64(pk.Bytes))
			b.ReportAllocs()
			for b.Loop() {
				pk, _, err := r.PackForPeer(40, 8, buf, c.budget)
				if err != nil || pk.Frames != c.frames || pk.Records != 32*c.frames {
					b.Fatalf("%+v %v", pk, err)
				}
			}
			b.ReportMetric(float64(pk.Records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// Unpack of the 8 × 32 slice: "parse" validates it whole and hands the 8
// frames to a target that keeps nothing (the receiver's own cost);
// "stage" hands them to a real Client (Confirm validates and copies each
// frame); "apply" also runs Client.Tick, which executes the 256 records.
func BenchmarkUnpack(b *testing.B) {
	x, _, _ := denseLog(b, 8, 32)
	r, _ := NewReplicator(x.Log(), nil)
	_ = r.AddPeer(40, 0)
	_, slice, _ := r.PackForPeer(40, 8, nil, 64<<10)

	b.Run("8x32/parse", func(b *testing.B) {
		tg := &recTarget{tb: b, peer: 40, ready: true, noCopy: true}
		rv, _ := NewReceiver(tg, x.Registry(), ReceiverConfig{})
		b.SetBytes(int64(len(slice)))
		b.ReportAllocs()
		for b.Loop() {
			tg.started = false
			_ = rv.Reset(0)
			if err := rv.Unpack(slice); err != nil || rv.AppliedThrough() != 8 {
				b.Fatal(err)
			}
		}
	})
	for _, apply := range []bool{false, true} {
		name := "8x32/stage"
		if apply {
			name = "8x32/apply"
		}
		b.Run(name, func(b *testing.B) {
			cx, _, _, _ := peerWorld(b, 64, 64, LogConfig{})
			c, err := NewClient(cx, 40, nil, nil, ClientConfig{})
			if err != nil {
				b.Fatal(err)
			}
			rv, _ := NewReceiver(c, cx.Registry(), ReceiverConfig{})
			op := func() {
				if err := c.InstallSnapshot(0); err != nil {
					b.Fatal(err)
				}
				_ = rv.Reset(0)
				if err := rv.Unpack(slice); err != nil || rv.AppliedThrough() != 8 {
					b.Fatal(err)
				}
				if apply {
					if err := c.Tick(8); err != nil || c.Confirmed() != 8 {
						b.Fatal(err)
					}
				}
			}
			for range 3 {
				op()
			}
			b.SetBytes(int64(len(slice)))
			b.ReportAllocs()
			for b.Loop() {
				op()
			}
		})
	}
}

// The replication hot paths allocate nothing in steady state: packing for
// three peers with verdicts coming back, and unpacking into a real Client
// (a whole tick of both links over back-to-back channels is rollback/link's
// TestNoAllocsLinks).
func testNoAllocsPack(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	r, _ := NewReplicator(w.log, ScopeFunc(func(p Sender, rec Record) bool { return rec.Entity != w.ents[9] }))
	for p := range Sender(3) {
		_ = r.AddPeer(p, 0)
	}
	buf := make([]byte, 0, 2048)
	heal := le32(1)
	f := uint32(0)
	tags := make([]uint64, 3)
	op := func() {
		f++
		w.begin(t, f)
		for p := range 4 {
			_ = w.ids.move.Execute(w.x, Sender(p), w.ents[2*p], Move{1, 1})
		}
		_ = w.x.Execute(SenderLocal, w.ids.heal, w.ents[9], heal)
		w.close(t)
		for p := range Sender(3) {
			if f%3 != 0 { // verdicts for last tick's packs: some lost
				r.OnRecord(p, tags[p], f%5 != 0)
			}
			pk, out, err := r.PackForPeer(p, f, buf[:0], 1150)
			if err != nil {
				t.Fatal(err)
			}
			buf = out[:0]
			r.Sent(pk)
			tags[p] = pk.Tag
		}
	}
	for range 100 {
		op()
	}
	if n := testing.AllocsPerRun(200, op); n != 0 {
		t.Fatalf("pack allocates %.1f times", n)
	}
	if r.Peer(0).Confirmed == 0 || r.Peer(1).Abandoned == 0 {
		t.Fatal("the measured path did not run")
	}
}

func testNoAllocsUnpack(t *testing.T) {
	sw, srv := newServerWorld(t, LogConfig{FrameCapacity: 16}, ServerConfig{FirstFrame: 1, MaxRewindFrames: 4}, true)
	repl, _ := NewReplicator(sw.log, nil)
	_ = repl.AddPeer(0, 0)
	var cw *world
	move := make([]byte, 0, 8)
	sample := func(f uint32, in *InputBuffer) {
		move = cw.ids.move.Encode(move[:0], Move{int32(f % 3), 1})
		_ = in.Add(cw.ids.move.ID(), cw.ents[0], move)
	}
	cw = newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	c, _ := NewClient(cw.x, 0, sample, testStep(cw), ClientConfig{})
	rv, _ := NewReceiver(c, cw.x.Registry(), ReceiverConfig{})
	_ = c.InstallSnapshot(0)
	_ = rv.Reset(0)
	pending := make([]Input, 0, 64)
	other := make([]byte, 0, 8)
	buf := make([]byte, 0, 2048)
	f := uint32(0)
	op := func() {
		f++
		if err := c.Tick(f + 1); err != nil {
			t.Fatal(err)
		}
		pending = c.PendingInputs(pending[:0])
		for _, in := range pending {
			if in.Frame == f+1 {
				_ = submitIn(srv, in)
			}
		}
		other = sw.ids.move.Encode(other[:0], Move{1, int32(f % 4)})
		_ = srv.Submit(f, 1, sw.ids.move.ID(), sw.ents[2], other)
		if err := srv.Tick(f); err != nil {
			t.Fatal(err)
		}
		ft, ok := srv.FinalThrough()
		if !ok {
			return
		}
		pk, out, err := repl.PackForPeer(0, ft, buf[:0], 1150)
		if err != nil {
			t.Fatal(err)
		}
		buf = out[:0]
		if pk.Frames > 0 {
			if err := rv.Unpack(out); err != nil {
				t.Fatal(err)
			}
			repl.OnRecord(0, pk.Tag, true)
		}
	}
	for range 100 {
		op()
	}
	if n := testing.AllocsPerRun(200, op); n != 0 {
		t.Fatalf("unpack allocates %.1f times", n)
	}
	if st := rv.Stats(); st.Frames < 200 || st.OwnInputs < 200 || c.Stats().Rewinds == 0 {
		t.Fatalf("the measured path did not run: %+v %+v", st, c.Stats())
	}
}
