package rollback

import (
	"testing"

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
	w := newWorld(f, LogConfig{}, 16)
	reg := w.x.Registry()
	f.Fuzz(func(t *testing.T, b []byte) {
		tg := newRecTarget(t, 5)
		rv, err := NewReceiver(tg, reg, ReceiverConfig{MaxHeldBytes: minMaxFrameBytes})
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
