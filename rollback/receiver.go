package rollback

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/wire"
)

// Receiver defaults and ranges.
const (
	// defaultMaxHeldBytes is ReceiverConfig.MaxHeldBytes when left zero.
	defaultMaxHeldBytes = 256 << 10
	// heldFrameCost and heldRecordCost are what a held frame and each of
	// its records count against MaxHeldBytes on top of the payload bytes:
	// the bookkeeping they take.
	heldFrameCost, heldRecordCost = 16, 24
)

// ReceiverConfig configures a Receiver. The zero value of every field means
// its default.
type ReceiverConfig struct {
	// MaxHeldBytes bounds the frames held for later — frames that arrive
	// before the snapshot is installed, after a gap, or while the client
	// cannot stage more — each counted once however many slices carried
	// it: 16 bytes per frame plus, per record, 24 bytes and its
	// payload. While a snapshot is being received the bound is raised to
	// the snapshot's size (the stream that arrives while it does must be
	// kept until it is installed; see ClientLink), and falls back once the
	// frames held are applied. Default 256 KiB (over 2,000 frames of a
	// light stream); range 1 KiB..1 GiB.
	MaxHeldBytes int
}

// Validate reports whether c is usable. Errors wrap ErrInvalidConfig.
func (c ReceiverConfig) Validate() error {
	if c.MaxHeldBytes != 0 && (c.MaxHeldBytes < minMaxFrameBytes || c.MaxHeldBytes > maxMaxFrameBytes) {
		return fmt.Errorf("%w: MaxHeldBytes %d outside %d..%d", ErrInvalidConfig, c.MaxHeldBytes, minMaxFrameBytes, maxMaxFrameBytes)
	}
	return nil
}

// WithDefaults returns c with every zero field replaced by its default.
func (c ReceiverConfig) WithDefaults() ReceiverConfig {
	if c.MaxHeldBytes == 0 {
		c.MaxHeldBytes = defaultMaxHeldBytes
	}
	return c
}

// StreamTarget is what a Receiver applies the action stream to. *Client[S]
// implements it.
type StreamTarget interface {
	// Peer is the local peer id: the stream carries none of its records
	// (the owner rule), and the receiver puts its own inputs back.
	Peer() Sender
	// Ready reports whether the initial snapshot is installed (S-H7).
	Ready() bool
	// Confirm stages the complete authoritative records of frame.
	Confirm(frame uint32, recs []Record) error
	// PendingInputs appends the local peer's unconfirmed inputs, oldest
	// frame first, in the order they were produced.
	PendingInputs(dst []Input) []Input
}

// Validator checks an action payload; *Registry[S] implements it.
type Validator interface {
	Validate(id ActionTypeID, payload []byte) error
}

// MalformedReason says why a Receiver refused a slice.
type MalformedReason uint8

// Reasons a slice is refused. Each is counted (ReceiverStats.Malformed).
const (
	// MalformedWire: wire.ParseActionSlice refused it, or bytes follow it.
	MalformedWire MalformedReason = iota
	// MalformedAction: a record's type or payload fails the registry.
	MalformedAction
	// MalformedOwnRecord: a record carries the local peer's own id, which
	// the owner rule keeps off its stream.
	MalformedOwnRecord

	// numMalformedReasons is the number of reasons.
	numMalformedReasons
)

var malformedNames = [numMalformedReasons]string{"wire", "action", "own-record"}

// String returns a short name such as "own-record".
func (m MalformedReason) String() string {
	if m < numMalformedReasons {
		return malformedNames[m]
	}
	return "unknown"
}

// ReceiverStats are a Receiver's counters.
type ReceiverStats struct {
	// Slices counts slices given to Unpack; the Malformed method those
	// refused, by reason (nothing of a refused slice is applied).
	Slices    uint64
	malformed [numMalformedReasons]uint64
	// Frames counts frames handed to the target (Confirm succeeded);
	// Records the stream records in them and OwnInputs the own inputs put
	// back.
	Frames, Records, OwnInputs uint64
	// Duplicates counts slices with nothing new (every frame already
	// applied or held); Stale held frames discarded because they were
	// applied (or a snapshot covered them) before their turn.
	Duplicates, Stale uint64
	// Held counts frames held for later: before the snapshot (S-H7), after
	// a gap, or while the target was full — each frame once, however many
	// slices carried it. HeldNow is how many are held, HeldBytes what they
	// count against the bound (ReceiverConfig.MaxHeldBytes).
	Held      uint64
	HeldNow   int
	HeldBytes int
	// Dropped counts frames discarded because the hold window was full;
	// Refused counts frames the target refused outright. Either means a
	// frame the server counts as delivered may be missing: NeedsResync.
	Dropped, Refused uint64
}

// Malformed returns how many slices were refused for reason m (0 for a
// reason this version does not know).
func (st ReceiverStats) Malformed(m MalformedReason) uint64 { return countAt(st.malformed[:], int(m)) }

// MalformedTotal returns how many slices were refused, all reasons.
func (st ReceiverStats) MalformedTotal() uint64 { return sumCounts(st.malformed[:]) }

// heldFrame is one frame held for later: its records are the receiver's
// hrecs[lo:hi]. A complete frame holds the own inputs too (a frame the
// client had applied, kept across a state burst: AwaitSnapshot).
type heldFrame struct {
	frame    uint32
	lo, hi   int32
	complete bool
}

// heldRec is one record of a held frame; its payload is arena[off:off+n].
type heldRec struct {
	sender Sender
	typ    ActionTypeID
	e      Entity
	off, n uint32
}

// Receiver is the receiving end of an action stream: it validates each
// slice whole, applies its frames to the client in frame order — each
// frame's stream records with the client's own inputs for that frame put
// back where the server's log has them — holds frames it cannot apply
// yet, and drops frames it already applied.
//
// Unpack validates the whole slice before applying any of it
// (wire.ParseActionSlice, then every record against the registry, and no
// record may carry the local peer's id); a refused slice is counted and
// nothing of it applies — never a panic. The frames are then handed to
// StreamTarget.Confirm in order from the next frame the receiver expects:
// frames before it are already applied (the stream's frames are final, so
// a second copy is the same) and are skipped. The frames of a slice that
// starts after the next expected frame (a gap), of any slice before the
// snapshot is installed (S-H7: nothing is applied before it), and the rest
// of a slice the client cannot stage yet (ErrTooFarAhead, ErrPendingFull)
// are copied and held — each frame once, whatever slices carry it again —
// up to MaxHeldBytes, and applied as soon as they can be (Reset, Drain,
// and every Unpack). A slice the transport delivered counts as received at
// the server, so a held frame is never discarded while it could still be
// applied; if the window overflows, the farthest frames are dropped,
// counted, and NeedsResync reports it.
//
// Own inputs: the stream leaves out the records whose sender is the local
// peer (the owner rule). For each frame the receiver takes the peer's
// unconfirmed inputs for it (StreamTarget.PendingInputs) and inserts them
// before the first stream record with a higher sender id — where the
// server's stable sort by sender put them. An own input the server refused
// is reported back by the server link and leaves the client's inputs
// before its frame is confirmed (Client.Refused); one the client still
// holds is applied by the client alone, the desync checksum catches it,
// and the remedy is a state burst.
//
// A Receiver belongs to the client's goroutine and is not safe for
// concurrent use. Unpack allocates nothing in steady state (the record
// scratch and the held frames' buffers are reused).
type Receiver struct {
	t     StreamTarget
	reg   Validator
	cfg   ReceiverConfig
	next  uint32 // the next frame to apply
	sync  bool   // next is known: Reset was called
	lost  bool
	floor uint32 // before Reset: frames before it are not held (AwaitSnapshot)
	// resume is where an AwaitSnapshot left off applying, for AbandonSnapshot.
	resume    uint32
	resumable bool

	// Newest frame of any slice that parsed (seen): the stream is of final
	// frames, so the server's newest frame was at least this far ahead.
	newest uint32
	seen   bool

	// Held frames, sorted by frame, each once: held[head:] are live.
	held      []heldFrame
	head      int
	hrecs     []heldRec
	arena     []byte
	heldBytes int
	hrecs2    []heldRec // compaction targets, swapped with hrecs and arena
	arena2    []byte
	// reserve raises the bound (ClientLink: the size of the snapshot being
	// received) until joining ends (Reset) and the held frames fit
	// MaxHeldBytes again.
	reserve int
	joining bool

	// The slice being applied, decoded once by load: its records in
	// order, and per frame entry the frame and its records' range.
	first, last uint32
	all         []Record
	entries     []sliceEntry

	own    []Input
	oi     int // first own input not before the frame being confirmed
	recs   []Record
	stream []Record
	st     ReceiverStats
}

type sliceEntry struct {
	frame  uint32
	lo, hi int32
}

// NewReceiver returns a receiver applying to t, validating records with reg
// (the client's registry). It applies nothing until Reset tells it the
// snapshot frame. Errors wrap ErrInvalidConfig.
func NewReceiver(t StreamTarget, reg Validator, cfg ReceiverConfig) (*Receiver, error) {
	if t == nil || reg == nil {
		return nil, fmt.Errorf("%w: NewReceiver needs a target and a validator", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Receiver{t: t, reg: reg, cfg: cfg.WithDefaults()}, nil
}

// Stats returns a copy of the counters.
func (r *Receiver) Stats() ReceiverStats {
	st := r.st
	st.HeldNow = len(r.held) - r.head
	st.HeldBytes = r.heldBytes
	return st
}

// Next returns the next frame the receiver will apply: every frame of the
// stream before it (after the snapshot) has been handed to the target.
func (r *Receiver) Next() uint32 { return r.next }

// AppliedThrough returns the newest frame such that it and every frame
// before it have been applied (the snapshot frame right after Reset).
func (r *Receiver) AppliedThrough() uint32 { return r.next - 1 }

// Newest returns the newest frame any slice given to Unpack carried
// (applied, held or a duplicate); ok is false before the first. The stream
// carries final frames only, so the server had simulated at least its
// ServerConfig.MaxRewindFrames more when it sent it.
func (r *Receiver) Newest() (frame uint32, ok bool) { return r.newest, r.seen }

// NeedsResync reports that a frame may be missing for good: a held frame
// was dropped from a full window, or the target refused a frame. Only a
// state burst (Reset with its frame) repairs that.
func (r *Receiver) NeedsResync() bool { return r.lost }

// Reset tells the receiver that the target's state is now the end of frame
// baseline (the snapshot, or a later state burst, was installed): the next
// frame it applies is baseline+1. Held frames after baseline are kept —
// the server may already count them as delivered — and applied at once
// where they can be; those up to baseline are discarded. NeedsResync
// clears. Errors are Drain's.
func (r *Receiver) Reset(baseline uint32) error {
	r.next = baseline + 1
	r.sync = true
	r.lost = false
	r.joining = false
	r.floor, r.resumable = 0, false
	return r.Drain()
}

// AwaitingSnapshot reports whether the receiver waits for a snapshot
// before it applies anything: before the first Reset, and from an
// AwaitSnapshot until the snapshot is installed (Reset) or abandoned.
func (r *Receiver) AwaitingSnapshot() bool { return !r.sync }

// ExpectSnapshot tells the receiver that a snapshot of about n bytes is
// on its way (the client link calls it for every snapshot part): until the
// next Reset it holds the stream arriving meanwhile in up to n bytes, more
// than MaxHeldBytes if need be, since every frame of it must be applied on
// top of the snapshot once installed. The raise lasts until the next Reset
// and then until the frames held fit MaxHeldBytes again. The caller bounds
// n (the link by the largest snapshot it assembles). Cost: constant.
func (r *Receiver) ExpectSnapshot(n int) {
	r.reserve = max(r.reserve, n)
	r.joining = true
}

func (r *Receiver) limit() int { return max(r.cfg.MaxHeldBytes, r.reserve) }

// Unpack validates and applies one action slice, payload, as the channel
// delivered it (a Record message); payload is not retained (a held frame is
// copied). Errors: ErrMalformed for a refused slice (counted by reason;
// nothing applied), ErrInStep when called from inside the client's Tick.
// Being held, a duplicate or a gap is not an error. Cost: linear in the
// slice, plus the target's Confirm per new frame (a copy per held frame).
func (r *Receiver) Unpack(payload []byte) error {
	r.st.Slices++
	if err := r.load(payload); err != nil {
		return err
	}
	if !r.seen || r.last > r.newest {
		r.newest, r.seen = r.last, true
	}
	if r.sync && r.last < r.next {
		r.st.Duplicates++
		return nil
	}
	if !r.sync || !r.t.Ready() || r.first > r.next {
		if !r.holdSlice(r.first) {
			r.st.Duplicates++
		}
		r.tidy()
		return nil
	}
	done, err := r.apply()
	if err != nil {
		return err
	}
	if !done {
		r.holdSlice(r.next)
		r.tidy()
		return nil
	}
	return r.Drain()
}

// load parses payload whole, checks every record, and decodes the slice
// into r.all and r.entries; on error nothing is kept and the reason is
// counted.
func (r *Receiver) load(payload []byte) error {
	s, n, err := wire.ParseActionSlice(payload)
	if err != nil || n != len(payload) {
		r.st.malformed[MalformedWire]++
		return ErrMalformed
	}
	own := uint8(r.t.Peer())
	r.all, r.entries = r.all[:0], r.entries[:0]
	it := s.Iter()
	for f, _, ok := it.NextFrame(); ok; f, _, ok = it.NextFrame() {
		lo := int32(len(r.all))
		for rec, ok := it.NextRecord(); ok; rec, ok = it.NextRecord() {
			if rec.Sender == own {
				r.st.malformed[MalformedOwnRecord]++
				return ErrMalformed
			}
			if r.reg.Validate(ActionTypeID(rec.Type), rec.Payload) != nil {
				r.st.malformed[MalformedAction]++
				return ErrMalformed
			}
			r.all = append(r.all, Record{Sender: Sender(rec.Sender), Type: ActionTypeID(rec.Type), Entity: Entity(rec.Entity), Payload: rec.Payload})
		}
		r.entries = append(r.entries, sliceEntry{frame: f, lo: lo, hi: int32(len(r.all))})
	}
	r.first, r.last = s.FirstFrame, s.LastFrame()
	return nil
}

// apply hands the frames of the loaded slice from r.next on to the target.
// done is false when the target cannot take more now; the frames before
// r.next are in.
func (r *Receiver) apply() (done bool, err error) {
	r.own, r.oi = r.t.PendingInputs(r.own[:0]), 0
	ei := 0
	for f := max(r.first, r.next); ; f++ {
		for ei < len(r.entries) && r.entries[ei].frame < f {
			ei++
		}
		var stream []Record
		if ei < len(r.entries) && r.entries[ei].frame == f {
			e := r.entries[ei]
			stream = r.all[e.lo:e.hi]
		}
		if ok, err := r.confirm(f, stream, false); !ok {
			return false, err
		}
		if f == r.last {
			return true, nil
		}
	}
}

// confirm hands frame f (= r.next) to the target: its stream records with
// the own inputs for f put back (unless complete: they are in). ok is
// false when the target cannot take it now (retried later) or on
// ErrInStep (err); a frame refused for good is counted, flags
// NeedsResync, and is passed over.
func (r *Receiver) confirm(f uint32, stream []Record, complete bool) (ok bool, err error) {
	for r.oi < len(r.own) && r.own[r.oi].Frame < f {
		r.oi++
	}
	lo, hi := r.oi, r.oi
	for !complete && hi < len(r.own) && r.own[hi].Frame == f {
		hi++
	}
	recs := stream
	if hi > lo { // put the own inputs back before the first higher sender
		peer := r.t.Peer()
		at := 0
		for at < len(stream) && stream[at].Sender < peer {
			at++
		}
		r.recs = append(r.recs[:0], stream[:at]...)
		for i := lo; i < hi; i++ {
			in := &r.own[i]
			r.recs = append(r.recs, Record{Sender: in.Sender, Type: in.Type, Entity: in.Entity, Payload: in.Payload})
		}
		r.recs = append(r.recs, stream[at:]...)
		recs = r.recs
	}
	switch err := r.t.Confirm(f, recs); {
	case err == nil:
		r.st.Frames++
		r.st.Records += uint64(len(stream))
		r.st.OwnInputs += uint64(hi - lo)
	case errors.Is(err, ErrTooFarAhead), errors.Is(err, ErrPendingFull), errors.Is(err, ErrNotReady):
		return false, nil // retried by Drain once the client has moved on
	case errors.Is(err, ErrInStep):
		return false, err
	default: // refused for good: the frame is missing
		r.st.Refused++
		r.lost = true
	}
	r.next = f + 1
	return true, nil
}

// Drain applies the held frames that can be applied now — call it after
// the client's Tick has made room (Unpack and Reset call it too). Errors:
// ErrInStep.
func (r *Receiver) Drain() error {
	if !r.sync || !r.t.Ready() {
		return nil
	}
	err := r.drain()
	r.tidy()
	return err
}

func (r *Receiver) drain() error {
	if r.head == len(r.held) {
		return nil
	}
	r.own, r.oi = r.t.PendingInputs(r.own[:0]), 0
	for r.head < len(r.held) {
		h := r.held[r.head]
		if h.frame < r.next {
			r.st.Stale++
			r.popHead()
			continue
		}
		if h.frame != r.next {
			return nil // a gap: wait for the frames before it
		}
		r.stream = r.stream[:0]
		for _, hr := range r.hrecs[h.lo:h.hi] {
			r.stream = append(r.stream, Record{Sender: hr.sender, Type: hr.typ, Entity: hr.e, Payload: r.arena[hr.off : hr.off+hr.n : hr.off+hr.n]})
		}
		ok, err := r.confirm(h.frame, r.stream, h.complete)
		if !ok {
			return err // the target is full (try again later), or ErrInStep
		}
		r.popHead()
	}
	return nil
}

// popHead forgets the first held frame.
func (r *Receiver) popHead() {
	h := r.held[r.head]
	r.heldBytes -= r.frameCost(h)
	r.head++
}

func (r *Receiver) frameCost(h heldFrame) int {
	n := heldFrameCost
	for _, hr := range r.hrecs[h.lo:h.hi] {
		n += heldRecordCost + int(hr.n)
	}
	return n
}

// tidy reclaims the space of frames no longer held: all of it once none
// is, else by compaction once at least half of it is dead; and lowers the
// bound back once a join is over and what is held fits it.
func (r *Receiver) tidy() {
	if r.head == len(r.held) {
		r.held, r.head, r.hrecs, r.arena = r.held[:0], 0, r.hrecs[:0], r.arena[:0]
	} else if 2*r.head >= len(r.held) || len(r.arena)+len(r.hrecs)*heldRecordCost > 2*r.heldBytes+4096 {
		r.compact()
	}
	if !r.joining && r.heldBytes <= r.cfg.MaxHeldBytes {
		r.reserve = 0
	}
}

// compact moves the live held frames, their records and payloads to the
// front of their buffers, in frame order.
func (r *Receiver) compact() {
	live := r.held[r.head:]
	recs, arena := r.hrecs2[:0], r.arena2[:0]
	for i, h := range live {
		lo := int32(len(recs))
		for _, hr := range r.hrecs[h.lo:h.hi] {
			off := uint32(len(arena))
			arena = append(arena, r.arena[hr.off:hr.off+hr.n]...)
			hr.off = off
			recs = append(recs, hr)
		}
		live[i].lo, live[i].hi = lo, int32(len(recs))
	}
	r.held = r.held[:copy(r.held, live)]
	r.head = 0
	r.hrecs2, r.arena2 = r.hrecs[:0], r.arena[:0]
	r.hrecs, r.arena = recs, arena
}

// find returns the index in r.held of the first live frame at or after f.
func (r *Receiver) find(f uint32) int {
	lo, hi := r.head, len(r.held)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.held[m].frame < f {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// holdSlice holds every frame of the loaded slice from frame from on that
// is neither applied nor held already; it reports whether it held any.
// When the window is full, the frames farthest ahead — held ones or the
// slice's own — are dropped (Dropped, NeedsResync).
func (r *Receiver) holdSlice(from uint32) (held bool) {
	ei := 0
	for f := max(r.first, from); ; f++ {
		for ei < len(r.entries) && r.entries[ei].frame < f {
			ei++
		}
		if !r.sync && f >= r.floor || r.sync && f >= r.next {
			var stream []Record
			if ei < len(r.entries) && r.entries[ei].frame == f {
				e := r.entries[ei]
				stream = r.all[e.lo:e.hi]
			}
			switch r.holdFrame(f, stream, false) {
			case holdFull:
				// The frames after f are farther still: none fits.
				r.st.Dropped += uint64(r.last-f) + 1
				r.lost = true
				return held
			case holdNew:
				held = true
			}
		}
		if f == r.last {
			return held
		}
	}
}

type holdResult uint8

const (
	holdNew  holdResult = iota // held now
	holdHave                   // held already
	holdFull                   // no room, even after dropping farther frames
)

// holdFrame holds frame f with its stream records (complete: with the own
// inputs too).
func (r *Receiver) holdFrame(f uint32, stream []Record, complete bool) holdResult {
	at := r.find(f)
	if at < len(r.held) && r.held[at].frame == f {
		return holdHave
	}
	cost := heldFrameCost
	for i := range stream {
		cost += heldRecordCost + len(stream[i].Payload)
	}
	for r.heldBytes+cost > r.limit() {
		last := len(r.held) - 1
		if last < at || last < r.head { // nothing farther to give up
			return holdFull
		}
		r.heldBytes -= r.frameCost(r.held[last])
		r.held = r.held[:last]
		r.st.Dropped++
		r.lost = true
	}
	lo := int32(len(r.hrecs))
	for i := range stream {
		rec := &stream[i]
		r.hrecs = append(r.hrecs, heldRec{sender: rec.Sender, typ: rec.Type, e: rec.Entity, off: uint32(len(r.arena)), n: uint32(len(rec.Payload))})
		r.arena = append(r.arena, rec.Payload...)
	}
	h := heldFrame{frame: f, lo: lo, hi: int32(len(r.hrecs)), complete: complete}
	r.held = append(r.held, heldFrame{})
	copy(r.held[at+1:], r.held[at:])
	r.held[at] = h
	r.heldBytes += cost
	r.st.Held++
	return holdNew
}

// AwaitSnapshot prepares the receiver for a snapshot of frame f that is on its
// way (the server announced it) while the target is applying the stream:
// until the snapshot is installed (Reset), every frame is held rather than
// applied, since the target will start over from f; and the frames after
// f it has applied already are held again, complete (own inputs
// included), as have gives them — the server counts them as delivered and
// will not send them again. have reports false for a frame the target no
// longer holds; the copy stops there.
func (r *Receiver) AwaitSnapshot(f uint32, have func(frame uint32) ([]Record, bool)) {
	r.floor = f + 1 // the snapshot covers the frames before
	if !r.sync {
		return
	}
	r.resume, r.resumable = r.next, true
	for g := f + 1; g > f && g < r.next; g++ {
		recs, ok := have(g)
		if !ok {
			break
		}
		if r.holdFrame(g, recs, true) == holdFull {
			r.lost = true
			break
		}
	}
	r.sync = false
}

// AbandonSnapshot ends an AwaitSnapshot whose snapshot will not come (the client link
// stopped asking after refusing MaxSnapshotRetries): the receiver goes on
// applying from where it stopped, to the target's old state. Frames held
// from then on are applied as usual; the copies AwaitSnapshot made are stale.
func (r *Receiver) AbandonSnapshot() {
	if r.sync || !r.resumable {
		return
	}
	r.next, r.sync, r.resumable, r.floor, r.joining = r.resume, true, false, 0, false
	_ = r.Drain() // ErrInStep cannot happen: OnMessage runs outside the client's Tick
}

// DropRefused takes the own input (typ, e, payload) of frame f out of a
// complete held frame (the server refused it; see Client.Refused).
func (r *Receiver) DropRefused(f uint32, typ ActionTypeID, e Entity, payload []byte) {
	at := r.find(f)
	if at == len(r.held) || r.held[at].frame != f || !r.held[at].complete {
		return
	}
	h := &r.held[at]
	peer := r.t.Peer()
	for i := h.lo; i < h.hi; i++ {
		hr := r.hrecs[i]
		if hr.sender == peer && hr.typ == typ && hr.e == e && string(r.arena[hr.off:hr.off+hr.n]) == string(payload) {
			r.heldBytes -= heldRecordCost + int(hr.n)
			copy(r.hrecs[i:h.hi], r.hrecs[i+1:h.hi])
			h.hi--
			return
		}
	}
}
