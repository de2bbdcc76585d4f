// Package rollback is tickwire's server-authoritative action machinery: the
// replicated state model, the registry of action types, the ActionLog ring,
// the Executor that is the only legal mutator of the state, rewind, the
// orchestration on top — the Server's tick (rewind and replay with
// provenance) and the Client's prediction and reconciliation — and the
// replication of the action stream: the Replicator that packs the log for
// each peer, the Receiver that applies it on the client, and the links
// (ServerLink, ClientLink) that run them over a transport.Channel. Only the
// links touch the network; everything else takes inputs and confirmed
// frames as values through method calls.
//
// # State model
//
// State is a small interface: a fixed, ordered set of component types (the
// order is the ComponentID and the wire order), an owner per entity, and a
// way to serialize one (entity, component) pair into a caller's buffer
// (AppendComponent) and to overwrite it from bytes (RestoreComponent).
// Prior-state capture and rewind use nothing else, so any world that can do
// those three things can be rolled back. Store is the reference
// implementation: one []byte column per component type, fixed-size
// components, allocated for its full capacity up front.
//
// Entities are generation-tagged handles (Entity = slot index + generation
// in a uint64). Destroying an entity advances its slot's generation, so any
// handle kept past the destruction — in a log record, a capture, game code —
// is refused with ErrStaleEntity by every access, before and after the slot
// is reused. A rewind that meets such a capture skips it and counts it
// (ExecutorStats.RestoreFailures, ExecutorHooks.OnRestoreFailed): it can
// never write into the slot's new occupant.
//
// # Spawning
//
// Creating and destroying entities is not rewindable: Store.Create,
// Store.Destroy and Store.SetOwner are not actions, are not logged, and a
// rewind does not undo them. A game that needs spawns and despawns to roll
// back models them as state: allocate entities ahead of need (a pool), give
// them an "alive" component, and spawn or despawn with an action that
// writes "alive" and the initial components — captured and rewound like any
// other write. Only recycle a pooled entity (Destroy + Create) once it has
// been dead for longer than the ring's FrameCapacity, so no frame the log
// still holds refers to it; if one does, the generation check makes the
// mistake a counted, skipped restore rather than corruption. Likewise,
// ownership changes apply to every later authorization, including replays
// of older frames; if that matters, change ownership only outside the ring's
// reach, or model it as a component and authorize inside Apply.
//
// # Actions are bytes
//
// An action is a type id, a subject entity and a payload of bytes; an
// ActionType's functions (Check, Touches, Apply) work directly on those
// bytes. The log has to hold every action's encoded payload anyway — it is
// what replication sends and what replay re-executes — so executing from the
// bytes means a live action, a replayed one and one that arrived from a peer
// all take the same path, there is no per-action object to allocate, pool or
// release, and a type's Apply is called with a payload slice of the frame
// arena: execution allocates nothing. TypedAction and Handle layer a Go
// payload type P over this (Encode/Decode pairs, decoded on the stack); the
// log still only ever holds bytes. The price is decoding a small fixed
// payload up to three times per execution (Check, Touches, Apply), a few
// nanoseconds for the fixed layouts games use.
//
// Each ActionType declares what it mutates: Writes lists components of the
// subject entity, and Touches may add pairs on other entities computed from
// the payload. The declaration drives both authorization (a peer must own
// every entity named) and capture (every declared pair's prior bytes are
// saved before Apply). A type that declares nothing is a pure event: never
// captured, never rewound. Cross-entity effects of peer input (damage to an
// enemy) therefore belong in the server's simulation step, which runs in
// derived mode and may touch anything.
//
// A Registry belongs to one session: registration order is the type id,
// nothing is global, two registries never share ids. NewExecutor freezes it.
//
// # Provenance
//
// Every record carries a one-byte Sender: 0–253 the peer it arrived from,
// 255 (SenderLocal) an input the local side authored, 254 (SenderDerived) an
// action executed by the simulation step while the executor is in derived
// mode. Inputs are reapplied from the log on replay; derived records are
// recomputed by re-running the step, so a replay drops them.
//
// # ActionLog
//
// The log is a ring of FrameCapacity frames (LogConfig; zero values mean
// defaults). Each frame stores its records as struct-of-arrays columns —
// sender, type, entity, payload offset/length, prior-state offset/length —
// over one byte arena, truncated and reused when the slot is recycled. A
// record's prior state is a sequence of captures, each component's bytes
// followed by a 14-byte trailer (entity, component, length), so a rewind
// walks it backwards without an index. Frame numbers are uint32, begun in
// order, and never wrap (ErrFrameWrap after 2^32−1; Reset starts over).
//
// # Rewind
//
// A rewind is planned and then committed. PlanRewind is pure: it computes
// the frames and records to undo, and validates (a frame that aged out of
// the ring is ErrAgedOut, counted and reported, never a crash). CommitRewind
// restores captured bytes, frames newest to oldest, records newest first,
// and refuses a plan the log has moved past (ErrStalePlan), so a rollback is
// never half-scheduled. Cost is proportional to the number of captured
// mutations in the undone frames, not to the size of the world. After a
// commit the log is replaying: the undone frames are reopened oldest first
// (ActionLog.ReopenFrame), re-executed and closed before any new frame can
// begin.
//
// # Server
//
// Server queues the peers' inputs (Submit: screened, copied, dropped with a
// counted reason when too old for the ring, too far ahead, over budget,
// forged or malformed) and advances the simulation with Tick(frame): it
// finds replayStart, the oldest pending frame carrying an input the log
// does not already hold (a retransmission never forces a rewind), rewinds
// to the end of replayStart−1, and replays each frame to the newest —
// reading the frame's history out of the log before reopening it, keeping
// its inputs and dropping its derived records, merging the late inputs,
// stable-sorting by sender, executing, then running the game's StepFunc in
// derived mode — and then simulates the new frames once each. Server-
// authored input goes through EnqueueAction (applied once, on the next
// first-time frame; an error from inside the step). Per peer, the server
// measures how far ahead of its simulation the inputs arrive (buffer depth)
// and turns it into a time-dilation value for the client.
//
// # Client
//
// Client predicts: each Tick samples the local peer's inputs (Sampler),
// executes them at once — with the other peers' inputs predicted from the
// newest frame whose authoritative records it holds (ClientConfig.Predict,
// RepeatLast by default: a held input stays held; never a pure event) — and
// runs the step, keeping its own inputs until the server confirms their
// frame. Confirm stages a confirmed frame's authoritative records; the next
// Tick applies them — without any rewind if they equal the prediction, else
// by rewinding to before the oldest frame that differs, applying the
// records verbatim and replaying the predicted frames (own inputs, freshly
// predicted remote ones, the step) to the present. Nothing is sampled,
// predicted or applied before InstallSnapshot marks the initial snapshot
// installed.
//
// Replays run the executor in replay mode (Executor.SetReplay): actions see
// Action.Replay, and a pure event already presented for its frame is
// recorded without calling its Apply again, so the game sees each event
// once. Store.Checksum, ServerConfig.Checksum and Client.VerifyChecksum
// compare the two sides' states at confirmed frames to detect desync.
//
// # Replication
//
// The server replicates final frames only (Server.FinalThrough): a frame
// sent never changes, so a confirmed pack is credited for good and the
// receiver de-duplicates by frame number. Per peer, Replicator.PackForPeer
// packs the frames after the peer's baseline, oldest first, whole frames
// within a byte budget, and reports the last frame the pack actually held;
// the baseline advances only through records the channel confirms — every
// datagram acked — never through abandoned ones (whose frames stay owed
// and are packed again), and frames that leave the ring while still owed
// are counted and flag the peer for a state burst. A peer never receives
// its own inputs (the records whose sender is its peer id): it predicted
// them, and the Receiver puts them back, where the server's sort by sender
// placed them, before Client.Confirm. A ScopeFilter narrows the stream
// further, AND-composed with that owner rule. The Receiver validates each
// slice whole, applies frames in order, and holds what it cannot apply yet
// (before the snapshot, after a gap), each frame once, within a byte
// budget.
//
// The network glue — the links that carry inputs, slices, verdicts,
// checksums and snapshots over a transport.Channel — is package
// rollback/link; this package imports no transport.
// docs/ROLLBACK.md has the formats and the measurements.
//
// # Concurrency and cost
//
// An Executor, its ActionLog and its State — and the Server or Client
// driving them — belong to one goroutine (the session's tick loop); none is
// safe for concurrent use. A frozen Registry is read-only and may be
// shared. In steady state — once each ring slot and queue has grown to its
// working size — beginning and closing frames, executing with capture,
// planning and committing rewinds, replaying, Server.Submit and Server.Tick,
// Client.Confirm and Client.Tick allocate nothing; nor do the Replicator's
// packs and verdicts and Receiver.Unpack.
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package rollback
