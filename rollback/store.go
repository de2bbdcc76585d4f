package rollback

import (
	"fmt"
	"math"
)

// Store limits.
const (
	// defaultStoreCapacity is the entity capacity of a StoreConfig whose
	// Capacity is zero.
	defaultStoreCapacity = 1024
	// maxStoreCapacity is the largest StoreConfig.Capacity.
	maxStoreCapacity = 1 << 24
	// maxComponentSize is the largest size of one component in a Store.
	maxComponentSize = 1 << 16
	// maxComponents is the largest number of component types in a Store.
	maxComponents = 1024
)

// ComponentSpec describes one fixed-size component type of a Store.
type ComponentSpec struct {
	// Name identifies the component in errors and lookups; unique, non-empty.
	Name string
	// Size is the encoded size in bytes, 1..65536. Every entity
	// holds exactly Size bytes of this component, zero on creation.
	Size int
}

// StoreConfig configures a Store. Components is required; the zero value of
// every other field means its default.
type StoreConfig struct {
	// Components lists the component types in registration order, which
	// is their ComponentID and their wire order. 1..1024 entries.
	Components []ComponentSpec

	// Capacity is the maximum number of live entities, 1..1<<24.
	// Default 1024. Every column is allocated for the full
	// capacity up front, so memory is Capacity × (sum of sizes + 10 bytes),
	// and component views never move.
	Capacity int
}

// Validate reports whether c is usable; a zero Capacity is valid (default).
// Errors wrap ErrInvalidConfig.
func (c StoreConfig) Validate() error {
	if len(c.Components) == 0 || len(c.Components) > maxComponents {
		return fmt.Errorf("%w: store needs 1..%d components, got %d", ErrInvalidConfig, maxComponents, len(c.Components))
	}
	if c.Capacity < 0 || c.Capacity > maxStoreCapacity {
		return fmt.Errorf("%w: store capacity %d outside 1..%d", ErrInvalidConfig, c.Capacity, maxStoreCapacity)
	}
	seen := make(map[string]bool, len(c.Components))
	for i, spec := range c.Components {
		if spec.Name == "" {
			return fmt.Errorf("%w: component %d has no name", ErrInvalidConfig, i)
		}
		if seen[spec.Name] {
			return fmt.Errorf("%w: component name %q registered twice", ErrInvalidConfig, spec.Name)
		}
		seen[spec.Name] = true
		if spec.Size < 1 || spec.Size > maxComponentSize {
			return fmt.Errorf("%w: component %q size %d outside 1..%d", ErrInvalidConfig, spec.Name, spec.Size, maxComponentSize)
		}
	}
	return nil
}

// Store is the reference State: a struct-of-arrays component store with
// fixed-size components. Each component type is one []byte column holding
// Capacity × Size bytes; an entity's component is the Size bytes at its slot
// index. Entities are generation-tagged handles (see Entity), so every access
// through a handle whose entity was destroyed — even after its slot was
// reused — fails with ErrStaleEntity.
//
// Freed slots are reused first-in first-out, after all never-used slots, so
// a slot stays empty as long as capacity allows: that maximizes the time
// before a stale handle could meet a recycled slot, and the generation check
// catches it when it does.
//
// Create, Destroy and SetOwner are not actions: they are not logged, not
// captured and not undone by a rewind (see the package doc, "Spawning").
//
// A Store is not safe for concurrent use. Component reads and writes cost a
// bounds check and a copy; nothing allocates after NewStore.
type Store struct {
	names []string
	sizes []int
	cols  [][]byte

	gen   []uint32
	alive []bool
	owner []Sender

	fresh    uint32   // next never-used slot index
	free     []uint32 // FIFO ring of recycled slot indices
	freeHead int
	freeLen  int
	live     int
	retired  int
}

// WithDefaults returns c with a zero Capacity replaced by its default
// (1024). Components has no default.
func (c StoreConfig) WithDefaults() StoreConfig {
	if c.Capacity == 0 {
		c.Capacity = defaultStoreCapacity
	}
	return c
}

// NewStore allocates a store for cfg. Errors wrap ErrInvalidConfig.
func NewStore(cfg StoreConfig) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.WithDefaults().Capacity
	s := &Store{
		names: make([]string, len(cfg.Components)),
		sizes: make([]int, len(cfg.Components)),
		cols:  make([][]byte, len(cfg.Components)),
		gen:   make([]uint32, n),
		alive: make([]bool, n),
		owner: make([]Sender, n),
		free:  make([]uint32, n),
	}
	for i, spec := range cfg.Components {
		s.names[i] = spec.Name
		s.sizes[i] = spec.Size
		s.cols[i] = make([]byte, n*spec.Size)
	}
	for i := range s.gen {
		s.gen[i] = 1
	}
	return s, nil
}

// NumComponents returns the number of component types. Part of State.
func (s *Store) NumComponents() int { return len(s.sizes) }

// ComponentSize returns the size in bytes of component c, or 0 if c is not
// a component of s.
func (s *Store) ComponentSize(c ComponentID) int {
	if int(c) >= len(s.sizes) {
		return 0
	}
	return s.sizes[c]
}

// ComponentName returns the name of component c, or "" if c is not a
// component of s.
func (s *Store) ComponentName(c ComponentID) string {
	if int(c) >= len(s.names) {
		return ""
	}
	return s.names[c]
}

// ComponentByName returns the id of the component called name.
func (s *Store) ComponentByName(name string) (ComponentID, bool) {
	for i, n := range s.names {
		if n == name {
			return ComponentID(i), true
		}
	}
	return 0, false
}

// Capacity returns the maximum number of live entities.
func (s *Store) Capacity() int { return len(s.gen) }

// Len returns the number of live entities.
func (s *Store) Len() int { return s.live }

// Create makes a new entity owned by owner (a peer id, or SenderLocal for
// an entity no peer owns), with every component zeroed, and returns its
// handle. It returns ErrStoreFull when no slot is free. Not rewindable.
func (s *Store) Create(owner Sender) (Entity, error) {
	var idx uint32
	switch {
	case int(s.fresh) < len(s.gen):
		idx = s.fresh
		s.fresh++
	case s.freeLen > 0:
		idx = s.free[s.freeHead]
		s.freeHead++
		if s.freeHead == len(s.free) {
			s.freeHead = 0
		}
		s.freeLen--
	default:
		return NoEntity, ErrStoreFull
	}
	s.alive[idx] = true
	s.owner[idx] = owner
	s.live++
	return NewEntity(idx, s.gen[idx]), nil
}

// Destroy ends e: its slot's generation advances, so e and every copy of it
// become stale, and the slot joins the back of the free queue with its
// components zeroed. A slot whose generation would wrap past 2^32−1 is
// retired instead of reused. Returns ErrStaleEntity if e is not live. Not
// rewindable.
func (s *Store) Destroy(e Entity) error {
	idx, ok := s.slot(e)
	if !ok {
		return ErrStaleEntity
	}
	s.alive[idx] = false
	s.owner[idx] = SenderLocal
	s.live--
	for c, col := range s.cols {
		size := s.sizes[c]
		clear(col[int(idx)*size : (int(idx)+1)*size])
	}
	if s.gen[idx] == math.MaxUint32 {
		s.retired++
		return nil
	}
	s.gen[idx]++
	tail := s.freeHead + s.freeLen
	if tail >= len(s.free) {
		tail -= len(s.free)
	}
	s.free[tail] = idx
	s.freeLen++
	return nil
}

// Alive reports whether e names a live entity.
func (s *Store) Alive(e Entity) bool {
	_, ok := s.slot(e)
	return ok
}

// EntityAt returns the handle of the live entity in slot index, if any.
func (s *Store) EntityAt(index uint32) (Entity, bool) {
	if int(index) >= len(s.gen) || !s.alive[index] {
		return NoEntity, false
	}
	return NewEntity(index, s.gen[index]), true
}

// Owner returns the owner of e. Part of State.
func (s *Store) Owner(e Entity) (Sender, error) {
	idx, ok := s.slot(e)
	if !ok {
		return 0, ErrStaleEntity
	}
	return s.owner[idx], nil
}

// SetOwner changes the owner of e. Ownership is not rewindable: a replay
// after the change authorizes every record, old or new, against the new
// owner. Returns ErrStaleEntity if e is not live.
func (s *Store) SetOwner(e Entity, owner Sender) error {
	idx, ok := s.slot(e)
	if !ok {
		return ErrStaleEntity
	}
	s.owner[idx] = owner
	return nil
}

// Component returns a view of component c of e: exactly ComponentSize(c)
// bytes of the column, which the caller may read and write in place (an
// action's Apply does exactly that). The view aliases the store and stays
// valid for the store's lifetime, but once e is destroyed it belongs to
// whatever entity next takes the slot: do not keep it past the action.
// Returns ErrStaleEntity or ErrUnknownComponent.
func (s *Store) Component(e Entity, c ComponentID) ([]byte, error) {
	idx, ok := s.slot(e)
	if !ok {
		return nil, ErrStaleEntity
	}
	if int(c) >= len(s.sizes) {
		return nil, ErrUnknownComponent
	}
	size := s.sizes[c]
	lo := int(idx) * size
	return s.cols[c][lo : lo+size : lo+size], nil
}

// AppendComponent appends the bytes of component c of e to dst. Part of
// State; cost is one copy of the component.
func (s *Store) AppendComponent(dst []byte, e Entity, c ComponentID) ([]byte, error) {
	v, err := s.Component(e, c)
	if err != nil {
		return dst, err
	}
	return append(dst, v...), nil
}

// RestoreComponent overwrites component c of e with src, which must be
// exactly ComponentSize(c) bytes (else ErrMalformed). src may come from the
// network; it is copied, never retained. Part of State.
func (s *Store) RestoreComponent(e Entity, c ComponentID, src []byte) error {
	v, err := s.Component(e, c)
	if err != nil {
		return err
	}
	if len(src) != len(v) {
		return ErrMalformed
	}
	copy(v, src)
	return nil
}

// slot validates e and returns its index.
func (s *Store) slot(e Entity) (uint32, bool) {
	idx := e.Index()
	if int(idx) >= len(s.gen) || !s.alive[idx] || s.gen[idx] != e.Generation() {
		return 0, false
	}
	return idx, true
}

// Clear destroys every entity at once, for installing a snapshot: each
// slot becomes empty with its components zeroed and its owner SenderLocal,
// the free queue empties and every slot counts as never used again (the
// next Create takes slot 0). Generations are kept, so a handle issued
// before stays stale unless a Restore puts the same generation back. Not
// rewindable; O(capacity × component bytes).
func (s *Store) Clear() {
	for _, col := range s.cols {
		clear(col)
	}
	clear(s.alive)
	for i := range s.owner {
		s.owner[i] = SenderLocal
	}
	s.fresh, s.freeHead, s.freeLen, s.live, s.retired = 0, 0, 0, 0, 0
}

// Restore makes e live, in its exact slot and with its exact generation,
// owned by owner and with every component zeroed (the caller then writes
// them): it is for snapshot install only, where the server's handles must
// be reproduced on the client (snapshot install calls it after Clear, slots in
// ascending order). Skipped never-used slots join the free queue. Errors:
// ErrStaleEntity for an index beyond the capacity or generation 0,
// ErrSlotTaken when the slot holds a live entity. Not rewindable. Cost:
// O(1) when slots are restored in ascending order after Clear, else up to
// the length of the free queue.
func (s *Store) Restore(e Entity, owner Sender) error {
	idx, gen := e.Index(), e.Generation()
	if int(idx) >= len(s.gen) || gen == 0 {
		return ErrStaleEntity
	}
	if s.alive[idx] {
		return ErrSlotTaken
	}
	if idx >= s.fresh {
		for i := s.fresh; i < idx; i++ {
			s.pushFree(i)
		}
		s.fresh = idx + 1
	} else if !s.takeFree(idx) {
		s.retired-- // a dead slot below fresh that is not queued was retired
	}
	s.gen[idx] = gen
	s.alive[idx] = true
	s.owner[idx] = owner
	s.live++
	return nil
}

func (s *Store) pushFree(idx uint32) {
	tail := s.freeHead + s.freeLen
	if tail >= len(s.free) {
		tail -= len(s.free)
	}
	s.free[tail] = idx
	s.freeLen++
}

// takeFree removes idx from the free queue, keeping the others in order.
func (s *Store) takeFree(idx uint32) bool {
	n := len(s.free)
	for k := 0; k < s.freeLen; k++ {
		if s.free[(s.freeHead+k)%n] != idx {
			continue
		}
		for j := k; j > 0; j-- {
			s.free[(s.freeHead+j)%n] = s.free[(s.freeHead+j-1)%n]
		}
		s.freeHead = (s.freeHead + 1) % n
		s.freeLen--
		return true
	}
	return false
}
