package link

// Test fixtures shared with the rollback engine's own tests: the test game (components, actions, world) and the helpers that build servers, clients and receivers on it. Copied from the engine's test files, since a test of package rollback cannot be imported.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/rollback"
)

// peerWorld is a store of n entities, entity i owned by peer i%peers,
// with the test registry, a log and an executor.
func peerWorld(b testing.TB, n, peers int, cfg rollback.LogConfig) (*rollback.Executor[*rollback.Store], *rollback.Store, []rollback.Entity, actionIDs) {
	b.Helper()
	store, err := rollback.NewStore(rollback.StoreConfig{Components: testComponents, Capacity: n})
	if err != nil {
		b.Fatal(err)
	}
	ents := make([]rollback.Entity, n)
	for i := range ents {
		if ents[i], err = store.Create(rollback.Sender(i % peers)); err != nil {
			b.Fatal(err)
		}
	}
	reg, ids := newTestRegistry(b, nil)
	l, err := rollback.NewActionLog(cfg)
	if err != nil {
		b.Fatal(err)
	}
	x, err := rollback.NewExecutor(reg, l, store)
	if err != nil {
		b.Fatal(err)
	}
	return x, store, ents, ids
}

// copyStore makes dst's state equal to src's: the stand-in for installing
// a snapshot (same entities, same capacity), through the Store's API.
func copyStore(dst, src *rollback.Store) {
	for i := range src.Capacity() {
		e, ok := src.EntityAt(uint32(i))
		if !ok {
			continue
		}
		for c := range src.NumComponents() {
			v, _ := src.Component(e, rollback.ComponentID(c))
			_ = dst.RestoreComponent(e, rollback.ComponentID(c), v)
		}
		if o, err := src.Owner(e); err == nil {
			_ = dst.SetOwner(e, o)
		}
	}
}

// newClientWorld builds a world (same entities as newServerWorld's) driven
// by a Client of peer.
func newClientWorld(tb testing.TB, cfg rollback.LogConfig, peer rollback.Sender, sample rollback.Sampler, withStep bool, ccfg rollback.ClientConfig) (*world, *rollback.Client[*rollback.Store]) {
	tb.Helper()
	w := newWorld(tb, cfg, 64)
	var step rollback.StepFunc
	if withStep {
		step = testStep(w)
	}
	c, err := rollback.NewClient(w.x, peer, sample, step, ccfg)
	if err != nil {
		tb.Fatal(err)
	}
	return w, c
}

func mustFrame(tb testing.TB, l *rollback.ActionLog, f uint32) rollback.FrameView {
	tb.Helper()
	v, err := l.Frame(f)
	if err != nil {
		tb.Fatalf("Frame(%d): %v", f, err)
	}
	return v
}

// Components of the test world, in wire order.
const (
	cPos   rollback.ComponentID = iota // x, y int32
	cHP                                // int32
	cAlive                             // 1 byte
)

var testComponents = []rollback.ComponentSpec{
	{Name: "pos", Size: 8},
	{Name: "hp", Size: 4},
	{Name: "alive", Size: 1},
}

// Move is the typed payload of the "move" action.
type Move struct{ DX, DY int32 }

func i32(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }

func put32(b []byte, v int32) { binary.LittleEndian.PutUint32(b, uint32(v)) }

func add32(b []byte, d int32) { put32(b, i32(b)+d) }

func damagePayload(target rollback.Entity, amount int32) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(target))
	return binary.LittleEndian.AppendUint32(b, uint32(amount))
}

var errTestApply = errors.New("test: apply refused")

// actionIDs are the ids newTestRegistry assigns.
type actionIDs struct {
	move    rollback.Handle[*rollback.Store, Move]
	heal    rollback.ActionTypeID // +hp on the subject
	damage  rollback.ActionTypeID // −hp on another entity named in the payload (Touches)
	ping    rollback.ActionTypeID // pure event: no writes
	setAll  rollback.ActionTypeID // overwrite pos, hp and alive of the subject
	fail    rollback.ActionTypeID // writes hp then fails
	checked rollback.ActionTypeID // Check refuses payload[0] == 0xFF
}

// newTestRegistry registers the test action types. pings counts event
// applications (a side effect outside the state, as events have).
func newTestRegistry(tb testing.TB, pings *int) (*rollback.Registry[*rollback.Store], actionIDs) {
	tb.Helper()
	r := rollback.NewRegistry[*rollback.Store]()
	var ids actionIDs
	var err error
	must := func(id rollback.ActionTypeID, err error) rollback.ActionTypeID {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return id
	}
	ids.move, err = rollback.RegisterTyped(r, rollback.TypedAction[*rollback.Store, Move]{
		Name: "move", MinSize: 8, MaxSize: 8,
		Writes: []rollback.ComponentID{cPos},
		Encode: func(dst []byte, m Move) []byte {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(m.DX))
			return binary.LittleEndian.AppendUint32(dst, uint32(m.DY))
		},
		Decode: func(src []byte) (Move, error) {
			if len(src) != 8 {
				return Move{}, rollback.ErrMalformed
			}
			return Move{i32(src), i32(src[4:])}, nil
		},
		Apply: func(w *rollback.Store, a rollback.Action, m Move) error {
			p, err := w.Component(a.Entity, cPos)
			if err != nil {
				return err
			}
			add32(p, m.DX)
			add32(p[4:], m.DY)
			return nil
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ids.heal = must(r.Register(rollback.ActionType[*rollback.Store]{
		Name: "heal", MinSize: 4, MaxSize: 4, Writes: []rollback.ComponentID{cHP},
		Apply: func(w *rollback.Store, a rollback.Action) error {
			hp, err := w.Component(a.Entity, cHP)
			if err != nil {
				return err
			}
			add32(hp, i32(a.Payload))
			return nil
		},
	}))
	ids.damage = must(r.Register(rollback.ActionType[*rollback.Store]{
		Name: "damage", MinSize: 12, MaxSize: 12,
		Touches: func(dst []rollback.Target, a rollback.Action) ([]rollback.Target, error) {
			return append(dst, rollback.Target{Entity: rollback.Entity(binary.LittleEndian.Uint64(a.Payload)), Component: cHP}), nil
		},
		Apply: func(w *rollback.Store, a rollback.Action) error {
			hp, err := w.Component(rollback.Entity(binary.LittleEndian.Uint64(a.Payload)), cHP)
			if err != nil {
				return err
			}
			add32(hp, -i32(a.Payload[8:]))
			return nil
		},
	}))
	ids.ping = must(r.Register(rollback.ActionType[*rollback.Store]{
		Name: "ping", MinSize: 0, MaxSize: 16,
		Apply: func(w *rollback.Store, a rollback.Action) error {
			if pings != nil {
				*pings++
			}
			return nil
		},
	}))
	ids.setAll = must(r.Register(rollback.ActionType[*rollback.Store]{
		Name: "setAll", MinSize: 13, MaxSize: 13, Writes: []rollback.ComponentID{cPos, cHP, cAlive},
		Apply: func(w *rollback.Store, a rollback.Action) error {
			for _, c := range []struct {
				id     rollback.ComponentID
				lo, hi int
			}{{cPos, 0, 8}, {cHP, 8, 12}, {cAlive, 12, 13}} {
				if err := w.RestoreComponent(a.Entity, c.id, a.Payload[c.lo:c.hi]); err != nil {
					return err
				}
			}
			return nil
		},
	}))
	ids.fail = must(r.Register(rollback.ActionType[*rollback.Store]{
		Name: "fail", MinSize: 0, MaxSize: 0, Writes: []rollback.ComponentID{cHP},
		Apply: func(w *rollback.Store, a rollback.Action) error {
			hp, err := w.Component(a.Entity, cHP)
			if err != nil {
				return err
			}
			add32(hp, 1000)
			return errTestApply
		},
	}))
	ids.checked = must(r.Register(rollback.ActionType[*rollback.Store]{
		Name: "checked", MinSize: 1, MaxSize: 4, Writes: []rollback.ComponentID{cAlive},
		Check: func(p []byte) error {
			if p[0] == 0xFF {
				return rollback.ErrMalformed
			}
			return nil
		},
		Apply: func(w *rollback.Store, a rollback.Action) error {
			v, err := w.Component(a.Entity, cAlive)
			if err != nil {
				return err
			}
			v[0] = a.Payload[0]
			return nil
		},
	}))
	return r, ids
}

// world is one session's worth of rollback machinery over a Store.
type world struct {
	store *rollback.Store
	log   *rollback.ActionLog
	x     *rollback.Executor[*rollback.Store]
	ids   actionIDs
	pings int
	ents  []rollback.Entity // ents[i] is owned by owners[i]
}

// entityOwners: two entities per peer 0–3, then two the server owns.
var entityOwners = []rollback.Sender{0, 0, 1, 1, 2, 2, 3, 3, rollback.SenderLocal, rollback.SenderLocal}

func newWorld(tb testing.TB, cfg rollback.LogConfig, capacity int) *world {
	tb.Helper()
	w := &world{}
	var err error
	if w.store, err = rollback.NewStore(rollback.StoreConfig{Components: testComponents, Capacity: capacity}); err != nil {
		tb.Fatal(err)
	}
	if w.log, err = rollback.NewActionLog(cfg); err != nil {
		tb.Fatal(err)
	}
	var reg *rollback.Registry[*rollback.Store]
	reg, w.ids = newTestRegistry(tb, &w.pings)
	if w.x, err = rollback.NewExecutor(reg, w.log, w.store); err != nil {
		tb.Fatal(err)
	}
	w.ents = populate(tb, w.store)
	return w
}

// populate creates the standard entities, deterministically, with
// recognizable starting values.
func populate(tb testing.TB, s *rollback.Store) []rollback.Entity {
	tb.Helper()
	ents := make([]rollback.Entity, len(entityOwners))
	for i, o := range entityOwners {
		e, err := s.Create(o)
		if err != nil {
			tb.Fatal(err)
		}
		ents[i] = e
		hp, _ := s.Component(e, cHP)
		put32(hp, 100)
		pos, _ := s.Component(e, cPos)
		put32(pos, int32(i))
		put32(pos[4:], int32(-i))
	}
	return ents
}

func (w *world) begin(tb testing.TB, f uint32) {
	tb.Helper()
	if err := w.log.BeginFrame(f); err != nil {
		tb.Fatalf("BeginFrame(%d): %v", f, err)
	}
}

func (w *world) close(tb testing.TB) {
	tb.Helper()
	if err := w.log.CloseFrame(); err != nil {
		tb.Fatalf("CloseFrame: %v", err)
	}
}

// snapshot encodes s's observable state: every slot's entity (generation
// included), owner and components, in slot order.
func snapshot(s *rollback.Store) []byte {
	var b []byte
	for i := range s.Capacity() {
		e, ok := s.EntityAt(uint32(i))
		if !ok {
			b = append(b, 0)
			continue
		}
		o, _ := s.Owner(e)
		b = binary.LittleEndian.AppendUint64(append(b, 1, byte(o)), uint64(e))
		for c := range s.NumComponents() {
			b, _ = s.AppendComponent(b, e, rollback.ComponentID(c))
		}
	}
	return b
}

// diffStores reports the first differing (entity, component), for messages.
func diffStores(a, b *rollback.Store) string {
	for i := range a.Capacity() {
		e, ok := a.EntityAt(uint32(i))
		if !ok {
			continue
		}
		for c := range a.NumComponents() {
			x, _ := a.Component(e, rollback.ComponentID(c))
			y, err := b.Component(e, rollback.ComponentID(c))
			if err != nil || !bytes.Equal(x, y) {
				return "entity " + e.String() + " component " + a.ComponentName(rollback.ComponentID(c)) +
					": got " + hexs(x) + " want " + hexs(y)
			}
		}
	}
	return "components equal; liveness/owners differ"
}

func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func newTestReceiver(tb testing.TB, w *world, t rollback.StreamTarget, cfg rollback.ReceiverConfig) *rollback.Receiver {
	tb.Helper()
	rv, err := rollback.NewReceiver(t, w.x.Registry(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return rv
}

// testStep is the deterministic simulation step the orchestration tests
// run on both sides. Every frame it
//
//   - deals 10 damage to the server's entity ents[8] through a derived
//     action (S-G3: exactly −10 per frame however often it is replayed);
//   - heals the peer entity ents[f%8] by pos.x mod 7 when pos.x > 0, so
//     what it derives depends on the inputs of the frame and earlier: a
//     late move changes the step's output on replay;
//   - emits a derived ping event on every 4th frame.
//
// Its events depend on the frame number only, so every side presents the
// same ones: the oracle comparisons can count presentations exactly (see
// TestServerEventsPresentedOnce for events that depend on the state).
//
// It allocates nothing: its payload buffers are made once.
func testStep(w *world) rollback.StepFunc {
	dmg := damagePayload(w.ents[8], 10)
	heal := make([]byte, 4)
	return func(f uint32, replay bool) {
		_ = w.x.Execute(rollback.SenderLocal, w.ids.damage, rollback.NoEntity, dmg)
		e := w.ents[f%8]
		if p, err := w.store.Component(e, cPos); err == nil && i32(p) > 0 {
			put32(heal, i32(p)%7)
			_ = w.x.Execute(rollback.SenderLocal, w.ids.heal, e, heal)
		}
		if f%4 == 0 {
			_ = w.x.Execute(rollback.SenderLocal, w.ids.ping, rollback.NoEntity, nil)
		}
	}
}

// newServerWorld builds a world (64-entity store, the standard entities)
// driven by a Server, with testStep if withStep.
func newServerWorld(tb testing.TB, cfg rollback.LogConfig, scfg rollback.ServerConfig, withStep bool) (*world, *rollback.Server[*rollback.Store]) {
	tb.Helper()
	w := newWorld(tb, cfg, 64)
	var step rollback.StepFunc
	if withStep {
		step = testStep(w)
	}
	s, err := rollback.NewServer(w.x, step, scfg)
	if err != nil {
		tb.Fatal(err)
	}
	return w, s
}

func mustTick(tb testing.TB, s *rollback.Server[*rollback.Store], f uint32) {
	tb.Helper()
	if err := s.Tick(f); err != nil {
		tb.Fatalf("Tick(%d): %v", f, err)
	}
}

// sameLogs fails unless a and b hold the same records for every frame in
// [from, to] that both hold.
func sameLogs(tb testing.TB, a, b *rollback.ActionLog, from, to uint32) {
	tb.Helper()
	for f := from; f <= to; f++ {
		va, ea := a.Frame(f)
		vb, eb := b.Frame(f)
		if ea != nil || eb != nil {
			continue
		}
		if va.Len() != vb.Len() {
			tb.Fatalf("frame %d: %d records vs %d", f, va.Len(), vb.Len())
		}
		for i := range va.Len() {
			ra, rb := va.Record(i), vb.Record(i)
			if ra.Sender != rb.Sender || ra.Type != rb.Type || ra.Entity != rb.Entity || !bytes.Equal(ra.Payload, rb.Payload) {
				tb.Fatalf("frame %d record %d: {%v %d %v %x} vs {%v %d %v %x}", f, i,
					ra.Sender, ra.Type, ra.Entity, ra.Payload, rb.Sender, rb.Type, rb.Entity, rb.Payload)
			}
		}
	}
}

func sameStores(tb testing.TB, got, want *rollback.Store, what string) {
	tb.Helper()
	if !bytes.Equal(snapshot(got), snapshot(want)) {
		tb.Fatalf("%s: stores differ: %s", what, diffStores(got, want))
	}
}

// gameComponents are position/velocity/health-like components for the
// snapshot tests and benchmarks.
var gameComponents = []rollback.ComponentSpec{
	{Name: "pos", Size: 12},
	{Name: "vel", Size: 12},
	{Name: "hp", Size: 4},
	{Name: "flags", Size: 1},
}

// gameStore builds a store of n live entities (capacity n+n/8), realistic
// content: positions spread over a map (random low bytes, small high
// bytes), velocities zero for two thirds of the entities (idle), health
// mostly full, a few flags; every eighth entity destroyed and the slot
// re-created, so generations vary and holes exist.
func gameStore(tb testing.TB, n int, seed uint64) *rollback.Store {
	tb.Helper()
	s, err := rollback.NewStore(rollback.StoreConfig{Components: gameComponents, Capacity: n + n/8 + 1})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	var ents []rollback.Entity
	for i := range n + n/8 {
		e, err := s.Create(rollback.Sender(i % 5))
		if err != nil {
			tb.Fatal(err)
		}
		ents = append(ents, e)
	}
	for i := 0; i < len(ents); i += 8 {
		if err := s.Destroy(ents[i]); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range s.Capacity() {
		e, ok := s.EntityAt(uint32(i))
		if !ok {
			continue
		}
		pos, _ := s.Component(e, 0)
		for k := 0; k < 12; k += 4 {
			binary.LittleEndian.PutUint32(pos[k:], uint32(rng.IntN(4096)))
		}
		if rng.IntN(3) == 0 {
			vel, _ := s.Component(e, 1)
			for k := 0; k < 12; k += 4 {
				binary.LittleEndian.PutUint32(vel[k:], uint32(rng.Int32N(64)-32))
			}
		}
		hp, _ := s.Component(e, 2)
		binary.LittleEndian.PutUint32(hp, 100)
		if rng.IntN(10) == 0 {
			binary.LittleEndian.PutUint32(hp, uint32(rng.IntN(100)))
		}
		fl, _ := s.Component(e, 3)
		fl[0] = byte(rng.IntN(4))
	}
	return s
}

func emptyLike(tb testing.TB, s *rollback.Store) *rollback.Store {
	tb.Helper()
	d, err := rollback.NewStore(rollback.StoreConfig{Components: gameComponents, Capacity: s.Capacity()})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// recTarget is a StreamTarget that records every confirmed frame and checks
// they come in order. own are the local peer's "unconfirmed inputs".
type recTarget struct {
	tb      testing.TB
	peer    rollback.Sender
	ready   bool
	frames  map[uint32][]rollback.Record
	last    uint32 // newest frame confirmed
	started bool
	full    uint32 // Confirm refuses frames above this with ErrTooFarAhead (0: never)
	own     []rollback.Input
	noCopy  bool // keep nothing (benchmarks)
	count   int
}

func newRecTarget(tb testing.TB, peer rollback.Sender) *recTarget {
	return &recTarget{tb: tb, peer: peer, ready: true, frames: map[uint32][]rollback.Record{}}
}

func (t *recTarget) Peer() rollback.Sender { return t.peer }

func (t *recTarget) Ready() bool { return t.ready }

func (t *recTarget) PendingInputs(dst []rollback.Input) []rollback.Input {
	return append(dst, t.own...)
}

func (t *recTarget) Confirm(f uint32, recs []rollback.Record) error {
	if t.full != 0 && f > t.full {
		return rollback.ErrTooFarAhead
	}
	if t.started && f != t.last+1 {
		t.tb.Fatalf("frame %d confirmed after %d", f, t.last)
	}
	t.started, t.last = true, f
	t.count++
	if t.noCopy {
		return nil
	}
	cp := make([]rollback.Record, len(recs))
	for i, r := range recs {
		r.Payload = bytes.Clone(r.Payload)
		cp[i] = r
	}
	t.frames[f] = cp
	return nil
}

// logRecords returns frame f's records as peer p is owed them: every
// record but p's own and those filter rejects.
func logRecords(tb testing.TB, l *rollback.ActionLog, f uint32, p rollback.Sender, filter rollback.ScopeFilter) []rollback.Record {
	tb.Helper()
	v := mustFrame(tb, l, f)
	var out []rollback.Record
	for i := range v.Len() {
		r := v.Record(i)
		if r.Sender == p || (filter != nil && !filter.Relevant(p, r)) {
			continue
		}
		r.Payload = bytes.Clone(r.Payload)
		r.PriorLen = 0
		out = append(out, r)
	}
	return out
}

func sameRecords(a, b []rollback.Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Sender != b[i].Sender || a[i].Type != b[i].Type || a[i].Entity != b[i].Entity || !bytes.Equal(a[i].Payload, b[i].Payload) {
			return false
		}
	}
	return true
}

// fillFrame begins frame f on w's log, executes the actions act gives, and
// closes it.
func fillFrame(tb testing.TB, w *world, f uint32, act func()) {
	tb.Helper()
	w.begin(tb, f)
	act()
	w.close(tb)
}
