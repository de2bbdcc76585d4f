package rollback

import (
	"fmt"
	"slices"
)

// Server defaults and ranges.
const (
	// defaultMaxFutureFrames is ServerConfig.MaxFutureFrames when left zero.
	defaultMaxFutureFrames = 32
	// maxMaxFutureFrames is the largest ServerConfig.MaxFutureFrames.
	maxMaxFutureFrames = 1 << 16
	// defaultMaxPendingTotal is ServerConfig.MaxPendingTotal when left zero.
	defaultMaxPendingTotal = 4096
	// maxMaxPendingTotal is the largest ServerConfig.MaxPendingTotal.
	maxMaxPendingTotal = 1 << 20
	// defaultMaxPendingPerPeer is ServerConfig.MaxPendingPerPeer when left
	// zero.
	defaultMaxPendingPerPeer = 512
	// defaultMaxPendingBytes is ServerConfig.MaxPendingBytes when left zero.
	defaultMaxPendingBytes = 1 << 20
	// minMaxPendingBytes is the smallest ServerConfig.MaxPendingBytes.
	minMaxPendingBytes = 1 << 10
	// maxMaxPendingBytes is the largest ServerConfig.MaxPendingBytes.
	maxMaxPendingBytes = 1 << 30
	// defaultMaxQueuedActions is ServerConfig.MaxQueuedActions when left
	// zero.
	defaultMaxQueuedActions = 1024
	// defaultTargetBufferFrames is ServerConfig.TargetBufferFrames when left
	// zero.
	defaultTargetBufferFrames = 2.0
	// defaultDilationGain is ServerConfig.DilationGain when left zero.
	defaultDilationGain = 0.01
	// defaultMaxTimeDilation is ServerConfig.MaxTimeDilation when left zero.
	defaultMaxTimeDilation = 0.05

	// depthSmoothing is the weight of a new buffer-depth sample in a peer's
	// exponentially weighted average (about the last 8 samples count).
	depthSmoothing = 0.125
)

// MaxChecksumEvery is the largest ChecksumEvery of ServerConfig and
// ClientConfig (and of the links' config): a checksum at least every 65,536
// frames.
const MaxChecksumEvery = 1 << 16

// ServerConfig configures a Server. It is a plain value: the zero value of
// every field means its default, and NewServer validates it. The frame
// capacity (how far back a late input can still be applied) is the log's
// LogConfig.FrameCapacity.
type ServerConfig struct {
	// FirstFrame is the first frame the server simulates when its log
	// holds no frame yet; inputs for earlier frames are too old. Default 0.
	// Ignored when the log already holds frames: the server continues after
	// the newest.
	FirstFrame uint32

	// MaxRewindFrames bounds how far back a late input may reach: an input
	// whose rewind would undo more than MaxRewindFrames frames (its frame
	// is older than newest−MaxRewindFrames+1) is too old, as is one the
	// ring no longer holds. It caps the cost of one Tick's rewind, and makes
	// a frame final — no input can change it any more — once it is
	// MaxRewindFrames older than the newest simulated frame (FinalThrough).
	// Default and maximum: the log's FrameCapacity; minimum 1.
	MaxRewindFrames int

	// MaxFutureFrames bounds how far ahead of the server's newest simulated
	// frame a peer may tag an input: the frame number is attacker-chosen,
	// and an input held for a far-future frame occupies the pending budget
	// until then. Default 32 (about half a second at 60 Hz); range
	// 1..65536.
	MaxFutureFrames int

	// MaxPendingTotal bounds the inputs queued between ticks (from all
	// peers, including inputs held for future frames). Default 4096; range
	// 1..1<<20.
	MaxPendingTotal int

	// MaxPendingPerPeer bounds the inputs one peer may have queued, so one
	// flooding peer cannot exhaust MaxPendingTotal for everyone. Default
	// 512; range 1..1<<20.
	MaxPendingPerPeer int

	// MaxPendingBytes bounds the payload bytes queued between ticks.
	// Default 1 MiB; range 1 KiB..1 GiB.
	MaxPendingBytes int

	// MaxQueuedActions bounds EnqueueAction's queue between ticks. Default
	// 1024; range 1..1<<20.
	MaxQueuedActions int

	// HasServerPeer makes EnqueueAction record its actions under
	// ServerPeer (a peer id, subject to the owner rule like any peer's
	// input — the host player of a listen server) instead of SenderLocal
	// (which may act on any entity). Submit then refuses ServerPeer as a
	// sender (DropNotPeer): no remote peer may speak for the server.
	HasServerPeer bool
	// ServerPeer is the server's own peer id when HasServerPeer is set;
	// 0..MaxPeerID.
	ServerPeer Sender

	// TargetBufferFrames is the buffer depth (see ServerPeerStats.AvgDepth) the
	// time-dilation feedback steers each peer towards: how many frames
	// ahead of the server's simulation its inputs should arrive. Default
	// 2; range (0, 1024].
	TargetBufferFrames float64
	// DilationGain is the time dilation asked for per frame of depth
	// error. Default 0.01 (1 % faster per frame too shallow); range
	// (0, 1].
	DilationGain float64
	// MaxTimeDilation clips the feedback. Default 0.05 (±5 %); range
	// (0, 1].
	MaxTimeDilation float64

	// Checksum, if set, is called after every close of a frame whose
	// number is a multiple of ChecksumEvery, first-time or replayed, and
	// its result is kept for Server.Checksum (Store.Checksum is the
	// reference). It runs on the tick's goroutine and must not mutate the
	// state.
	Checksum func() uint64
	// ChecksumEvery is the checksum interval in frames. Default 1; range
	// 1..MaxChecksumEvery.
	ChecksumEvery int
}

// Validate reports whether c is usable. Zero fields are valid (defaults).
// Errors wrap ErrInvalidConfig.
func (c ServerConfig) Validate() error {
	intIn := func(name string, v, lo, hi int) error {
		if v != 0 && (v < lo || v > hi) {
			return fmt.Errorf("%w: %s %d outside %d..%d", ErrInvalidConfig, name, v, lo, hi)
		}
		return nil
	}
	floatIn := func(name string, v, hi float64) error {
		if v != 0 && !(v > 0 && v <= hi) { // also refuses NaN
			return fmt.Errorf("%w: %s %g outside (0, %g]", ErrInvalidConfig, name, v, hi)
		}
		return nil
	}
	for _, err := range []error{
		intIn("MaxRewindFrames", c.MaxRewindFrames, 1, MaxFrameCapacity),
		intIn("MaxFutureFrames", c.MaxFutureFrames, 1, maxMaxFutureFrames),
		intIn("MaxPendingTotal", c.MaxPendingTotal, 1, maxMaxPendingTotal),
		intIn("MaxPendingPerPeer", c.MaxPendingPerPeer, 1, maxMaxPendingTotal),
		intIn("MaxPendingBytes", c.MaxPendingBytes, minMaxPendingBytes, maxMaxPendingBytes),
		intIn("MaxQueuedActions", c.MaxQueuedActions, 1, maxMaxPendingTotal),
		intIn("ChecksumEvery", c.ChecksumEvery, 1, MaxChecksumEvery),
		floatIn("TargetBufferFrames", c.TargetBufferFrames, 1024),
		floatIn("DilationGain", c.DilationGain, 1),
		floatIn("MaxTimeDilation", c.MaxTimeDilation, 1),
	} {
		if err != nil {
			return err
		}
	}
	if c.HasServerPeer && !c.ServerPeer.IsPeer() {
		return fmt.Errorf("%w: ServerPeer %d is not a peer id (0..%d)", ErrInvalidConfig, c.ServerPeer, MaxPeerID)
	}
	return nil
}

// WithDefaults returns c with every zero field replaced by its default,
// except MaxRewindFrames, whose default depends on the log (NewServer fills
// it in).
func (c ServerConfig) WithDefaults() ServerConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxFutureFrames, defaultMaxFutureFrames)
	def(&c.MaxPendingTotal, defaultMaxPendingTotal)
	def(&c.MaxPendingPerPeer, defaultMaxPendingPerPeer)
	def(&c.MaxPendingBytes, defaultMaxPendingBytes)
	def(&c.MaxQueuedActions, defaultMaxQueuedActions)
	def(&c.ChecksumEvery, 1)
	if c.TargetBufferFrames == 0 {
		c.TargetBufferFrames = defaultTargetBufferFrames
	}
	if c.DilationGain == 0 {
		c.DilationGain = defaultDilationGain
	}
	if c.MaxTimeDilation == 0 {
		c.MaxTimeDilation = defaultMaxTimeDilation
	}
	return c
}

// DropReason says why the server refused a peer input.
type DropReason uint8

// Reasons for dropping an input. Each is counted in total
// (ServerStats.Dropped) and per peer (ServerPeerStats.Dropped).
const (
	// DropNotPeer: the sender is not a remote peer id (254, 255, or the
	// server's own ServerPeer). ErrNotPeer.
	DropNotPeer DropReason = iota
	// DropMalformed: unknown action type, or a payload the type refuses
	// (Registry.Validate). ErrUnknownAction or ErrMalformed.
	DropMalformed
	// DropNotOwner: the sender does not own the subject entity, or it is
	// not live. Screened at the door so a forged input cannot force a
	// rewind. ErrNotOwner or ErrStaleEntity.
	DropNotOwner
	// DropTooOld: the frame has already left the ring, or is more than
	// MaxRewindFrames behind (S-G5). ErrTooOld.
	DropTooOld
	// DropTooFarAhead: the frame is more than MaxFutureFrames beyond the
	// newest simulated frame (S-G5). ErrTooFarAhead.
	DropTooFarAhead
	// DropPendingFull: MaxPendingTotal or MaxPendingBytes is reached
	// (S-G5). ErrPendingFull.
	DropPendingFull
	// DropPeerFull: the sender has MaxPendingPerPeer inputs queued (S-G5).
	// ErrPendingFull.
	DropPeerFull
	// DropAgedOut: an input queued for a frame the log held at Submit no
	// longer held at Tick, so it could not be replayed (only possible if
	// the log was changed under the server, e.g. Reset). Reported, never a
	// crash.
	DropAgedOut

	// numDropReasons is the number of reasons.
	numDropReasons
)

var dropReasonNames = [numDropReasons]string{
	"not-peer", "malformed", "not-owner", "too-old", "too-far-ahead", "pending-full", "peer-full", "aged-out",
}

// String returns a short name such as "too-old".
func (r DropReason) String() string {
	if r < numDropReasons {
		return dropReasonNames[r]
	}
	return "unknown"
}

// InputDrop describes one dropped input, as passed to ServerHooks.OnDrop.
type InputDrop struct {
	// Frame is the frame the input was tagged with.
	Frame uint32
	// Sender is the input's sender.
	Sender Sender
	// Type is the input's action type id.
	Type ActionTypeID
	// Entity is the input's subject entity.
	Entity Entity
	// Reason says why it was dropped.
	Reason DropReason
}

// RewindEvent describes one rollback, as passed to ServerHooks.OnRewind and
// ClientHooks.OnRewind: the state was rewound to the end of frame From−1 and
// frames [From, Through] were replayed.
type RewindEvent struct {
	// From is the first frame undone and replayed.
	From uint32
	// Through is the last (newest) frame undone and replayed.
	Through uint32
	// Frames, Records and Captures are the rewind plan's (see RewindPlan).
	Frames, Records, Captures int
	// Failed counts captures that could not be restored (see
	// RewindResult).
	Failed int
	// Sender is, on the server, the sender of a new input for frame From —
	// the input that set the rewind point (the lowest sender, if several);
	// on the client, SenderLocal.
	Sender Sender
}

// ServerHooks are optional callbacks for events the server reports. They run
// synchronously inside Submit or Tick, on the server's goroutine, must not
// call the server's Submit, EnqueueAction or Tick (those return ErrInStep),
// and should be cheap: OnDrop may run once per input under attack.
type ServerHooks struct {
	// OnDrop is called for every dropped input, with the reason (S-G5),
	// including aged-out replay targets (DropAgedOut).
	OnDrop func(InputDrop)
	// OnRewind is called after every rewind, before its replay.
	OnRewind func(RewindEvent)
	// OnFrame is called after every close of a frame, first-time (replay
	// false) or replayed (replay true), while the state is that frame's end
	// state.
	OnFrame func(frame uint32, replay bool)
}

// ServerStats are the server's running totals. Read them with
// Server.Stats; the executor's own Stats and rejection counters (refusals
// by sender and reason) complement them.
type ServerStats struct {
	// Ticks counts Tick calls that ran.
	Ticks uint64
	// FramesSimulated counts first-time frame simulations.
	FramesSimulated uint64
	// Rewinds counts rewinds (at most one per Tick).
	Rewinds uint64
	// FramesReplayed counts frames re-simulated by those rewinds.
	FramesReplayed uint64
	// MaxRewindFrames is the deepest rewind so far, in frames.
	MaxRewindFrames int

	// InputsAccepted counts peer inputs Submit queued.
	InputsAccepted uint64
	// InputsLate counts accepted inputs for frames already simulated
	// (retransmissions included; Duplicates tells those apart).
	InputsLate uint64
	// InputsApplied counts queued inputs executed for the first time.
	InputsApplied uint64
	// InputsRejected counts queued inputs the executor refused when they
	// came to execute (e.g. a touched entity the sender does not own); see
	// Executor.Rejected for the breakdown.
	InputsRejected uint64
	// Duplicates counts queued inputs discarded as retransmissions: the log
	// already held them, or the same input was queued twice for a frame.
	Duplicates uint64
	// dropped counts inputs Submit refused, by reason (S-G5): read it
	// with the Dropped and DroppedTotal methods.
	dropped [numDropReasons]uint64

	// HistoryReplayed counts input records re-executed from the log by
	// replays; HistoryRejected those the executor refused on replay.
	HistoryReplayed, HistoryRejected uint64
	// DerivedDropped counts derived records a replay dropped from the
	// log's history, to be recomputed by the step (S-G3).
	DerivedDropped uint64

	// LocalQueued counts EnqueueAction calls accepted; LocalApplied and
	// LocalRejected how their first execution went.
	LocalQueued, LocalApplied, LocalRejected uint64
}

// DroppedTotal returns the sum of Dropped over all reasons.
func (st ServerStats) DroppedTotal() uint64 { return sumCounts(st.dropped[:]) }

// Dropped returns how many inputs Submit refused for reason r (0 for a
// reason this version does not know).
func (st ServerStats) Dropped(r DropReason) uint64 { return countAt(st.dropped[:], int(r)) }

// Dropped returns how many of the peer's inputs were refused for reason r
// (0 for a reason this version does not know).
func (st ServerPeerStats) Dropped(r DropReason) uint64 { return countAt(st.dropped[:], int(r)) }

// DroppedTotal returns how many of the peer's inputs were refused, all
// reasons.
func (st ServerPeerStats) DroppedTotal() uint64 { return sumCounts(st.dropped[:]) }

// countAt returns c[i], or 0 when i is out of range.
func countAt(c []uint64, i int) uint64 {
	if i < 0 || i >= len(c) {
		return 0
	}
	return c[i]
}

// sumCounts returns the sum of c.
func sumCounts(c []uint64) uint64 {
	var n uint64
	for _, d := range c {
		n += d
	}
	return n
}

// ServerPeerStats are one peer's counters and buffer-depth estimate, returned by
// Server.Peer.
type ServerPeerStats struct {
	// Accepted counts inputs queued from the peer; Late those for frames
	// already simulated; Duplicates those discarded as retransmissions.
	Accepted, Late, Duplicates uint64
	// dropped counts refused inputs by reason.
	dropped [numDropReasons]uint64
	// Pending is the number of the peer's inputs queued now.
	Pending int

	// Samples counts buffer-depth samples: one per input (with a valid
	// sender and payload) that carried a newer frame than any before it
	// from this peer — retransmissions of older frames say nothing about
	// the peer's clock.
	Samples uint64
	// NewestFrame is the newest frame, within MaxFutureFrames of the
	// server's, the peer has tagged an input with (valid when Samples > 0).
	// A frame beyond that window is a sample but does not move NewestFrame,
	// so one wild frame number cannot hide the samples that follow it.
	NewestFrame uint32
	// LastDepth is the latest sample: the input's frame minus the server's
	// newest simulated frame when it arrived, clipped to
	// [−MaxRewindFrames−1, MaxFutureFrames+1]. 1 means just in time for the
	// next tick; 0 or less means late, forcing a rewind.
	LastDepth int
	// AvgDepth is the exponentially weighted average of the samples
	// (weight 1/8 per new sample).
	AvgDepth float64
	// TimeDilation is the feedback for the peer; see Server.TimeDilation.
	TimeDilation float64
}

type pendState uint8

const (
	pendLive pendState = iota // waiting for its frame
	pendUsed                  // merged into its frame this tick
	pendDup                   // a retransmission; discarded
	pendDead                  // dropped at Tick (aged out)
)

// pendingInput is one queued input; its payload is pendBuf[off:off+n].
type pendingInput struct {
	frame  uint32
	off, n uint32
	e      Entity
	typ    ActionTypeID
	sender Sender
	state  pendState
}

// op is one action to execute in a frame, merged from the log's history,
// the pending inputs and the local queue; idx indexes its source.
type op struct {
	sender Sender
	replay bool
	src    uint8
	idx    int32
}

const (
	srcHistory uint8 = iota
	srcPending
	srcLocal
)

type peerState struct {
	accepted, late, dups uint64
	dropped              [numDropReasons]uint64
	pending              int
	samples              uint64
	newest               uint32
	lastDepth            int
	avgDepth             float64
}

// Server is the server-authoritative orchestration of one session's
// rollback: it queues the peers' inputs as they arrive, and each Tick
// rewinds to just before the oldest frame that received a new input,
// replays forward with that input merged in, and simulates the new frames.
//
// A Tick(frame):
//
//  1. replayStart = the oldest pending frame carrying an input the log does
//     not already hold (FrameView.Contains): a retransmission of an input
//     already applied never forces a rewind (S-G1);
//  2. rewinds to the end of replayStart−1 (one rewind per tick, however many
//     late inputs);
//  3. replays every frame f in [replayStart, newest]: reads f's records
//     out of the log before reopening it, keeps the inputs (peer and local,
//     reapplied from the log) and drops the derived ones (the step will
//     recompute them, S-G3), merges the pending inputs for f, stable-sorts
//     by sender (S-G2), executes, runs the step in derived mode with
//     replay true, closes f;
//  4. simulates each new frame in (newest, frame] once, in order: pending
//     inputs for it plus — on the first of them only — the EnqueueAction
//     queue (S-G4), sorted by sender, executed, then the step with replay
//     false;
//  5. discards the consumed pending inputs, keeping those for later frames.
//
// Within one sender, inputs keep their merge order: the log's history
// first, then pending inputs in arrival order. Two servers fed the same
// inputs therefore agree whatever order the peers' inputs arrive in, as
// long as each peer's inputs for one frame arrive in the order the peer
// produced them — the network layer delivers them together, in one message.
// Identical inputs (same sender, type, entity and payload) for the same
// frame are one input: a second copy is a retransmission. A game that
// repeats an action within a frame encodes a count or sequence number in
// its payload.
//
// Inputs are screened on Submit (sender, payload, subject ownership, frame
// range, budgets) and dropped with a counted reason (S-G5); the owner rule
// is enforced again, in full, when they execute. A forged or late input
// costs at most one rewind per tick, bounded by the ring.
//
// Buffer depth and time dilation: every input that carries a newer frame
// than any before it from its peer is a sample of how far ahead of the
// server the peer runs (Peer, TimeDilation), which the network layer can
// send back to the client to keep its inputs arriving just ahead of need.
//
// A Server, its Executor, ActionLog and State belong to one goroutine; no
// method is safe for concurrent use. Submit, EnqueueAction and Tick
// allocate nothing in steady state (queues, the history copy and the merge
// list grow to their working size and are reused). Tick costs the inputs
// it executes plus, when it rewinds, the captured bytes of the undone
// frames and the re-execution of their inputs and steps.
type Server[S State] struct {
	x    *Executor[S]
	log  *ActionLog
	reg  *Registry[S]
	step StepFunc
	cfg  ServerConfig

	hooks ServerHooks
	stats ServerStats
	peers [int(MaxPeerID) + 1]peerState

	next  uint64 // the next frame to simulate for the first time
	busy  bool   // inside Tick
	sums  checksumRing
	hasCS bool

	pend     []pendingInput
	pendBuf  []byte
	pendBuf2 []byte // compaction target, swapped with pendBuf

	local    []pendingInput // EnqueueAction queue; frame unused
	localBuf []byte

	mem frameCopy
	ops []op
}

// NewServer builds a server over x, which it drives from now on: the
// server begins, reopens and closes the frames of x's log, runs step (nil
// for none) in derived mode, and installs its own presentation function
// on x (see Executor.SetReplay). x's log must have no open frame and no replay
// pending; if it holds frames, the server continues after the newest,
// otherwise it starts at cfg.FirstFrame. Errors wrap ErrInvalidConfig, or
// are ErrFrameOpen or ErrReplayPending.
func NewServer[S State](x *Executor[S], step StepFunc, cfg ServerConfig) (*Server[S], error) {
	if x == nil {
		return nil, fmt.Errorf("%w: NewServer needs an executor", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := x.Log()
	if cfg.MaxRewindFrames > l.FrameCapacity() {
		return nil, fmt.Errorf("%w: MaxRewindFrames %d exceeds the log's FrameCapacity %d", ErrInvalidConfig, cfg.MaxRewindFrames, l.FrameCapacity())
	}
	if _, open := l.OpenFrame(); open {
		return nil, ErrFrameOpen
	}
	if _, rep := l.Replaying(); rep {
		return nil, ErrReplayPending
	}
	s := &Server[S]{
		x:     x,
		log:   l,
		reg:   x.Registry(),
		step:  step,
		cfg:   cfg.WithDefaults(),
		next:  uint64(cfg.FirstFrame),
		hasCS: cfg.Checksum != nil,
	}
	if s.cfg.MaxRewindFrames == 0 {
		s.cfg.MaxRewindFrames = l.FrameCapacity()
	}
	if newest, ok := l.Newest(); ok {
		s.next = uint64(newest) + 1
	}
	if s.hasCS {
		s.sums = newChecksumRing(2 * l.FrameCapacity())
	}
	x.setPresented(s.mem.seen)
	return s, nil
}

// Executor returns the server's executor.
func (s *Server[S]) Executor() *Executor[S] { return s.x }

// Config returns the server's configuration, defaults filled in.
func (s *Server[S]) Config() ServerConfig { return s.cfg }

// SetHooks replaces the server's hooks.
func (s *Server[S]) SetHooks(h ServerHooks) { s.hooks = h }

// Stats returns a copy of the running totals.
func (s *Server[S]) Stats() ServerStats { return s.stats }

// Frame returns the newest frame simulated, if any.
func (s *Server[S]) Frame() (uint32, bool) {
	if newest, ok := s.log.Newest(); ok && uint64(newest)+1 == s.next {
		return newest, true
	}
	return 0, false
}

// Pending returns the number of queued peer inputs.
func (s *Server[S]) Pending() int { return len(s.pend) }

// QueuedActions returns the number of EnqueueAction actions waiting for the
// next first-time frame.
func (s *Server[S]) QueuedActions() int { return len(s.local) }

// current is the newest simulated frame, −1 before the first (as int64).
func (s *Server[S]) current() int64 { return int64(s.next) - 1 }

// FinalThrough returns the newest final frame: no input can change it or
// any frame before it any more (it is MaxRewindFrames behind the newest
// simulated frame). ok is false while no frame is final yet. What the
// server has recorded for a final frame — its records, its checksum — is
// what every client must end up with.
func (s *Server[S]) FinalThrough() (frame uint32, ok bool) {
	f := s.current() - int64(s.cfg.MaxRewindFrames)
	if f < 0 {
		return 0, false
	}
	return uint32(f), true
}

// tooOld reports whether an input for frame can no longer be applied.
func (s *Server[S]) tooOld(frame uint32) bool {
	cur := s.current()
	return int64(frame) <= cur && (cur-int64(frame) >= int64(s.cfg.MaxRewindFrames) || !s.log.HasFrame(frame))
}

// Submit queues an input from peer sender for frame: action type typ
// on entity e with payload, which is copied (the caller keeps ownership).
// The input is applied by the next Tick: on its frame's first simulation if
// that is still to come, else by rewinding to just before its frame and
// replaying. It is dropped and counted (ServerStats.Dropped, ServerPeerStats,
// ServerHooks.OnDrop) when, checked in this order:
//
//   - sender is not a remote peer id: ErrNotPeer;
//   - the type or payload is refused by Registry.Validate: ErrUnknownAction
//     or ErrMalformed;
//   - frame was already simulated and has left the ring, or is more than
//     MaxRewindFrames behind: ErrTooOld;
//   - frame is more than MaxFutureFrames beyond the newest simulated
//     frame: ErrTooFarAhead;
//   - e is not NoEntity and sender does not own it (or it is not live):
//     ErrNotOwner or ErrStaleEntity;
//   - the pending budget (MaxPendingTotal, MaxPendingBytes,
//     MaxPendingPerPeer) is exhausted: ErrPendingFull.
//
// Errors are bare sentinels: a flood of bad input allocates nothing. Called
// from inside Tick (the step, a hook) it returns ErrInStep. Cost: the
// type's Check, an owner lookup and a copy of the payload.
func (s *Server[S]) Submit(frame uint32, sender Sender, typ ActionTypeID, e Entity, payload []byte) error {
	if s.busy {
		return ErrInStep
	}
	d := InputDrop{Frame: frame, Sender: sender, Type: typ, Entity: e}
	if !sender.IsPeer() || (s.cfg.HasServerPeer && sender == s.cfg.ServerPeer) {
		return s.drop(d, DropNotPeer, ErrNotPeer)
	}
	if err := s.reg.Validate(typ, payload); err != nil {
		return s.drop(d, DropMalformed, err)
	}
	ps := &s.peers[sender]
	s.sampleDepth(ps, frame)
	cur := s.current()
	if s.tooOld(frame) {
		return s.drop(d, DropTooOld, ErrTooOld)
	}
	if int64(frame) > cur+int64(s.cfg.MaxFutureFrames) {
		return s.drop(d, DropTooFarAhead, ErrTooFarAhead)
	}
	if e != NoEntity {
		owner, err := s.x.state.Owner(e)
		if err != nil {
			return s.drop(d, DropNotOwner, ErrStaleEntity)
		}
		if owner != sender {
			return s.drop(d, DropNotOwner, ErrNotOwner)
		}
	}
	if len(s.pend) >= s.cfg.MaxPendingTotal || len(s.pendBuf)+len(payload) > s.cfg.MaxPendingBytes {
		return s.drop(d, DropPendingFull, ErrPendingFull)
	}
	if ps.pending >= s.cfg.MaxPendingPerPeer {
		return s.drop(d, DropPeerFull, ErrPendingFull)
	}
	s.pend = append(s.pend, pendingInput{
		frame: frame, off: uint32(len(s.pendBuf)), n: uint32(len(payload)),
		e: e, typ: typ, sender: sender,
	})
	s.pendBuf = append(s.pendBuf, payload...)
	ps.pending++
	ps.accepted++
	s.stats.InputsAccepted++
	if int64(frame) <= cur {
		ps.late++
		s.stats.InputsLate++
	}
	return nil
}

func (s *Server[S]) drop(d InputDrop, reason DropReason, err error) error {
	d.Reason = reason
	s.stats.dropped[reason]++
	if d.Sender.IsPeer() {
		s.peers[d.Sender].dropped[reason]++
	}
	if s.hooks.OnDrop != nil {
		s.hooks.OnDrop(d)
	}
	return err
}

// sampleDepth records a buffer-depth sample when frame is the newest the
// peer has sent.
func (s *Server[S]) sampleDepth(ps *peerState, frame uint32) {
	if ps.samples > 0 && frame <= ps.newest {
		return
	}
	depth := int64(frame) - s.current()
	if ahead := int64(s.cfg.MaxFutureFrames); depth > ahead {
		depth = ahead + 1 // outside the window: a sample, not a new newest
	} else {
		ps.newest = frame
	}
	depth = max(depth, -int64(s.cfg.MaxRewindFrames)-1)
	ps.lastDepth = int(depth)
	if ps.samples == 0 {
		ps.avgDepth = float64(depth)
	} else {
		ps.avgDepth += (float64(depth) - ps.avgDepth) * depthSmoothing
	}
	ps.samples++
}

// TimeDilation returns the feedback for peer p's clock:
//
//	dilation = clamp(DilationGain × (TargetBufferFrames − AvgDepth), −MaxTimeDilation, +MaxTimeDilation)
//
// Positive: p's inputs arrive too close to (or after) the frame they are
// for — the client should run its simulation faster, by that fraction
// (tick interval ÷ (1 + dilation)), to get further ahead. Negative: they
// arrive earlier than needed, adding latency — run slower. 0 with no
// samples. A peer id above MaxPeerID returns 0.
func (s *Server[S]) TimeDilation(p Sender) float64 {
	if !p.IsPeer() || s.peers[p].samples == 0 {
		return 0
	}
	ps := &s.peers[p]
	d := s.cfg.DilationGain * (s.cfg.TargetBufferFrames - ps.avgDepth)
	return min(max(d, -s.cfg.MaxTimeDilation), s.cfg.MaxTimeDilation)
}

// Peer returns peer p's counters and buffer depth (zero for a peer id above
// MaxPeerID).
func (s *Server[S]) Peer(p Sender) ServerPeerStats {
	if !p.IsPeer() {
		return ServerPeerStats{}
	}
	ps := &s.peers[p]
	return ServerPeerStats{
		Accepted: ps.accepted, Late: ps.late, Duplicates: ps.dups,
		dropped: ps.dropped, Pending: ps.pending,
		Samples: ps.samples, NewestFrame: ps.newest,
		LastDepth: ps.lastDepth, AvgDepth: ps.avgDepth,
		TimeDilation: s.TimeDilation(p),
	}
}

// EnqueueAction queues a server-authored input: action type typ on entity
// e with payload (copied). It is applied exactly once, on the next frame
// Tick simulates for the first time, merged and sorted by sender with that
// frame's peer inputs; from then on it is history, replayed from the log
// like any input and never queued again (S-G4). It is recorded under
// SenderLocal (which may act on any entity) or, with
// ServerConfig.HasServerPeer, under ServerPeer (subject to the owner rule).
//
// This is the path for a mutation the simulation cannot recompute — an
// admin command, a lobby spawn, a scripted trigger. Calling it from inside
// the step (or anywhere inside Tick) returns ErrInStep: the step re-runs on
// every replay of its frame and would queue a fresh copy each time; the
// step executes its own actions directly, as derived output. Other errors:
// ErrUnknownAction, ErrMalformed (Registry.Validate), ErrQueueFull
// (MaxQueuedActions).
func (s *Server[S]) EnqueueAction(typ ActionTypeID, e Entity, payload []byte) error {
	if s.busy {
		return ErrInStep
	}
	if err := s.reg.Validate(typ, payload); err != nil {
		return err
	}
	if len(s.local) >= s.cfg.MaxQueuedActions {
		return ErrQueueFull
	}
	sender := SenderLocal
	if s.cfg.HasServerPeer {
		sender = s.cfg.ServerPeer
	}
	s.local = append(s.local, pendingInput{off: uint32(len(s.localBuf)), n: uint32(len(payload)), e: e, typ: typ, sender: sender})
	s.localBuf = append(s.localBuf, payload...)
	s.stats.LocalQueued++
	return nil
}

// Checksum returns the checksum ServerConfig.Checksum computed at frame's
// last close, and whether it is final (see FinalThrough): no input can
// change it any more, so it is the value to send to clients for
// Client.VerifyChecksum. ok is false when no checksum is held for
// frame (checksums off, not a multiple of ChecksumEvery, not simulated, or
// older than twice the ring).
func (s *Server[S]) Checksum(frame uint32) (sum uint64, final, ok bool) {
	if !s.hasCS {
		return 0, false, false
	}
	sum, ok = s.sums.get(frame)
	ft, fok := s.FinalThrough()
	return sum, ok && fok && frame <= ft, ok
}

// Tick advances the simulation to frame: it applies every input queued
// since the last Tick — rewinding and replaying if any is for a frame
// already simulated — and simulates each frame after the newest up to and
// including frame once (see Server for the steps). frame may equal the
// newest simulated frame (apply late inputs, simulate nothing new); it may
// not be older. The first Tick of an empty log simulates cfg.FirstFrame
// through frame.
//
// Errors: ErrInStep (called from inside Tick), ErrFrameOpen or
// ErrReplayPending (someone else left the log mid-frame), ErrFrameOrder
// (frame older than the newest simulated frame), ErrFrameWrap from the
// log. An executor refusal of an input is not an error of Tick: it is
// counted (InputsRejected, the executor's Rejected) and the tick goes on.
func (s *Server[S]) Tick(frame uint32) error {
	if s.busy {
		return ErrInStep
	}
	l := s.log
	if _, open := l.OpenFrame(); open {
		return ErrFrameOpen
	}
	if _, rep := l.Replaying(); rep {
		return ErrReplayPending
	}
	if int64(frame) < s.current() {
		return ErrFrameOrder
	}
	s.busy = true
	defer s.idle()
	s.stats.Ticks++

	// Group the queue by frame, then sender; a sender's inputs keep their
	// arrival order. (The merge sorts by sender anyway; grouping here puts
	// each sender's copies of an input next to each other.)
	slices.SortStableFunc(s.pend, func(a, b pendingInput) int {
		switch {
		case a.frame < b.frame:
			return -1
		case a.frame > b.frame:
			return 1
		}
		return int(a.sender) - int(b.sender)
	})

	// Classify inputs for frames already simulated: aged out (dropped),
	// retransmission (the log holds it), or new — the oldest new one is the
	// replay start.
	var (
		replayStart uint32
		trigger     Sender
		found       bool
	)
	for i := range s.pend {
		p := &s.pend[i]
		if uint64(p.frame) >= s.next {
			break
		}
		v, err := l.Frame(p.frame)
		if err != nil {
			p.state = pendDead
			s.drop(InputDrop{Frame: p.frame, Sender: p.sender, Type: p.typ, Entity: p.e}, DropAgedOut, ErrAgedOut)
			continue
		}
		if v.Contains(p.sender, p.typ, p.e, s.pendPayload(p)) {
			s.markDup(p)
			continue
		}
		if !found {
			replayStart, trigger, found = p.frame, p.sender, true
		}
	}

	cursor := 0
	if found {
		newest := uint32(s.next - 1)
		plan, err := s.x.PlanRewind(replayStart)
		if err != nil {
			return fmt.Errorf("rollback: server rewind to before frame %d: %w", replayStart, err)
		}
		res, err := s.x.CommitRewind(plan)
		if err != nil {
			return fmt.Errorf("rollback: server rewind to before frame %d: %w", replayStart, err)
		}
		s.stats.Rewinds++
		s.stats.FramesReplayed += uint64(plan.Frames)
		s.stats.MaxRewindFrames = max(s.stats.MaxRewindFrames, plan.Frames)
		if s.hooks.OnRewind != nil {
			s.hooks.OnRewind(RewindEvent{
				From: plan.From, Through: plan.Through,
				Frames: plan.Frames, Records: plan.Records, Captures: plan.Captures,
				Failed: res.Failed, Sender: trigger,
			})
		}
		for f := replayStart; ; f++ {
			if err := s.simulate(f, true, &cursor); err != nil {
				return err
			}
			if f == newest {
				break
			}
		}
	}
	for f := s.next; f <= uint64(frame); f++ {
		if err := s.simulate(uint32(f), false, &cursor); err != nil {
			return err
		}
		s.next = f + 1
		s.stats.FramesSimulated++
	}
	s.compact(frame)
	return nil
}

func (s *Server[S]) idle() { s.busy = false }

func (s *Server[S]) pendPayload(p *pendingInput) []byte {
	return s.pendBuf[p.off : p.off+p.n : p.off+p.n]
}

func (s *Server[S]) markDup(p *pendingInput) {
	p.state = pendDup
	s.stats.Duplicates++
	s.peers[p.sender].dups++
}

// simulate executes frame f: a replay (reopen, history + late inputs) or a
// first-time simulation (begin, pending inputs + the local queue). cursor
// walks the frame-sorted pending queue across calls.
func (s *Server[S]) simulate(f uint32, replay bool, cursor *int) error {
	l := s.log
	s.ops = s.ops[:0]
	if replay {
		v, err := l.Frame(f)
		if err != nil {
			return fmt.Errorf("rollback: server replay of frame %d: %w", f, err)
		}
		// Read the history before reopening recycles the frame's arena.
		s.mem.load(v)
		for i := range s.mem.recs {
			if s.mem.recs[i].sender.IsDerived() {
				s.stats.DerivedDropped++ // the step recomputes it
				continue
			}
			s.ops = append(s.ops, op{sender: s.mem.recs[i].sender, replay: true, src: srcHistory, idx: int32(i)})
		}
		if err := l.ReopenFrame(f); err != nil {
			return fmt.Errorf("rollback: server replay of frame %d: %w", f, err)
		}
	} else {
		s.mem.reset()
		if err := l.BeginFrame(f); err != nil {
			return err
		}
	}

	// Pending inputs for f, minus copies of one already merged.
	i := *cursor
	for i < len(s.pend) && s.pend[i].frame < f {
		i++
	}
	for ; i < len(s.pend) && s.pend[i].frame == f; i++ {
		p := &s.pend[i]
		if p.state != pendLive {
			continue
		}
		if s.mergedTwice(i) {
			s.markDup(p)
			continue
		}
		p.state = pendUsed
		s.ops = append(s.ops, op{sender: p.sender, src: srcPending, idx: int32(i)})
	}
	*cursor = i
	if !replay {
		for j := range s.local {
			s.ops = append(s.ops, op{sender: s.local[j].sender, src: srcLocal, idx: int32(j)})
		}
	}

	if !slices.IsSortedFunc(s.ops, opBySender) { // usually sorted already
		slices.SortStableFunc(s.ops, opBySender)
	}
	for _, o := range s.ops {
		s.execute(o)
	}
	s.x.SetReplay(false)
	if !replay {
		s.local = s.local[:0]
		s.localBuf = s.localBuf[:0]
	}

	if s.step != nil {
		s.x.SetDerived(true)
		s.x.SetReplay(replay)
		s.step(f, replay)
		s.x.SetDerived(false)
		s.x.SetReplay(false)
	}
	if err := l.CloseFrame(); err != nil {
		return fmt.Errorf("rollback: server close of frame %d: %w", f, err)
	}
	if s.hasCS && f%uint32(s.cfg.ChecksumEvery) == 0 {
		s.sums.put(f, s.cfg.Checksum())
	}
	if s.hooks.OnFrame != nil {
		s.hooks.OnFrame(f, replay)
	}
	return nil
}

func opBySender(a, b op) int { return int(a.sender) - int(b.sender) }

// mergedTwice reports whether pending input i duplicates one merged
// earlier in the same frame: the queue is sorted by frame and sender, so
// only the run of the same frame and sender before i needs looking at.
func (s *Server[S]) mergedTwice(i int) bool {
	p := &s.pend[i]
	for j := i - 1; j >= 0; j-- {
		q := &s.pend[j]
		if q.frame != p.frame || q.sender != p.sender {
			return false
		}
		if q.state == pendUsed && q.typ == p.typ && q.e == p.e && q.n == p.n &&
			string(s.pendPayload(q)) == string(s.pendPayload(p)) {
			return true
		}
	}
	return false
}

// execute runs one merged action and counts the outcome.
func (s *Server[S]) execute(o op) {
	var (
		typ     ActionTypeID
		e       Entity
		payload []byte
	)
	switch o.src {
	case srcHistory:
		r := &s.mem.recs[o.idx]
		typ, e, payload = r.typ, r.e, s.mem.payload(int(o.idx))
	case srcPending:
		p := &s.pend[o.idx]
		typ, e, payload = p.typ, p.e, s.pendPayload(p)
	default:
		p := &s.local[o.idx]
		typ, e, payload = p.typ, p.e, s.localBuf[p.off:p.off+p.n:p.off+p.n]
	}
	s.x.SetReplay(o.replay)
	err := s.x.Execute(o.sender, typ, e, payload)
	switch o.src {
	case srcHistory:
		s.stats.HistoryReplayed++
		if err != nil {
			s.stats.HistoryRejected++
		}
	case srcPending:
		if err != nil {
			s.stats.InputsRejected++
		} else {
			s.stats.InputsApplied++
		}
	default:
		if err != nil {
			s.stats.LocalRejected++
		} else {
			s.stats.LocalApplied++
		}
	}
}

// compact drops every queued input for a frame up to through (consumed,
// duplicate or dead) and moves the payloads of the rest to the front of
// the other buffer.
func (s *Server[S]) compact(through uint32) {
	keep := s.pend[:0]
	buf := s.pendBuf2[:0]
	for _, p := range s.pend {
		if p.frame <= through || p.state != pendLive {
			s.peers[p.sender].pending--
			continue
		}
		off := len(buf)
		buf = append(buf, s.pendBuf[p.off:p.off+p.n]...)
		p.off = uint32(off)
		keep = append(keep, p)
	}
	s.pend = keep
	s.pendBuf2 = s.pendBuf[:0]
	s.pendBuf = buf
}
