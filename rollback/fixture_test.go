package rollback

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// Components of the test world, in wire order.
const (
	cPos   ComponentID = iota // x, y int32
	cHP                       // int32
	cAlive                    // 1 byte
)

var testComponents = []ComponentSpec{
	{Name: "pos", Size: 8},
	{Name: "hp", Size: 4},
	{Name: "alive", Size: 1},
}

// Move is the typed payload of the "move" action.
type Move struct{ DX, DY int32 }

func i32(b []byte) int32      { return int32(binary.LittleEndian.Uint32(b)) }
func put32(b []byte, v int32) { binary.LittleEndian.PutUint32(b, uint32(v)) }
func add32(b []byte, d int32) { put32(b, i32(b)+d) }
func le32(v int32) []byte     { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
func damagePayload(target Entity, amount int32) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(target))
	return binary.LittleEndian.AppendUint32(b, uint32(amount))
}

var errTestApply = errors.New("test: apply refused")

// actionIDs are the ids newTestRegistry assigns.
type actionIDs struct {
	move    Handle[*Store, Move]
	heal    ActionTypeID // +hp on the subject
	damage  ActionTypeID // −hp on another entity named in the payload (Touches)
	ping    ActionTypeID // pure event: no writes
	setAll  ActionTypeID // overwrite pos, hp and alive of the subject
	fail    ActionTypeID // writes hp then fails
	checked ActionTypeID // Check refuses payload[0] == 0xFF
}

// newTestRegistry registers the test action types. pings counts event
// applications (a side effect outside the state, as events have).
func newTestRegistry(tb testing.TB, pings *int) (*Registry[*Store], actionIDs) {
	tb.Helper()
	r := NewRegistry[*Store]()
	var ids actionIDs
	var err error
	must := func(id ActionTypeID, err error) ActionTypeID {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return id
	}
	ids.move, err = RegisterTyped(r, TypedAction[*Store, Move]{
		Name: "move", MinSize: 8, MaxSize: 8,
		Writes: []ComponentID{cPos},
		Encode: func(dst []byte, m Move) []byte {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(m.DX))
			return binary.LittleEndian.AppendUint32(dst, uint32(m.DY))
		},
		Decode: func(src []byte) (Move, error) {
			if len(src) != 8 {
				return Move{}, ErrMalformed
			}
			return Move{i32(src), i32(src[4:])}, nil
		},
		Apply: func(w *Store, a Action, m Move) error {
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
	ids.heal = must(r.Register(ActionType[*Store]{
		Name: "heal", MinSize: 4, MaxSize: 4, Writes: []ComponentID{cHP},
		Apply: func(w *Store, a Action) error {
			hp, err := w.Component(a.Entity, cHP)
			if err != nil {
				return err
			}
			add32(hp, i32(a.Payload))
			return nil
		},
	}))
	ids.damage = must(r.Register(ActionType[*Store]{
		Name: "damage", MinSize: 12, MaxSize: 12,
		Touches: func(dst []Target, a Action) ([]Target, error) {
			return append(dst, Target{Entity(binary.LittleEndian.Uint64(a.Payload)), cHP}), nil
		},
		Apply: func(w *Store, a Action) error {
			hp, err := w.Component(Entity(binary.LittleEndian.Uint64(a.Payload)), cHP)
			if err != nil {
				return err
			}
			add32(hp, -i32(a.Payload[8:]))
			return nil
		},
	}))
	ids.ping = must(r.Register(ActionType[*Store]{
		Name: "ping", MinSize: 0, MaxSize: 16,
		Apply: func(w *Store, a Action) error {
			if pings != nil {
				*pings++
			}
			return nil
		},
	}))
	ids.setAll = must(r.Register(ActionType[*Store]{
		Name: "setAll", MinSize: 13, MaxSize: 13, Writes: []ComponentID{cPos, cHP, cAlive},
		Apply: func(w *Store, a Action) error {
			for _, c := range []struct {
				id     ComponentID
				lo, hi int
			}{{cPos, 0, 8}, {cHP, 8, 12}, {cAlive, 12, 13}} {
				if err := w.RestoreComponent(a.Entity, c.id, a.Payload[c.lo:c.hi]); err != nil {
					return err
				}
			}
			return nil
		},
	}))
	ids.fail = must(r.Register(ActionType[*Store]{
		Name: "fail", MinSize: 0, MaxSize: 0, Writes: []ComponentID{cHP},
		Apply: func(w *Store, a Action) error {
			hp, err := w.Component(a.Entity, cHP)
			if err != nil {
				return err
			}
			add32(hp, 1000)
			return errTestApply
		},
	}))
	ids.checked = must(r.Register(ActionType[*Store]{
		Name: "checked", MinSize: 1, MaxSize: 4, Writes: []ComponentID{cAlive},
		Check: func(p []byte) error {
			if p[0] == 0xFF {
				return ErrMalformed
			}
			return nil
		},
		Apply: func(w *Store, a Action) error {
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
	store *Store
	log   *ActionLog
	x     *Executor[*Store]
	ids   actionIDs
	pings int
	ents  []Entity // ents[i] is owned by owners[i]
}

// entityOwners: two entities per peer 0–3, then two the server owns.
var entityOwners = []Sender{0, 0, 1, 1, 2, 2, 3, 3, SenderLocal, SenderLocal}

func newWorld(tb testing.TB, cfg LogConfig, capacity int) *world {
	tb.Helper()
	w := &world{}
	var err error
	if w.store, err = NewStore(StoreConfig{Components: testComponents, Capacity: capacity}); err != nil {
		tb.Fatal(err)
	}
	if w.log, err = NewActionLog(cfg); err != nil {
		tb.Fatal(err)
	}
	var reg *Registry[*Store]
	reg, w.ids = newTestRegistry(tb, &w.pings)
	if w.x, err = NewExecutor(reg, w.log, w.store); err != nil {
		tb.Fatal(err)
	}
	w.ents = populate(tb, w.store)
	return w
}

// populate creates the standard entities, deterministically, with
// recognizable starting values.
func populate(tb testing.TB, s *Store) []Entity {
	tb.Helper()
	ents := make([]Entity, len(entityOwners))
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

func (w *world) comp(tb testing.TB, e Entity, c ComponentID) []byte {
	tb.Helper()
	v, err := w.store.Component(e, c)
	if err != nil {
		tb.Fatalf("Component(%v, %d): %v", e, c, err)
	}
	return append([]byte(nil), v...)
}

// snapshot copies every column of s, plus liveness, generations and owners.
func snapshot(s *Store) []byte {
	var b []byte
	for _, col := range s.cols {
		b = append(b, col...)
	}
	for i := range s.gen {
		b = binary.LittleEndian.AppendUint32(b, s.gen[i])
		if s.alive[i] {
			b = append(b, 1, byte(s.owner[i]))
		} else {
			b = append(b, 0, 0)
		}
	}
	return b
}

// diffStores reports the first differing (entity, component), for messages.
func diffStores(a, b *Store) string {
	for c := range a.cols {
		size := a.sizes[c]
		for i := 0; i < len(a.gen); i++ {
			x, y := a.cols[c][i*size:(i+1)*size], b.cols[c][i*size:(i+1)*size]
			if !bytes.Equal(x, y) {
				return "slot " + NewEntity(uint32(i), a.gen[i]).String() + " component " + a.names[c] +
					": got " + hexs(x) + " want " + hexs(y)
			}
		}
	}
	return "columns equal; liveness/owners differ"
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// replayer re-executes undone frames after a rewind, the way a server's
// replay does: read the frame's records, reopen it, execute them again.
// Its buffers are reused, so replaying allocates nothing in steady state.
// Derived records are re-executed in derived mode here, standing in for a
// deterministic simulation step that recomputes them.
type replayer struct {
	recs []replayRec
	buf  []byte
}

type replayRec struct {
	sender Sender
	typ    ActionTypeID
	e      Entity
	off, n int
}

// read copies frame f's records out of the log before it is reopened.
func (r *replayer) read(l *ActionLog, f uint32) error {
	v, err := l.Frame(f)
	if err != nil {
		return err
	}
	r.recs, r.buf = r.recs[:0], r.buf[:0]
	for i := range v.Len() {
		rec := v.Record(i)
		r.recs = append(r.recs, replayRec{rec.Sender, rec.Type, rec.Entity, len(r.buf), len(rec.Payload)})
		r.buf = append(r.buf, rec.Payload...)
	}
	return nil
}

// exec executes the records read last into the open frame.
func (r *replayer) exec(x *Executor[*Store]) error {
	for _, rec := range r.recs {
		x.SetDerived(rec.sender.IsDerived())
		err := x.Execute(rec.sender, rec.typ, rec.e, r.buf[rec.off:rec.off+rec.n])
		x.SetDerived(false)
		if err != nil {
			return err
		}
	}
	return nil
}

// replayAll replays every frame the last rewind undid.
func (r *replayer) replayAll(x *Executor[*Store]) error {
	l := x.Log()
	for {
		f, ok := l.Replaying()
		if !ok {
			return nil
		}
		if err := r.read(l, f); err != nil {
			return err
		}
		if err := l.ReopenFrame(f); err != nil {
			return err
		}
		if err := r.exec(x); err != nil {
			return err
		}
		if err := l.CloseFrame(); err != nil {
			return err
		}
	}
}

// submitIn submits one Input value (Server.Submit takes its fields).
func submitIn[S State](s *Server[S], in Input) error {
	return s.Submit(in.Frame, in.Sender, in.Type, in.Entity, in.Payload)
}
