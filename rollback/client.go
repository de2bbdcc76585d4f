package rollback

import (
	"bytes"
	"fmt"
)

// Client defaults.
const (
	// defaultMaxInputsPerFrame is ClientConfig.MaxInputsPerFrame when left
	// zero.
	defaultMaxInputsPerFrame = 64
	// defaultMaxInputBytes is ClientConfig.MaxInputBytes when left zero.
	defaultMaxInputBytes = 64 << 10
	// defaultMaxStagedBytes is ClientConfig.MaxStagedBytes when left zero.
	defaultMaxStagedBytes = 1 << 20
)

// ClientConfig configures a Client. It is a plain value: the zero value of
// every field means its default, and NewClient validates it (against the
// log's FrameCapacity too).
type ClientConfig struct {
	// MaxPredictionFrames bounds how far the client predicts beyond its
	// newest confirmed frame. A correction can only be applied while the
	// ring still holds the frame it is for, so the bound is at most the
	// log's FrameCapacity; at the bound Tick stops and returns
	// ErrPredictionLimit until confirmations arrive. Default and maximum:
	// FrameCapacity; minimum 1.
	MaxPredictionFrames int

	// MaxInputsPerFrame bounds the inputs the sampler may give for one
	// frame (InputBuffer.Add returns ErrQueueFull beyond). Default 64;
	// range 1..1<<20.
	MaxInputsPerFrame int

	// MaxInputBytes bounds the payload bytes of the unconfirmed input
	// history. Default 64 KiB; range 1 KiB..1 GiB.
	MaxInputBytes int

	// MaxStagedBytes bounds the payload bytes of confirmed frames received
	// but not yet applied (Confirm returns ErrPendingFull beyond). Default
	// 1 MiB; range 1 KiB..1 GiB.
	MaxStagedBytes int

	// Checksum, if set, is called after every close of a frame whose
	// number is a multiple of ChecksumEvery (Store.Checksum is the
	// reference); the value of a confirmed frame is what VerifyChecksum
	// compares with the server's. It runs on the tick's goroutine and must
	// not mutate the state.
	Checksum func() uint64
	// ChecksumEvery is the checksum interval in frames. Default 1; range
	// 1..MaxChecksumEvery.
	ChecksumEvery int

	// Predict predicts the other peers' inputs for the frames the client
	// simulates ahead of the server (see PredictFunc). Nil means
	// RepeatLast: every peer keeps doing what it did in the newest frame
	// the client knows.
	Predict PredictFunc
	// NoRemotePrediction turns the prediction of other peers' inputs off
	// (Predict must then be nil): a predicted frame holds the client's own
	// inputs and the step only, so any other peer's input in a confirmed
	// frame forces a rewind.
	NoRemotePrediction bool
}

// PredictFunc predicts one remote peer's inputs for a frame the client
// simulates before the server has confirmed it. It is called on every
// simulation of a predicted frame — the first and every replay — once per
// peer (other than the client's own) that has inputs in the newest frame
// before frame whose authoritative records the client holds: last is that
// peer's inputs in it, in the server's order, each with that frame as its
// Frame and the peer as its Sender. Pure events (action types that write
// nothing, ActionType.IsEvent) are never in last: an event cannot be
// predicted, since its presentation could not be taken back.
//
// It appends the predicted inputs to dst and returns the extended slice;
// the client executes them in order under the peer's id (the owner rule
// applies; a refused one is counted), where the server's sort by sender
// puts them, and ignores their Frame and Sender. The payloads of last
// alias the client's buffers and stay valid until it returns; the
// predicted payloads may alias them. It runs on the tick's goroutine, must
// be deterministic, must not retain last or dst, and must not call the
// client. A wrong prediction costs a rewind when the frame is confirmed;
// the confirmed records replace it.
type PredictFunc func(dst []Input, peer Sender, frame uint32, last []Input) []Input

// RepeatLast is the default PredictFunc: the peer gives in frame the
// inputs it gave in the newest frame the client knows — a held direction
// stays held. It suits games that sample and send their state-changing
// inputs every frame; one that sends only changes should predict nothing
// (ClientConfig.NoRemotePrediction) or supply its own PredictFunc.
// It allocates nothing when dst has room.
func RepeatLast(dst []Input, _ Sender, _ uint32, last []Input) []Input {
	return append(dst, last...)
}

// Validate reports whether c is usable on its own (NewClient also checks
// MaxPredictionFrames against the log). Zero fields are valid (defaults).
// Errors wrap ErrInvalidConfig.
func (c ClientConfig) Validate() error {
	check := func(name string, v, lo, hi int) error {
		if v != 0 && (v < lo || v > hi) {
			return fmt.Errorf("%w: %s %d outside %d..%d", ErrInvalidConfig, name, v, lo, hi)
		}
		return nil
	}
	for _, err := range []error{
		check("MaxPredictionFrames", c.MaxPredictionFrames, 1, MaxFrameCapacity),
		check("MaxInputsPerFrame", c.MaxInputsPerFrame, 1, maxMaxRecordsPerFrame),
		check("MaxInputBytes", c.MaxInputBytes, minMaxFrameBytes, maxMaxFrameBytes),
		check("MaxStagedBytes", c.MaxStagedBytes, minMaxPendingBytes, maxMaxPendingBytes),
		check("ChecksumEvery", c.ChecksumEvery, 1, MaxChecksumEvery),
	} {
		if err != nil {
			return err
		}
	}
	if c.NoRemotePrediction && c.Predict != nil {
		return fmt.Errorf("%w: NoRemotePrediction with a Predict function", ErrInvalidConfig)
	}
	return nil
}

// WithDefaults returns c with every zero field replaced by its default,
// except MaxPredictionFrames, whose default depends on the log (NewClient
// fills it in).
func (c ClientConfig) WithDefaults() ClientConfig {
	if c.MaxInputsPerFrame == 0 {
		c.MaxInputsPerFrame = defaultMaxInputsPerFrame
	}
	if c.MaxInputBytes == 0 {
		c.MaxInputBytes = defaultMaxInputBytes
	}
	if c.MaxStagedBytes == 0 {
		c.MaxStagedBytes = defaultMaxStagedBytes
	}
	if c.ChecksumEvery == 0 {
		c.ChecksumEvery = 1
	}
	if c.Predict == nil && !c.NoRemotePrediction {
		c.Predict = RepeatLast
	}
	return c
}

// Sampler produces the local peer's inputs for frame by calling in.Add. The
// client calls it exactly once for every frame it predicts, when it
// simulates that frame for the first time — never during a replay, and not
// for a frame whose authoritative records arrived before the client reached
// it. It reads the predicted state as of the end of frame−1, runs on the
// tick's goroutine, and must not call the client's Tick, Confirm,
// Reconcile or InstallSnapshot.
type Sampler func(frame uint32, in *InputBuffer)

// InputBuffer is the client's record of its own unconfirmed inputs. The
// sampler adds a frame's inputs through it; the client executes them at
// once as a prediction, re-executes them on every replay until the frame
// is confirmed, and hands them to the network layer (Client.PendingInputs)
// to send — and resend — to the server.
type InputBuffer struct {
	validate func(ActionTypeID, []byte) error
	recs     []inputRec // ordered by frame
	buf      []byte

	sampling bool
	frame    uint32
	first    int  // index of the sampled frame's first input
	holes    bool // remove left payload bytes behind: prune compacts

	maxPerFrame int
	maxBytes    int
}

type inputRec struct {
	frame  uint32
	typ    ActionTypeID
	e      Entity
	off, n uint32
}

// Add records one input of the frame being sampled: action type typ on
// entity e with payload, which is copied (the caller keeps ownership). The
// input is executed as soon as the sampler returns. Errors: ErrNoOpenFrame
// (called outside the sampler), ErrUnknownAction or ErrMalformed
// (Registry.Validate), ErrDuplicateInput (identical to an input already
// added for this frame — the server would take it for a retransmission),
// ErrQueueFull (MaxInputsPerFrame or MaxInputBytes). Allocates nothing once
// the history has grown to its working size.
func (b *InputBuffer) Add(typ ActionTypeID, e Entity, payload []byte) error {
	if !b.sampling {
		return ErrNoOpenFrame
	}
	if err := b.validate(typ, payload); err != nil {
		return err
	}
	if len(b.recs)-b.first >= b.maxPerFrame || len(b.buf)+len(payload) > b.maxBytes {
		return ErrQueueFull
	}
	for i := b.first; i < len(b.recs); i++ {
		r := &b.recs[i]
		if r.typ == typ && r.e == e && bytes.Equal(b.payload(r), payload) {
			return ErrDuplicateInput
		}
	}
	b.recs = append(b.recs, inputRec{frame: b.frame, typ: typ, e: e, off: uint32(len(b.buf)), n: uint32(len(payload))})
	b.buf = append(b.buf, payload...)
	return nil
}

// Frame returns the frame being sampled.
func (b *InputBuffer) Frame() uint32 { return b.frame }

func (b *InputBuffer) payload(r *inputRec) []byte {
	return b.buf[r.off : r.off+r.n : r.off+r.n]
}

// run returns the index range of frame f's inputs.
func (b *InputBuffer) run(f uint32) (lo, hi int) {
	lo, hi = 0, len(b.recs)
	for lo < hi { // first index with frame >= f
		m := int(uint(lo+hi) >> 1)
		if b.recs[m].frame < f {
			lo = m + 1
		} else {
			hi = m
		}
	}
	hi = lo
	for hi < len(b.recs) && b.recs[hi].frame == f {
		hi++
	}
	return lo, hi
}

// prune forgets the inputs of frames up to through, compacting the rest
// (and the payload bytes of inputs removed since the last prune).
func (b *InputBuffer) prune(through uint32) {
	n := 0
	for n < len(b.recs) && b.recs[n].frame <= through {
		n++
	}
	if n == 0 && !b.holes {
		return
	}
	b.holes = false
	rest := b.recs[n:]
	if len(rest) == 0 {
		b.recs, b.buf = b.recs[:0], b.buf[:0]
		return
	}
	w := uint32(0)
	for i := range rest { // offsets ascend, so each copy moves bytes forward
		r := &rest[i]
		copy(b.buf[w:], b.buf[r.off:r.off+r.n])
		r.off = w
		w += r.n
	}
	b.buf = b.buf[:w]
	b.recs = b.recs[:copy(b.recs, rest)]
}

// remove forgets the input (typ, e, payload) of frame f, if held; the
// payload bytes stay in buf until the next prune compacts it.
func (b *InputBuffer) remove(f uint32, typ ActionTypeID, e Entity, payload []byte) {
	lo, hi := b.run(f)
	for i := lo; i < hi; i++ {
		r := &b.recs[i]
		if r.typ == typ && r.e == e && bytes.Equal(b.payload(r), payload) {
			b.recs = append(b.recs[:i], b.recs[i+1:]...)
			b.holes = true
			return
		}
	}
}

// ClientHooks are optional callbacks for events the client reports. They run
// synchronously on the client's goroutine, must not call the client's Tick,
// Confirm, Reconcile or InstallSnapshot (those return ErrInStep), and should
// be cheap.
type ClientHooks struct {
	// OnRewind is called after every rewind, before its replay.
	OnRewind func(RewindEvent)
	// OnConfirmed is called once for every authoritative frame applied.
	// When the frame was executed from the server's records, the call
	// follows its close and the state is the frame's end state; when the
	// records equalled the prediction (no rewind, PredictionHits), the call
	// comes during reconciliation and the state is the present's. To
	// observe end-of-frame state, use ClientConfig.Checksum.
	OnConfirmed func(frame uint32)
	// OnDesync is called when VerifyChecksum finds a mismatch.
	OnDesync func(Desync)
}

// Desync describes a checksum mismatch found by Client.VerifyChecksum.
type Desync struct {
	// Frame is the confirmed frame whose checksums differ.
	Frame uint32
	// Local and Remote are the two checksums.
	Local, Remote uint64
}

// ClientStats are the client's running totals. Read them with
// Client.Stats.
type ClientStats struct {
	// Ticks counts Tick calls that ran; Snapshots InstallSnapshot calls.
	Ticks, Snapshots uint64
	// FramesPredicted counts frames simulated for the first time as a
	// prediction (sampled, own inputs, step).
	FramesPredicted uint64
	// FramesConfirmed counts authoritative frames applied.
	FramesConfirmed uint64
	// PredictionHits counts confirmed frames whose authoritative records
	// equalled the prediction (own inputs, the other peers' predicted
	// inputs, the step's records), so no rewind was needed.
	PredictionHits uint64
	// Rewinds counts rewinds; FramesReplayed the frames they re-simulated.
	Rewinds, FramesReplayed uint64
	// MaxRewindFrames is the deepest rewind so far, in frames.
	MaxRewindFrames int
	// ConfirmDuplicates counts Confirm calls repeating what the client
	// already holds for a frame, or for a frame at or before the baseline
	// (ignored).
	ConfirmDuplicates uint64
	// ConfirmCorrections counts Confirm calls that changed a frame already
	// applied (re-staged, replayed).
	ConfirmCorrections uint64
	// ConfirmRefused counts Confirm calls refused (not ready, out of range,
	// malformed, over budget).
	ConfirmRefused uint64
	// ConfirmedRejected counts authoritative records the local executor
	// refused: the two sides disagree about the world (a desync symptom).
	ConfirmedRejected uint64
	// InputsSampled counts own inputs recorded by the sampler;
	// InputsRejected the executions of them the executor refused.
	InputsSampled, InputsRejected uint64
	// PredictionStalls counts Ticks stopped by MaxPredictionFrames.
	PredictionStalls uint64
	// RemoteInputsPredicted counts other peers' inputs executed as a
	// prediction (first simulations and replays alike);
	// RemoteInputsRejected the executions of them the executor refused.
	RemoteInputsPredicted, RemoteInputsRejected uint64
	// ChecksumsVerified and Desyncs count VerifyChecksum outcomes.
	ChecksumsVerified, Desyncs uint64
}

type confState uint8

const (
	confNone    confState = iota
	confStaged            // received, not applied yet
	confApplied           // applied: the log holds the authoritative records
)

// confSlot holds one frame's authoritative records between Confirm and
// their application.
type confSlot struct {
	frame uint32
	state confState
	recs  []copiedRec
	buf   []byte
}

// Client is the predicting side of a server-authoritative session: it
// simulates ahead of the server with its own inputs and a prediction of the
// other peers', and reconciles when the server's authoritative records for
// a frame arrive.
//
// Prediction: each Tick simulates the frames after the present for the
// first time. For a frame the client predicts, the Sampler gives the local
// peer's inputs (kept in the InputBuffer until confirmed) and the PredictFunc
// (ClientConfig.Predict, RepeatLast by default) the other peers' inputs from
// their inputs in the newest frame whose authoritative records the client
// holds; they execute at once in the server's sender order, the own ones
// under the local peer id and each other peer's under its id, then the step
// runs in derived mode. Before InstallSnapshot marks the baseline installed,
// the client neither samples, nor predicts, nor applies anything (S-H7):
// Tick and Confirm return ErrNotReady.
//
// Reconciliation: Confirm stages a frame's authoritative records — every
// record the server's log holds for it, inputs and derived, in its order —
// and the next Tick (or Reconcile) applies them: a staged frame whose
// records equal the prediction exactly needs no undoing (PredictionHits),
// even ahead of a frame still unconfirmed; otherwise the client rewinds to
// the end of the predecessor of the oldest staged frame that differs and
// replays to the present, once per Tick. A confirmed frame is re-executed
// from the authoritative records verbatim (the server's derived records
// included; the step does not run for it); a predicted frame from the own
// unconfirmed inputs and a fresh prediction of the other peers' (from the
// newest authoritative frame before it, which may just have arrived) plus a
// fresh run of the step. So after every frame up to F is confirmed, the
// state at the end of F is the server's, whatever was mispredicted.
//
// Presentation: replays run the executor in replay mode (Action.Replay
// set), and a pure event that this side already presented for that frame —
// its own predicted event input, an event its step predicted, an event of
// an earlier application of a confirmed frame — is recorded without calling
// its Apply again. An event this side never executed for that frame (one in
// the server's records it did not predict, or one its step emits only now,
// after a correction) is presented on the replay, with Action.Replay false.
// A predicted event the server's records lack has been presented and cannot
// be taken back; the game sees the correction in the state.
//
// A Client, its Executor, ActionLog and State belong to one goroutine; no
// method is safe for concurrent use. Tick, Confirm and Reconcile allocate
// nothing in steady state.
type Client[S State] struct {
	x      *Executor[S]
	log    *ActionLog
	reg    *Registry[S]
	peer   Sender
	cfg    ClientConfig
	sample Sampler
	step   StepFunc

	hooks ClientHooks
	stats ClientStats

	ready      bool
	busy       bool // inside Tick, Reconcile or a hook/sampler they call
	baseline   uint32
	present    uint32 // newest frame simulated
	confirmed  uint32 // every frame up to here is confirmed and applied
	sampleFrom uint32 // the sampler runs for predicted frames from here on

	slots       []confSlot // by frame % FrameCapacity
	staged      int
	stagedBytes int

	in    InputBuffer
	mem   frameCopy
	pred  remotePrediction
	sums  checksumRing
	hasCS bool
	fix   []Record // Refused: a frame's records without the refused input
}

// NewClient builds the client of peer (0–253) over x, which it drives from
// now on: it begins, reopens and closes the frames of x's log, runs sample
// (nil for none) on every predicted frame and step (nil for none) in
// derived mode, and installs its own presentation function on x (see
// Executor.SetReplay). The client is not ready until InstallSnapshot.
// Errors wrap ErrInvalidConfig.
func NewClient[S State](x *Executor[S], peer Sender, sample Sampler, step StepFunc, cfg ClientConfig) (*Client[S], error) {
	if x == nil {
		return nil, fmt.Errorf("%w: NewClient needs an executor", ErrInvalidConfig)
	}
	if !peer.IsPeer() {
		return nil, fmt.Errorf("%w: client peer id %d outside 0..%d", ErrInvalidConfig, peer, MaxPeerID)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	capacity := x.Log().FrameCapacity()
	if cfg.MaxPredictionFrames > capacity {
		return nil, fmt.Errorf("%w: MaxPredictionFrames %d exceeds the log's FrameCapacity %d", ErrInvalidConfig, cfg.MaxPredictionFrames, capacity)
	}
	if cfg.MaxPredictionFrames == 0 {
		cfg.MaxPredictionFrames = capacity
	}
	cfg = cfg.WithDefaults()
	c := &Client[S]{
		x: x, log: x.Log(), reg: x.Registry(), peer: peer, cfg: cfg,
		sample: sample, step: step,
		slots: make([]confSlot, capacity),
		hasCS: cfg.Checksum != nil,
	}
	c.in = InputBuffer{validate: c.reg.Validate, maxPerFrame: cfg.MaxInputsPerFrame, maxBytes: cfg.MaxInputBytes}
	if c.hasCS {
		c.sums = newChecksumRing(2 * capacity)
	}
	x.setPresented(c.mem.seen)
	return c, nil
}

// Executor returns the client's executor.
func (c *Client[S]) Executor() *Executor[S] { return c.x }

// Config returns the client's configuration, defaults filled in.
func (c *Client[S]) Config() ClientConfig { return c.cfg }

// Peer returns the local peer id.
func (c *Client[S]) Peer() Sender { return c.peer }

// SetHooks replaces the client's hooks.
func (c *Client[S]) SetHooks(h ClientHooks) { c.hooks = h }

// Stats returns a copy of the running totals.
func (c *Client[S]) Stats() ClientStats { return c.stats }

// Ready reports whether a snapshot is installed (S-H7).
func (c *Client[S]) Ready() bool { return c.ready }

// Baseline returns the frame of the installed snapshot.
func (c *Client[S]) Baseline() uint32 { return c.baseline }

// Present returns the newest frame simulated (the baseline right after
// InstallSnapshot).
func (c *Client[S]) Present() uint32 { return c.present }

// Confirmed returns the newest frame such that it and every frame before it
// (back to the baseline) are confirmed and applied.
func (c *Client[S]) Confirmed() uint32 { return c.confirmed }

// InstallSnapshot marks the initial snapshot (or a later state burst)
// installed: the state as of the end of frame — written into the store by
// the caller before this call, with the store's own methods — is the new
// baseline. The log is reset, staged confirmations are discarded, and the
// client becomes ready: the next Tick simulates frame+1 (S-H7).
//
// The unconfirmed own inputs for frames after frame are kept (those up to
// it are in the snapshot): they were sampled and sent, the server has them
// or reports refusing them (Refused), and the stream will confirm them;
// the sampler is not run again for any frame already simulated before the
// install (SampleFrom: frame+1, or one past the old present). Called from
// inside Tick it returns ErrInStep.
func (c *Client[S]) InstallSnapshot(frame uint32) error {
	if c.busy {
		return ErrInStep
	}
	from := frame
	if c.ready {
		from = max(from, c.present)
	}
	c.log.Reset()
	c.baseline, c.present, c.confirmed = frame, frame, frame
	c.sampleFrom = from + 1
	for i := range c.slots {
		c.slots[i].state = confNone
	}
	c.staged, c.stagedBytes = 0, 0
	c.in.sampling = false
	c.in.prune(frame)
	if c.hasCS {
		c.sums.reset()
	}
	c.ready = true
	c.stats.Snapshots++
	return nil
}

// SampleFrom returns the first frame the sampler is called for: a frame
// before it that the client predicts is simulated without new own inputs.
func (c *Client[S]) SampleFrom() uint32 { return c.sampleFrom }

// SetSampleFrom makes the client call the sampler only for frames from
// frame on (it never lowers the frame InstallSnapshot set): after a join
// the frames up to the server's newest are final, or will be before an
// input for them arrives, and the server would refuse their inputs
// (DropTooOld). ClientLink sets it from what the server announces with
// its snapshot (ClientLink.ServerFrame).
func (c *Client[S]) SetSampleFrom(frame uint32) { c.sampleFrom = max(c.sampleFrom, frame) }

// Refused takes the server's report that it refused one of the client's
// own inputs — action type typ on entity e with payload, for frame — so
// that its frame will never hold it: the input leaves the unconfirmed
// history (PendingInputs), a staged confirmation of the frame that put it
// back loses it, and a frame already applied with it is corrected (staged
// again without it and replayed by the next Tick or Reconcile, as Confirm
// does with a correction). A frame at or before the baseline is ignored
// (the snapshot is the server's state); so is an input the client does
// not hold. Errors: ErrNotReady, ErrInStep, ErrTooOld when the frame was
// applied and the ring no longer holds it (the remedy is a state burst).
func (c *Client[S]) Refused(frame uint32, typ ActionTypeID, e Entity, payload []byte) error {
	if c.busy {
		return ErrInStep
	}
	if !c.ready {
		return ErrNotReady
	}
	if frame <= c.baseline {
		return nil
	}
	c.in.remove(frame, typ, e, payload)
	sl, st := c.slot(frame)
	switch {
	case st == confStaged:
		for i := range sl.recs {
			r := &sl.recs[i]
			if r.sender == c.peer && r.typ == typ && r.e == e && bytes.Equal(sl.buf[r.off:r.off+r.n], payload) {
				sl.recs = append(sl.recs[:i], sl.recs[i+1:]...) // its bytes stay counted until applied
				break
			}
		}
		return nil
	case frame <= c.confirmed || st == confApplied:
		v, err := c.log.Frame(frame)
		if err != nil {
			return ErrTooOld
		}
		c.fix = c.fix[:0]
		found := false
		for i := range v.Len() {
			r := v.Record(i)
			if !found && r.Sender == c.peer && r.Type == typ && r.Entity == e && bytes.Equal(r.Payload, payload) {
				found = true
				continue
			}
			c.fix = append(c.fix, r)
		}
		if !found {
			return nil
		}
		return c.Confirm(frame, c.fix) // a correction: staged again, replayed
	}
	return nil
}

// OwnInputs counts the records of the client's own peer in the log's copy
// of frame f; ok is false when the log does not hold f.
func (c *Client[S]) OwnInputs(f uint32) (n int, ok bool) {
	v, err := c.log.Frame(f)
	if err != nil {
		return 0, false
	}
	for i := range v.Len() {
		if v.Record(i).Sender == c.peer {
			n++
		}
	}
	return n, true
}

// AppendFrame appends the records the client holds for frame f — staged
// (received, not applied yet) or applied (its log frame) — and reports
// whether it holds f at all. The payloads alias the client's buffers and
// stay valid until the next Confirm, Tick, Reconcile or InstallSnapshot.
func (c *Client[S]) AppendFrame(dst []Record, f uint32) ([]Record, bool) {
	if !c.ready || f <= c.baseline {
		return dst, false
	}
	sl, st := c.slot(f)
	switch {
	case st == confStaged:
		for i := range sl.recs {
			r := &sl.recs[i]
			dst = append(dst, Record{Sender: r.sender, Type: r.typ, Entity: r.e, Payload: sl.buf[r.off : r.off+r.n : r.off+r.n]})
		}
		return dst, true
	case f <= c.confirmed || st == confApplied:
		v, err := c.log.Frame(f)
		if err != nil {
			return dst, false
		}
		for i := range v.Len() {
			dst = append(dst, v.Record(i))
		}
		return dst, true
	}
	return dst, false
}

// Confirm stages the authoritative records of frame — all of them, in the
// server's order, as its log holds them (inputs of every peer, local and
// derived records) — to be applied by the next Tick or Reconcile. recs and
// their payloads are copied; the caller keeps ownership. Record.PriorLen is
// ignored.
//
// The same records again — for a frame staged or already applied — are a
// duplicate: ignored (nil; counted in ConfirmDuplicates), as is any frame at
// or before the baseline. Different records for such a frame are a
// correction: the server changed the frame after sending it (a late input
// it still accepted). A staged version is replaced; an applied one is
// staged again, the confirmed run falls back to before it, and the next
// reconciliation rewinds and replays from it (ConfirmCorrections) — as long
// as the ring still holds the frame, else ErrTooOld (the remedy is a state
// burst). Sending only final frames (Server.FinalThrough) avoids
// corrections altogether.
//
// Errors, each leaving the client unchanged: ErrNotReady before
// InstallSnapshot (S-H7: stream frames are never applied before the
// snapshot; the server's stream re-sends them); ErrTooFarAhead for a frame
// more than FrameCapacity beyond the newest confirmed one; ErrTooOld for a
// correction the ring can no longer apply; ErrMalformed for more than
// LogConfig.MaxRecordsPerFrame records or a record Registry.Validate refuses;
// ErrPendingFull beyond MaxStagedBytes; ErrInStep from inside Tick. Cost: a
// Validate and a copy per record (a comparison per record for a frame
// already held).
func (c *Client[S]) Confirm(frame uint32, recs []Record) error {
	if c.busy {
		return ErrInStep
	}
	if !c.ready {
		c.stats.ConfirmRefused++
		return ErrNotReady
	}
	if frame <= c.baseline {
		c.stats.ConfirmDuplicates++
		return nil
	}
	sl, st := c.slot(frame)
	correction := false
	switch {
	case frame <= c.confirmed || st == confApplied:
		if v, err := c.log.Frame(frame); err == nil && viewHolds(v, recs) {
			c.stats.ConfirmDuplicates++
			return nil
		}
		if !c.log.HasFrame(frame) {
			c.stats.ConfirmRefused++
			return ErrTooOld
		}
		correction = true
	case st == confStaged:
		if sl.holds(recs) {
			c.stats.ConfirmDuplicates++
			return nil
		}
	case uint64(frame) > uint64(c.confirmed)+uint64(len(c.slots)):
		c.stats.ConfirmRefused++
		return ErrTooFarAhead
	}
	if len(recs) > c.log.cfg.MaxRecordsPerFrame {
		c.stats.ConfirmRefused++
		return ErrMalformed
	}
	size := 0
	for i := range recs {
		if err := c.reg.Validate(recs[i].Type, recs[i].Payload); err != nil {
			c.stats.ConfirmRefused++
			return ErrMalformed
		}
		size += len(recs[i].Payload)
	}
	replaced := 0
	if st == confStaged {
		replaced = len(sl.buf)
	}
	if c.stagedBytes-replaced+size > c.cfg.MaxStagedBytes {
		c.stats.ConfirmRefused++
		return ErrPendingFull
	}
	if st == confStaged {
		c.staged--
		c.stagedBytes -= replaced
	}
	sl.frame, sl.state = frame, confStaged
	sl.recs, sl.buf = sl.recs[:0], sl.buf[:0]
	for i := range recs {
		r := &recs[i]
		sl.recs = append(sl.recs, copiedRec{sender: r.Sender, typ: r.Type, e: r.Entity, off: uint32(len(sl.buf)), n: uint32(len(r.Payload))})
		sl.buf = append(sl.buf, r.Payload...)
	}
	c.staged++
	c.stagedBytes += size
	if correction {
		c.stats.ConfirmCorrections++
		c.confirmed = min(c.confirmed, frame-1)
	}
	return nil
}

// holds reports whether the slot holds exactly recs, in order.
func (sl *confSlot) holds(recs []Record) bool {
	if len(sl.recs) != len(recs) {
		return false
	}
	for i := range recs {
		r, s := &recs[i], &sl.recs[i]
		if r.Sender != s.sender || r.Type != s.typ || r.Entity != s.e || !bytes.Equal(r.Payload, sl.buf[s.off:s.off+s.n]) {
			return false
		}
	}
	return true
}

// viewHolds reports whether the log frame v holds exactly recs, in order.
func viewHolds(v FrameView, recs []Record) bool {
	if v.Len() != len(recs) {
		return false
	}
	for i := range recs {
		r, l := &recs[i], v.Record(i)
		if r.Sender != l.Sender || r.Type != l.Type || r.Entity != l.Entity || !bytes.Equal(r.Payload, l.Payload) {
			return false
		}
	}
	return true
}

func (c *Client[S]) slot(f uint32) (*confSlot, confState) {
	sl := &c.slots[int(f%uint32(len(c.slots)))]
	if sl.frame != f {
		return sl, confNone
	}
	return sl, sl.state
}

// Tick reconciles (see Reconcile), then simulates every frame after the
// present up to and including frame for the first time: a frame whose
// authoritative records are already staged is applied from them; any other
// is predicted — sampled, own inputs executed, step run. frame may equal
// the present (reconcile only). It stops early, with ErrPredictionLimit,
// before predicting a frame more than MaxPredictionFrames beyond the newest
// confirmed one; the frames simulated until then stay simulated.
//
// Errors: ErrNotReady before InstallSnapshot (nothing is sampled or
// executed, S-H7), ErrInStep from inside Tick, ErrFrameOrder for a frame
// before the present, ErrPredictionLimit, and log errors (ErrFrameWrap).
func (c *Client[S]) Tick(frame uint32) error {
	if c.busy {
		return ErrInStep
	}
	if !c.ready {
		return ErrNotReady
	}
	if frame < c.present {
		return ErrFrameOrder
	}
	c.busy = true
	defer c.idle()
	c.stats.Ticks++
	if err := c.reconcile(); err != nil {
		return err
	}
	for c.present < frame {
		f := c.present + 1
		if _, st := c.slot(f); st != confStaged && f-c.confirmed > uint32(c.cfg.MaxPredictionFrames) {
			c.stats.PredictionStalls++
			c.in.prune(c.confirmed)
			return ErrPredictionLimit
		}
		if err := c.simulate(f, false); err != nil {
			return err
		}
		c.present = f
		c.advance()
	}
	c.in.prune(c.confirmed)
	return nil
}

// Reconcile applies the staged confirmations for frames up to the present
// now, without simulating a new frame; Tick does this first anyway. Errors:
// ErrNotReady, ErrInStep, and rewind or log errors.
func (c *Client[S]) Reconcile() error {
	if c.busy {
		return ErrInStep
	}
	if !c.ready {
		return ErrNotReady
	}
	c.busy = true
	defer c.idle()
	if err := c.reconcile(); err != nil {
		return err
	}
	c.in.prune(c.confirmed)
	return nil
}

func (c *Client[S]) idle() { c.busy = false }

// advance moves the confirmed frontier over applied frames.
func (c *Client[S]) advance() {
	for c.confirmed < c.present {
		if _, st := c.slot(c.confirmed + 1); st != confApplied {
			return
		}
		c.confirmed++
	}
}

func (c *Client[S]) unstage(sl *confSlot) {
	sl.state = confApplied
	c.staged--
	c.stagedBytes -= len(sl.buf)
	c.stats.FramesConfirmed++
}

func (c *Client[S]) reconcile() error {
	if c.staged == 0 {
		return nil
	}
	// Confirmations that equal the prediction need no rewind, whether or
	// not the frames before them are confirmed yet: the log already holds
	// exactly the authoritative records, and should an earlier frame turn
	// out mispredicted, the replay from it re-executes these frames from
	// those records. The rewind starts at the oldest staged frame that
	// differs. (A frame applied out of order joins the confirmed run as
	// soon as the frames before it do.)
	from, found := uint32(0), false
	// (f > c.confirmed stops the walk should f wrap past 2^32−1.)
	for f := c.confirmed + 1; f <= c.present && f > c.confirmed; f++ {
		sl, st := c.slot(f)
		if st != confStaged {
			continue
		}
		if !c.matchesLog(sl, f) {
			from, found = f, true
			break
		}
		c.unstage(sl)
		c.stats.PredictionHits++
		if c.hooks.OnConfirmed != nil {
			c.hooks.OnConfirmed(f)
		}
	}
	c.advance()
	if !found {
		return nil
	}
	plan, err := c.x.PlanRewind(from)
	if err != nil {
		return fmt.Errorf("rollback: client rewind to before frame %d: %w", from, err)
	}
	res, err := c.x.CommitRewind(plan)
	if err != nil {
		return fmt.Errorf("rollback: client rewind to before frame %d: %w", from, err)
	}
	c.stats.Rewinds++
	c.stats.FramesReplayed += uint64(plan.Frames)
	c.stats.MaxRewindFrames = max(c.stats.MaxRewindFrames, plan.Frames)
	if c.hooks.OnRewind != nil {
		c.hooks.OnRewind(RewindEvent{
			From: plan.From, Through: plan.Through,
			Frames: plan.Frames, Records: plan.Records, Captures: plan.Captures,
			Failed: res.Failed, Sender: SenderLocal,
		})
	}
	for f := from; ; f++ {
		if err := c.simulate(f, true); err != nil {
			return err
		}
		if f == c.present {
			break
		}
	}
	c.advance()
	return nil
}

// matchesLog reports whether the log holds exactly the staged records for
// f, in order.
func (c *Client[S]) matchesLog(sl *confSlot, f uint32) bool {
	v, err := c.log.Frame(f)
	if err != nil || v.Len() != len(sl.recs) {
		return false
	}
	for i := range sl.recs {
		r, s := v.Record(i), &sl.recs[i]
		if r.Sender != s.sender || r.Type != s.typ || r.Entity != s.e || !bytes.Equal(r.Payload, sl.buf[s.off:s.off+s.n]) {
			return false
		}
	}
	return true
}

// simulate executes frame f: a replay (reopen) or a first-time simulation
// (begin), from staged authoritative records, from the log's authoritative
// copy, or as a prediction.
func (c *Client[S]) simulate(f uint32, replay bool) error {
	l := c.log
	sl, st := c.slot(f)
	if st != confStaged && (st != confApplied || !replay) && c.cfg.Predict != nil {
		c.loadBasis(f) // before beginning f can recycle the basis's slot
	}
	if replay {
		v, err := l.Frame(f)
		if err != nil {
			return fmt.Errorf("rollback: client replay of frame %d: %w", f, err)
		}
		c.mem.load(v) // before reopening recycles the arena
		if err := l.ReopenFrame(f); err != nil {
			return fmt.Errorf("rollback: client replay of frame %d: %w", f, err)
		}
	} else {
		c.mem.reset()
		if err := l.BeginFrame(f); err != nil {
			return err
		}
	}
	c.x.SetReplay(replay)
	switch {
	case st == confStaged:
		for i := range sl.recs {
			r := &sl.recs[i]
			c.execAuthoritative(r.sender, r.typ, r.e, sl.buf[r.off:r.off+r.n:r.off+r.n])
		}
		c.unstage(sl)
	case st == confApplied && replay:
		for i := range c.mem.recs {
			r := &c.mem.recs[i]
			c.execAuthoritative(r.sender, r.typ, r.e, c.mem.payload(i))
		}
	default:
		st = confNone
		if !replay {
			c.stats.FramesPredicted++
			if c.sample != nil && f >= c.sampleFrom {
				c.in.sampling, c.in.frame, c.in.first = true, f, len(c.in.recs)
				c.sample(f, &c.in)
				c.in.sampling = false
				c.stats.InputsSampled += uint64(len(c.in.recs) - c.in.first)
			}
		}
		c.execPredicted(f)
		if c.step != nil {
			c.x.SetDerived(true)
			c.step(f, replay)
			c.x.SetDerived(false)
		}
	}
	c.x.SetReplay(false)
	if err := l.CloseFrame(); err != nil {
		return fmt.Errorf("rollback: client close of frame %d: %w", f, err)
	}
	if c.hasCS && f%uint32(c.cfg.ChecksumEvery) == 0 {
		c.sums.put(f, c.cfg.Checksum())
	}
	if st == confStaged && c.hooks.OnConfirmed != nil {
		c.hooks.OnConfirmed(f)
	}
	return nil
}

// execAuthoritative executes one authoritative record under its own
// provenance (a derived record is re-stamped derived by derived mode).
func (c *Client[S]) execAuthoritative(sender Sender, typ ActionTypeID, e Entity, payload []byte) {
	c.x.SetDerived(sender == SenderDerived)
	if err := c.x.Execute(sender, typ, e, payload); err != nil {
		c.stats.ConfirmedRejected++
	}
	c.x.SetDerived(false)
}

// PendingInputs appends the client's unconfirmed own inputs to dst, oldest
// frame first, and returns the extended slice: what the network layer sends
// to the server, and re-sends until the frames are confirmed. Each Input's
// Payload aliases the client's history and stays valid until the next
// Tick, Reconcile or InstallSnapshot. Allocates only if dst must grow.
func (c *Client[S]) PendingInputs(dst []Input) []Input {
	for i := range c.in.recs {
		r := &c.in.recs[i]
		dst = append(dst, Input{Frame: r.frame, Sender: c.peer, Type: r.typ, Entity: r.e, Payload: c.in.payload(r)})
	}
	return dst
}

// Checksum returns the checksum ClientConfig.Checksum computed at frame's
// last close, if one is held; it is authoritative only for frame ≤
// Confirmed().
func (c *Client[S]) Checksum(frame uint32) (uint64, bool) {
	if !c.hasCS {
		return 0, false
	}
	return c.sums.get(frame)
}

// VerifyChecksum compares the server's checksum of frame (remote) with the
// client's, taken when the frame's authoritative state was last computed.
// nil: they match. An error wrapping ErrDesync: they differ — the two sides'
// states diverged at or before frame; it is counted, reported to
// ClientHooks.OnDesync with the frame and both values, and the remedy is a
// state burst (InstallSnapshot). ErrFrameNotHeld: the client has no
// confirmed checksum for frame (checksums off, frame not confirmed yet, not
// a multiple of ChecksumEvery, or older than twice the ring); try a newer
// frame. The server's value should be a final one (Server.Checksum).
func (c *Client[S]) VerifyChecksum(frame uint32, remote uint64) error {
	if !c.ready || frame > c.confirmed || frame <= c.baseline {
		return ErrFrameNotHeld
	}
	local, ok := c.Checksum(frame)
	if !ok {
		return ErrFrameNotHeld
	}
	if local != remote {
		c.stats.Desyncs++
		if c.hooks.OnDesync != nil {
			c.hooks.OnDesync(Desync{Frame: frame, Local: local, Remote: remote})
		}
		return fmt.Errorf("%w: frame %d: local %016x, remote %016x", ErrDesync, frame, local, remote)
	}
	c.stats.ChecksumsVerified++
	return nil
}
