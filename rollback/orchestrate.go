package rollback

import (
	"bytes"
	"encoding/binary"
	"hash/crc64"
)

// Input is one action before it is executed: a peer's input handed to the
// server (Server.Submit), or one of the client's own predicted inputs handed
// to the network layer (Client.PendingInputs). It is a plain value; Payload
// is owned by whoever built the Input (see the method that takes or returns
// it for how long it stays valid).
type Input struct {
	// Frame is the frame the input is for.
	Frame uint32
	// Sender is the peer that authored it (0–253).
	Sender Sender
	// Type is the action type id.
	Type ActionTypeID
	// Entity is the subject entity (NoEntity for none).
	Entity Entity
	// Payload is the encoded payload.
	Payload []byte
}

// StepFunc is the game's simulation step, run by Server.Tick and
// Client.Tick once per execution of a frame, after the frame's inputs have
// been applied and before the frame is closed. replay is false the first
// time the frame is simulated and true on every re-simulation after a
// rewind.
//
// A step is a derivation, not an event: it runs again on every replay of
// its frame, against the state as restored and corrected by whatever forced
// the replay, and must produce the same result for the same post-input
// state. Decide from the state and the frame number only; never latch on
// step-local flags ("already fired"), because the replay needs the step to
// emit again. Actions the step executes go through the executor in derived
// mode (recorded as SenderDerived): their prior state is captured, so a
// rewind undoes them and they need not be idempotent (hp −= 10 is fine),
// and a replay recomputes them instead of reapplying the previous pass's
// copy. A component the step writes directly, without an action, is not
// captured and not undone: such writes must be idempotent (a clamp is, a
// decrement is not). Something that must happen exactly once and cannot be
// recomputed (an admin command, a lobby spawn) is an input: see
// Server.EnqueueAction.
//
// The step runs on the tick's goroutine, may call the executor's Execute,
// and must not call Tick, Submit, EnqueueAction or the executor's rewind
// methods (they return ErrInStep or ErrReentrant).
type StepFunc func(frame uint32, replay bool)

// frameCopy is a copy of one frame's records, taken before a replay reopens
// the frame (reopening recycles the frame's arena). Replays execute from it
// and the executor's presentation function matches
// events against it: a frame's records before its replay are exactly what
// this side has executed — and presented — for it so far. Its buffers are
// reused, so loading allocates nothing once they have grown.
type frameCopy struct {
	recs []copiedRec
	buf  []byte
}

type copiedRec struct {
	sender Sender
	used   bool // matched by seen
	typ    ActionTypeID
	e      Entity
	off, n uint32
}

func (m *frameCopy) reset() {
	m.recs = m.recs[:0]
	m.buf = m.buf[:0]
}

// load copies every record of v, straight from the slot's columns.
func (m *frameCopy) load(v FrameView) {
	m.reset()
	if !v.Valid() {
		return
	}
	sl := v.s
	for i, sender := range sl.sender {
		off, n := sl.payOff[i], sl.payLen[i]
		m.recs = append(m.recs, copiedRec{sender: sender, typ: sl.typ[i], e: sl.entity[i], off: uint32(len(m.buf)), n: n})
		m.buf = append(m.buf, sl.arena[off:off+n]...)
	}
}

func (m *frameCopy) payload(i int) []byte {
	r := &m.recs[i]
	return m.buf[r.off : r.off+r.n : r.off+r.n]
}

// seen reports whether the copy holds a record equal to a (sender, type,
// entity, payload) not matched before, and marks it matched: each earlier
// execution accounts for one presentation. It is the presentation function
// Server and Client install on their executor.
func (m *frameCopy) seen(a Action) bool {
	for i := range m.recs {
		r := &m.recs[i]
		if !r.used && r.sender == a.Sender && r.typ == a.Type && r.e == a.Entity && bytes.Equal(m.payload(i), a.Payload) {
			r.used = true
			return true
		}
	}
	return false
}

// checksumRing keeps the checksums of the last len(frame) frames it was
// given, keyed by frame number. Putting a frame again overwrites it (a
// replay recomputes a frame's end state).
type checksumRing struct {
	frame []uint32
	sum   []uint64
	ok    []bool
}

func newChecksumRing(n int) checksumRing {
	return checksumRing{frame: make([]uint32, n), sum: make([]uint64, n), ok: make([]bool, n)}
}

func (r *checksumRing) put(f uint32, sum uint64) {
	i := int(f % uint32(len(r.frame)))
	r.frame[i], r.sum[i], r.ok[i] = f, sum, true
}

func (r *checksumRing) get(f uint32) (uint64, bool) {
	i := int(f % uint32(len(r.frame)))
	if !r.ok[i] || r.frame[i] != f {
		return 0, false
	}
	return r.sum[i], true
}

func (r *checksumRing) reset() { clear(r.ok) }

var checksumTable = crc64.MakeTable(crc64.ECMA)

// Checksum returns a CRC-64 (ECMA) over the store's live entities in slot
// order: for each, its handle (8 bytes LE), its owner, then every
// component's bytes in component order. Two stores that hold the same
// entities (same handles), owners and component bytes have the same
// checksum, whatever their capacities or the history of their free lists.
// Server and Client take it (or any function like it, for a custom State)
// as their Checksum to detect desync; see Client.VerifyChecksum. It does
// not localize a difference to an entity.
//
// Cost: one pass over the live entities' bytes (CRC-64 runs at roughly a
// byte per nanosecond or better); it allocates nothing.
func (s *Store) Checksum() uint64 {
	var crc uint64
	var hdr [9]byte
	for i := range s.gen {
		if !s.alive[i] {
			continue
		}
		binary.LittleEndian.PutUint64(hdr[:8], uint64(NewEntity(uint32(i), s.gen[i])))
		hdr[8] = byte(s.owner[i])
		crc = crc64.Update(crc, checksumTable, hdr[:])
		for c, col := range s.cols {
			size := s.sizes[c]
			crc = crc64.Update(crc, checksumTable, col[i*size:(i+1)*size])
		}
	}
	return crc
}
