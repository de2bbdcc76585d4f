package rollback

import (
	"bytes"
	"testing"
)

// nameState is a minimal user-supplied State with one variable-length
// component per entity (a name), kept in a map: nothing like Store, to show
// the interface alone carries capture and rewind.
type nameState struct {
	names map[Entity][]byte
	owner map[Entity]Sender
}

func (s *nameState) NumComponents() int { return 1 }

func (s *nameState) Owner(e Entity) (Sender, error) {
	o, ok := s.owner[e]
	if !ok {
		return 0, ErrStaleEntity
	}
	return o, nil
}

func (s *nameState) AppendComponent(dst []byte, e Entity, c ComponentID) ([]byte, error) {
	if _, ok := s.owner[e]; !ok {
		return dst, ErrStaleEntity
	}
	if c != 0 {
		return dst, ErrUnknownComponent
	}
	return append(dst, s.names[e]...), nil
}

func (s *nameState) RestoreComponent(e Entity, c ComponentID, src []byte) error {
	if _, ok := s.owner[e]; !ok {
		return ErrStaleEntity
	}
	if c != 0 {
		return ErrUnknownComponent
	}
	s.names[e] = append(s.names[e][:0:0], src...)
	return nil
}

func TestCustomStateVariableSizeComponents(t *testing.T) {
	e := NewEntity(1, 1)
	st := &nameState{names: map[Entity][]byte{e: []byte("ann")}, owner: map[Entity]Sender{e: 0}}
	reg := NewRegistry[*nameState]()
	rename, err := reg.Register(ActionType[*nameState]{
		Name: "rename", MinSize: 0, MaxSize: 32, Writes: []ComponentID{0},
		Apply: func(w *nameState, a Action) error {
			return w.RestoreComponent(a.Entity, 0, a.Payload)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	log, _ := NewActionLog(LogConfig{})
	x, err := NewExecutor(reg, log, st)
	if err != nil {
		t.Fatal(err)
	}
	if x.State() != st {
		t.Fatal("State()")
	}
	for f, name := range []string{"bartholomew", "", "cy"} {
		_ = log.BeginFrame(uint32(f))
		if err := x.Execute(0, rename, e, []byte(name)); err != nil {
			t.Fatal(err)
		}
		_ = log.CloseFrame()
	}
	if _, err := x.Rewind(1); err != nil {
		t.Fatal(err)
	}
	if got := string(st.names[e]); got != "bartholomew" {
		t.Fatalf("after rewind to frame 0: %q", got)
	}
	if _, err := x.Rewind(0); err != nil {
		t.Fatal(err)
	}
	if got := st.names[e]; !bytes.Equal(got, []byte("ann")) {
		t.Fatalf("after rewind to the start: %q", got)
	}
	if x.Rejected(0, numRejectReasons) != 0 {
		t.Fatal("Rejected(out-of-range reason)")
	}
}
