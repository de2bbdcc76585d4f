package rollback

import (
	"errors"
	"testing"
)

func noop(*Store, Action) error { return nil }

// Registration order is the type id, per registry: two registries in one
// process number their own types and never share ids or names.
func TestRegistryIDsPerRegistry(t *testing.T) {
	a, b := NewRegistry[*Store](), NewRegistry[*Store]()
	for i, name := range []string{"x", "y", "z"} {
		id, err := a.Register(ActionType[*Store]{Name: name, Apply: noop})
		if err != nil || id != ActionTypeID(i) {
			t.Fatalf("a.Register(%s) = %d, %v", name, id, err)
		}
	}
	for i, name := range []string{"z", "q"} {
		id, err := b.Register(ActionType[*Store]{Name: name, Apply: noop})
		if err != nil || id != ActionTypeID(i) {
			t.Fatalf("b.Register(%s) = %d, %v", name, id, err)
		}
	}
	if id, ok := a.Lookup("z"); !ok || id != 2 {
		t.Fatal("a: z")
	}
	if id, ok := b.Lookup("z"); !ok || id != 0 {
		t.Fatal("b: z")
	}
	if _, ok := b.Lookup("x"); ok {
		t.Fatal("registries share names")
	}
	if a.Len() != 3 || b.Len() != 2 {
		t.Fatal("Len")
	}
	if typ, ok := a.Type(1); !ok || typ.Name != "y" {
		t.Fatal("Type")
	}
	if _, ok := a.Type(3); ok {
		t.Fatal("Type(out of range)")
	}
	if a.Fingerprint() == b.Fingerprint() {
		t.Fatal("different registries, same fingerprint")
	}
}

func TestRegistryRefusesInvalidTypes(t *testing.T) {
	r := NewRegistry[*Store]()
	if _, err := r.Register(ActionType[*Store]{Name: "ok", Apply: noop}); err != nil {
		t.Fatal(err)
	}
	many := make([]ComponentID, MaxTargets+1)
	for i := range many {
		many[i] = ComponentID(i)
	}
	bad := []ActionType[*Store]{
		{Name: "", Apply: noop},
		{Name: "noapply"},
		{Name: "neg", MinSize: -1, MaxSize: 2, Apply: noop},
		{Name: "inverted", MinSize: 3, MaxSize: 2, Apply: noop},
		{Name: "huge", MaxSize: MaxPayloadSize + 1, Apply: noop},
		{Name: "dupwrite", Writes: []ComponentID{1, 2, 1}, Apply: noop},
		{Name: "toomany", Writes: many, Apply: noop},
		{Name: "ok", Apply: noop},
	}
	for _, typ := range bad {
		if _, err := r.Register(typ); !errors.Is(err, ErrInvalidActionType) {
			t.Fatalf("%q: %v", typ.Name, err)
		}
	}
	if r.Len() != 1 {
		t.Fatal("a refused type was registered")
	}
	if _, err := Typed(TypedAction[*Store, int]{Name: "t"}); !errors.Is(err, ErrInvalidActionType) {
		t.Fatalf("typed without functions: %v", err)
	}
	if _, err := RegisterTyped(r, TypedAction[*Store, int]{Name: "t"}); !errors.Is(err, ErrInvalidActionType) {
		t.Fatalf("RegisterTyped without functions: %v", err)
	}
}

// The registry keeps its own copy of Writes.
func TestRegistryCopiesWrites(t *testing.T) {
	r := NewRegistry[*Store]()
	w := []ComponentID{cPos}
	id, _ := r.Register(ActionType[*Store]{Name: "m", Writes: w, Apply: noop})
	w[0] = cHP
	if typ, _ := r.Type(id); typ.Writes[0] != cPos {
		t.Fatal("registry aliases the caller's Writes")
	}
}

// Validate is the gate for payloads from the network.
func TestRegistryValidate(t *testing.T) {
	r, ids := newTestRegistry(t, nil)
	cases := []struct {
		id  ActionTypeID
		p   []byte
		err error
	}{
		{ids.heal, le32(1), nil},
		{ids.heal, nil, ErrMalformed},
		{ids.heal, make([]byte, 5), ErrMalformed},
		{ids.move.ID(), make([]byte, 8), nil},
		{ids.move.ID(), make([]byte, 7), ErrMalformed},
		{ids.ping, nil, nil},
		{ids.ping, make([]byte, 17), ErrMalformed},
		{ids.checked, []byte{0xFF}, ErrMalformed},
		{ids.checked, []byte{0xFE, 0, 0}, nil},
		{200, nil, ErrUnknownAction},
	}
	for _, c := range cases {
		if err := r.Validate(c.id, c.p); !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Fatalf("Validate(%d, %x) = %v, want %v", c.id, c.p, err, c.err)
		}
	}
}

// Equal registrations give equal fingerprints; any change gives another.
func TestRegistryFingerprint(t *testing.T) {
	a, _ := newTestRegistry(t, nil)
	b, _ := newTestRegistry(t, nil)
	if a.Fingerprint() != b.Fingerprint() {
		t.Fatal("same registrations, different fingerprints")
	}
	c := NewRegistry[*Store]()
	d := NewRegistry[*Store]()
	_, _ = c.Register(ActionType[*Store]{Name: "a", MaxSize: 4, Apply: noop})
	_, _ = d.Register(ActionType[*Store]{Name: "a", MaxSize: 5, Apply: noop})
	if c.Fingerprint() == d.Fingerprint() {
		t.Fatal("payload bounds not in the fingerprint")
	}
}

// A typed action decodes once per function and refuses an encoding its
// Decode rejects before anything is captured.
func TestTypedAction(t *testing.T) {
	store, _ := NewStore(StoreConfig{Components: testComponents})
	e, _ := store.Create(0)
	log, _ := NewActionLog(LogConfig{})
	r := NewRegistry[*Store]()
	h, err := RegisterTyped(r, TypedAction[*Store, uint8]{
		Name: "set-alive", MinSize: 1, MaxSize: 1,
		Encode: func(dst []byte, v uint8) []byte { return append(dst, v) },
		Decode: func(src []byte) (uint8, error) {
			if src[0] > 1 {
				return 0, ErrMalformed
			}
			return src[0], nil
		},
		Touches: func(dst []Target, a Action, v uint8) ([]Target, error) {
			return append(dst, Target{a.Entity, cAlive}), nil
		},
		Apply: func(w *Store, a Action, v uint8) error {
			b, err := w.Component(a.Entity, cAlive)
			if err != nil {
				return err
			}
			b[0] = v
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := NewExecutor(r, log, store)
	_ = log.BeginFrame(0)
	if got := h.Encode(nil, 1); len(got) != 1 || got[0] != 1 {
		t.Fatal("Encode")
	}
	if err := h.Execute(x, 0, e, 1); err != nil {
		t.Fatal(err)
	}
	if err := h.Execute(x, 0, e, 7); !errors.Is(err, ErrMalformed) {
		t.Fatalf("undecodable value: %v", err)
	}
	if v, _ := store.Component(e, cAlive); v[0] != 1 {
		t.Fatal("typed apply")
	}
	if fv := mustFrame(t, log, 0); fv.Len() != 1 || fv.Record(0).PriorLen != 1+captureTrailerSize {
		t.Fatal("typed touches not captured")
	}
	// A handle only executes on executors of its own registry.
	other, _ := NewExecutor(NewRegistry[*Store](), log, store)
	if err := h.Execute(other, 0, e, 1); !errors.Is(err, ErrUnknownAction) {
		t.Fatalf("foreign executor: %v", err)
	}
	if err := (Handle[*Store, uint8]{}).Execute(x, 0, e, 1); !errors.Is(err, ErrUnknownAction) {
		t.Fatalf("zero handle: %v", err)
	}
}
