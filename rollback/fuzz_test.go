package rollback

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzExecute feeds arbitrary (sender, type id, entity, payload) tuples —
// everything an action-stream record could carry off the network — through
// Registry.Validate and Executor.Execute. It must never panic; Validate and
// Execute must agree on payload validity; a refused action must change
// neither the state nor the log; an accepted one must be undone exactly by
// rewinding its frame. Seeds: testdata/fuzz/FuzzExecute.
func FuzzExecute(f *testing.F) {
	f.Add(byte(0), uint16(0), uint64(NewEntity(0, 1)), []byte{1, 0, 0, 0, 2, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, sender byte, id uint16, entity uint64, payload []byte, derived bool) {
		w := newWorld(t, LogConfig{}, 16)
		w.begin(t, 1)
		w.close(t)
		w.begin(t, 2)
		before := snapshot(w.store)
		w.x.SetDerived(derived)
		verr := w.x.Registry().Validate(ActionTypeID(id), payload)
		err := w.x.Execute(Sender(sender), ActionTypeID(id), Entity(entity), payload)
		w.x.SetDerived(false)
		if verr != nil && !errors.Is(err, verr) {
			t.Fatalf("Validate = %v but Execute = %v", verr, err)
		}
		v := mustFrame(t, w.log, 2)
		if err != nil {
			if !bytes.Equal(snapshot(w.store), before) || v.Len() != 0 || v.ArenaBytes() != 0 {
				t.Fatalf("refused action (%v) changed the state or the log", err)
			}
		} else {
			if v.Len() != 1 {
				t.Fatalf("accepted action left %d records", v.Len())
			}
			r := v.Record(0)
			wantSender := Sender(sender)
			if derived {
				wantSender = SenderDerived
			}
			if r.Sender != wantSender || r.Type != ActionTypeID(id) || r.Entity != Entity(entity) || !bytes.Equal(r.Payload, payload) {
				t.Fatalf("record %+v does not match the action", r)
			}
		}
		w.close(t)
		res, err := w.x.Rewind(2)
		if err != nil || res.Failed != 0 {
			t.Fatalf("rewind: %+v %v", res, err)
		}
		if !bytes.Equal(snapshot(w.store), before) {
			t.Fatal("rewind did not restore the state")
		}
	})
}

// FuzzValidate: the registry's payload gate never panics, and a typed
// payload it accepts decodes to a value that re-encodes to the same bytes.
// Seeds: testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	f.Add(uint16(0), []byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0})
	r, ids := newTestRegistry(f, nil)
	f.Fuzz(func(t *testing.T, id uint16, payload []byte) {
		err := r.Validate(ActionTypeID(id), payload)
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownAction) {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil && ActionTypeID(id) == ids.move.ID() {
			m := Move{i32(payload), i32(payload[4:])}
			if got := ids.move.Encode(nil, m); !bytes.Equal(got, payload) {
				t.Fatalf("round trip %x -> %+v -> %x", payload, m, got)
			}
		}
	})
}

// FuzzStoreRestore: RestoreComponent is the store's decoder for component
// bytes, which snapshots and state bursts bring from the network. It never
// panics; when it accepts, reading the component back yields exactly the
// input; when it refuses, the store is unchanged. Seeds:
// testdata/fuzz/FuzzStoreRestore.
func FuzzStoreRestore(f *testing.F) {
	f.Add(uint16(cPos), uint64(NewEntity(0, 1)), make([]byte, 8))
	f.Fuzz(func(t *testing.T, c uint16, entity uint64, data []byte) {
		s, err := NewStore(StoreConfig{Components: testComponents, Capacity: 16})
		if err != nil {
			t.Fatal(err)
		}
		populate(t, s)
		before := snapshot(s)
		if err := s.RestoreComponent(Entity(entity), ComponentID(c), data); err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrStaleEntity) && !errors.Is(err, ErrUnknownComponent) {
				t.Fatalf("unexpected error %v", err)
			}
			if !bytes.Equal(snapshot(s), before) {
				t.Fatal("refused restore changed the store")
			}
			return
		}
		got, err := s.AppendComponent(nil, Entity(entity), ComponentID(c))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %x, %v; wrote %x", got, err, data)
		}
	})
}
