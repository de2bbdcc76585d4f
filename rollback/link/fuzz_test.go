package link

import (
	"testing"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/wire"
)

// FuzzClientLinkMessage feeds arbitrary bytes to a ready ClientLink (with
// snapshots on) as a message on its stream, after a valid snapshot
// announcement: whatever the kind — announcement, refusal report,
// checksum, snapshot, part, clock — it must never panic, and the link
// goes on: a valid refusal report still takes its input out afterwards.
// Seeds: one valid message of each kind the server sends.
func FuzzClientLinkMessage(f *testing.F) {
	rec := wire.AppendActionRecord(nil, wire.ActionRecord{Sender: 1, Type: 1, Entity: 3, Payload: []byte{5, 0, 0, 0}})
	refusal := append([]byte{msgRefused, 3, 0, 0, 0, byte(rollback.DropTooOld)}, rec...)
	f.Add(refusal)
	f.Add([]byte{msgAnnounce, 4, 0, 0, 0, 200, 0, 0, 0, 16, 0, 0, 0, 12, 0, 0, 0})
	f.Add([]byte{msgChecksum, 2, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1})
	f.Add(clockMsg{frame: 9, period: uint32(DefaultTickPeriod), lead: 5, dilation: -30}.append(nil))
	f.Add([]byte{msgSnapshotPart, 4, 0, 0, 0, 0, 0, 2, 0, 1, 2, 3})
	f.Add([]byte{msgSnapshot, 2, 5, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var w *world
		w, c := newClientWorld(t, rollback.LogConfig{FrameCapacity: 16}, 1, func(f uint32, in *rollback.InputBuffer) {
			_ = in.Add(w.ids.heal, w.ents[3], le32(int32(f)))
		}, false, rollback.ClientConfig{Checksum: func() uint64 { return 7 }})
		cl, err := NewClientLink(c, LinkConfig{})
		if err != nil {
			t.Fatal(err)
		}
		sink, err := rollback.NewSnapshotter(w.store, nil, rollback.SnapshotConfig{})
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
				good := appendInputs(nil, 3, 1, []rollback.Input{p})
				good[0] = msgRefused
				report := append(good[:5:5], byte(rollback.DropTooOld))
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
