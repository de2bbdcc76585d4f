package rollback

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/wire"
)

// Receiver defaults and ranges.
const (
	// DefaultMaxHeldSlices is ReceiverConfig.MaxHeldSlices when left zero.
	DefaultMaxHeldSlices = 64
	// MaxMaxHeldSlices is the largest ReceiverConfig.MaxHeldSlices.
	MaxMaxHeldSlices = 4096
	// DefaultMaxHeldBytes is ReceiverConfig.MaxHeldBytes when left zero.
	DefaultMaxHeldBytes = 256 << 10
)

// ReceiverConfig configures a Receiver. The zero value of every field means
// its default.
type ReceiverConfig struct {
	// MaxHeldSlices bounds the slices held for later: slices that arrive
	// before the snapshot is installed, after a gap, or while the client
	// cannot stage more frames. Default 64; range 1..MaxMaxHeldSlices.
	MaxHeldSlices int
	// MaxHeldBytes bounds the bytes of the held slices together. Default
	// 256 KiB; range MinMaxFrameBytes..MaxMaxFrameBytes.
	MaxHeldBytes int
}

// Validate reports whether c is usable. Errors wrap ErrInvalidConfig.
func (c ReceiverConfig) Validate() error {
	if c.MaxHeldSlices != 0 && (c.MaxHeldSlices < 1 || c.MaxHeldSlices > MaxMaxHeldSlices) {
		return fmt.Errorf("%w: MaxHeldSlices %d outside 1..%d", ErrInvalidConfig, c.MaxHeldSlices, MaxMaxHeldSlices)
	}
	if c.MaxHeldBytes != 0 && (c.MaxHeldBytes < MinMaxFrameBytes || c.MaxHeldBytes > MaxMaxFrameBytes) {
		return fmt.Errorf("%w: MaxHeldBytes %d outside %d..%d", ErrInvalidConfig, c.MaxHeldBytes, MinMaxFrameBytes, MaxMaxFrameBytes)
	}
	return nil
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

	// NumMalformedReasons is the number of reasons.
	NumMalformedReasons
)

var malformedNames = [NumMalformedReasons]string{"wire", "action", "own-record"}

// String returns a short name such as "own-record".
func (m MalformedReason) String() string {
	if m < NumMalformedReasons {
		return malformedNames[m]
	}
	return "unknown"
}

// ReceiverStats are a Receiver's counters.
type ReceiverStats struct {
	// Slices counts slices given to Unpack; Malformed those refused, by
	// reason (nothing of a refused slice is applied).
	Slices    uint64
	Malformed [NumMalformedReasons]uint64
	// Frames counts frames handed to the target (Confirm succeeded);
	// Records the stream records in them and OwnInputs the own inputs put
	// back.
	Frames, Records, OwnInputs uint64
	// Duplicates counts slices with nothing new (every frame already
	// applied); Stale held slices discarded for the same reason.
	Duplicates, Stale uint64
	// Held counts slices held for later: before the snapshot (S-H7), after
	// a gap, or while the target was full. HeldNow is how many are held.
	Held    uint64
	HeldNow int
	// Dropped counts held slices discarded because the hold window was full;
	// Refused counts frames the target refused outright. Either means a
	// frame the server counts as delivered may be missing: NeedsResync.
	Dropped, Refused uint64
}

type heldSlice struct {
	used        bool
	first, last uint32
	buf         []byte
}

// Receiver is the receiving end of an action stream: it validates each
// slice whole, applies its frames to the client in frame order — each
// frame's stream records with the client's own inputs for that frame put
// back where the server's log has them — holds slices it cannot apply yet,
// and drops frames it already applied.
//
// Unpack validates the whole slice before applying any of it
// (wire.ParseActionSlice, then every record against the registry, and no
// record may carry the local peer's id); a refused slice is counted and
// nothing of it applies — never a panic. The frames are then handed to
// StreamTarget.Confirm in order from the next frame the receiver expects:
// frames before it are already applied (the stream's frames are final, so
// a second copy is the same) and are skipped. A slice that starts after the
// next expected frame (a gap), any slice before the snapshot is installed
// (S-H7: nothing is applied before it), and the rest of a slice the client
// cannot stage yet (ErrTooFarAhead, ErrPendingFull) are copied and held,
// up to MaxHeldSlices / MaxHeldBytes, and applied as soon as they can be
// (Reset, Drain, and every Unpack). A slice the transport delivered counts
// as received at the server, so a held slice is never discarded while it
// could still be applied; if the window overflows, the farthest slice is
// dropped, counted, and NeedsResync reports it.
//
// Own inputs: the stream leaves out the records whose sender is the local
// peer (the owner rule). For each frame the receiver takes the peer's
// unconfirmed inputs for it (StreamTarget.PendingInputs) and inserts them
// before the first stream record with a higher sender id — where the
// server's stable sort by sender put them. An own input the server refused
// (it arrived too late, say) is thereby applied by the client alone: the
// desync checksum catches it, and the remedy is a state burst.
//
// A Receiver belongs to the client's goroutine and is not safe for
// concurrent use. Unpack allocates nothing in steady state (the record
// scratch and the held slices' buffers are reused).
type Receiver struct {
	t    StreamTarget
	reg  Validator
	cfg  ReceiverConfig
	next uint32 // the next frame to apply
	sync bool   // next is known: Reset was called

	held      []heldSlice
	heldBytes int
	lost      bool

	// The slice being applied, decoded once by load: its records in
	// order, and per frame entry the frame and its records' range.
	first, last uint32
	all         []Record
	entries     []sliceEntry

	own  []Input
	recs []Record
	st   ReceiverStats
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
	if cfg.MaxHeldSlices == 0 {
		cfg.MaxHeldSlices = DefaultMaxHeldSlices
	}
	if cfg.MaxHeldBytes == 0 {
		cfg.MaxHeldBytes = DefaultMaxHeldBytes
	}
	return &Receiver{t: t, reg: reg, cfg: cfg, held: make([]heldSlice, cfg.MaxHeldSlices)}, nil
}

// Stats returns a copy of the counters.
func (r *Receiver) Stats() ReceiverStats {
	st := r.st
	st.HeldNow = r.heldCount()
	return st
}

// Next returns the next frame the receiver will apply: every frame of the
// stream before it (after the snapshot) has been handed to the target.
func (r *Receiver) Next() uint32 { return r.next }

// AppliedThrough returns the newest frame such that it and every frame
// before it have been applied (the snapshot frame right after Reset).
func (r *Receiver) AppliedThrough() uint32 { return r.next - 1 }

// NeedsResync reports that a frame may be missing for good: a held slice
// was dropped from a full window, or the target refused a frame. Only a
// state burst (Reset with its frame) repairs that.
func (r *Receiver) NeedsResync() bool { return r.lost }

// Reset tells the receiver that the target's state is now the end of frame
// baseline (the snapshot, or a later state burst, was installed): the next
// frame it applies is baseline+1. Held slices are kept — those reaching
// past baseline may carry frames the server already counts as delivered —
// and applied at once where they can be. NeedsResync clears. Errors are
// Drain's.
func (r *Receiver) Reset(baseline uint32) error {
	r.next = baseline + 1
	r.sync = true
	r.lost = false
	return r.Drain()
}

// Unpack validates and applies one action slice, payload, as the channel
// delivered it (a Record message); payload is not retained (a held slice is
// copied). Errors: ErrMalformed for a refused slice (counted by reason;
// nothing applied), ErrInStep when called from inside the client's Tick.
// Being held, a duplicate or a gap is not an error. Cost: linear in the
// slice, plus the target's Confirm per new frame.
func (r *Receiver) Unpack(payload []byte) error {
	r.st.Slices++
	if err := r.load(payload); err != nil {
		return err
	}
	first, last := r.first, r.last
	if r.sync && last < r.next {
		r.st.Duplicates++
		return nil
	}
	if !r.sync || !r.t.Ready() || first > r.next {
		r.hold(payload, first, last)
		return nil
	}
	done, err := r.apply()
	if err != nil {
		return err
	}
	if !done {
		r.hold(payload, first, last)
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
		r.st.Malformed[MalformedWire]++
		return ErrMalformed
	}
	own := uint8(r.t.Peer())
	r.all, r.entries = r.all[:0], r.entries[:0]
	it := s.Iter()
	for f, _, ok := it.NextFrame(); ok; f, _, ok = it.NextFrame() {
		lo := int32(len(r.all))
		for rec, ok := it.NextRecord(); ok; rec, ok = it.NextRecord() {
			if rec.Sender == own {
				r.st.Malformed[MalformedOwnRecord]++
				return ErrMalformed
			}
			if r.reg.Validate(ActionTypeID(rec.Type), rec.Payload) != nil {
				r.st.Malformed[MalformedAction]++
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
	peer := r.t.Peer()
	r.own = r.t.PendingInputs(r.own[:0])
	oi, ei := 0, 0
	for f := max(r.first, r.next); ; f++ {
		for ei < len(r.entries) && r.entries[ei].frame < f {
			ei++
		}
		var stream []Record
		if ei < len(r.entries) && r.entries[ei].frame == f {
			e := r.entries[ei]
			stream = r.all[e.lo:e.hi]
		}
		for oi < len(r.own) && r.own[oi].Frame < f {
			oi++
		}
		hi := oi
		for hi < len(r.own) && r.own[hi].Frame == f {
			hi++
		}
		recs := stream
		if hi > oi { // put the own inputs back before the first higher sender
			at := 0
			for at < len(stream) && stream[at].Sender < peer {
				at++
			}
			r.recs = append(r.recs[:0], stream[:at]...)
			r.appendOwn(oi, hi)
			r.recs = append(r.recs, stream[at:]...)
			recs = r.recs
		}
		switch err := r.t.Confirm(f, recs); {
		case err == nil:
			r.st.Frames++
			r.st.Records += uint64(len(stream))
			r.st.OwnInputs += uint64(hi - oi)
		case errors.Is(err, ErrTooFarAhead), errors.Is(err, ErrPendingFull), errors.Is(err, ErrNotReady):
			return false, nil // retried by Drain once the client has moved on
		case errors.Is(err, ErrInStep):
			return false, err
		default: // refused for good: the frame is missing
			r.st.Refused++
			r.lost = true
		}
		r.next = f + 1
		if f == r.last {
			return true, nil
		}
	}
}

func (r *Receiver) appendOwn(lo, hi int) {
	for i := lo; i < hi; i++ {
		in := &r.own[i]
		r.recs = append(r.recs, Record{Sender: in.Sender, Type: in.Type, Entity: in.Entity, Payload: in.Payload})
	}
}

// Drain applies the held slices that can be applied now — call it after
// the client's Tick has made room (Unpack and Reset call it too). Errors:
// ErrInStep.
func (r *Receiver) Drain() error {
	if !r.sync || !r.t.Ready() {
		return nil
	}
	for progress := true; progress; {
		progress = false
		for i := range r.held {
			h := &r.held[i]
			if !h.used {
				continue
			}
			if h.last < r.next {
				r.st.Stale++
				r.free(h)
				continue
			}
			if h.first > r.next {
				continue
			}
			if r.load(h.buf) != nil { // validated when held; cannot fail
				r.free(h)
				continue
			}
			done, err := r.apply()
			if err != nil {
				return err
			}
			if !done {
				return nil // the target is full; try again later
			}
			r.free(h)
			progress = true
		}
	}
	return nil
}

func (r *Receiver) heldCount() int {
	n := 0
	for i := range r.held {
		if r.held[i].used {
			n++
		}
	}
	return n
}

func (r *Receiver) free(h *heldSlice) {
	r.heldBytes -= len(h.buf)
	h.used = false
	h.buf = h.buf[:0]
}

// hold copies a slice for later. When the window is full, the slice that
// starts farthest ahead — the new one or a held one — is dropped.
func (r *Receiver) hold(payload []byte, first, last uint32) {
	r.st.Held++
	for {
		free := -1
		far := -1
		for i := range r.held {
			h := &r.held[i]
			if !h.used {
				if free < 0 {
					free = i
				}
				continue
			}
			if h.first == first && h.last == last && string(h.buf) == string(payload) {
				return // the same slice again
			}
			if far < 0 || h.first > r.held[far].first {
				far = i
			}
		}
		if free >= 0 && r.heldBytes+len(payload) <= r.cfg.MaxHeldBytes {
			h := &r.held[free]
			h.used, h.first, h.last = true, first, last
			h.buf = append(h.buf[:0], payload...)
			r.heldBytes += len(h.buf)
			return
		}
		r.st.Dropped++
		r.lost = true
		if far < 0 || r.held[far].first <= first {
			return // the new slice is the farthest (or alone too large)
		}
		r.free(&r.held[far])
	}
}
