package rollback

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// Replay mode: every action sees Action.Replay; a pure event is recorded
// without Apply unless the presentation function says this side never
// presented it, and then Apply runs with Replay false.
func TestReplayModeAndPresentation(t *testing.T) {
	store, err := NewStore(StoreConfig{Components: testComponents, Capacity: 4})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := store.Create(0)
	var notes, beeps []bool // the Replay flag each Apply saw
	reg := NewRegistry[*Store]()
	note, _ := reg.Register(ActionType[*Store]{Name: "note", MaxSize: 4, Writes: []ComponentID{cHP},
		Apply: func(w *Store, a Action) error { notes = append(notes, a.Replay); return nil }})
	beep, _ := reg.Register(ActionType[*Store]{Name: "beep", MaxSize: 4,
		Apply: func(w *Store, a Action) error { beeps = append(beeps, a.Replay); return nil }})
	l, _ := NewActionLog(LogConfig{})
	x, err := NewExecutor(reg, l, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.BeginFrame(1); err != nil {
		t.Fatal(err)
	}
	run := func(id ActionTypeID, p byte) {
		t.Helper()
		if err := x.Execute(0, id, e, []byte{p}); err != nil {
			t.Fatal(err)
		}
	}
	run(note, 0)
	run(beep, 0)
	x.SetReplay(true)
	if !x.Replay() {
		t.Fatal("Replay() false")
	}
	run(note, 1)
	run(beep, 1) // no presentation function: presented before
	var asked []Action
	x.setPresented(func(a Action) bool {
		asked = append(asked, a)
		return a.Payload[0] == 2
	})
	run(beep, 2) // presented before: suppressed
	run(beep, 3) // never presented: Apply, Replay false
	x.SetReplay(false)
	run(beep, 4) // not in replay mode: the function is not asked
	if err := l.CloseFrame(); err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, true}; !slicesEqual(notes, want) {
		t.Fatalf("note saw Replay %v, want %v", notes, want)
	}
	if want := []bool{false, false, false}; !slicesEqual(beeps, want) {
		t.Fatalf("beep applied %v, want 3 applications, none flagged", beeps)
	}
	if len(asked) != 2 || asked[0].Frame != 1 || asked[0].Type != beep || asked[0].Entity != e || !asked[0].Replay {
		t.Fatalf("presentation function asked %+v", asked)
	}
	if v := mustFrame(t, l, 1); v.Len() != 7 {
		t.Fatalf("frame holds %d records, want all 7", v.Len())
	}
	if st := x.Stats(); st.EventsSuppressed != 2 || st.Executed != 7 {
		t.Fatalf("stats %+v", st)
	}
}

func slicesEqual(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Store.Checksum covers live entities' handles, owners and bytes, and
// nothing else (capacity, free-list history).
func TestStoreChecksum(t *testing.T) {
	mk := func(capacity int) (*Store, []Entity) {
		s, err := NewStore(StoreConfig{Components: testComponents, Capacity: capacity})
		if err != nil {
			t.Fatal(err)
		}
		return s, populate(t, s)
	}
	a, ents := mk(16)
	b, _ := mk(64)
	if a.Checksum() != b.Checksum() || a.Checksum() == 0 {
		t.Fatal("equal stores of different capacity differ")
	}
	base := a.Checksum()
	hp, _ := a.Component(ents[3], cHP)
	hp[2] ^= 1
	if a.Checksum() == base {
		t.Fatal("a changed byte did not change the checksum")
	}
	hp[2] ^= 1
	if err := a.SetOwner(ents[3], 2); err != nil {
		t.Fatal(err)
	}
	if a.Checksum() == base {
		t.Fatal("an owner change did not change the checksum")
	}
	if err := a.SetOwner(ents[3], 1); err != nil {
		t.Fatal(err)
	}
	extra, _ := a.Create(0)
	if a.Checksum() == base {
		t.Fatal("a new entity did not change the checksum")
	}
	if err := a.Destroy(extra); err != nil {
		t.Fatal(err)
	}
	if a.Checksum() != base {
		t.Fatal("a destroyed entity still counts")
	}
	if n := testing.AllocsPerRun(10, func() { _ = a.Checksum() }); n != 0 {
		t.Fatalf("Checksum allocates %.0f times", n)
	}
}

// FuzzServerSubmit: whatever a peer's datagram claims — frame, sender,
// type, entity, payload — Submit and the following Ticks never panic, a
// refused input leaves the queue unchanged, and the server ends up in the
// state of a server that received only the accepted inputs.
func FuzzServerSubmit(f *testing.F) {
	f.Add(uint32(10), byte(0), uint16(1), uint64(NewEntity(1, 1)), []byte{5, 0, 0, 0})
	f.Add(uint32(3), byte(1), uint16(0), uint64(NewEntity(2, 1)), []byte{1, 0, 0, 0, 2, 0, 0, 0})
	f.Add(uint32(12), byte(2), uint16(2), uint64(NewEntity(4, 1)), damagePayload(NewEntity(5, 1), 3))
	f.Add(uint32(1<<31), byte(254), uint16(9), uint64(0), []byte{})
	f.Fuzz(func(t *testing.T, frame uint32, sender byte, typ uint16, entity uint64, payload []byte) {
		w, s := newServerWorld(t, LogConfig{FrameCapacity: 8}, ServerConfig{}, true)
		ref, rs := newServerWorld(t, LogConfig{FrameCapacity: 8}, ServerConfig{}, true)
		for f := uint32(0); f < 10; f++ {
			mustTick(t, s, f)
			mustTick(t, rs, f)
		}
		pending := s.Pending()
		err := s.Submit(frame, Sender(sender), ActionTypeID(typ), Entity(entity), payload)
		if err != nil && s.Pending() != pending {
			t.Fatalf("refused input (%v) was queued", err)
		}
		if err == nil {
			if frame >= 10 {
				mustSubmit(t, rs, Input{Frame: frame, Sender: Sender(sender), Type: ActionTypeID(typ), Entity: Entity(entity), Payload: payload})
			} else {
				// The reference gets it on time: replay the history.
				ref, rs = newServerWorld(t, LogConfig{FrameCapacity: 8}, ServerConfig{}, true)
				for f := uint32(0); f < 10; f++ {
					if f == frame {
						mustSubmit(t, rs, Input{Frame: frame, Sender: Sender(sender), Type: ActionTypeID(typ), Entity: Entity(entity), Payload: payload})
					}
					mustTick(t, rs, f)
				}
			}
		}
		for f := uint32(10); f < 50; f++ {
			mustTick(t, s, f)
			mustTick(t, rs, f)
		}
		sameStores(t, w.store, ref.store, "after fuzzed input")
	})
}

// FuzzClientConfirm: whatever records a confirmed frame claims to hold,
// Confirm and Tick never panic; refused frames change nothing.
func FuzzClientConfirm(f *testing.F) {
	rec := func(sender byte, typ uint16, e Entity, p []byte) []byte {
		b := []byte{sender}
		b = binary.LittleEndian.AppendUint16(b, typ)
		b = binary.LittleEndian.AppendUint64(b, uint64(e))
		b = append(b, byte(len(p)))
		return append(b, p...)
	}
	f.Add(uint32(2), rec(1, 1, NewEntity(3, 1), []byte{5, 0, 0, 0}))
	f.Add(uint32(3), append(rec(254, 2, NoEntity, damagePayload(NewEntity(8, 1), 10)), rec(0, 3, NewEntity(0, 1), []byte{1})...))
	f.Add(uint32(1), rec(7, 4, NewEntity(9, 9), make([]byte, 13)))
	f.Fuzz(func(t *testing.T, frame uint32, data []byte) {
		var recs []Record
		for len(data) >= 12 {
			r := Record{Sender: Sender(data[0]), Type: ActionTypeID(binary.LittleEndian.Uint16(data[1:])), Entity: Entity(binary.LittleEndian.Uint64(data[3:]))}
			n := min(int(data[11]), len(data)-12)
			r.Payload = data[12 : 12+n]
			data = data[12+n:]
			recs = append(recs, r)
		}
		var w *world
		w, c := newClientWorld(t, LogConfig{FrameCapacity: 8}, 0, moveSampler(&w, 0), true, ClientConfig{})
		if err := c.InstallSnapshot(0); err != nil {
			t.Fatal(err)
		}
		if err := c.Tick(4); err != nil {
			t.Fatal(err)
		}
		before := snapshot(w.store)
		err := c.Confirm(frame, recs)
		if err != nil && (c.Stats().ConfirmRefused != 1 || !bytes.Equal(snapshot(w.store), before)) {
			t.Fatalf("refused frame (%v) changed something", err)
		}
		if err := c.Tick(6); err != nil && !errors.Is(err, ErrPredictionLimit) {
			t.Fatal(err)
		}
	})
}
