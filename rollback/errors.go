package rollback

import "errors"

// Sentinel errors. Functions return these either bare or wrapped with %w;
// test with errors.Is.
//
// The per-action hot paths (Executor.Execute, Registry.Validate) return the
// sentinel itself, unwrapped, so that a flood of rejected input from the
// network costs no allocation; the detail of a rejection (sender, type,
// entity, reason) goes to the executor's counters and OnReject hook instead.
var (
	// ErrNoOpenFrame: an action was executed, or a frame closed, while no
	// frame of the log was open (S-F1).
	ErrNoOpenFrame = errors.New("rollback: no open frame")

	// ErrFrameOpen: the operation needs every frame closed, but one is open.
	ErrFrameOpen = errors.New("rollback: a frame is still open")

	// ErrFrameOrder: a frame was begun or reopened out of order. New frames
	// must follow the newest one (f == newest+1); a replay reopens the undone
	// frames oldest first, one at a time.
	ErrFrameOrder = errors.New("rollback: frame out of order")

	// ErrFrameWrap: the frame counter would wrap past 2^32−1. The log refuses
	// rather than reuse frame numbers; see the package doc.
	ErrFrameWrap = errors.New("rollback: frame number would wrap")

	// ErrFrameNotHeld: the frame is not in the ring (never begun, aged out,
	// or newer than the newest frame).
	ErrFrameNotHeld = errors.New("rollback: frame not held by the log")

	// ErrAgedOut: a rewind asked for a frame older than the oldest frame the
	// ring still holds (S-F4). Nothing was changed.
	ErrAgedOut = errors.New("rollback: rewind target aged out of the ring")

	// ErrReplayPending: a rewind undid frames that have not all been replayed
	// yet, and the operation (beginning a new frame) needs them replayed.
	ErrReplayPending = errors.New("rollback: undone frames not yet replayed")

	// ErrNotReplaying: a frame was reopened with no rewind to replay.
	ErrNotReplaying = errors.New("rollback: no rewind is being replayed")

	// ErrStalePlan: a rewind plan was committed after the log changed since
	// it was made, a second time, on another executor, or is the zero plan.
	ErrStalePlan = errors.New("rollback: rewind plan is stale")

	// ErrUnknownAction: the action type id is not registered.
	ErrUnknownAction = errors.New("rollback: unknown action type")

	// ErrUnknownComponent: the component id is not part of the state.
	ErrUnknownComponent = errors.New("rollback: unknown component")

	// ErrMalformed: bytes failed validation (payload size or content,
	// component length).
	ErrMalformed = errors.New("rollback: malformed bytes")

	// ErrNotOwner: a peer tried to mutate an entity it does not own (S-F5).
	ErrNotOwner = errors.New("rollback: sender does not own the entity")

	// ErrStaleEntity: the handle does not name a live entity: never issued,
	// destroyed, or its slot has been recycled under a newer generation.
	ErrStaleEntity = errors.New("rollback: stale or invalid entity handle")

	// ErrFrameFull: the open frame reached LogConfig.MaxRecordsPerFrame or
	// LogConfig.MaxFrameBytes.
	ErrFrameFull = errors.New("rollback: frame is full")

	// ErrApplyFailed: an action type's Apply returned an error. The
	// executor restored the action's captured pairs and dropped its record.
	ErrApplyFailed = errors.New("rollback: action apply failed")

	// ErrReentrant: Execute or a rewind was called from inside an action's
	// Check, Touches or Apply, or from a State method the executor called.
	ErrReentrant = errors.New("rollback: executor re-entered")

	// ErrStoreFull: the store has no free entity slot.
	ErrStoreFull = errors.New("rollback: store is full")

	// ErrRegistryFrozen: an action type was registered after an executor
	// was built from the registry.
	ErrRegistryFrozen = errors.New("rollback: registry is frozen")

	// ErrInvalidActionType: an action type description failed registration.
	ErrInvalidActionType = errors.New("rollback: invalid action type")

	// ErrInvalidConfig: a Config or StoreConfig failed validation.
	ErrInvalidConfig = errors.New("rollback: invalid config")

	// ErrInStep: the call is not allowed from inside a Tick — from the
	// simulation step, a client's sampler, or a hook. The step re-runs on
	// every replay of its frame, so anything it queued — Server.EnqueueAction,
	// Server.Submit — would be queued again each time (S-G4); and a Tick
	// cannot run inside another.
	ErrInStep = errors.New("rollback: not allowed from inside the simulation step")

	// ErrTooOld: an input (or a confirmed frame) is for a frame the log no
	// longer holds, so it can no longer be replayed (S-G5).
	ErrTooOld = errors.New("rollback: frame too old for the ring")

	// ErrTooFarAhead: an input (or a confirmed frame) is for a frame too far
	// beyond the receiver's current frame (ServerConfig.MaxFutureFrames, the
	// client's staging window) (S-G5).
	ErrTooFarAhead = errors.New("rollback: frame too far ahead")

	// ErrPendingFull: the server's pending-input budget (total count, bytes,
	// or the sender's share) or the client's staging budget is exhausted
	// (S-G5).
	ErrPendingFull = errors.New("rollback: pending budget exhausted")

	// ErrNotPeer: an input's sender is not a remote peer id (0–253, and not
	// the server's own peer id).
	ErrNotPeer = errors.New("rollback: sender is not a peer")

	// ErrQueueFull: Server.EnqueueAction's queue or the client's per-frame
	// input buffer is full.
	ErrQueueFull = errors.New("rollback: queue is full")

	// ErrDuplicateInput: an input identical (type, entity, payload) to one
	// already given for the same frame. The server takes identical inputs
	// of one sender for one frame for retransmissions of one input, so the
	// client refuses the copy rather than mispredict it.
	ErrDuplicateInput = errors.New("rollback: duplicate input for the frame")

	// ErrNotReady: the client has no initial snapshot installed yet, so it
	// neither predicts nor applies action-stream frames (S-H7).
	ErrNotReady = errors.New("rollback: no snapshot installed")

	// ErrPredictionLimit: the client is ClientConfig.MaxPredictionFrames
	// ahead of its newest confirmed frame and will not predict further until
	// confirmations arrive (a deeper prediction could not be corrected).
	ErrPredictionLimit = errors.New("rollback: prediction limit reached")

	// ErrDesync: a checksum of a confirmed frame differs between the two
	// sides (see Client.VerifyChecksum).
	ErrDesync = errors.New("rollback: state checksum mismatch")

	// ErrUnknownPeer: the peer is not being replicated to (Replicator.AddPeer
	// was not called, or RemovePeer was).
	ErrUnknownPeer = errors.New("rollback: peer not replicated")

	// ErrPeerExists: Replicator.AddPeer for a peer already being
	// replicated to.
	ErrPeerExists = errors.New("rollback: peer already replicated")

	// ErrSmallBudget: a pack budget too small for even an empty action
	// slice (its largest header).
	ErrSmallBudget = errors.New("rollback: pack budget below the slice header")

	// ErrFrameTooLarge: the oldest frame owed to a peer does not fit the
	// pack budget on its own. Pack it with a larger budget (a fragmented
	// record) or give it up with Replicator.Forfeit.
	ErrFrameTooLarge = errors.New("rollback: frame exceeds the pack budget")

	// ErrSlotTaken: Store.Restore for a slot that holds a live entity.
	ErrSlotTaken = errors.New("rollback: entity slot already in use")

	// ErrSnapshotTooLarge: a snapshot whose (declared or decoded) size
	// exceeds SnapshotConfig.MaxBytes, or whose message exceeds what the
	// channel carries.
	ErrSnapshotTooLarge = errors.New("rollback: snapshot too large")
)
