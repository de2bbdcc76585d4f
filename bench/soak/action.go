package soak

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/rollback/link"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

// The action stream's world: a Store with a position and a counter per
// entity, one client-owned entity moved by the client's inputs (the typed
// "move" action) and one server-owned entity the step drifts every frame
// (the "drift" action), so both the inputs and the step's derived records
// shape the state the checksums cover.
const (
	cPos     rollback.ComponentID = 0 // x, y: int32 LE each
	cCounter rollback.ComponentID = 1 // uint32 LE

	frameCapacity = 1024 // ~17 s at 60 Hz: ample for a 1.2 s round trip under 25 % loss
	maxRewind     = 120  // ServerConfig.MaxRewindFrames: 2 s, the replication delay
	clientLead    = 45   // frames the client runs ahead of the server (one way is 24–36)
	clientPeer    = rollback.Sender(0)
)

// move is the typed payload of the "move" action.
type move struct{ DX, DY int32 }

// world is one side's rollback machinery over its own Store.
type world struct {
	store *rollback.Store
	log   *rollback.ActionLog
	x     *rollback.Executor[*rollback.Store]
	move  rollback.Handle[*rollback.Store, move]
	drift rollback.ActionTypeID
	mine  rollback.Entity // owned by clientPeer
	npc   rollback.Entity // owned by the server
	buf   []byte          // the step's payload
	ibuf  []byte          // the sampler's payload
}

func add32(b []byte, d int32) {
	binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)+uint32(d))
}

func newWorld() (*world, error) {
	w := &world{buf: make([]byte, 0, 8), ibuf: make([]byte, 0, 8)}
	var err error
	if w.store, err = rollback.NewStore(rollback.StoreConfig{
		Components: []rollback.ComponentSpec{{Name: "pos", Size: 8}, {Name: "counter", Size: 4}},
		Capacity:   8,
	}); err != nil {
		return nil, err
	}
	if w.log, err = rollback.NewActionLog(rollback.LogConfig{FrameCapacity: frameCapacity}); err != nil {
		return nil, err
	}
	reg := rollback.NewRegistry[*rollback.Store]()
	if w.move, err = rollback.RegisterTyped(reg, rollback.TypedAction[*rollback.Store, move]{
		Name: "move", MinSize: 8, MaxSize: 8,
		Writes: []rollback.ComponentID{cPos},
		Encode: func(dst []byte, m move) []byte {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(m.DX))
			return binary.LittleEndian.AppendUint32(dst, uint32(m.DY))
		},
		Decode: func(src []byte) (move, error) {
			if len(src) != 8 {
				return move{}, rollback.ErrMalformed
			}
			return move{int32(binary.LittleEndian.Uint32(src)), int32(binary.LittleEndian.Uint32(src[4:]))}, nil
		},
		Apply: func(s *rollback.Store, a rollback.Action, m move) error {
			p, err := s.Component(a.Entity, cPos)
			if err != nil {
				return err
			}
			add32(p, m.DX)
			add32(p[4:], m.DY)
			return nil
		},
	}); err != nil {
		return nil, err
	}
	if w.drift, err = reg.Register(rollback.ActionType[*rollback.Store]{
		Name: "drift", MinSize: 4, MaxSize: 4,
		Writes: []rollback.ComponentID{cPos, cCounter},
		Apply: func(s *rollback.Store, a rollback.Action) error {
			p, err := s.Component(a.Entity, cPos)
			if err != nil {
				return err
			}
			c, err := s.Component(a.Entity, cCounter)
			if err != nil {
				return err
			}
			d := int32(binary.LittleEndian.Uint32(a.Payload))
			add32(p, d)
			add32(c, 1)
			return nil
		},
	}); err != nil {
		return nil, err
	}
	if w.x, err = rollback.NewExecutor(reg, w.log, w.store); err != nil {
		return nil, err
	}
	if w.mine, err = w.store.Create(clientPeer); err != nil {
		return nil, err
	}
	if w.npc, err = w.store.Create(rollback.SenderLocal); err != nil {
		return nil, err
	}
	return w, nil
}

// step is the per-frame simulation both sides run: the server entity
// drifts by an amount derived from the frame and the client entity's x.
func (w *world) step(f uint32, _ bool) {
	d := int32(f % 5)
	if p, err := w.store.Component(w.mine, cPos); err == nil {
		d += int32(binary.LittleEndian.Uint32(p)) & 3
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf[:0], uint32(d))
	_ = w.x.Execute(rollback.SenderLocal, w.drift, w.npc, w.buf) // both sides run the same step; a refusal shows as a desync
}

// actionStream is a server and one client exchanging inputs, action
// slices and checksums over a channel pair, stepped in lock-step with the
// soak's ticks.
type actionStream struct {
	sw, cw *world
	srv    *rollback.Server[*rollback.Store]
	repl   *rollback.Replicator
	cl     *rollback.Client[*rollback.Store]
	clink  *link.ClientLink[*rollback.Store]
	slink  *link.ServerLink[*rollback.Store]
	se, ce *end
	rng    *rand.Rand
	frame  uint32 // the server's newest frame
	last   uint32 // the client samples and predicts no frame beyond it
	stops  bool   // last is set: the stream is winding down
}

func newActionStream(n *simlink.Network, seed uint64, tcfg transport.Config) (*actionStream, error) {
	a := &actionStream{rng: rand.New(rand.NewPCG(seed, 0xAC7)), last: ^uint32(0)}
	var err error
	if a.sw, err = newWorld(); err != nil {
		return nil, err
	}
	if a.cw, err = newWorld(); err != nil {
		return nil, err
	}
	if a.srv, err = rollback.NewServer(a.sw.x, a.sw.step, rollback.ServerConfig{
		FirstFrame: 1, MaxRewindFrames: maxRewind, Checksum: a.sw.store.Checksum,
	}); err != nil {
		return nil, err
	}
	if a.repl, err = rollback.NewReplicator(a.sw.log, nil); err != nil {
		return nil, err
	}
	sample := func(f uint32, in *rollback.InputBuffer) {
		if f > a.last {
			return
		}
		m := move{a.rng.Int32N(5) - 2, a.rng.Int32N(5) - 2}
		_ = in.Add(a.cw.move.ID(), a.cw.mine, a.cw.move.Encode(a.cw.ibuf[:0], m)) // valid by construction
	}
	if a.cl, err = rollback.NewClient(a.cw.x, clientPeer, sample, a.cw.step, rollback.ClientConfig{Checksum: a.cw.store.Checksum}); err != nil {
		return nil, err
	}
	if a.clink, err = link.NewClientLink(a.cl, link.LinkConfig{}); err != nil {
		return nil, err
	}
	if a.slink, err = link.NewServerLink(a.srv, a.repl, clientPeer, 0, link.LinkConfig{}); err != nil {
		return nil, err
	}
	if a.se, a.ce, err = pair(n, 2, tcfg, a.slink, a.clink); err != nil {
		return nil, err
	}
	// Both worlds start identical: the client's snapshot is frame 0.
	if err := a.clink.InstallSnapshot(0); err != nil {
		return nil, err
	}
	return a, nil
}

// step runs one tick: the server receives, simulates a frame (unless
// winding down past the last) and flushes; then the client receives,
// predicts up to its lead and flushes.
func (a *actionStream) step(now time.Duration) error {
	if err := a.se.receive(now); err != nil {
		return err
	}
	if !a.stops || a.frame < a.last+maxRewind {
		a.frame++
	}
	if err := a.srv.Tick(a.frame); err != nil {
		return fmt.Errorf("soak: server tick %d: %w", a.frame, err)
	}
	if err := a.slink.Flush(a.se.ch); err != nil {
		return fmt.Errorf("soak: server link: %w", err)
	}
	if err := a.se.flush(now); err != nil {
		return err
	}
	if err := a.ce.receive(now); err != nil {
		return err
	}
	target := min(a.frame+clientLead, a.last)
	if err := a.cl.Tick(max(target, a.cl.Present())); err != nil && !errors.Is(err, rollback.ErrPredictionLimit) {
		return fmt.Errorf("soak: client tick %d: %w", target, err)
	}
	if err := a.clink.Flush(a.ce.ch); err != nil {
		return fmt.Errorf("soak: client link: %w", err)
	}
	return a.ce.flush(now)
}

// stop makes the client's present frame the last: no input or prediction
// beyond it; the server runs on until it is final.
func (a *actionStream) stop() {
	if !a.stops {
		a.stops = true
		a.last = a.cl.Present()
	}
}

// settled reports whether, after stop, the client has confirmed the last
// frame and the server has a verdict on every slice it sent. (The
// channels' own pending counts rarely reach 0 together on a 1.2 s round
// trip: keep-alives and acks are always in flight.)
func (a *actionStream) settled() bool {
	return a.stops && a.cl.Confirmed() == a.last && a.slink.PendingAckCount() == 0
}

// ActionResult is the action stream's outcome.
type ActionResult struct {
	// Frames is the last frame: the client's confirmed state at it is
	// compared with the server's.
	Frames uint32 `json:"frames"`
	// Confirmed is the client's newest confirmed frame.
	Confirmed uint32 `json:"confirmed"`
	// ChecksumsVerified and Desyncs are the client link's checksum
	// verdicts (ClientLink.Stats).
	ChecksumsVerified uint64 `json:"checksums_verified"`
	Desyncs           uint64 `json:"desyncs"`
	// ServerSum and ClientSum are the checksums of the last frame's state
	// on each side.
	ServerSum uint64 `json:"server_sum"`
	ClientSum uint64 `json:"client_sum"`
	// Inputs is what the client sent; InputsLate those that reached the
	// server after their frame (applied by a rewind); InputsDropped those
	// the server refused (e.g. older than its rewind bound).
	Inputs        uint64 `json:"inputs"`
	InputsLate    uint64 `json:"inputs_late"`
	InputsDropped uint64 `json:"inputs_dropped"`
	// ServerRewinds and ClientRewinds count the rollbacks on each side.
	ServerRewinds uint64 `json:"server_rewinds"`
	ClientRewinds uint64 `json:"client_rewinds"`
	// AgedOut counts frames that left the server's ring unacknowledged.
	AgedOut uint64 `json:"aged_out"`
	// Converged is true when the client confirmed the last frame with the
	// server's checksum, verified checksums on the way, and never desynced.
	Converged bool `json:"converged"`
}

// result checks convergence and fills in the figures; problems are
// returned as violations.
func (a *actionStream) result() (ActionResult, []string) {
	ls, cs := a.clink.Stats(), a.cl.Stats()
	r := ActionResult{
		Frames: a.last, Confirmed: a.cl.Confirmed(),
		ChecksumsVerified: ls.ChecksumsVerified, Desyncs: max(ls.Desyncs, cs.Desyncs),
		Inputs: ls.InputsSent, InputsLate: a.srv.Stats().InputsLate, InputsDropped: a.srv.Stats().DroppedTotal(),
		ServerRewinds: a.srv.Stats().Rewinds, ClientRewinds: cs.Rewinds,
		AgedOut: a.repl.Peer(clientPeer).AgedOut,
	}
	var bad []string
	if !a.stops {
		// The phase ended before every message arrived: the client never
		// stopped predicting, so there is no last frame to compare.
		r.Frames = a.frame
		bad = append(bad, fmt.Sprintf("action stream: never wound down (the phase ended first); the client confirmed frame %d, the server is at frame %d", r.Confirmed, a.frame))
		if r.Desyncs != 0 {
			bad = append(bad, fmt.Sprintf("action stream: %d desyncs", r.Desyncs))
		}
		if r.AgedOut != 0 || a.clink.Receiver().NeedsResync() {
			bad = append(bad, fmt.Sprintf("action stream: %d frames aged out unacknowledged", r.AgedOut))
		}
		return r, bad
	}
	ssum, final, sok := a.srv.Checksum(a.last)
	csum, cok := a.cl.Checksum(a.last)
	r.ServerSum, r.ClientSum = ssum, csum
	switch {
	case r.Confirmed != a.last:
		bad = append(bad, fmt.Sprintf("action stream: client confirmed frame %d, want %d", r.Confirmed, a.last))
	case !sok || !final || !cok:
		bad = append(bad, fmt.Sprintf("action stream: checksum of frame %d not held (server %v final %v, client %v)", a.last, sok, final, cok))
	case ssum != csum:
		bad = append(bad, fmt.Sprintf("action stream: frame %d checksum %#x on the client, %#x on the server", a.last, csum, ssum))
	}
	if r.Desyncs != 0 {
		bad = append(bad, fmt.Sprintf("action stream: %d desyncs", r.Desyncs))
	}
	if r.ChecksumsVerified == 0 {
		bad = append(bad, "action stream: no checksum verified")
	}
	if r.AgedOut != 0 || a.clink.Receiver().NeedsResync() {
		bad = append(bad, fmt.Sprintf("action stream: %d frames aged out unacknowledged", r.AgedOut))
	}
	r.Converged = len(bad) == 0
	return r, bad
}
