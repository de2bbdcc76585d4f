package rollback

import (
	"errors"
	"math"
	"testing"
)

func TestConfigDefaultsAndValidate(t *testing.T) {
	if err := (LogConfig{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	d := LogConfig{}.WithDefaults()
	if d.FrameCapacity != 64 || d.MaxRecordsPerFrame != defaultMaxRecordsPerFrame || d.MaxFrameBytes != defaultMaxFrameBytes {
		t.Fatalf("defaults = %+v", d)
	}
	bad := []LogConfig{
		{FrameCapacity: 1}, {FrameCapacity: -1}, {FrameCapacity: MaxFrameCapacity + 1},
		{MaxRecordsPerFrame: -1}, {MaxRecordsPerFrame: maxMaxRecordsPerFrame + 1},
		{MaxFrameBytes: 10}, {MaxFrameBytes: maxMaxFrameBytes + 1},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("%+v: %v", c, err)
		}
		if _, err := NewActionLog(c); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("NewActionLog(%+v): %v", c, err)
		}
	}
	l, err := NewActionLog(LogConfig{FrameCapacity: 2})
	if err != nil || l.FrameCapacity() != 2 || l.Config().MaxFrameBytes != defaultMaxFrameBytes {
		t.Fatalf("%v %+v", err, l.Config())
	}
}

func TestLogFrameOrder(t *testing.T) {
	l, _ := NewActionLog(LogConfig{FrameCapacity: 4})
	if _, ok := l.Newest(); ok {
		t.Fatal("empty log has a newest frame")
	}
	if _, ok := l.Oldest(); ok || l.HasFrame(0) || l.AgedOut(0) {
		t.Fatal("empty log holds frames")
	}
	if err := l.BeginFrame(100); err != nil {
		t.Fatal(err)
	}
	if f, ok := l.OpenFrame(); !ok || f != 100 {
		t.Fatalf("open frame %d %v", f, ok)
	}
	if err := l.BeginFrame(101); !errors.Is(err, ErrFrameOpen) {
		t.Fatalf("begin while open: %v", err)
	}
	if err := l.CloseFrame(); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.OpenFrame(); ok {
		t.Fatal("frame still open")
	}
	for _, f := range []uint32{100, 99, 102, 0} {
		if err := l.BeginFrame(f); !errors.Is(err, ErrFrameOrder) {
			t.Fatalf("BeginFrame(%d): %v", f, err)
		}
	}
	if err := l.ReopenFrame(100); !errors.Is(err, ErrNotReplaying) {
		t.Fatalf("reopen without rewind: %v", err)
	}
	for f := uint32(101); f <= 106; f++ {
		if err := l.BeginFrame(f); err != nil {
			t.Fatal(err)
		}
		if err := l.CloseFrame(); err != nil {
			t.Fatal(err)
		}
	}
	// Holds [103, 106].
	if o, _ := l.Oldest(); o != 103 {
		t.Fatalf("oldest = %d", o)
	}
	if n, _ := l.Newest(); n != 106 {
		t.Fatalf("newest = %d", n)
	}
	for f, want := range map[uint32][2]bool{102: {false, true}, 103: {true, false}, 106: {true, false}, 107: {false, false}} {
		if l.HasFrame(f) != want[0] || l.AgedOut(f) != want[1] {
			t.Fatalf("frame %d: has %v aged %v", f, l.HasFrame(f), l.AgedOut(f))
		}
	}
	if _, err := l.Frame(102); !errors.Is(err, ErrFrameNotHeld) {
		t.Fatalf("Frame(102): %v", err)
	}
	l.Reset()
	if _, ok := l.Newest(); ok {
		t.Fatal("Reset kept frames")
	}
	if err := l.BeginFrame(5); err != nil {
		t.Fatalf("begin after Reset: %v", err)
	}
}

// Frame numbers never wrap: the frame after 2^32−1 is refused.
func TestLogFrameWrap(t *testing.T) {
	l, _ := NewActionLog(LogConfig{})
	for _, f := range []uint32{math.MaxUint32 - 1, math.MaxUint32} {
		if err := l.BeginFrame(f); err != nil {
			t.Fatal(err)
		}
		if err := l.CloseFrame(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.BeginFrame(0); !errors.Is(err, ErrFrameWrap) {
		t.Fatalf("wrap: %v", err)
	}
	if !l.HasFrame(math.MaxUint32) || !l.HasFrame(math.MaxUint32-1) {
		t.Fatal("frames at the top of the range not held")
	}
}

// A replay of frames up to 2^32−1 ends cleanly (no cursor wrap).
func TestReplayAtTopOfRange(t *testing.T) {
	w := newWorld(t, LogConfig{}, 0)
	for _, f := range []uint32{math.MaxUint32 - 1, math.MaxUint32} {
		w.begin(t, f)
		if err := w.x.Execute(0, w.ids.heal, w.ents[0], le32(1)); err != nil {
			t.Fatal(err)
		}
		w.close(t)
	}
	if _, err := w.x.Rewind(math.MaxUint32 - 1); err != nil {
		t.Fatal(err)
	}
	var r replayer
	if err := r.replayAll(w.x); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.log.Replaying(); ok {
		t.Fatal("replay did not end")
	}
	if hp := i32(w.comp(t, w.ents[0], cHP)); hp != 102 {
		t.Fatalf("hp = %d", hp)
	}
}

// Views read records back, and become invalid when their slot is reused.
func TestFrameViewLifetime(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 2}, 0)
	w.begin(t, 1)
	if err := w.x.Execute(2, w.ids.heal, w.ents[4], le32(9)); err != nil {
		t.Fatal(err)
	}
	if err := w.x.Execute(SenderLocal, w.ids.ping, NoEntity, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	v := mustFrame(t, w.log, 1)
	if v.Closed() || v.Len() != 2 {
		t.Fatal("open frame view")
	}
	w.close(t)
	if !v.Closed() || v.Frame() != 1 {
		t.Fatal("closed frame view")
	}
	r := v.Record(0)
	if r.Sender != 2 || r.Type != w.ids.heal || r.Entity != w.ents[4] || i32(r.Payload) != 9 {
		t.Fatalf("record = %+v", r)
	}
	if !v.Contains(2, w.ids.heal, w.ents[4], le32(9)) || v.Contains(2, w.ids.heal, w.ents[4], le32(8)) ||
		v.Contains(3, w.ids.heal, w.ents[4], le32(9)) || !v.Contains(SenderLocal, w.ids.ping, NoEntity, []byte{1, 2}) {
		t.Fatal("Contains")
	}
	w.begin(t, 2)
	w.close(t)
	if !v.Valid() {
		t.Fatal("view invalid too early")
	}
	w.begin(t, 3) // reuses frame 1's slot
	if v.Valid() || v.Len() != 0 || v.ArenaBytes() != 0 || v.Contains(2, w.ids.heal, w.ents[4], le32(9)) {
		t.Fatal("view of a recycled slot still reads records")
	}
	if (FrameView{}).Valid() {
		t.Fatal("zero view valid")
	}
}

// Provenance constants and Entity packing.
func TestEntityAndSender(t *testing.T) {
	e := NewEntity(7, 3)
	if e.Index() != 7 || e.Generation() != 3 || e.String() != "7.3" || NoEntity.String() != "none" {
		t.Fatalf("%v", e)
	}
	if NewEntity(math.MaxUint32, math.MaxUint32) != Entity(math.MaxUint64) {
		t.Fatal("packing")
	}
	if MaxPeerID != 253 || SenderDerived != 254 || SenderLocal != 255 {
		t.Fatal("provenance values")
	}
	if Sender(4).String() != "peer 4" || SenderDerived.String() != "derived" || SenderLocal.String() != "local" {
		t.Fatal("Sender.String")
	}
}
