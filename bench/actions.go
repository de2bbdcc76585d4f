package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/wire"
)

// ProfileActions is the rollback action-stream profile: Peers clients send
// one input per frame, Count frames each, at Rate frames per second (60 Hz
// by default) to one rollback.Server that ticks at the same rate; the
// latency is one way, from the moment a client samples its input for a
// frame to the moment the server's executor applies it in a tick (the
// close of the first frame execution whose log holds it), both read off
// one clock in this process.
//
// The game is small: one position component, one entity per client owned
// by that client's peer id, one action type "move" with an 8-byte payload
// (dx, dy int32) that is a function of the peer and the frame, so the
// server can check what it applies. Every client's traffic crosses its own
// Relay (one relay per client connection, seeded Link.Seed + client index
// so the clients do not lose the same datagrams), both directions
// impaired by Link.
//
// Transports:
//
//   - tickwire: the real stack. link.ServerLinks over a server
//     transport.Endpoint and one link.ClientLinks over a client
//     Endpoint per client, each on a batched UDP socket
//     (transport/socket/udp), each client a predicting rollback.Client.
//     The server's network loop runs every TickInterval on one goroutine:
//     Endpoint.Poll (inputs arrive and are submitted), at each frame
//     boundary Server.Tick and ServerLinks.Flush (the action stream of
//     final frames back to every client), then Endpoint.Flush; every client
//     has its own goroutine doing the same with Client.Tick and
//     ClientLinks.Flush.
//   - kcp and kcp-default: the same Server — same world, registry,
//     configuration and 60 Hz tick — but each client's inputs travel as
//     reliable messages over a kcp-go session in that mode (kcpTransport's
//     configure), encoded exactly as ClientLink encodes them (the links'
//     input message, docs/ROLLBACK.md "Links"); the server's loop takes
//     what the sessions' reader goroutines received and hands it to
//     Server.Submit every TickInterval, and ticks at the same frame
//     boundaries. The clients do not predict; they sample and send one
//     input per frame. The kcp rows carry no action stream back to the
//     clients, so their WireBytes lack the replication traffic the
//     tickwire row carries (each client receives the other peers'
//     inputs): compare their latency and delivery, not their wire bytes.
//
// Clock: all the peers connect first (a lobby, bounded by
// DefaultConnectTimeout); then the game starts on one shared clock. The
// clients run in step with the server (frame f begins at the same
// instant on both sides), with no input delay: an input is sampled when
// its frame begins, so it reaches the server after the server simulated
// that frame, and the server applies it with a rollback (a rewind and
// replay) at its first tick after arrival. The latency is therefore the
// transport's delay plus the wait for the next server tick (up to one
// frame), not a buffer the client chose. The clients ignore the server's
// time-dilation feedback.
//
// Late inputs: the server accepts an input at most MaxRewindFrames frames
// after its frame; older ones are refused (rollback.DropTooOld) and
// counted (Result.Refused). MaxRewindFrames is three quarters of
// FrameCapacity (48 of the default 64 frames, 800 ms at 60 Hz): the rest
// is the clients' room to keep predicting while the action stream, which
// carries final frames only, catches up (Client.MaxPredictionFrames is
// the whole ring). At 20 % loss and 25 ms each way no tickwire input
// comes near that bound; a kcp-default input that loses several
// retransmissions in a row can (its retransmission time-out doubles).
//
// Delivery: every input a client generated must be applied exactly once:
// the server's log must hold exactly one record of it (peer, frame, the
// expected payload) when its frame last closed. Sent counts the inputs
// the clients were to generate, Peers × Count; Delivered those applied
// exactly once. A missing, refused or duplicated input makes the row
// Failed, and so does one a client never sampled because it stalled at
// its prediction limit (a frame capacity too small for the round trip
// freezes the game; the row must not pass by sending less). The row ends once every input
// was applied, or Drain after the last frame was sampled.
//
// Scenario fields: Count (inputs per client), Rate (frame rate), Peers
// (default DefaultActionPeers), Link, MTU, Drain, FrameCapacity and
// MaxInFlight; Size is ignored.
const ProfileActions = "actions"

// Actions profile settings.
const (
	// DefaultActionPeers is the actions profile's default number of
	// clients.
	DefaultActionPeers = 8
	// MaxActionRate is the highest frame rate of the actions profile: the
	// network loops run every TickInterval.
	MaxActionRate = 1000
	// MaxActionInputs bounds Peers × Count of an actions row (the
	// bookkeeping is 17 bytes per input).
	MaxActionInputs = 10_000_000
	// actMoveSize is the move payload: dx, dy int32 LE.
	actMoveSize = 8
	// actPos is the world's only component: x, y int32 LE.
	actPos rollback.ComponentID = 0
	// actInputsKind is the first byte of the links' input message.
	actInputsKind = 0x01
	// actLobbyMargin is how far after the last peer connected the game
	// starts, so that every loop sees the start before frame 1 ends.
	actLobbyMargin = 20 * time.Millisecond
)

// actMove is the move action's payload.
type actMove struct{ DX, DY int32 }

// actMoveOf is client p's input for frame f.
func actMoveOf(p rollback.Sender, f uint32) actMove {
	return actMove{int32(f%3) - 1, int32((uint32(p)+f)%3) - 1}
}

func encodeMove(dst []byte, m actMove) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(m.DX))
	return binary.LittleEndian.AppendUint32(dst, uint32(m.DY))
}

// actWorld is one side's game: a Store with one entity per peer (entity p
// owned by peer p), its action log and executor, and the move action.
type actWorld struct {
	store *rollback.Store
	log   *rollback.ActionLog
	x     *rollback.Executor[*rollback.Store]
	move  rollback.Handle[*rollback.Store, actMove]
	ents  []rollback.Entity
}

// newActWorld builds the world every side of a row starts from: the same
// entities, owners and registry, so the clients' initial state is the
// server's frame 0.
func newActWorld(peers, frameCapacity int) (*actWorld, error) {
	w := &actWorld{}
	var err error
	if w.store, err = rollback.NewStore(rollback.StoreConfig{
		Components: []rollback.ComponentSpec{{Name: "pos", Size: 8}},
		Capacity:   peers,
	}); err != nil {
		return nil, err
	}
	if w.log, err = rollback.NewActionLog(rollback.LogConfig{FrameCapacity: frameCapacity}); err != nil {
		return nil, err
	}
	reg := rollback.NewRegistry[*rollback.Store]()
	if w.move, err = rollback.RegisterTyped(reg, rollback.TypedAction[*rollback.Store, actMove]{
		Name: "move", MinSize: actMoveSize, MaxSize: actMoveSize,
		Writes: []rollback.ComponentID{actPos},
		Encode: encodeMove,
		Decode: func(src []byte) (actMove, error) {
			if len(src) != actMoveSize {
				return actMove{}, rollback.ErrMalformed
			}
			return actMove{int32(binary.LittleEndian.Uint32(src)), int32(binary.LittleEndian.Uint32(src[4:]))}, nil
		},
		Apply: func(s *rollback.Store, a rollback.Action, m actMove) error {
			p, err := s.Component(a.Entity, actPos)
			if err != nil {
				return err
			}
			binary.LittleEndian.PutUint32(p, binary.LittleEndian.Uint32(p)+uint32(m.DX))
			binary.LittleEndian.PutUint32(p[4:], binary.LittleEndian.Uint32(p[4:])+uint32(m.DY))
			return nil
		},
	}); err != nil {
		return nil, err
	}
	if w.x, err = rollback.NewExecutor(reg, w.log, w.store); err != nil {
		return nil, err
	}
	w.ents = make([]rollback.Entity, peers)
	for p := range peers {
		if w.ents[p], err = w.store.Create(rollback.Sender(p)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// actionsRecorder is an actions row's bookkeeping. Each client's goroutine
// writes its own peer's sampled and generated entries; the server's
// goroutine writes applied and held; the row reads everything only after
// those goroutines stopped.
type actionsRecorder struct {
	start     time.Time
	peers     int
	count     int
	sampled   [][]time.Duration // [peer][frame−1]: when the input was sampled
	applied   [][]time.Duration // [peer][frame−1]: when the server first applied it; 0 never
	held      [][]uint8         // [peer][frame−1]: its records in the log at the frame's last close
	generated []int64           // [peer]: inputs generated
	nApplied  atomic.Int64      // inputs applied at least once
	cur       []uint8           // onFrame's scratch, one per peer
	want      []byte            // onFrame's scratch payload
}

func newActionsRecorder(start time.Time, peers, count int) *actionsRecorder {
	r := &actionsRecorder{
		start: start, peers: peers, count: count,
		sampled:   make([][]time.Duration, peers),
		applied:   make([][]time.Duration, peers),
		held:      make([][]uint8, peers),
		generated: make([]int64, peers),
		cur:       make([]uint8, peers),
		want:      make([]byte, 0, actMoveSize),
	}
	for p := range peers {
		r.sampled[p] = make([]time.Duration, count)
		r.applied[p] = make([]time.Duration, count)
		r.held[p] = make([]uint8, count)
	}
	return r
}

// generate records that peer p samples its input for frame f now, and
// reports whether p has one for f (frames 1 to count do). It runs on p's
// goroutine.
func (r *actionsRecorder) generate(p rollback.Sender, f uint32) bool {
	if int(p) >= r.peers || f < 1 || int(f) > r.count {
		return false
	}
	r.sampled[p][f-1] = time.Since(r.start)
	r.generated[p]++
	return true
}

// onFrame reads frame f's records out of the server's log right after the
// frame closed (first time or replayed): each peer's move records with the
// payload it generated for f are counted, and an input seen for the first
// time is applied now. It runs on the server's goroutine, as its OnFrame
// hook.
func (r *actionsRecorder) onFrame(log *rollback.ActionLog, move rollback.ActionTypeID, f uint32) {
	if f < 1 || int(f) > r.count {
		return
	}
	v, err := log.Frame(f)
	if err != nil {
		return
	}
	clear(r.cur)
	for i := range v.Len() {
		rec := v.Record(i)
		if rec.Type != move || !rec.Sender.IsPeer() || int(rec.Sender) >= r.peers {
			continue
		}
		r.want = encodeMove(r.want[:0], actMoveOf(rec.Sender, f))
		if bytes.Equal(rec.Payload, r.want) && r.cur[rec.Sender] < 255 {
			r.cur[rec.Sender]++
		}
	}
	now := time.Since(r.start)
	for p, n := range r.cur {
		r.held[p][f-1] = n
		if n > 0 && r.applied[p][f-1] == 0 {
			r.applied[p][f-1] = now
			r.nApplied.Add(1)
		}
	}
}

// result returns the inputs the clients generated, those applied exactly
// once, and the histogram of their latency (µs).
func (r *actionsRecorder) result() (sent, delivered int64, h *hdrhistogram.Histogram) {
	h = hdrhistogram.New(histMin, histMax, histDigits)
	for p := range r.peers {
		sent += r.generated[p]
		for i, n := range r.held[p] {
			if n != 1 || r.sampled[p][i] == 0 {
				continue
			}
			delivered++
			us := max((r.applied[p][i] - r.sampled[p][i]).Microseconds(), histMin)
			_ = h.RecordValue(min(us, histMax)) // clamped: cannot fail
		}
	}
	return sent, delivered, h
}

// actionsClock is the game's frame clock, shared by the server and the
// clients: frame 1 begins at t0, frame f at t0 + (f−1) × period.
type actionsClock struct {
	start  time.Time
	period time.Duration
	t0     atomic.Int64 // ns since start; 0 while in the lobby
}

// frame returns the frame the game is in at now (since start), and false
// before the game starts.
func (c *actionsClock) frame(now time.Duration) (uint32, bool) {
	t0 := time.Duration(c.t0.Load())
	if t0 == 0 || now < t0 {
		return 0, false
	}
	return 1 + uint32((now-t0)/c.period), true
}

// begin returns the time frame f begins at, once the game started.
func (c *actionsClock) begin(f uint32) (time.Duration, bool) {
	t0 := time.Duration(c.t0.Load())
	if t0 == 0 {
		return 0, false
	}
	return t0 + time.Duration(f-1)*c.period, true
}

// actionsRun is the state shared by one row's goroutines: the clock, the
// stop signal and the first error any of them met.
type actionsRun struct {
	clk  *actionsClock
	stop chan struct{}
	wg   sync.WaitGroup

	mu  sync.Mutex
	err error
}

func (a *actionsRun) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

func (a *actionsRun) firstErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// stopped reports whether the row is stopping.
func (a *actionsRun) stopped() bool {
	select {
	case <-a.stop:
		return true
	default:
		return false
	}
}

// loop runs fn every TickInterval on an absolute schedule until the row
// stops or fn fails (the error is the row's).
func (a *actionsRun) loop(fn func(now time.Duration) error) {
	defer a.wg.Done()
	start := a.clk.start
	next := time.Since(start)
	for !a.stopped() {
		if err := fn(time.Since(start)); err != nil {
			a.fail(err)
			return
		}
		next += TickInterval
		if d := next - time.Since(start); d > 0 {
			time.Sleep(d)
		} else {
			next = time.Since(start) // fell behind: do not burst to catch up
		}
	}
}

// play starts the game once connected reports every peer connected
// (bounded by DefaultConnectTimeout), then returns once every input was
// applied, Drain after the last frame began, when ctx ends, or when a
// goroutine of the row failed.
func (a *actionsRun) play(ctx context.Context, s Scenario, rec *actionsRecorder, connected func() bool) error {
	deadline := time.Now().Add(DefaultConnectTimeout)
	for !connected() {
		if err := a.firstErr(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bench: actions: waiting for the clients to connect: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: actions: the clients did not all connect within %v", DefaultConnectTimeout)
		}
		time.Sleep(time.Millisecond)
	}
	a.clk.t0.Store(int64(time.Since(a.clk.start) + actLobbyMargin))
	last, _ := a.clk.begin(uint32(s.Count))
	end := last + s.Drain
	want := int64(s.Peers) * int64(s.Count)
	for ctx.Err() == nil && a.firstErr() == nil {
		now := time.Since(a.clk.start)
		if now >= end || (now > last && rec.nApplied.Load() >= want) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return a.firstErr()
}

// actionsServer is the row's rollback server, driven by one goroutine.
type actionsServer struct {
	w       *actWorld
	srv     *rollback.Server[*rollback.Store]
	frame   uint32 // the newest frame simulated, 0 before the first
	refused int64  // inputs the server dropped (ServerHooks.OnDrop)
}

// actionsServerConfig is the server's configuration for a ring of
// frameCapacity frames (0: rollback's default); see ProfileActions.
func actionsServerConfig(frameCapacity int) rollback.ServerConfig {
	if frameCapacity == 0 {
		frameCapacity = rollback.DefaultFrameCapacity
	}
	return rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: max(1, frameCapacity*3/4)}
}

func newActionsServer(s Scenario, rec *actionsRecorder) (*actionsServer, error) {
	w, err := newActWorld(s.Peers, s.FrameCapacity)
	if err != nil {
		return nil, err
	}
	a := &actionsServer{w: w}
	if a.srv, err = rollback.NewServer(w.x, nil, actionsServerConfig(s.FrameCapacity)); err != nil {
		return nil, err
	}
	move := w.move.ID()
	a.srv.SetHooks(rollback.ServerHooks{
		OnDrop:  func(rollback.InputDrop) { a.refused++ },
		OnFrame: func(f uint32, _ bool) { rec.onFrame(w.log, move, f) },
	})
	return a, nil
}

// tick simulates the frames up to the one the clock is in, if it moved
// on, and reports whether it did.
func (a *actionsServer) tick(clk *actionsClock, now time.Duration) (bool, error) {
	f, ok := clk.frame(now)
	if !ok || f <= a.frame {
		return false, nil
	}
	a.frame = f
	if err := a.srv.Tick(f); err != nil {
		return false, fmt.Errorf("bench: actions: server tick %d: %w", f, err)
	}
	return true, nil
}

// appendActionInputs appends the links' input message for one input
// (docs/ROLLBACK.md, "Links"): kind 0x01, frame u32 LE, record count
// uvarint, then the action record (wire.AppendActionRecord).
func appendActionInputs(dst []byte, frame uint32, peer rollback.Sender, typ rollback.ActionTypeID, e rollback.Entity, payload []byte) []byte {
	dst = append(dst, actInputsKind)
	dst = wire.AppendUint32(dst, frame)
	dst = wire.AppendUvarint(dst, 1)
	return wire.AppendActionRecord(dst, wire.ActionRecord{Sender: uint8(peer), Type: uint16(typ), Entity: uint64(e), Payload: payload})
}

// errActionMessage is a kcp input message that is not the links' input
// message of one peer.
var errActionMessage = errors.New("bench: actions: malformed input message")

// submitActionInputs parses an input message as ServerLink does — kind,
// frame, a count of at least one, that many action records of one sender,
// nothing after — and submits its inputs as from peer; peer −1 takes the
// records' sender. It returns the sender, or errActionMessage (nothing
// submitted) for a message that does not parse or whose sender is not
// peer. Refusals by the server are counted by its OnDrop hook, not
// returned.
func (a *actionsServer) submitActionInputs(msg []byte, peer int) (int, error) {
	if len(msg) < 1 || msg[0] != actInputsKind {
		return peer, errActionMessage
	}
	frame, k, err := wire.Uint32(msg[1:])
	if err != nil {
		return peer, errActionMessage
	}
	off := 1 + k
	count, k, err := wire.Uvarint(msg[off:])
	if err != nil || count == 0 || count > uint64(len(msg)) {
		return peer, errActionMessage
	}
	off += k
	recs := msg[off:]
	for range count {
		r, k, err := wire.ParseActionRecord(msg[off:])
		if err != nil || (peer >= 0 && int(r.Sender) != peer) {
			return peer, errActionMessage
		}
		peer = int(r.Sender)
		off += k
	}
	if off != len(msg) {
		return peer, errActionMessage
	}
	for range count {
		r, k, _ := wire.ParseActionRecord(recs) // validated above
		recs = recs[k:]
		_ = a.srv.Submit(frame, rollback.Sender(peer), rollback.ActionTypeID(r.Type), rollback.Entity(r.Entity), r.Payload)
	}
	return peer, nil
}

// actionsOutcome is what a transport's driver measured besides the
// recorder.
type actionsOutcome struct {
	wireBytes int64
	refused   int64
}

// runActions runs an actions scenario (defaults applied).
func runActions(ctx context.Context, s Scenario) (Result, error) {
	res := Result{Transport: s.Transport, Profile: s.Profile, Link: s.Link.result(), LatencyKind: OneWay, Peers: s.Peers}

	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	wall0 := time.Now()

	rec := newActionsRecorder(wall0, s.Peers, s.Count)
	run := &actionsRun{
		clk:  &actionsClock{start: wall0, period: time.Duration(float64(time.Second) / s.Rate)},
		stop: make(chan struct{}),
	}
	srv, err := newActionsServer(s, rec)
	if err != nil {
		return res, fmt.Errorf("bench: actions: %w", err)
	}
	var out actionsOutcome
	if s.Transport == Tickwire {
		out, err = actionsTickwire(ctx, s, run, srv, rec)
	} else {
		t, _ := NewTransport(s.Transport)
		out, err = actionsKCP(ctx, s, t.(kcpTransport), run, srv, rec)
	}
	if err != nil {
		return res, err
	}

	wall := time.Since(wall0)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)

	generated, delivered, h := rec.result()
	res.Sent, res.Delivered = int64(s.Peers)*int64(s.Count), delivered
	res.Refused = out.refused
	res.LatencyMS, res.LatencyCDF = latencyOf(h)
	res.PayloadBytes = actMoveSize * generated
	res.WireBytes = out.wireBytes
	res.CPUSeconds = cpu.Seconds()
	res.WallSeconds = wall.Seconds()
	if res.Sent > 0 {
		res.AllocsPerMsg = float64(ms1.Mallocs-ms0.Mallocs) / float64(res.Sent)
	}
	res.PeakRSSBytes = peakRSS()
	return res, nil
}

// relaySeed is client i's relay seed: distinct per client, so that the
// clients do not all lose the same datagrams.
func relaySeed(seed uint64, i int) uint64 { return seed + uint64(i) }
