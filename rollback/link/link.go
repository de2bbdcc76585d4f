package link

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tickwire/tickwire/rollback"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/wire"
)

// Link defaults and ranges.
const (
	// DefaultLinkStream is the stream a link made with NewServerLink or
	// NewClientLink takes when LinkConfig.Stream is left zero: the highest
	// ordered stream of a channel with the default OrderedStreams
	// (transport.DefaultOrderedStreams). ServerLinks and ClientLinks take
	// the highest ordered stream of the peer's channel instead.
	DefaultLinkStream = transport.DefaultOrderedStreams
	// minLinkBudget is the smallest LinkConfig.Budget.
	minLinkBudget = 64
	// defaultSlicesPerFlush is LinkConfig.SlicesPerFlush when left zero.
	defaultSlicesPerFlush = 4
	// maxSlicesPerFlush is the largest LinkConfig.SlicesPerFlush.
	maxSlicesPerFlush = 8
	// defaultMaxPendingRecords is LinkConfig.MaxPendingRecords when left
	// zero.
	defaultMaxPendingRecords = 32
	// maxMaxPendingRecords is the largest LinkConfig.MaxPendingRecords.
	maxMaxPendingRecords = 1024
	// NoChecksums, as LinkConfig.ChecksumEvery, turns the checksum messages
	// off.
	NoChecksums = -1
	// DefaultTickPeriod is LinkConfig.TickPeriod when left zero: 60 Hz.
	DefaultTickPeriod = time.Second / 60
	// minTickPeriod and maxTickPeriod bound LinkConfig.TickPeriod (1 ms,
	// 1 s).
	minTickPeriod = time.Millisecond
	maxTickPeriod = time.Second
	// checksumQueue is how many server checksums a ClientLink keeps waiting
	// for their frame to be confirmed.
	checksumQueue = 32
	// maxRefusalBytes bounds the refusal messages a ServerLink keeps for
	// the next Flushes (back-pressure); beyond it they are dropped and
	// counted (RefusalsDropped) — the client's checksum then catches the
	// divergence and asks for a state burst.
	maxRefusalBytes = 16 << 10
)

// ErrStreamShared is returned by a link's Flush when messages the link did
// not send went out on its stream: the game sent on LinkConfig.Stream,
// which is the link's alone (the error says how many and where). The
// link's own messages are intact — each is parsed whole on the other side,
// and one of the game's that reaches a link is counted Malformed and
// dropped — but the game's messages on that stream do not reach the game.
var ErrStreamShared = errors.New("rollback/link: another sender on the link's stream")

// StreamChannel is the part of a transport.Channel the links use;
// *transport.Channel implements it. Its methods copy the payload they are
// given.
type StreamChannel interface {
	// SendRecord queues p as one record whose verdict comes back to the
	// handler's OnRecord with tag (the action slices).
	SendRecord(tag uint64, p []byte) error
	// SendReliable queues p on a reliable stream (the link messages).
	SendReliable(stream uint8, p []byte) (wire.Seq, error)
	// MaxSinglePayload is the largest payload one datagram carries in mode
	// d (the default slice budget, with transport.Record).
	MaxSinglePayload(d transport.Delivery) int
	// MaxRecordSize is the largest record SendRecord accepts.
	MaxRecordSize() int
}

var _ StreamChannel = (*transport.Channel)(nil)

// LinkConfig configures a ServerLink or a ClientLink; each field says
// which side reads it. The zero value of every field means its default.
type LinkConfig struct {
	// Stream is the reliable-ordered stream the links' messages travel on
	// (inputs from the client, checksums, clocks and snapshots from the
	// server); it is the link's alone — a message the game sends on it
	// makes the link's next Flush return ErrStreamShared. Default: the
	// highest ordered stream of the channel, so the game keeps stream 0
	// and 1..OrderedStreams−1 (give the channel one ordered stream more
	// than the game uses): ServerLinks and ClientLinks read it from the
	// peer's channel (Config().OrderedStreams, which the client adopts
	// from the server); NewServerLink and NewClientLink, which see no
	// channel, take DefaultLinkStream. Range 1..255, at most the
	// channel's OrderedStreams. Both sides must agree.
	Stream uint8

	// TickPeriod (server) is the period at which the game calls
	// Server.Tick: the clock messages tell it to the clients, which run
	// their frames at it (ClientLink.Frame). Default DefaultTickPeriod
	// (60 Hz); range 1 ms..1 s.
	TickPeriod time.Duration

	// Budget (server) caps the encoded size of one action slice. Default:
	// one datagram's payload, Channel.MaxSinglePayload(transport.Record),
	// so no slice is fragmented. A larger value (clipped to
	// Channel.MaxRecordSize) lets one slice span several datagrams; such a
	// slice is credited only when all of them are acked (S-H2), so under
	// loss the larger the slice the less likely it lands. When the oldest
	// owed frame alone exceeds the budget, that tick's first slice is packed
	// with the largest budget, Channel.MaxRecordSize (a fragmented record);
	// a frame larger still is forfeited (Replicator.Forfeit). Range 0 or
	// ≥ 64.
	Budget int

	// SlicesPerFlush (server) is how many slices one Flush may send when the
	// owed frames exceed one budget: the first re-sends from the baseline
	// (Replicator.PackForPeer), the others carry frames whose record was
	// abandoned and then frames never sent (Replicator.PackNext). With 1,
	// a stream gets one budget of new frames per round trip, and one that
	// needs more falls behind until its frames age out; the extra slices
	// cost nothing while the owed frames fit one budget. Default 4 (see
	// docs/ROLLBACK.md for the measurement); range 1..8.
	SlicesPerFlush int

	// MaxPendingRecords (server): while this many of the peer's slices await
	// a verdict, Flush sends only the first slice of the tick (the re-send
	// from the baseline), none of the further ones: the link is congested
	// or dead, and more would only queue. Default 32; range
	// 1..1024.
	MaxPendingRecords int

	// ChecksumEvery (server): send the server's checksum of a final frame
	// (ServerConfig.Checksum must be set) for at most every ChecksumEvery-th
	// frame; the client link verifies it once the frame is confirmed
	// (Client.VerifyChecksum). Default 1 (every final frame that has a
	// checksum); NoChecksums turns it off; range −1 or 1..65536.
	ChecksumEvery int

	// SnapshotChunk (server) is the largest compressed-snapshot body one
	// link message carries. A snapshot no larger goes as one snapshot
	// message (kind 0x03); a larger one is split into parts of SnapshotChunk
	// bytes (kind 0x06, the last part shorter), at most MaxSnapshotParts of
	// them (ErrSnapshotTooLarge beyond), sent as consecutive reliable
	// messages as the channel's window takes them. The client accepts any
	// chunk in range. Default 64 KiB; range 256 B..64 KiB.
	SnapshotChunk int

	// Receiver (client) configures the client link's Receiver.
	Receiver rollback.ReceiverConfig

	// OnOther, if set, receives the messages the link does not handle
	// (other streams and delivery modes), on the channel's goroutine;
	// m.Payload is valid only during the call. Default: they are counted
	// and ignored.
	OnOther func(m transport.Message)
}

// Validate reports whether c is usable. Errors wrap ErrInvalidConfig.
func (c LinkConfig) Validate() error {
	switch {
	case c.Budget != 0 && c.Budget < minLinkBudget:
		return fmt.Errorf("%w: Budget %d below %d", rollback.ErrInvalidConfig, c.Budget, minLinkBudget)
	case c.SlicesPerFlush < 0 || c.SlicesPerFlush > maxSlicesPerFlush:
		return fmt.Errorf("%w: SlicesPerFlush %d outside 1..%d", rollback.ErrInvalidConfig, c.SlicesPerFlush, maxSlicesPerFlush)
	case c.MaxPendingRecords < 0 || c.MaxPendingRecords > maxMaxPendingRecords:
		return fmt.Errorf("%w: MaxPendingRecords %d outside 1..%d", rollback.ErrInvalidConfig, c.MaxPendingRecords, maxMaxPendingRecords)
	case c.ChecksumEvery < NoChecksums || c.ChecksumEvery > rollback.MaxChecksumEvery:
		return fmt.Errorf("%w: ChecksumEvery %d outside -1..%d", rollback.ErrInvalidConfig, c.ChecksumEvery, rollback.MaxChecksumEvery)
	case c.TickPeriod != 0 && (c.TickPeriod < minTickPeriod || c.TickPeriod > maxTickPeriod):
		return fmt.Errorf("%w: TickPeriod %v outside %v..%v", rollback.ErrInvalidConfig, c.TickPeriod, minTickPeriod, maxTickPeriod)
	case c.SnapshotChunk != 0 && (c.SnapshotChunk < minSnapshotChunk || c.SnapshotChunk > maxSnapshotChunk):
		return fmt.Errorf("%w: SnapshotChunk %d outside %d..%d", rollback.ErrInvalidConfig, c.SnapshotChunk, minSnapshotChunk, maxSnapshotChunk)
	}
	return c.Receiver.Validate()
}

// WithDefaults returns c with every zero field replaced by its default
// (Budget stays 0: it depends on the channel).
func (c LinkConfig) WithDefaults() LinkConfig {
	if c.Stream == 0 {
		c.Stream = DefaultLinkStream
	}
	if c.SlicesPerFlush == 0 {
		c.SlicesPerFlush = defaultSlicesPerFlush
	}
	if c.MaxPendingRecords == 0 {
		c.MaxPendingRecords = defaultMaxPendingRecords
	}
	if c.ChecksumEvery == 0 {
		c.ChecksumEvery = 1
	}
	if c.SnapshotChunk == 0 {
		c.SnapshotChunk = defaultSnapshotChunk
	}
	if c.TickPeriod == 0 {
		c.TickPeriod = DefaultTickPeriod
	}
	return c
}

// ServerLinkStats are a ServerLink's counters.
type ServerLinkStats struct {
	// InputMessages counts input messages received; InputsAccepted and
	// InputsRefused how Server.Submit took their inputs (the server's
	// own counters give the refusal reasons). RefusalsSent counts the
	// refusals reported back to the client (one message each),
	// RefusalsDropped those that did not fit maxRefusalBytes while the
	// channel pushed back.
	InputMessages, InputsAccepted, InputsRefused uint64
	RefusalsSent, RefusalsDropped                uint64
	// Malformed counts messages on the link's stream that failed to parse
	// (dropped whole); Other those the link does not handle.
	Malformed, Other uint64
	// Slices and SliceBytes count the action slices sent; Fragmented those
	// larger than one datagram.
	Slices, SliceBytes, Fragmented uint64
	// QueueFull counts slices the channel refused for back-pressure;
	// Throttled the Flushes that sent only their first slice because
	// MaxPendingRecords were in flight; Forfeited frames too large for any
	// record.
	QueueFull, Throttled, Forfeited uint64
	// ChecksumsSent counts checksum messages; ClocksSent clock messages
	// (frame, lead, tick period, time dilation); Starts the announcements
	// of a join without a snapshot (the client starts from the baseline).
	ChecksumsSent, ClocksSent, Starts uint64
	// StreamShared counts messages others sent on the link's stream
	// (ErrStreamShared).
	StreamShared uint64
	// Snapshots and SnapshotBytes count the snapshots sent (join and state
	// bursts; the bytes as one snapshot message, kind byte included),
	// counted when the first (or only) message is queued; SnapshotParts the
	// part messages of chunked ones (LinkConfig.SnapshotChunk);
	// ResyncRequests the client's requests for one, of which ResyncIgnored
	// were already answered by a burst in flight.
	Snapshots, SnapshotBytes, SnapshotParts, ResyncRequests, ResyncIgnored uint64
	// Disconnected is set by a Disconnect frame from the client, with its
	// reason.
	Disconnected bool
	Reason       wire.DisconnectReason
}

// ServerLink is the server's side of one client's action stream — the
// action-stream Peer glue on the server. It is the client channel's
// transport.Handler: input messages from the client go to
// Server.Submit, the channel's record verdicts to the Replicator.
// Each tick, after Server.Tick, Flush packs the frames owed to the client
// (through Server.FinalThrough: only final frames are replicated, so a
// frame never changes after it was sent) into action slices and sends them
// with Channel.SendRecord; then the caller flushes the channel.
//
// Tick order on the server: Channel.Receive for every datagram (inputs
// arrive), Server.Tick, ServerLink.Flush for every client, Channel.Flush.
//
// Replicating only final frames delays a frame's confirmation by
// ServerConfig.MaxRewindFrames (the lateness a late input may have): choose
// it with that in mind (8–16 frames at 60 Hz), and keep
// ClientConfig.MaxPredictionFrames above it plus the round trip.
//
// A ServerLink belongs to the server's goroutine; it is not safe for
// concurrent use. OnMessage, OnRecord and Flush allocate nothing in steady
// state.
type ServerLink[S rollback.State] struct {
	srv  *rollback.Server[S]
	repl *rollback.Replicator
	peer rollback.Sender
	cfg  LinkConfig

	buf       []byte
	msg       []byte
	out       linkStream
	sumSent   bool
	lastSum   uint32
	clockSent bool
	lastClock uint32 // server frame of the last clock message
	baseline  uint32 // the client's starting frame without a join snapshot
	started   bool   // the client has been told where it starts
	st        ServerLinkStats

	snaps    rollback.SnapshotSource
	snapWant bool   // a snapshot is owed (join, request)
	snapSent bool   // lastSnap is valid
	lastSnap uint32 // frame of the last snapshot sent
	parts    snapshotParts
	ann      []byte // the announcement before a snapshot
	annSent  bool   // the snapshot wanted has been announced

	refs    []byte  // refusal messages waiting for the channel, back to back
	refEnds []int32 // the end of each in refs
}

// NewServerLink returns the link for client peer, whose state is a snapshot
// of the end of frame baseline, and registers it with repl
// (Replicator.AddPeer). repl must pack srv's log. Errors wrap
// ErrInvalidConfig, or are the Replicator's (ErrNotPeer, ErrPeerExists).
func NewServerLink[S rollback.State](srv *rollback.Server[S], repl *rollback.Replicator, peer rollback.Sender, baseline uint32, cfg LinkConfig) (*ServerLink[S], error) {
	if srv == nil || repl == nil || repl.Log() != srv.Executor().Log() {
		return nil, fmt.Errorf("%w: NewServerLink needs a server and a replicator of its log", rollback.ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := repl.AddPeer(peer, baseline); err != nil {
		return nil, err
	}
	l := &ServerLink[S]{srv: srv, repl: repl, peer: peer, cfg: cfg.WithDefaults(), out: newLinkStream(cfg), baseline: baseline}
	return l, nil
}

// Peer returns the client's peer id.
func (l *ServerLink[S]) Peer() rollback.Sender { return l.peer }

// Stats returns a copy of the counters.
func (l *ServerLink[S]) Stats() ServerLinkStats {
	st := l.st
	st.StreamShared = l.out.foreign
	return st
}

// Stream returns the link's stream id (LinkConfig.Stream, or the default
// it took).
func (l *ServerLink[S]) Stream() uint8 { return l.out.id }

// PendingAckCount returns the client's slices sent and awaiting a verdict
// (Replicator.PendingAckCount): diagnostics; back to 0 once traffic
// settles (S-H5).
func (l *ServerLink[S]) PendingAckCount() int { return l.repl.PendingAckCount(l.peer) }

// Close stops replicating to the client (Replicator.RemovePeer).
func (l *ServerLink[S]) Close() { l.repl.RemovePeer(l.peer) }

// Resync restarts the client's stream after a state burst of the end of
// frame baseline (Replicator.Resync).
func (l *ServerLink[S]) Resync(baseline uint32) error { return l.repl.Resync(l.peer, baseline) }

// SetSnapshots makes the link send snapshots from src (a *Snapshotter of
// the server's store and log): the one RequestSnapshot asks for, and the
// state bursts that repair the client — when the Replicator reports
// NeedsResync (at most once per ring of frames, FrameCapacity, so a dead
// link does not pile up bursts), or when the client asks (its Receiver
// reports NeedsResync, a checksum did not match, the game called
// ClientLink.RequestResync, or it refused a snapshot; a request made before
// the last burst was sent is ignored, one after a refusal never is). Each
// snapshot is of the newest final frame F, announced (0x07: F, its size,
// the server's newest frame and MaxRewindFrames) and sent as one reliable
// message on LinkConfig.Stream (fragmented by the channel) or, when larger
// than LinkConfig.SnapshotChunk, as consecutive part messages on it, and
// the client's stream restarts after F (Resync) at once: its slices go on
// while the parts do. nil turns snapshots off.
func (l *ServerLink[S]) SetSnapshots(src rollback.SnapshotSource) { l.snaps = src }

// RequestSnapshot makes the next Flush that has a final frame send the
// client a snapshot of it (SetSnapshots must be set) before any slice: the
// join. Until it is sent — its first part queued — no slice is; from then
// on the stream continues after its frame, and the client holds it until
// the snapshot is in.
func (l *ServerLink[S]) RequestSnapshot() { l.snapWant = true }

// OnMessage implements transport.Handler: an input message (0x01) or a
// resync request (0x04) on the link's stream is parsed whole (anything
// else on the stream, or a message that does not parse, is counted
// Malformed and dropped, never a panic) and an input message's inputs are
// submitted under the client's peer id; messages on other streams go to
// LinkConfig.OnOther.
func (l *ServerLink[S]) OnMessage(m transport.Message) {
	if m.Delivery != transport.Reliable || m.Stream != l.out.id {
		l.st.Other++
		if l.cfg.OnOther != nil {
			l.cfg.OnOther(m)
		}
		return
	}
	switch kindOf(m.Payload) {
	case msgInputs:
		l.inputs(m.Payload)
	case msgResync:
		l.resync(m.Payload)
	default:
		l.st.Malformed++
	}
}

// inputs submits the inputs of an input message.
func (l *ServerLink[S]) inputs(b []byte) {
	in, f := parseInputs(b, uint8(l.peer))
	if f.bad() {
		l.st.Malformed++
		return
	}
	l.st.InputMessages++
	recs := in.recs
	for n := in.count; n > 0; n-- {
		r, k, _ := wire.ParseActionRecord(recs) // validated by parseInputs
		recs = recs[k:]
		if err := l.srv.Submit(in.frame, l.peer, rollback.ActionTypeID(r.Type), rollback.Entity(r.Entity), r.Payload); err != nil {
			l.st.InputsRefused++
			l.refuse(in.frame, err, r)
		} else {
			l.st.InputsAccepted++
		}
	}
}

// resync takes the client's request for a state burst.
func (l *ServerLink[S]) resync(b []byte) {
	req, f := parseResync(b)
	if f.bad() {
		l.st.Malformed++
		return
	}
	l.st.ResyncRequests++
	if l.snapSent && req.baseline < l.lastSnap {
		l.st.ResyncIgnored++ // a newer burst is on its way
		return
	}
	l.snapWant = true
}

// refuse queues the report of a refused input for the next Flush: kind,
// frame, the reason (DropReason) and the input as the client sent it.
func (l *ServerLink[S]) refuse(frame uint32, err error, r wire.ActionRecord) {
	reason, ok := refusalReason(err)
	if !ok {
		return
	}
	msg := refusedMsg{frame: frame, reason: reason, rec: r}
	if len(l.refs)+msg.len() > maxRefusalBytes {
		l.st.RefusalsDropped++
		return
	}
	l.refs = msg.append(l.refs)
	l.refEnds = append(l.refEnds, int32(len(l.refs)))
}

// refusalReason maps a Server.Submit error to its drop reason; ok is
// false for an error that is not a refusal of the input (ErrInStep).
func refusalReason(err error) (rollback.DropReason, bool) {
	switch {
	case errors.Is(err, rollback.ErrTooOld):
		return rollback.DropTooOld, true
	case errors.Is(err, rollback.ErrTooFarAhead):
		return rollback.DropTooFarAhead, true
	case errors.Is(err, rollback.ErrNotOwner), errors.Is(err, rollback.ErrStaleEntity):
		return rollback.DropNotOwner, true
	case errors.Is(err, rollback.ErrPendingFull):
		return rollback.DropPendingFull, true
	case errors.Is(err, rollback.ErrUnknownAction), errors.Is(err, rollback.ErrMalformed):
		return rollback.DropMalformed, true
	case errors.Is(err, rollback.ErrNotPeer):
		return rollback.DropNotPeer, true
	}
	return 0, false
}

// flushRefusals sends the queued refusal reports, oldest first, as far as
// the channel takes them.
func (l *ServerLink[S]) flushRefusals(ch StreamChannel) error {
	start, n := int32(0), 0
	for _, end := range l.refEnds {
		if err := l.out.send(ch, l.refs[start:end]); err != nil {
			if !errors.Is(err, transport.ErrQueueFull) {
				return err
			}
			l.st.QueueFull++
			break
		}
		l.st.RefusalsSent++
		start = end
		n++
	}
	if n == 0 {
		return nil
	}
	rest := copy(l.refs, l.refs[start:])
	l.refs = l.refs[:rest]
	k := copy(l.refEnds, l.refEnds[n:])
	l.refEnds = l.refEnds[:k]
	for i := range l.refEnds {
		l.refEnds[i] -= start
	}
	return nil
}

// OnRecord implements transport.Handler: the verdict on a slice goes to
// the Replicator (Replicator.OnRecord).
func (l *ServerLink[S]) OnRecord(tag uint64, confirmed bool) {
	l.repl.OnRecord(l.peer, tag, confirmed)
}

// OnDisconnect implements transport.Handler: it records the client's
// reason (Stats); the caller then Closes the link.
func (l *ServerLink[S]) OnDisconnect(reason wire.DisconnectReason) {
	l.st.Disconnected, l.st.Reason = true, reason
}

// Flush sends what the client is owed: the reports of the inputs it
// refused since the last Flush (0x08); the server's clock (0x05) on the
// first Flush after the server's first Tick and every 30 frames after;
// on the first Flush, unless a join snapshot is wanted, where the client
// starts (0x07 of size 0: the baseline); up to SlicesPerFlush action slices
// of the final frames after its baseline (Replicator.PackForPeer /
// PackNext, budget as LinkConfig.Budget) — nothing when it is up to date,
// or while MaxPendingRecords slices are in flight — and a checksum message
// for the newest final frame (ChecksumEvery). A snapshot owed goes first
// (SetSnapshots), announced (0x07); while parts of a chunked one are left
// for the channel's window to take, Flush queues as many as it accepts and
// sends the slices after the snapshot's frame and the clock, but no
// checksum. The channel copies what it is given; the caller
// flushes it afterwards. Errors: ErrUnknownPeer after Close; ErrSnapshotTooLarge;
// ErrStreamShared (after the Flush's work) when others sent on the link's stream;
// channel errors other than back-pressure (transport.ErrQueueFull, counted
// and retried next tick). Cost: the packs (bounded by the ring) and a copy
// of each slice into the channel; a snapshot's encoding, a copy of it when
// chunked, and a copy of each part into the channel.
func (l *ServerLink[S]) Flush(ch StreamChannel) error {
	if !l.repl.Active(l.peer) {
		return rollback.ErrUnknownPeer
	}
	if err := l.flush(ch); err != nil {
		return err
	}
	return l.out.takeErr()
}

func (l *ServerLink[S]) flush(ch StreamChannel) error {
	if l.parts.pending() {
		if _, err := l.flushParts(ch); err != nil {
			return err
		}
	}
	if err := l.flushRefusals(ch); err != nil {
		return err
	}
	// The clock goes on while parts wait too: a client whose clock drifts
	// must not wait a long transfer out for its correction.
	if err := l.flushClock(ch); err != nil {
		return err
	}
	if !l.started && !l.snapWant {
		if err := l.sendStart(ch); err != nil {
			return err
		}
	}
	ft, ok := l.srv.FinalThrough()
	if !ok {
		return nil
	}
	if l.snaps != nil && !l.parts.pending() {
		if !l.snapWant && l.repl.NeedsResync(l.peer) &&
			(!l.snapSent || uint64(ft) >= uint64(l.lastSnap)+uint64(l.repl.Log().FrameCapacity())) {
			l.snapWant = true
		}
		if l.snapWant {
			if err := l.sendSnapshot(ch, ft); err != nil {
				return err
			}
		}
	}
	if l.snapWant && !l.parts.pending() {
		return nil // not even started: the stream restarts after it (a joiner has none before)
	}
	// The stream goes on while parts wait (its slices are records, not on
	// the reliable stream): the client holds what arrives before the
	// snapshot is in, and the frames cannot age out meanwhile.
	if err := l.flushSlices(ch, ft); err != nil {
		return err
	}
	if l.parts.pending() {
		return nil // the reliable stream is the snapshot's until every part is queued
	}
	return l.flushChecksum(ch, ft)
}

// clockEvery is how many server frames pass between two clock messages
// to one client (half a second at 60 Hz).
const clockEvery = 30

// statsChannel is the part of *transport.Channel the clock reads when the
// link's channel has it: the round-trip estimate.
type statsChannel interface {
	Stats() transport.ChannelStats
}

// flushClock sends the client the server's clock every clockEvery frames
// (the first at once): its newest frame, the tick period, the lead the
// client should keep (lead) and the time-dilation feedback for it
// (Server.TimeDilation: how much faster or slower it should tick to keep
// its inputs arriving TargetBufferFrames ahead), as a signed count of
// 1/10,000ths.
func (l *ServerLink[S]) flushClock(ch StreamChannel) error {
	newest, ok := l.srv.Frame()
	if !ok || l.clockSent && uint64(newest) < uint64(l.lastClock)+clockEvery {
		return nil
	}
	d := l.srv.TimeDilation(l.peer)
	m := clockMsg{
		frame:    newest,
		period:   uint32(l.cfg.TickPeriod),
		lead:     l.lead(ch),
		dilation: int16(math.Round(max(min(d*10000, math.MaxInt16), math.MinInt16))),
	}
	l.msg = m.append(l.msg[:0])
	if sent, err := l.out.offer(ch, l.msg, &l.st.QueueFull); !sent {
		return err
	}
	l.clockSent, l.lastClock = true, newest
	l.st.ClocksSent++
	return nil
}

// lead returns how many frames ahead of the server's newest frame the
// client should be when a clock message arrives, so that the inputs it
// samples then arrive TargetBufferFrames before the server simulates
// their frame: the message takes a one-way delay to arrive and the
// client's inputs another, so the lead is the round trip (the channel's
// smoothed RTT plus its variation, when ch reports it) in frames plus
// TargetBufferFrames, rounded up.
func (l *ServerLink[S]) lead(ch StreamChannel) uint16 {
	var rtt time.Duration
	// The concrete case first: asserting to an interface calls into the
	// runtime, which now and then (about 1 call in 1024) allocates to
	// grow its per-site cache; the server's tick allocates nothing.
	if c, ok := ch.(*transport.Channel); ok {
		st := c.Stats()
		rtt = st.SRTT + st.RTTVar
	} else if sc, ok := ch.(statsChannel); ok {
		st := sc.Stats()
		rtt = st.SRTT + st.RTTVar
	}
	f := math.Ceil(float64(rtt)/float64(l.cfg.TickPeriod) + l.srv.Config().TargetBufferFrames)
	return uint16(min(f, math.MaxUint16))
}

// sendStart tells a client that gets no join snapshot where it starts:
// an announcement of size 0 whose frame is the baseline the link was made
// with (the client's link installs it: its state is the initial one).
func (l *ServerLink[S]) sendStart(ch StreamChannel) error {
	newest, ok := l.srv.Frame()
	if !ok {
		newest = l.baseline
	}
	m := announceMsg{frame: l.baseline, newest: newest, rewind: uint32(l.srv.Config().MaxRewindFrames)}
	l.msg = m.append(l.msg[:0])
	if sent, err := l.out.offer(ch, l.msg, &l.st.QueueFull); !sent {
		return err
	}
	l.started = true
	l.st.Starts++
	return nil
}

// sendSnapshot sends the client a snapshot of final frame ft — first the
// announcement (msgAnnounce: ft, the snapshot's size, the server's newest
// frame and MaxRewindFrames), then the snapshot message or its first
// parts — and restarts its stream after ft once the snapshot (or its
// first part) is queued. On back-pressure before that, snapWant stays set
// and a fresh snapshot is taken next tick; parts left over are continued
// by the next Flushes (flushParts).
func (l *ServerLink[S]) sendSnapshot(ch StreamChannel, ft uint32) error {
	out, err := l.snaps.AppendSnapshot(append(l.msg[:0], msgSnapshot), l.peer, ft)
	if err != nil {
		return err
	}
	l.msg = out
	if !l.annSent {
		// Once per snapshot wanted: an announcement of an older frame, left
		// by a snapshot that did not fit, only makes the client hold a few
		// frames more.
		newest, _ := l.srv.Frame()
		m := announceMsg{frame: ft, size: uint32(len(out) - 1), newest: newest, rewind: uint32(l.srv.Config().MaxRewindFrames)}
		l.ann = m.append(l.ann[:0])
		if sent, err := l.out.offer(ch, l.ann, &l.st.QueueFull); !sent {
			return err
		}
		l.annSent, l.started = true, true
	}
	if len(out) > 1+l.cfg.SnapshotChunk {
		return l.sendParts(ch, ft, out)
	}
	if err := l.out.send(ch, out); err != nil {
		if errors.Is(err, transport.ErrQueueFull) {
			l.st.QueueFull++
			return nil
		}
		if errors.Is(err, transport.ErrTooLarge) {
			return fmt.Errorf("%w: %d-byte snapshot: %w", rollback.ErrSnapshotTooLarge, len(out), err)
		}
		return err
	}
	return l.snapshotQueued(ft, len(out))
}

// snapshotQueued restarts the client's stream after ft once the snapshot
// of ft (size bytes as one message) is queued, wholly or its first part.
func (l *ServerLink[S]) snapshotQueued(ft uint32, size int) error {
	if err := l.repl.Resync(l.peer, ft); err != nil {
		return err
	}
	l.snapWant, l.snapSent, l.lastSnap, l.annSent = false, true, ft, false
	l.st.Snapshots++
	l.st.SnapshotBytes += uint64(size)
	return nil
}

// sendParts starts sending msg, the snapshot message of final frame ft, as
// parts; the snapshot counts as sent (Resync) once its first part is
// queued.
func (l *ServerLink[S]) sendParts(ch StreamChannel, ft uint32, msg []byte) error {
	if err := l.parts.start(msg[1:], ft, l.cfg.SnapshotChunk); err != nil {
		return err
	}
	n, done, err := l.parts.next(ch, &l.out)
	l.st.SnapshotParts += uint64(n)
	if err != nil {
		return err
	}
	if n == 0 {
		l.parts.reset() // nothing queued: a fresh snapshot next tick
		l.st.QueueFull++
		return nil
	}
	if !done {
		l.st.QueueFull++
	}
	return l.snapshotQueued(ft, len(msg))
}

// flushParts queues the parts of a chunked snapshot the channel refused
// before; done is true when none remain.
func (l *ServerLink[S]) flushParts(ch StreamChannel) (done bool, err error) {
	n, done, err := l.parts.next(ch, &l.out)
	l.st.SnapshotParts += uint64(n)
	if err == nil && !done {
		l.st.QueueFull++
	}
	return done, err
}

func (l *ServerLink[S]) flushSlices(ch StreamChannel, ft uint32) error {
	single := ch.MaxSinglePayload(transport.Record)
	largest := ch.MaxRecordSize()
	budget := single
	if l.cfg.Budget != 0 {
		budget = l.cfg.Budget
	}
	budget = min(budget, largest)
	var prev rollback.Pack
	for k := 0; k < l.cfg.SlicesPerFlush; k++ {
		pk, out, err := l.repl.PackNext(l.peer, prev, ft, l.buf[:0], budget)
		if errors.Is(err, rollback.ErrFrameTooLarge) {
			if k > 0 {
				return nil // it leads the next tick's first slice
			}
			if budget < largest {
				pk, out, err = l.repl.PackForPeer(l.peer, ft, l.buf[:0], largest)
			}
			if errors.Is(err, rollback.ErrFrameTooLarge) {
				if _, _, err := l.repl.Forfeit(l.peer); err != nil {
					return err
				}
				l.st.Forfeited++
				return nil
			}
		}
		if err != nil {
			return err
		}
		if pk.Frames == 0 {
			return nil
		}
		l.buf = out
		if err := ch.SendRecord(pk.Tag, out); err != nil {
			if errors.Is(err, transport.ErrQueueFull) {
				l.st.QueueFull++
				return nil
			}
			return err
		}
		l.repl.Sent(pk)
		l.st.Slices++
		l.st.SliceBytes += uint64(pk.Bytes)
		if pk.Bytes > single {
			l.st.Fragmented++
		}
		if !pk.Short {
			return nil
		}
		if l.repl.PendingAckCount(l.peer) >= l.cfg.MaxPendingRecords {
			l.st.Throttled++ // the first slice always goes; more only while few are in flight
			return nil
		}
		prev = pk
	}
	return nil
}

func (l *ServerLink[S]) flushChecksum(ch StreamChannel, ft uint32) error {
	if l.cfg.ChecksumEvery == NoChecksums || (l.sumSent && uint64(ft) < uint64(l.lastSum)+uint64(l.cfg.ChecksumEvery)) {
		return nil
	}
	sum, final, ok := l.srv.Checksum(ft)
	if !ok || !final {
		return nil
	}
	own := 0 // the client's inputs the frame holds: a client that applied more waits for their refusal
	if v, err := l.repl.Log().Frame(ft); err == nil {
		for i := range v.Len() {
			if v.Record(i).Sender == l.peer {
				own++
			}
		}
	}
	l.msg = checksumMsg{frame: ft, sum: sum, own: uint64(own)}.append(l.msg[:0])
	if sent, err := l.out.offer(ch, l.msg, &l.st.QueueFull); !sent {
		return err
	}
	l.sumSent, l.lastSum = true, ft
	l.st.ChecksumsSent++
	return nil
}

// ClientLinkStats are a ClientLink's counters (the Receiver's are
// separate: ClientLink.Receiver().Stats()).
type ClientLinkStats struct {
	// InputMessages and InputsSent count what went to the server; QueueFull
	// the Flushes stopped by back-pressure (retried next Flush).
	InputMessages, InputsSent, QueueFull uint64
	// Slices counts Record deliveries handed to the Receiver; UnpackErrors
	// those it refused.
	Slices, UnpackErrors uint64
	// ChecksumsReceived counts checksum messages; ChecksumsVerified those
	// that matched the client's state, Desyncs those that did not
	// (Client.VerifyChecksum: ErrDesync, also counted by the client and
	// reported to ClientHooks.OnDesync); ChecksumsSkipped those the client
	// could not check (ErrFrameNotHeld, or the queue was full);
	// ChecksumsDeferred counts the checks put off because the client's
	// frame holds more of its inputs than the server's (a refusal on its
	// way), once per Flush.
	ChecksumsReceived, ChecksumsVerified, Desyncs, ChecksumsSkipped, ChecksumsDeferred uint64
	// Malformed counts messages on the link's stream that failed to parse;
	// Other those the link does not handle; Records verdicts for records
	// (the client link sends none).
	Malformed, Other, Records uint64
	// Clocks counts the server's clock messages received (Frame,
	// TimeDilation); ClockSteps the times the clock was set from one (the
	// first, at the join, included) rather than steered by the dilation;
	// Starts the announcements of a join without a snapshot (the link
	// installed the baseline).
	Clocks, ClockSteps, Starts uint64
	// StreamShared counts messages others sent on the link's stream
	// (ErrStreamShared).
	StreamShared uint64
	// Snapshots counts snapshots installed; SnapshotErrors those refused,
	// and chunked ones dropped mid-assembly by a part that did not fit
	// (the error is in LastError; the state is unchanged); SnapshotParts
	// the snapshot parts accepted (a refused part counts as Malformed);
	// Announcements the server's announcements of a snapshot;
	// ResyncRequests the state bursts asked for, of which DesyncResyncs
	// because a checksum did not match.
	Snapshots, SnapshotErrors, SnapshotParts, Announcements uint64
	ResyncRequests, DesyncResyncs                           uint64
	// InputsRefused counts the server's reports of an own input it refused
	// (Client.Refused took it out); RefusalErrors those the client could
	// not take back (a frame already out of its ring: the checksum then
	// asks for a state burst).
	InputsRefused, RefusalErrors uint64
	// Disconnected is set by a Disconnect frame from the server, with its
	// reason.
	Disconnected bool
	Reason       wire.DisconnectReason
}

type pendingSum struct {
	frame uint32
	sum   uint64
	own   uint64 // the client's own inputs the server's frame holds
}

// ClientLink is the client's side of the action stream — the action-stream
// Peer glue on the client. It is the server channel's transport.Handler:
// Record deliveries (action slices) go through its Receiver into the
// Client, checksum messages are verified once their frame is confirmed.
// Each tick, after Client.Tick, Flush sends the inputs sampled since the
// last Flush — one reliable message per frame, on LinkConfig.Stream — and
// applies held frames the client now has room for; then the caller flushes
// the channel.
//
// Tick order on the client: Channel.Receive for every datagram (slices
// arrive and are staged), then Tick(now, ch) — Client.Tick to the link's
// clock (Frame; applies the slices, predicts), then Flush — and
// Channel.Flush. The initial state is installed by the link: the join
// snapshot the server sends (SetSnapshots), or the baseline the server
// announces when it sends none. A game that installs a state itself uses
// ClientLink.InstallSnapshot (never Client.InstallSnapshot directly, or the
// receiver would not know the frame); until then nothing from the stream
// is applied (S-H7) — its frames are held.
//
// A ClientLink belongs to the client's goroutine; it is not safe for
// concurrent use. OnMessage, Tick and Flush allocate nothing in steady
// state.
type ClientLink[S rollback.State] struct {
	c    *rollback.Client[S]
	recv *rollback.Receiver
	cfg  LinkConfig

	sent    uint32 // inputs for frames up to here have been sent
	pend    []rollback.Input
	msg     []byte
	out     linkStream
	sums    [checksumQueue]pendingSum
	nSums   int
	lastErr error
	clock   clientClock
	st      ClientLinkStats

	sink  rollback.SnapshotSink
	asked bool // a resync request is out since the last install
	asm   snapshotAssembler
	// refused counts the snapshots refused in a row since the last
	// install; each makes Flush ask for another, up to MaxSnapshotRetries.
	refused int

	// The server's last announcement (msgAnnounce): where it was when it
	// sent its last snapshot.
	announced bool
	annNewest uint32 // its newest frame then
	annRewind uint32 // its MaxRewindFrames: final frames lag its newest by it
	recs      []rollback.Record

	// gating: since the install, the client has not sampled yet; as the
	// stream shows the server moving on, so does the first frame it may
	// sample (the catch-up after a long join takes several ticks).
	gating bool

	wantResync bool   // RequestResync, or a desync: ask on the next Flush
	desynced   bool   // wantResync is a desync's
	desyncRuns int    // resyncs asked for desyncs since the last calm stretch
	calmFrom   uint32 // a checksum verified from this frame on ends the run
}

// MaxDesyncResyncs is how many state bursts a client link asks for by
// itself because a checksum did not match (ClientLinkStats.DesyncResyncs)
// without DesyncCalmFrames frames in sync in between — checksums verified
// for a frame that many after the last such request — before it stops
// asking: a divergence that a burst does not cure (a simulation that is
// not deterministic, say) must not make the server send bursts forever.
// RequestResync still asks.
const MaxDesyncResyncs = 3

// DesyncCalmFrames: see MaxDesyncResyncs (10 s at 60 Hz).
const DesyncCalmFrames = 600

// MaxSnapshotRetries is how many snapshots in a row a client link refuses
// (SnapshotErrors) and asks the server to replace before it gives up
// asking: one that cannot install any (its SnapshotConfig too small for
// the server's world, say) must not make the server send state bursts
// forever. The error stays in LastError.
const MaxSnapshotRetries = 3

// refusedBaseline is the baseline a resync request carries after the
// client refused a snapshot: above any frame, so the server, which ignores
// requests older than its last burst, answers it.
const refusedBaseline = ^uint32(0)

// NewClientLink returns the link driving c. If c already has a snapshot
// installed, the stream continues after its newest confirmed frame.
// Errors wrap ErrInvalidConfig.
func NewClientLink[S rollback.State](c *rollback.Client[S], cfg LinkConfig) (*ClientLink[S], error) {
	if c == nil {
		return nil, fmt.Errorf("%w: NewClientLink needs a client", rollback.ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	recv, err := rollback.NewReceiver(c, c.Executor().Registry(), cfg.Receiver)
	if err != nil {
		return nil, err
	}
	l := &ClientLink[S]{c: c, recv: recv, cfg: cfg.WithDefaults(), out: newLinkStream(cfg)}
	if c.Ready() {
		l.sent = c.Present()
		if err := recv.Reset(c.Confirmed()); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// SetSnapshots makes the link install the snapshots the server sends
// (join and state bursts, whole or in parts, which the link joins in a
// buffer it keeps for the next one: at most MaxSnapshotParts ×
// maxSnapshotChunk bytes, the largest snapshot received) through sink — a
// *Snapshotter of the client's store — each followed by InstallSnapshot of
// its frame; hold the stream while a snapshot the server announced is on
// its way (the receiver's bound raised to its size); and ask the server
// for a state burst, once per install, when its Receiver reports
// NeedsResync, a checksum does not match (MaxDesyncResyncs) or the game
// calls RequestResync. nil turns that off (snapshot messages are then
// counted as Malformed, and the caller installs snapshots itself).
func (l *ClientLink[S]) SetSnapshots(sink rollback.SnapshotSink) { l.sink = sink }

// Client returns the client the link drives.
func (l *ClientLink[S]) Client() *rollback.Client[S] { return l.c }

// Receiver returns the link's receiver (its Stats, NeedsResync).
func (l *ClientLink[S]) Receiver() *rollback.Receiver { return l.recv }

// Stats returns a copy of the counters.
func (l *ClientLink[S]) Stats() ClientLinkStats {
	st := l.st
	st.StreamShared = l.out.foreign
	st.ClockSteps = l.clock.steps
	return st
}

// Stream returns the link's stream id (LinkConfig.Stream, or the default
// it took).
func (l *ClientLink[S]) Stream() uint8 { return l.out.id }

// TimeDilation returns the server's latest time-dilation feedback for this
// client: the fraction by which its clock runs faster (positive) or slower
// (negative) than the server's tick so its inputs arrive the server's
// target number of frames early (Server.TimeDilation; resolution
// 1/10,000). 0 until the first clock message arrives. Frame applies it; a
// game that runs its own clock applies it to its tick interval, e.g.
// interval ÷ (1 + dilation).
func (l *ClientLink[S]) TimeDilation() float64 { return float64(l.clock.msg.dilation) / 10000 }

// TickPeriod returns the server's tick period from its clock messages (0
// before the first).
func (l *ClientLink[S]) TickPeriod() time.Duration { return time.Duration(l.clock.msg.period) }

// Frame returns the frame the client should have simulated through at
// now — the client's own clock (a monotonic time since any origin of its
// choosing; the server's clock need not be shared), the same value the
// endpoint's Poll was given — and ok once the client is ready (its
// snapshot, or the baseline the server announced, installed) and the
// server's first clock message is in. Pass it to Client.Tick when it is
// beyond Client.Present (ClientLinks.Tick does all this).
//
// The link keeps the frame in step with the server: the server's clock
// messages (on joining, then every 30 frames) say its frame, its tick
// period and the lead to keep — the round trip plus TargetBufferFrames, so
// that inputs arrive in time — and the time dilation steers the clock's
// rate, so a client clock that runs fast or slow is corrected; one more
// than max(4, lead/2) frames off is set to the server's estimate (see
// ClientLinkStats.ClockSteps). A clock message is anchored to the now of
// the first Frame call after it arrived: call Frame with the now of the
// Poll that delivered it. The frame never goes back: a client that ran
// too far ahead holds until the clock passes it. Cost: a few integer
// operations; nothing is allocated.
func (l *ClientLink[S]) Frame(now time.Duration) (uint32, bool) {
	f, ok := l.clock.frame(now)
	if !ok || !l.c.Ready() {
		return 0, false
	}
	return max(f, l.c.Present()), true
}

// LastError returns the most recent error the receiver returned for a
// delivered slice (nil if none): OnMessage has no way to return it.
func (l *ClientLink[S]) LastError() error { return l.lastErr }

// InstallSnapshot installs the initial snapshot (or a later state burst)
// of the end of frame, which the caller has written into the state:
// Client.InstallSnapshot, then the receiver continues the stream at
// frame+1, applying any frames it held (S-H7). After an announcement, the
// client samples from the frame after ServerFrame (SetSampleFrom). Errors
// are those of Client.InstallSnapshot and Receiver.Reset.
func (l *ClientLink[S]) InstallSnapshot(frame uint32) error {
	if err := l.c.InstallSnapshot(frame); err != nil {
		return err
	}
	if f, ok := l.ServerFrame(); ok {
		l.c.SetSampleFrom(f + 1) // the server would refuse inputs for frames up to there
		l.gating = true
	}
	l.sent = max(l.sent, frame) // inputs after frame that were sent stay sent (the client keeps them)
	l.nSums = 0
	l.asked, l.refused = false, 0
	l.wantResync, l.desynced = false, false
	return l.recv.Reset(frame)
}

// ServerFrame returns the newest frame the server is known to have
// simulated: what it announced with its last snapshot, or the newest final
// frame the stream has carried since plus its MaxRewindFrames, whichever
// is later; ok is false before the first announcement. It lags the server
// by the one-way delay. After a join, the client samples inputs only for
// frames after it (Client.SetSampleFrom, set at the install and moved on
// with the stream until the client has sampled a frame: catching up after
// a long join takes several ticks): the server would refuse inputs for the
// frames before as too old. The client's clock is Frame's, set from the
// server's clock messages; ServerFrame is diagnostics.
func (l *ClientLink[S]) ServerFrame() (uint32, bool) {
	if !l.announced {
		return 0, false
	}
	f := l.annNewest
	if n, ok := l.recv.Newest(); ok {
		f = max(f, n+l.annRewind)
	}
	return f, true
}

// Tick runs the client for local time now — the client's own monotonic
// clock, the now its channel was given when the messages just delivered
// arrived — and flushes the link: Client.Tick to Frame(now) when that
// frame is beyond Client.Present (at the prediction limit,
// rollback.ErrPredictionLimit, the client waits for confirmations, which
// is not an error), then Flush(ch) — when a frame was due (simulated, or
// held back by the prediction limit: Flush applies the frames the
// receiver held), or while the client is not ready yet (a resync request
// may be due). ticked reports
// that the client simulated a new frame. This is the whole client side of
// a tick; call it once per loop turn, after the channel received and
// before it flushes. It allocates nothing in steady state. Errors:
// Client.Tick's, Flush's.
func (l *ClientLink[S]) Tick(now time.Duration, ch StreamChannel) (ticked bool, err error) {
	f, ok := l.Frame(now)
	due := ok && f > l.c.Present()
	if due {
		before := l.c.Present()
		if err := l.c.Tick(f); err != nil && !errors.Is(err, rollback.ErrPredictionLimit) {
			return false, err
		}
		ticked = l.c.Present() > before
	}
	if due || !l.c.Ready() {
		return ticked, l.Flush(ch)
	}
	return false, nil
}

// RequestResync asks the server for a state burst: the next Flush sends
// the request (at most one per install; SetSnapshots must be set) and the
// server answers with a snapshot of its newest final frame, which the
// link installs like any burst — the stream goes on around it, and the
// frames after the snapshot's that the client already has are kept. A game
// calls it when it knows its state is wrong; a checksum that does not
// match asks by itself (at most MaxDesyncResyncs times in a row).
func (l *ClientLink[S]) RequestResync() { l.wantResync = true }

// OnMessage implements transport.Handler: a Record delivery is an action
// slice for the Receiver (Receiver.Unpack; a refused one is counted and
// kept in LastError). On the link's stream, a checksum message is queued
// for verification, a clock message sets the clock (Frame), a snapshot (or
// the last of its parts) is installed (SetSnapshots), an announcement
// readies the receiver for the snapshot that follows — or, with no
// snapshot to follow, installs the baseline it names — and a refusal
// report takes the input out of the client (Client.Refused); anything else
// on the stream, or a message that does not parse whole, is counted
// Malformed and dropped (never a panic). Other streams go to
// LinkConfig.OnOther. A snapshot part that does not continue the assembly
// in progress drops it (Stats: Malformed, SnapshotErrors; LastError) and
// the store is left as it was.
func (l *ClientLink[S]) OnMessage(m transport.Message) {
	switch {
	case m.Delivery == transport.Record:
		l.slice(m.Payload)
	case m.Delivery != transport.Reliable || m.Stream != l.out.id:
		l.st.Other++
		if l.cfg.OnOther != nil {
			l.cfg.OnOther(m)
		}
	default:
		if f := l.linkMessage(m.Payload); f.bad() {
			l.st.Malformed++
		}
	}
}

// linkMessage handles one message on the link's stream.
func (l *ClientLink[S]) linkMessage(b []byte) fault {
	switch k := kindOf(b); {
	case k == msgChecksum:
		return l.checksum(b)
	case k == msgClock:
		m, f := parseClock(b)
		if !f.bad() {
			l.clock.received(m)
			l.st.Clocks++
		}
		return f
	case k == msgAnnounce:
		return l.announce(b)
	case k == msgRefused:
		return l.inputRefused(b)
	case k == msgSnapshot && l.sink != nil:
		body, f := parseSnapshot(b)
		if !f.bad() {
			l.asm.abort() // a whole snapshot replaces a partial one
			l.installSnapshot(body)
		}
		return f
	case k == msgSnapshotPart && l.sink != nil:
		l.snapshotPart(b) // counts its own faults
		return fault{}
	default:
		return fault{k, "kind (a server-to-client link message, with SetSnapshots for 0x03 and 0x06)", int64(k), int64(msgChecksum)}
	}
}

// slice hands an action slice to the receiver.
func (l *ClientLink[S]) slice(b []byte) {
	l.st.Slices++
	if err := l.recv.Unpack(b); err != nil {
		l.st.UnpackErrors++
		l.lastErr = err
	}
	if l.gating {
		if l.c.Present() >= l.c.SampleFrom() {
			l.gating = false // sampling has begun: the game's clock leads from here
		} else if f, ok := l.ServerFrame(); ok {
			l.c.SetSampleFrom(f + 1)
		}
	}
}

// checksum queues a server checksum for verification.
func (l *ClientLink[S]) checksum(b []byte) fault {
	m, f := parseChecksum(b)
	if f.bad() {
		return f
	}
	l.st.ChecksumsReceived++
	if l.nSums == checksumQueue {
		l.st.ChecksumsSkipped++
		copy(l.sums[:], l.sums[1:])
		l.nSums--
	}
	l.sums[l.nSums] = pendingSum(m)
	l.nSums++
	return fault{}
}

// announce takes the server's announcement of where the client starts:
// the snapshot's frame and size, the server's newest frame and its
// MaxRewindFrames. The receiver holds the stream from then on until the
// snapshot is installed (with its size as the bound), and holds again the
// frames after the snapshot's that the client has already applied. Size 0
// announces no snapshot: a client not ready yet installs the frame named
// (the baseline; its state is the initial one, built like the server's).
func (l *ClientLink[S]) announce(b []byte) fault {
	m, f := parseAnnounce(b)
	if f.bad() {
		return f
	}
	l.annNewest, l.annRewind = m.newest, m.rewind
	l.announced = true
	l.st.Announcements++
	if m.size == 0 {
		l.st.Starts++
		if !l.c.Ready() {
			if err := l.InstallSnapshot(m.frame); err != nil {
				l.lastErr = err
			}
		}
		return fault{}
	}
	if l.sink == nil {
		return fault{}
	}
	l.recv.ExpectSnapshot(int(min(m.size, MaxSnapshotParts*maxSnapshotChunk)))
	l.recv.AwaitSnapshot(m.frame, l.haveFrame)
	return fault{}
}

// haveFrame returns the client's records of frame f (Receiver.AwaitSnapshot).
func (l *ClientLink[S]) haveFrame(f uint32) ([]rollback.Record, bool) {
	var ok bool
	l.recs, ok = l.c.AppendFrame(l.recs[:0], f)
	return l.recs, ok
}

// inputRefused takes the server's report of a refused own input: kind,
// frame, reason, the input's action record.
func (l *ClientLink[S]) inputRefused(b []byte) fault {
	m, f := parseRefused(b, uint8(l.c.Peer()))
	if f.bad() {
		return f
	}
	l.st.InputsRefused++
	typ, e := rollback.ActionTypeID(m.rec.Type), rollback.Entity(m.rec.Entity)
	l.recv.DropRefused(m.frame, typ, e, m.rec.Payload)
	if err := l.c.Refused(m.frame, typ, e, m.rec.Payload); err != nil && !errors.Is(err, rollback.ErrNotReady) {
		l.st.RefusalErrors++
		l.lastErr = err
	}
	return fault{}
}

// installSnapshot installs a snapshot message's body: into the state
// (SnapshotSink), then into the client and receiver (InstallSnapshot).
func (l *ClientLink[S]) installSnapshot(body []byte) {
	frame, err := l.sink.InstallSnapshot(body)
	if err == nil {
		err = l.InstallSnapshot(frame)
	}
	if err != nil {
		l.snapshotRefused(err)
		return
	}
	l.st.Snapshots++
}

// snapshotRefused notes a snapshot the link could not install (or a part
// assembly it dropped): the next Flush asks for another.
func (l *ClientLink[S]) snapshotRefused(err error) {
	l.st.SnapshotErrors++
	l.refused++
	l.asked = false
	if err != nil {
		l.lastErr = err
	}
	if l.refused > MaxSnapshotRetries {
		l.recv.AbandonSnapshot() // no burst will come: a client that was applying the stream goes on
	}
}

// snapshotPart adds a part to the assembly and installs the snapshot it
// completes.
func (l *ClientLink[S]) snapshotPart(part []byte) {
	body, _, complete, dropped, err := l.asm.add(part)
	if dropped {
		l.snapshotRefused(nil) // an assembly in progress was given up
	}
	if err != nil {
		l.st.Malformed++
		l.lastErr = err
		return
	}
	l.st.SnapshotParts++
	if complete {
		l.installSnapshot(body)
		return
	}
	l.recv.ExpectSnapshot(l.asm.count * l.asm.size) // the stream meanwhile is held until it is in
}

// OnRecord implements transport.Handler; the client link sends no records,
// so a verdict is only counted.
func (l *ClientLink[S]) OnRecord(uint64, bool) { l.st.Records++ }

// OnDisconnect implements transport.Handler: it records the server's
// reason (Stats).
func (l *ClientLink[S]) OnDisconnect(reason wire.DisconnectReason) {
	l.st.Disconnected, l.st.Reason = true, reason
}

// Flush sends the own inputs of every frame predicted since the last
// Flush, one reliable message per frame with inputs (oldest first; on
// back-pressure the rest wait for the next Flush), applies held frames the
// client has room for again (Receiver.Drain), verifies the queued server
// checksums whose frames are now confirmed, and sends a request for a
// state burst if one is wanted. Call it after Client.Tick (Tick does
// both). Errors: channel errors other than back-pressure, the receiver's,
// and ErrStreamShared (after the Flush's work) when others sent on the
// link's stream.
func (l *ClientLink[S]) Flush(ch StreamChannel) error {
	if err := l.flush(ch); err != nil {
		return err
	}
	return l.out.takeErr()
}

func (l *ClientLink[S]) flush(ch StreamChannel) error {
	if l.c.Ready() {
		if err := l.sendInputs(ch); err != nil {
			return err
		}
	}
	if err := l.recv.Drain(); err != nil {
		return err
	}
	l.verify()
	retry := l.refused > 0 && l.refused <= MaxSnapshotRetries
	if l.sink != nil && !l.asked && (retry || l.c.Ready() && (l.recv.NeedsResync() || l.wantResync)) {
		base := l.c.Baseline()
		if retry {
			base = refusedBaseline
		}
		l.msg = resyncMsg{base}.append(l.msg[:0])
		if sent, err := l.out.offer(ch, l.msg, &l.st.QueueFull); !sent {
			return err
		}
		l.asked = true
		l.st.ResyncRequests++
		if l.desynced {
			l.desyncRuns++
			l.st.DesyncResyncs++
			l.calmFrom = l.c.Confirmed() + DesyncCalmFrames
		}
		l.wantResync, l.desynced = false, false
	}
	return nil
}

func (l *ClientLink[S]) sendInputs(ch StreamChannel) error {
	l.pend = l.c.PendingInputs(l.pend[:0])
	for i := 0; i < len(l.pend); {
		f := l.pend[i].Frame
		j := i + 1
		for j < len(l.pend) && l.pend[j].Frame == f {
			j++
		}
		if f > l.sent {
			l.msg = appendInputs(l.msg[:0], f, l.c.Peer(), l.pend[i:j])
			if sent, err := l.out.offer(ch, l.msg, &l.st.QueueFull); !sent {
				return err
			}
			l.sent = f
			l.st.InputMessages++
			l.st.InputsSent += uint64(j - i)
		}
		i = j
	}
	l.sent = max(l.sent, l.c.Present())
	return nil
}

// verify checks the queued checksums whose frames are confirmed. A frame
// in which the client applied more of its own inputs than the server's
// holds is not checked yet: the server refused one and its report is on
// the way (Client.Refused corrects the frame); the check waits for it
// while the client's ring holds the frame (ChecksumsDeferred).
func (l *ClientLink[S]) verify() {
	confirmed := l.c.Confirmed()
	n := 0
	for i := 0; i < l.nSums; i++ {
		ps := l.sums[i]
		if ps.frame > confirmed {
			l.sums[n] = ps
			n++
			continue
		}
		if own, ok := l.c.OwnInputs(ps.frame); ok && uint64(own) > ps.own {
			l.st.ChecksumsDeferred++
			l.sums[n] = ps
			n++
			continue
		}
		switch err := l.c.VerifyChecksum(ps.frame, ps.sum); {
		case err == nil:
			l.st.ChecksumsVerified++
			if ps.frame >= l.calmFrom {
				l.desyncRuns = 0
			}
		case errors.Is(err, rollback.ErrDesync):
			l.st.Desyncs++
			if !l.asked && !l.wantResync && l.desyncRuns < MaxDesyncResyncs {
				l.wantResync, l.desynced = true, true // repaired by a state burst
			}
		default:
			l.st.ChecksumsSkipped++
		}
	}
	l.nSums = n
}
