package rollback

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// captureTrailerSize is the bookkeeping the log appends after each captured
// component: entity (8 bytes), component (2) and length (4), little-endian.
// Putting it after the bytes lets a rewind walk a record's captures newest
// first, from the end of its prior span, without an index.
const captureTrailerSize = 8 + 2 + 4

type slotState uint8

const (
	slotEmpty slotState = iota
	slotOpen
	slotClosed
)

// frameSlot is one frame of the ring: its records as struct-of-arrays
// columns over one byte arena. Record i's payload is
// arena[payOff[i]:][:payLen[i]] and its prior state (captures, each followed
// by its trailer) is arena[priOff[i]:][:priLen[i]]. Every column and the
// arena are truncated, never freed, when the slot is reused, so a ring that
// has warmed up allocates nothing.
type frameSlot struct {
	num   uint32
	state slotState
	epoch uint64 // advances every time the slot's records are discarded

	sender []Sender
	typ    []ActionTypeID
	entity []Entity
	payOff []uint32
	payLen []uint32
	priOff []uint32
	priLen []uint32
	arena  []byte

	captured int // records with a non-empty prior span
	captures int // captured (entity, component) pairs
}

func (s *frameSlot) reset(num uint32, state slotState) {
	s.num = num
	s.state = state
	s.epoch++
	s.sender = s.sender[:0]
	s.typ = s.typ[:0]
	s.entity = s.entity[:0]
	s.payOff = s.payOff[:0]
	s.payLen = s.payLen[:0]
	s.priOff = s.priOff[:0]
	s.priLen = s.priLen[:0]
	s.arena = s.arena[:0]
	s.captured = 0
	s.captures = 0
}

func (s *frameSlot) appendRecord(sender Sender, typ ActionTypeID, e Entity, payOff, payLen, priOff, priLen uint32, captures int) {
	s.sender = append(s.sender, sender)
	s.typ = append(s.typ, typ)
	s.entity = append(s.entity, e)
	s.payOff = append(s.payOff, payOff)
	s.payLen = append(s.payLen, payLen)
	s.priOff = append(s.priOff, priOff)
	s.priLen = append(s.priLen, priLen)
	if priLen > 0 {
		s.captured++
		s.captures += captures
	}
}

// dropLast removes the newest record (appended by appendRecord with the
// given capture count) and truncates the arena to arenaLen.
func (s *frameSlot) dropLast(captures int, arenaLen int) {
	n := len(s.sender) - 1
	if s.priLen[n] > 0 {
		s.captured--
		s.captures -= captures
	}
	s.sender = s.sender[:n]
	s.typ = s.typ[:n]
	s.entity = s.entity[:n]
	s.payOff = s.payOff[:n]
	s.payLen = s.payLen[:n]
	s.priOff = s.priOff[:n]
	s.priLen = s.priLen[:n]
	s.arena = s.arena[:arenaLen]
}

// ActionLog is the ring of the last FrameCapacity frames of executed
// actions. Each frame stores its records in struct-of-arrays columns —
// sender, type, entity, payload offset/length, prior-state offset/length —
// over one reusable byte arena. Once every slot has been used at its
// steady-state size, no operation allocates.
//
// Frames are numbered by the caller with uint32 frame numbers and must be
// begun in order: the first BeginFrame may use any number, each later one
// newest+1. The log holds the frames [Oldest, Newest], at most
// FrameCapacity of them; beginning a frame recycles the slot of the frame
// FrameCapacity older, discarding its records. The counter does not wrap:
// beginning a frame after 2^32−1 fails with ErrFrameWrap (that is 2.2 years
// at 60 Hz; a session that must outlive it calls Reset, which also suits a
// client resynchronizing from a state burst).
//
// Only an Executor adds records, and only to the open frame. A rewind
// (Executor.CommitRewind) undoes frames [from, Newest] and leaves the log
// replaying: from then on ReopenFrame must reopen exactly those frames,
// oldest first, each discarding its old records so the replay can execute
// them afresh, and no new frame can begin until the last one is closed.
// Read a frame's records (Frame) before reopening it.
//
// An ActionLog is not safe for concurrent use: the log, its executor and
// the state belong to one goroutine (the session's tick loop).
type ActionLog struct {
	cfg   LogConfig
	slots []frameSlot

	held  bool   // at least one frame begun since creation or Reset
	first uint32 // first frame begun since creation or Reset
	head  uint32 // newest frame begun

	open     *frameSlot // the open frame, or nil
	reopened bool       // the open frame was reopened for replay

	replaying  bool
	replayNext uint32 // next frame a replay must reopen

	// version changes on every change to the log (frames begun, closed,
	// reopened, records added) and on every committed rewind, so a rewind
	// plan can tell whether it still describes the log.
	version uint64
}

// NewActionLog returns an empty log for cfg (zero fields take their
// defaults). Errors wrap ErrInvalidConfig.
func NewActionLog(cfg LogConfig) (*ActionLog, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	return &ActionLog{cfg: cfg, slots: make([]frameSlot, cfg.FrameCapacity)}, nil
}

// Config returns the log's configuration, defaults filled in.
func (l *ActionLog) Config() LogConfig { return l.cfg }

// FrameCapacity returns the number of frames the ring holds.
func (l *ActionLog) FrameCapacity() int { return len(l.slots) }

func (l *ActionLog) slotFor(f uint32) *frameSlot {
	return &l.slots[f%uint32(len(l.slots))]
}

func (l *ActionLog) oldest() uint32 {
	span := uint32(len(l.slots) - 1)
	var o uint32
	if l.head >= span {
		o = l.head - span
	}
	return max(o, l.first)
}

// BeginFrame opens frame f, the next frame: f must be Newest()+1, or any
// number when the log holds no frame. The slot is reused, discarding the
// frame FrameCapacity older. Errors: ErrFrameOpen (close the open frame
// first), ErrReplayPending (a rewind's frames are not all replayed),
// ErrFrameOrder, ErrFrameWrap. O(1).
func (l *ActionLog) BeginFrame(f uint32) error {
	if l.open != nil {
		return ErrFrameOpen
	}
	if l.replaying {
		return ErrReplayPending
	}
	if l.held {
		if l.head == math.MaxUint32 {
			return ErrFrameWrap
		}
		if f != l.head+1 {
			return ErrFrameOrder
		}
	}
	s := l.slotFor(f)
	s.reset(f, slotOpen)
	l.open = s
	l.reopened = false
	if !l.held {
		l.held = true
		l.first = f
	}
	l.head = f
	l.version++
	return nil
}

// CloseFrame closes the open frame; its records become read-only history.
// Closing the last frame of a replay ends the replay. Returns
// ErrNoOpenFrame if no frame is open. O(1).
func (l *ActionLog) CloseFrame() error {
	s := l.open
	if s == nil {
		return ErrNoOpenFrame
	}
	s.state = slotClosed
	if l.reopened {
		if s.num == l.head {
			l.replaying = false
		} else {
			l.replayNext = s.num + 1
		}
	}
	l.open = nil
	l.reopened = false
	l.version++
	return nil
}

// ReopenFrame opens frame f again for replay after a rewind, discarding its
// records: f must be the next frame the replay owes (the oldest undone frame
// not yet replayed). Views of f become invalid, and the frame's arena is
// reused by the replay: copy the payloads of f's old records (FrameView)
// before reopening it, since executing a slice that still points into the
// arena would read bytes the replay overwrites. Errors: ErrFrameOpen,
// ErrNotReplaying, ErrFrameOrder. O(1).
func (l *ActionLog) ReopenFrame(f uint32) error {
	if l.open != nil {
		return ErrFrameOpen
	}
	if !l.replaying {
		return ErrNotReplaying
	}
	if f != l.replayNext {
		return ErrFrameOrder
	}
	s := l.slotFor(f)
	if s.num != f || s.state != slotClosed {
		panic(fmt.Sprintf("rollback: replay frame %d not held (slot has frame %d, state %d)", f, s.num, s.state))
	}
	s.reset(f, slotOpen)
	l.open = s
	l.reopened = true
	l.version++
	return nil
}

// OpenFrame returns the open frame, if any.
func (l *ActionLog) OpenFrame() (uint32, bool) {
	if l.open == nil {
		return 0, false
	}
	return l.open.num, true
}

// Newest returns the newest frame begun, if the log holds any frame.
func (l *ActionLog) Newest() (uint32, bool) { return l.head, l.held }

// Oldest returns the oldest frame the log still holds, if any.
func (l *ActionLog) Oldest() (uint32, bool) {
	if !l.held {
		return 0, false
	}
	return l.oldest(), true
}

// HasFrame reports whether the log holds frame f.
func (l *ActionLog) HasFrame(f uint32) bool {
	return l.held && f >= l.oldest() && f <= l.head
}

// AgedOut reports whether f is older than the oldest frame the log holds,
// so a rewind to it (or an input for it) can no longer be served.
func (l *ActionLog) AgedOut(f uint32) bool {
	return l.held && f < l.oldest()
}

// Replaying reports whether a rewind's frames are still being replayed and,
// if so, the next frame ReopenFrame expects.
func (l *ActionLog) Replaying() (next uint32, ok bool) {
	return l.replayNext, l.replaying
}

// Reset discards every frame and ends any replay, keeping the allocated
// capacity. The next BeginFrame may use any frame number.
func (l *ActionLog) Reset() {
	for i := range l.slots {
		l.slots[i].reset(0, slotEmpty)
	}
	l.held = false
	l.first, l.head = 0, 0
	l.open = nil
	l.reopened = false
	l.replaying = false
	l.replayNext = 0
	l.version++
}

// Frame returns a read-only view of frame f's records, or ErrFrameNotHeld.
// The open frame may be viewed too; its view grows as records are added.
func (l *ActionLog) Frame(f uint32) (FrameView, error) {
	if !l.HasFrame(f) {
		return FrameView{}, ErrFrameNotHeld
	}
	s := l.slotFor(f)
	return FrameView{s: s, epoch: s.epoch, num: f}, nil
}

// FrameView is a read-only view of one frame's records. It aliases the
// log: it stays valid until the frame's slot is reused (by BeginFrame of the
// frame FrameCapacity newer) or the frame is reopened for replay, after
// which Valid reports false and Len reports 0 — and the payload slices it
// handed out point into an arena that is being rewritten, so a caller that
// needs them past that point (a replay does) copies them first. The zero
// FrameView is invalid. Reading allocates nothing.
type FrameView struct {
	s     *frameSlot
	epoch uint64
	num   uint32
}

// Valid reports whether the view still describes its frame.
func (v FrameView) Valid() bool { return v.s != nil && v.s.epoch == v.epoch }

// Frame returns the frame number.
func (v FrameView) Frame() uint32 { return v.num }

// Closed reports whether the frame is closed (false while it is open or
// when the view is invalid).
func (v FrameView) Closed() bool { return v.Valid() && v.s.state == slotClosed }

// Len returns the number of records, 0 if the view is invalid.
func (v FrameView) Len() int {
	if !v.Valid() {
		return 0
	}
	return len(v.s.sender)
}

// ArenaBytes returns the bytes the frame's arena holds (payloads plus
// captures), 0 if the view is invalid.
func (v FrameView) ArenaBytes() int {
	if !v.Valid() {
		return 0
	}
	return len(v.s.arena)
}

// Record returns record i, 0 ≤ i < Len(), in execution order. Its Payload
// aliases the log (see FrameView). It panics if i is out of range, like a
// slice index.
func (v FrameView) Record(i int) Record {
	if !v.Valid() {
		panic("rollback: Record on an invalid FrameView")
	}
	s := v.s
	off, n := s.payOff[i], s.payLen[i]
	return Record{
		Sender:   s.sender[i],
		Type:     s.typ[i],
		Entity:   s.entity[i],
		Payload:  s.arena[off : off+n : off+n],
		PriorLen: int(s.priLen[i]),
	}
}

// Contains reports whether the frame holds a record with exactly this
// sender, type, entity and payload: the check that tells a retransmitted
// input from a new one. O(records in the frame).
func (v FrameView) Contains(sender Sender, typ ActionTypeID, e Entity, payload []byte) bool {
	if !v.Valid() {
		return false
	}
	s := v.s
	for i := range s.sender {
		if s.sender[i] == sender && s.typ[i] == typ && s.entity[i] == e && int(s.payLen[i]) == len(payload) &&
			bytes.Equal(s.arena[s.payOff[i]:s.payOff[i]+s.payLen[i]], payload) {
			return true
		}
	}
	return false
}

// Record is one executed action as the log holds it.
type Record struct {
	// Sender is the provenance (see Sender).
	Sender Sender
	// Type is the action type id.
	Type ActionTypeID
	// Entity is the action's subject entity (NoEntity for none).
	Entity Entity
	// Payload is the action's payload, aliasing the log's arena (see
	// FrameView for how long it stays valid). Its capacity is clipped, so
	// appending to it copies rather than overwriting the arena.
	Payload []byte
	// PriorLen is the size of the record's captured prior state in the
	// arena, bookkeeping included; 0 for a record that captured nothing
	// (a pure event), which a rewind skips.
	PriorLen int
}

func appendTrailer(b []byte, t Target, n int) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Entity))
	b = binary.LittleEndian.AppendUint16(b, uint16(t.Component))
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

// lastCapture splits the newest capture off the end of a prior span.
// The span was written by the executor, so a malformed one is a broken
// internal invariant.
func lastCapture(span []byte) (t Target, data, rest []byte) {
	if len(span) < captureTrailerSize {
		panic("rollback: corrupt prior span (short trailer)")
	}
	tr := span[len(span)-captureTrailerSize:]
	t.Entity = Entity(binary.LittleEndian.Uint64(tr[0:]))
	t.Component = ComponentID(binary.LittleEndian.Uint16(tr[8:]))
	n := int(binary.LittleEndian.Uint32(tr[10:]))
	end := len(span) - captureTrailerSize
	if n > end {
		panic("rollback: corrupt prior span (length exceeds span)")
	}
	return t, span[end-n : end], span[:end-n]
}
