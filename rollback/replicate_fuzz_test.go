package rollback

import (
	"testing"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/wire"
)

// FuzzUnpack feeds arbitrary bytes to Receiver.Unpack as action-stream
// slices from the server (the receiver expects frame 101 next). It must
// never panic; it accepts exactly the slices wire.ParseActionSlice accepts
// whole whose records the registry accepts and that carry no record of
// the receiver's own peer; an accepted slice applies precisely its frames
// from 101 on, in order, each with its records (a target checks the
// order), and a second delivery of it applies nothing more; a refused one
// applies nothing. Seeds: testdata/fuzz/FuzzUnpack (valid slices around
// frame 101, a gap, a duplicate, an own record, an unknown type, damage).
func FuzzUnpack(f *testing.F) {
	w := newWorld(f, Config{}, 16)
	reg := w.x.Registry()
	f.Fuzz(func(t *testing.T, b []byte) {
		tg := newRecTarget(t, 5)
		rv, err := NewReceiver(tg, reg, ReceiverConfig{MaxHeldBytes: MinMaxFrameBytes})
		if err != nil {
			t.Fatal(err)
		}
		_ = rv.Reset(100)
		uerr := rv.Unpack(b)

		s, n, perr := wire.ParseActionSlice(b)
		valid := perr == nil && n == len(b)
		var want map[uint32]int // frame → records, for an accepted slice
		if valid {
			want = map[uint32]int{}
			it := s.Iter()
			for fr, cnt, ok := it.NextFrame(); ok; fr, cnt, ok = it.NextFrame() {
				want[fr] = cnt
				for rec, ok := it.NextRecord(); ok; rec, ok = it.NextRecord() {
					if rec.Sender == 5 || reg.Validate(ActionTypeID(rec.Type), rec.Payload) != nil {
						valid = false
					}
				}
			}
		}
		if valid != (uerr == nil) {
			t.Fatalf("valid %v, Unpack: %v", valid, uerr)
		}
		if !valid {
			if tg.count != 0 || rv.Stats().HeldNow != 0 {
				t.Fatal("a refused slice applied or held something")
			}
			return
		}
		first, last := s.FirstFrame, s.LastFrame()
		wantFrames := 0
		if first <= 101 && last >= 101 {
			wantFrames = int(last - 100)
		}
		if tg.count != wantFrames {
			t.Fatalf("slice [%d, %d]: %d frames applied, want %d", first, last, tg.count, wantFrames)
		}
		for fr, recs := range tg.frames {
			if len(recs) != want[fr] {
				t.Fatalf("frame %d: %d records, want %d", fr, len(recs), want[fr])
			}
		}
		if err := rv.Unpack(b); err != nil || tg.count != wantFrames {
			t.Fatalf("second delivery: %v, %d frames", err, tg.count)
		}
	})
}

// FuzzClientLinkMessage feeds arbitrary bytes to a ready ClientLink (with
// snapshots on) as a message on its stream, after a valid snapshot
// announcement: whatever the kind — announcement, refusal report,
// checksum, snapshot, part, dilation — it must never panic, and the link
// goes on: a valid refusal report still takes its input out afterwards.
// Seeds: one valid message of each kind the server sends.
func FuzzClientLinkMessage(f *testing.F) {
	rec := wire.AppendActionRecord(nil, wire.ActionRecord{Sender: 1, Type: 1, Entity: 3, Payload: []byte{5, 0, 0, 0}})
	refusal := append([]byte{msgRefused, 3, 0, 0, 0, byte(DropTooOld)}, rec...)
	f.Add(refusal)
	f.Add([]byte{msgAnnounce, 4, 0, 0, 0, 200, 0, 0, 0, 16, 0, 0, 0, 12, 0, 0, 0})
	f.Add([]byte{msgChecksum, 2, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1})
	f.Add([]byte{msgDilation, 10, 0})
	f.Add([]byte{msgSnapshotPart, 4, 0, 0, 0, 0, 0, 2, 0, 1, 2, 3})
	f.Add([]byte{msgSnapshot, 2, 5, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var w *world
		w, c := newClientWorld(t, Config{FrameCapacity: 16}, 1, func(f uint32, in *InputBuffer) {
			_ = in.Add(w.ids.heal, w.ents[3], le32(int32(f)))
		}, false, ClientConfig{Checksum: func() uint64 { return 7 }})
		cl, err := NewClientLink(c, LinkConfig{})
		if err != nil {
			t.Fatal(err)
		}
		sink, err := NewSnapshotter(w.store, nil, SnapshotConfig{})
		if err != nil {
			t.Fatal(err)
		}
		cl.SetSnapshots(sink)
		if err := cl.InstallSnapshot(0); err != nil {
			t.Fatal(err)
		}
		if err := c.Tick(4); err != nil {
			t.Fatal(err)
		}
		cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: b})
		cl.OnMessage(transport.Message{Delivery: transport.Record, Payload: b})
		_ = cl.Flush(&fakeStream{room: 10})
		if c.Baseline() != 0 {
			return // a fuzzed snapshot installed: another state
		}
		in := c.PendingInputs(nil)
		for _, p := range in {
			if p.Frame == 3 {
				good := appendInputs(nil, 3, 1, []Input{p})
				good[0] = msgRefused
				report := append(good[:5:5], byte(DropTooOld))
				report = append(report, good[6:]...) // the record, after the count (1 byte)
				cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: report})
				for _, q := range c.PendingInputs(nil) {
					if q.Frame == 3 {
						t.Fatalf("a valid refusal after %x did not take frame 3's input out", b)
					}
				}
			}
		}
	})
}
