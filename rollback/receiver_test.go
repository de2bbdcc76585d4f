package rollback

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/wire"
)

// streamWorld is a server-side log of frames 1..n filled like a Server
// fills them — inputs sorted by sender, then the step's derived records —
// with a replicator over it.
func streamWorld(tb testing.TB, n uint32) (*world, *Replicator) {
	tb.Helper()
	w := newWorld(tb, LogConfig{FrameCapacity: 64}, 64)
	for f := uint32(1); f <= n; f++ {
		fillFrame(tb, w, f, func() {
			for p := 0; p < 4; p++ {
				if (int(f)+p)%3 != 0 {
					_ = w.ids.move.Execute(w.x, Sender(p), w.ents[2*p], Move{int32(f), int32(p)})
				}
				if (int(f)+p)%4 == 0 {
					_ = w.x.Execute(Sender(p), w.ids.heal, w.ents[2*p+1], le32(int32(f)))
				}
			}
			if f%5 == 0 {
				_ = w.x.Execute(SenderLocal, w.ids.heal, w.ents[9], le32(1))
			}
			w.x.SetDerived(true)
			_ = w.x.Execute(SenderLocal, w.ids.damage, NoEntity, damagePayload(w.ents[int(f)%8], 1))
			w.x.SetDerived(false)
		})
	}
	r, err := NewReplicator(w.log, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return w, r
}

// packRange packs exactly [first, through] for p (budget large enough).
func packRange(tb testing.TB, r *Replicator, p Sender, first, through uint32) []byte {
	tb.Helper()
	if r.Active(p) {
		if err := r.Resync(p, first-1); err != nil {
			tb.Fatal(err)
		}
	} else if err := r.AddPeer(p, first-1); err != nil {
		tb.Fatal(err)
	}
	pk, out, err := r.PackForPeer(p, through, nil, 1<<16)
	if err != nil || pk.First != first || pk.Through != through {
		tb.Fatalf("pack [%d, %d]: %+v %v", first, through, pk, err)
	}
	return out
}

func newTestReceiver(tb testing.TB, w *world, t StreamTarget, cfg ReceiverConfig) *Receiver {
	tb.Helper()
	rv, err := NewReceiver(t, w.x.Registry(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return rv
}

func mustUnpack(tb testing.TB, rv *Receiver, b []byte) {
	tb.Helper()
	if err := rv.Unpack(b); err != nil {
		tb.Fatal(err)
	}
}

// Frames are applied in order, each complete; a slice overlapping frames
// already applied applies only the new ones; a slice with nothing new is a
// duplicate.
func TestReceiverInOrderAndDuplicates(t *testing.T) {
	w, r := streamWorld(t, 20)
	tg := newRecTarget(t, 5)
	rv := newTestReceiver(t, w, tg, ReceiverConfig{})
	if err := rv.Reset(0); err != nil {
		t.Fatal(err)
	}
	mustUnpack(t, rv, packRange(t, r, 5, 1, 6))
	mustUnpack(t, rv, packRange(t, r, 5, 3, 10)) // overlaps 3..6
	mustUnpack(t, rv, packRange(t, r, 5, 2, 9))  // nothing new
	mustUnpack(t, rv, packRange(t, r, 5, 11, 20))
	if rv.AppliedThrough() != 20 || tg.count != 20 {
		t.Fatalf("applied through %d, %d confirms", rv.AppliedThrough(), tg.count)
	}
	for f := uint32(1); f <= 20; f++ {
		if !sameRecords(tg.frames[f], logRecords(t, w.log, f, 5, nil)) {
			t.Fatalf("frame %d differs from the log", f)
		}
	}
	if st := rv.Stats(); st.Duplicates != 1 || st.Frames != 20 || st.HeldNow != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A slice after a gap is held, and applied once the gap is filled — in
// frame order, whatever the arrival order.
func TestReceiverHoldsAcrossGap(t *testing.T) {
	w, r := streamWorld(t, 30)
	slices := [][]byte{
		packRange(t, r, 5, 1, 8), packRange(t, r, 5, 9, 15), packRange(t, r, 5, 16, 22), packRange(t, r, 5, 23, 30),
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20 {
		tg := newRecTarget(t, 5)
		rv := newTestReceiver(t, w, tg, ReceiverConfig{})
		_ = rv.Reset(0)
		for _, i := range rng.Perm(len(slices)) {
			mustUnpack(t, rv, slices[i])
			mustUnpack(t, rv, slices[i]) // a duplicate delivery changes nothing
		}
		if rv.AppliedThrough() != 30 || tg.count != 30 || rv.Stats().HeldNow != 0 || rv.NeedsResync() {
			t.Fatalf("applied through %d, %d confirms, %+v", rv.AppliedThrough(), tg.count, rv.Stats())
		}
	}
}

// S-H7 at the receiver: before Reset (the snapshot) and while the target
// is not ready, nothing is applied — slices are held, not dropped — and
// they apply as soon as the snapshot is in, from the frame after it.
func TestReceiverHoldsBeforeSnapshot(t *testing.T) {
	w, r := streamWorld(t, 12)
	tg := newRecTarget(t, 5)
	tg.ready = false
	rv := newTestReceiver(t, w, tg, ReceiverConfig{})
	mustUnpack(t, rv, packRange(t, r, 5, 1, 6))
	mustUnpack(t, rv, packRange(t, r, 5, 7, 12))
	if st := rv.Stats(); tg.count != 0 || st.HeldNow != 12 || st.Held != 12 {
		t.Fatalf("applied %d frames before the snapshot; %+v", tg.count, st)
	}
	_ = rv.Reset(3) // the snapshot is of frame 3, but the target is not ready yet
	if tg.count != 0 {
		t.Fatal("applied while the target is not ready")
	}
	tg.ready = true
	if err := rv.Reset(3); err != nil {
		t.Fatal(err)
	}
	if tg.count != 9 || rv.AppliedThrough() != 12 || tg.frames[3] != nil {
		t.Fatalf("after the snapshot: %d confirms, through %d", tg.count, rv.AppliedThrough())
	}
}

// The own inputs the stream leaves out are put back where the server's
// sort by sender placed them: each confirmed frame equals the server's log
// frame exactly.
func TestReceiverPutsOwnInputsBack(t *testing.T) {
	w, r := streamWorld(t, 16)
	for _, peer := range []Sender{0, 1, 3} {
		tg := newRecTarget(t, peer)
		for f := uint32(1); f <= 16; f++ {
			v := mustFrame(t, w.log, f)
			for i := range v.Len() {
				if rec := v.Record(i); rec.Sender == peer {
					tg.own = append(tg.own, Input{Frame: f, Sender: peer, Type: rec.Type, Entity: rec.Entity, Payload: bytes.Clone(rec.Payload)})
				}
			}
		}
		rv := newTestReceiver(t, w, tg, ReceiverConfig{})
		_ = rv.Reset(0)
		mustUnpack(t, rv, packRange(t, r, peer, 1, 16))
		for f := uint32(1); f <= 16; f++ {
			if !sameRecords(tg.frames[f], logRecords(t, w.log, f, 200, nil)) {
				t.Fatalf("peer %d frame %d: %+v\nwant %+v", peer, f, tg.frames[f], logRecords(t, w.log, f, 200, nil))
			}
		}
		if st := rv.Stats(); st.OwnInputs != uint64(len(tg.own)) {
			t.Fatalf("peer %d: %d own inputs put back, want %d", peer, st.OwnInputs, len(tg.own))
		}
	}
}

// A slice is refused whole — wire damage, trailing bytes, an action the
// registry refuses, a record carrying the receiver's own peer id — counted
// by reason, and nothing of it applies.
func TestReceiverRefusesMalformed(t *testing.T) {
	w, r := streamWorld(t, 4)
	good := packRange(t, r, 5, 1, 4)
	badType := func() []byte {
		wr := wire.NewActionSliceWriter(nil, 1)
		_ = wr.BeginFrame(1)
		_ = wr.AppendRecord(wire.ActionRecord{Sender: 1, Type: 999})
		b, _ := wr.Finish(1)
		return b
	}()
	ownRec := func() []byte {
		wr := wire.NewActionSliceWriter(nil, 1)
		_ = wr.BeginFrame(1)
		_ = wr.AppendRecord(wire.ActionRecord{Sender: 5, Type: uint16(w.ids.heal), Entity: uint64(w.ents[1]), Payload: le32(1)})
		b, _ := wr.Finish(1)
		return b
	}()
	cases := []struct {
		name   string
		b      []byte
		reason MalformedReason
	}{
		{"empty", nil, MalformedWire},
		{"truncated", good[:len(good)-1], MalformedWire},
		{"trailing", append(bytes.Clone(good), 0), MalformedWire},
		{"unknown type", badType, MalformedAction},
		{"own record", ownRec, MalformedOwnRecord},
	}
	for _, c := range cases {
		tg := newRecTarget(t, 5)
		rv := newTestReceiver(t, w, tg, ReceiverConfig{})
		_ = rv.Reset(0)
		if err := rv.Unpack(c.b); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: %v", c.name, err)
		}
		if st := rv.Stats(); st.Malformed(c.reason) != 1 || tg.count != 0 || st.HeldNow != 0 {
			t.Fatalf("%s: %+v, %d applied", c.name, st, tg.count)
		}
	}
}

// When the target cannot stage more (ErrTooFarAhead), the rest of the
// slice is held and Drain resumes from the next frame once it can.
func TestReceiverResumesWhenTargetHasRoom(t *testing.T) {
	w, r := streamWorld(t, 12)
	tg := newRecTarget(t, 5)
	tg.full = 5
	rv := newTestReceiver(t, w, tg, ReceiverConfig{})
	_ = rv.Reset(0)
	mustUnpack(t, rv, packRange(t, r, 5, 1, 12))
	if rv.AppliedThrough() != 5 || rv.Stats().HeldNow != 7 {
		t.Fatalf("through %d, %+v", rv.AppliedThrough(), rv.Stats())
	}
	tg.full = 9
	_ = rv.Drain()
	tg.full = 0
	_ = rv.Drain()
	if rv.AppliedThrough() != 12 || tg.count != 12 || rv.Stats().HeldNow != 0 {
		t.Fatalf("through %d, %d confirms", rv.AppliedThrough(), tg.count)
	}
}

// The hold window is bounded in bytes; overflowing it drops the frames
// farthest ahead, counts them, and flags NeedsResync (a frame the server
// counts as delivered may now be missing); what is kept is the nearest
// frames, which apply once the gap before them fills. Reset clears the
// flag.
func TestReceiverHoldWindowBounded(t *testing.T) {
	w, r := streamWorld(t, 40)
	tg := newRecTarget(t, 5)
	rv := newTestReceiver(t, w, tg, ReceiverConfig{MaxHeldBytes: minMaxFrameBytes})
	_ = rv.Reset(0)
	mustUnpack(t, rv, packRange(t, r, 5, 21, 40))
	st := rv.Stats()
	if st.Dropped == 0 || !rv.NeedsResync() || st.HeldBytes > minMaxFrameBytes || st.HeldNow == 0 {
		t.Fatalf("20 frames into %d bytes: %+v", minMaxFrameBytes, st)
	}
	kept := 20 + uint32(st.HeldNow)             // frames 21..kept are held
	mustUnpack(t, rv, packRange(t, r, 5, 5, 9)) // nearer: the farthest held frames make room
	st2 := rv.Stats()
	if st2.Dropped <= st.Dropped || st2.HeldBytes > minMaxFrameBytes {
		t.Fatalf("nearer frames did not displace farther ones: %+v", st2)
	}
	mustUnpack(t, rv, packRange(t, r, 5, 1, 4))
	if rv.AppliedThrough() != 9 || tg.count != 9 {
		t.Fatalf("through %d, %d confirms", rv.AppliedThrough(), tg.count)
	}
	mustUnpack(t, rv, packRange(t, r, 5, 10, 20))
	if through := rv.AppliedThrough(); through < 20 || through >= kept {
		t.Fatalf("through %d: the frames held after 20 should apply, and no more than were kept (%d)", through, kept)
	}
	_ = rv.Reset(40)
	if rv.NeedsResync() || rv.Next() != 41 || rv.Stats().HeldNow != 0 {
		t.Fatalf("Reset did not clear the flag: %+v", rv.Stats())
	}
	if _, err := NewReceiver(tg, w.x.Registry(), ReceiverConfig{MaxHeldBytes: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("config: %v", err)
	}
}

// A join's stream: while the snapshot takes its time, the server keeps
// sending slices that overlap (each tick's first slice repeats the frames
// not acknowledged yet). The receiver holds each frame once, so the window
// is bounded by the frames the join took, not by the slices: 600
// overlapping slices (10 frames each) before the snapshot are 609 frames
// held, every one applied in order at Reset.
func TestReceiverHoldsEachFrameOnce(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 1024}, 64)
	for f := uint32(1); f <= 620; f++ {
		fillFrame(t, w, f, func() {
			_ = w.ids.move.Execute(w.x, Sender(f%4), w.ents[2*(f%4)], Move{int32(f), 1})
		})
	}
	r, err := NewReplicator(w.log, nil)
	if err != nil {
		t.Fatal(err)
	}
	tg := newRecTarget(t, 5)
	tg.ready = false
	rv := newTestReceiver(t, w, tg, ReceiverConfig{})
	for k := uint32(1); k <= 600; k++ {
		mustUnpack(t, rv, packRange(t, r, 5, k, k+9))
	}
	st := rv.Stats()
	want := heldFrameCost*609 + (heldRecordCost+8)*609
	if st.HeldNow != 609 || st.Held != 609 || st.HeldBytes != want || st.Dropped != 0 || rv.NeedsResync() {
		t.Fatalf("held %+v, want 609 frames, %d bytes", st, want)
	}
	tg.ready = true
	if err := rv.Reset(0); err != nil {
		t.Fatal(err)
	}
	if rv.AppliedThrough() != 609 || tg.count != 609 || rv.Stats().HeldNow != 0 || rv.Stats().HeldBytes != 0 {
		t.Fatalf("through %d, %d confirms, %+v", rv.AppliedThrough(), tg.count, rv.Stats())
	}
	for f := uint32(1); f <= 609; f++ {
		if !sameRecords(tg.frames[f], logRecords(t, w.log, f, 5, nil)) {
			t.Fatalf("frame %d differs from the log", f)
		}
	}
}

// While a snapshot is being received the window grows to its size
// (ExpectSnapshot, called by the client link for every part), and falls back
// to MaxHeldBytes once the snapshot is installed and what was held is
// applied.
func TestReceiverReserveForSnapshot(t *testing.T) {
	w, r := streamWorld(t, 60)
	tg := newRecTarget(t, 5)
	tg.ready = false
	rv := newTestReceiver(t, w, tg, ReceiverConfig{MaxHeldBytes: minMaxFrameBytes})
	rv.ExpectSnapshot(64 << 10)
	for k := uint32(1); k <= 51; k += 10 {
		mustUnpack(t, rv, packRange(t, r, 5, k, k+9))
	}
	if st := rv.Stats(); st.Dropped != 0 || st.HeldNow != 60 || st.HeldBytes <= minMaxFrameBytes {
		t.Fatalf("with the reserve: %+v", st)
	}
	tg.ready = true
	if err := rv.Reset(10); err != nil {
		t.Fatal(err)
	}
	if rv.AppliedThrough() != 60 || rv.limit() != minMaxFrameBytes {
		t.Fatalf("through %d, limit %d after the install", rv.AppliedThrough(), rv.limit())
	}
}

// A state burst announced while the receiver is applying the stream
// (AwaitSnapshot): from then on every frame is held, not applied, and the frames
// after the burst's that were applied already are held again, complete —
// with the own inputs they had, not put back a second time — so that once
// the burst is installed (Reset) they apply again on top of it. If no
// burst comes (AbandonSnapshot), the stream goes on from where it stopped.
func TestReceiverExpectHoldsAndResumes(t *testing.T) {
	w, r := streamWorld(t, 30)
	tg := newRecTarget(t, 1)
	for f := uint32(1); f <= 30; f++ {
		v := mustFrame(t, w.log, f)
		for i := range v.Len() {
			if rec := v.Record(i); rec.Sender == 1 {
				tg.own = append(tg.own, Input{Frame: f, Sender: 1, Type: rec.Type, Entity: rec.Entity, Payload: bytes.Clone(rec.Payload)})
			}
		}
	}
	rv := newTestReceiver(t, w, tg, ReceiverConfig{})
	_ = rv.Reset(0)
	mustUnpack(t, rv, packRange(t, r, 1, 1, 10))
	have := func(f uint32) ([]Record, bool) {
		recs, ok := tg.frames[f]
		return recs, ok
	}
	rv.AwaitSnapshot(5, have) // a burst of frame 5 is coming
	mustUnpack(t, rv, packRange(t, r, 1, 11, 15))
	if st := rv.Stats(); tg.count != 10 || st.HeldNow != 10 {
		t.Fatalf("after the announcement: %d confirmed, %+v", tg.count, st)
	}
	tg.started = false // the burst of frame 5 is installed: the client starts over
	tg.frames = map[uint32][]Record{}
	if err := rv.Reset(5); err != nil {
		t.Fatal(err)
	}
	if rv.AppliedThrough() != 15 || rv.Stats().HeldNow != 0 {
		t.Fatalf("after the burst: through %d, %+v", rv.AppliedThrough(), rv.Stats())
	}
	for f := uint32(6); f <= 15; f++ {
		if !sameRecords(tg.frames[f], logRecords(t, w.log, f, 200, nil)) {
			t.Fatalf("frame %d after the burst: %+v\nwant %+v", f, tg.frames[f], logRecords(t, w.log, f, 200, nil))
		}
	}

	rv.AwaitSnapshot(12, have) // a burst that never comes
	mustUnpack(t, rv, packRange(t, r, 1, 16, 20))
	if tg.last != 15 {
		t.Fatalf("applied frame %d while a burst was announced", tg.last)
	}
	rv.AbandonSnapshot()
	if rv.AppliedThrough() != 20 || rv.Stats().HeldNow != 0 {
		t.Fatalf("after giving up: through %d, %+v", rv.AppliedThrough(), rv.Stats())
	}
}
