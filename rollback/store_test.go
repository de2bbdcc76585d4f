package rollback

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestStoreConfig(t *testing.T) {
	bad := []StoreConfig{
		{},
		{Components: []ComponentSpec{{Name: "", Size: 1}}},
		{Components: []ComponentSpec{{Name: "a", Size: 0}}},
		{Components: []ComponentSpec{{Name: "a", Size: maxComponentSize + 1}}},
		{Components: []ComponentSpec{{Name: "a", Size: 1}, {Name: "a", Size: 2}}},
		{Components: testComponents, Capacity: -1},
		{Components: testComponents, Capacity: maxStoreCapacity + 1},
	}
	for _, c := range bad {
		if _, err := NewStore(c); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	s, err := NewStore(StoreConfig{Components: testComponents})
	if err != nil {
		t.Fatal(err)
	}
	if s.Capacity() != defaultStoreCapacity || s.NumComponents() != 3 || s.ComponentSize(cPos) != 8 ||
		s.ComponentSize(9) != 0 || s.ComponentName(cHP) != "hp" || s.ComponentName(9) != "" {
		t.Fatal("store accessors")
	}
	if c, ok := s.ComponentByName("alive"); !ok || c != cAlive {
		t.Fatal("ComponentByName")
	}
	if _, ok := s.ComponentByName("nope"); ok {
		t.Fatal("ComponentByName(nope)")
	}
}

// Generation-tagged handles: a destroyed entity's handle is refused by every
// access, before and after its slot is reused.
func TestStoreGenerations(t *testing.T) {
	s, _ := NewStore(StoreConfig{Components: testComponents, Capacity: 2})
	a, _ := s.Create(1)
	b, _ := s.Create(SenderLocal)
	if _, err := s.Create(0); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("full: %v", err)
	}
	if a.Generation() != 1 || a == NoEntity || s.Len() != 2 {
		t.Fatal("fresh handles")
	}
	hp, _ := s.Component(a, cHP)
	put32(hp, 77)
	if err := s.Destroy(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Destroy(a); !errors.Is(err, ErrStaleEntity) {
		t.Fatalf("double destroy: %v", err)
	}
	check := func(e Entity) {
		t.Helper()
		if s.Alive(e) {
			t.Fatal("stale handle alive")
		}
		if _, err := s.Owner(e); !errors.Is(err, ErrStaleEntity) {
			t.Fatal("Owner(stale)")
		}
		if err := s.SetOwner(e, 0); !errors.Is(err, ErrStaleEntity) {
			t.Fatal("SetOwner(stale)")
		}
		if _, err := s.Component(e, cHP); !errors.Is(err, ErrStaleEntity) {
			t.Fatal("Component(stale)")
		}
		if _, err := s.AppendComponent(nil, e, cHP); !errors.Is(err, ErrStaleEntity) {
			t.Fatal("AppendComponent(stale)")
		}
		if err := s.RestoreComponent(e, cHP, make([]byte, 4)); !errors.Is(err, ErrStaleEntity) {
			t.Fatal("RestoreComponent(stale)")
		}
	}
	check(a)
	check(NoEntity)
	check(NewEntity(5000, 1))                     // out of range
	check(NewEntity(a.Index(), a.Generation()+1)) // a free slot's next generation: not issued yet
	a2, _ := s.Create(2)
	if a2.Index() != a.Index() || a2.Generation() != a.Generation()+1 {
		t.Fatalf("recycled handle %v from %v", a2, a)
	}
	check(a)
	if v, _ := s.Component(a2, cHP); i32(v) != 0 {
		t.Fatal("recycled entity not zeroed")
	}
	if o, _ := s.Owner(a2); o != 2 {
		t.Fatal("owner of recycled entity")
	}
	if e, ok := s.EntityAt(a.Index()); !ok || e != a2 {
		t.Fatal("EntityAt")
	}
	if _, ok := s.EntityAt(99); ok {
		t.Fatal("EntityAt(out of range)")
	}
	if err := s.SetOwner(b, 3); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Owner(b); o != 3 {
		t.Fatal("SetOwner")
	}
}

// Freed slots are reused first-in first-out, after never-used slots.
func TestStoreFIFOReuse(t *testing.T) {
	s, _ := NewStore(StoreConfig{Components: testComponents, Capacity: 4})
	var e [4]Entity
	for i := range 3 {
		e[i], _ = s.Create(0)
	}
	_ = s.Destroy(e[1])
	_ = s.Destroy(e[0])
	n1, _ := s.Create(0) // never-used slot 3 first
	n2, _ := s.Create(0) // then slot 1 (freed first)
	n3, _ := s.Create(0) // then slot 0
	if n1.Index() != 3 || n2.Index() != 1 || n3.Index() != 0 {
		t.Fatalf("reuse order %d %d %d", n1.Index(), n2.Index(), n3.Index())
	}
}

// A slot whose generation reached 2^32−1 is retired, not reused, so a
// generation never wraps back to an old handle's value.
func TestStoreRetiresExhaustedSlot(t *testing.T) {
	s, _ := NewStore(StoreConfig{Components: testComponents, Capacity: 1})
	e, _ := s.Create(0)
	s.gen[e.Index()] = math.MaxUint32
	e = NewEntity(e.Index(), math.MaxUint32)
	if err := s.Destroy(e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(0); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("retired slot reused: %v", err)
	}
}

func TestStoreComponentBytes(t *testing.T) {
	s, _ := NewStore(StoreConfig{Components: testComponents, Capacity: 3})
	a, _ := s.Create(0)
	b, _ := s.Create(0)
	if err := s.RestoreComponent(a, cPos, []byte{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, {1}, make([]byte, 9)} {
		if err := s.RestoreComponent(a, cPos, bad); !errors.Is(err, ErrMalformed) {
			t.Fatalf("restore %d bytes: %v", len(bad), err)
		}
	}
	if err := s.RestoreComponent(a, 3, []byte{1}); !errors.Is(err, ErrUnknownComponent) {
		t.Fatal("unknown component")
	}
	got, err := s.AppendComponent([]byte{0xAA}, a, cPos)
	if err != nil || !bytes.Equal(got, []byte{0xAA, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("append = %x %v", got, err)
	}
	// A view cannot be appended into its neighbour's bytes.
	v, _ := s.Component(a, cPos)
	_ = append(v, 0xEE)
	if w, _ := s.Component(b, cPos); w[0] != 0 {
		t.Fatal("append through a view clobbered the next entity")
	}
}
