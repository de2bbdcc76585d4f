package rollback

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// S-G6, property, with three or four peers (S-G7) and the other server
// scenarios checked along the way: thousands of random schedules — random
// inputs per peer and frame (honest, forged, malformed, failing, events,
// cross-entity), delivered early, on time or late within the ring, in random
// order, some retransmitted (some after leaving the ring), ticks that
// advance 0, 1 or 2 frames, EnqueueAction now and then — against a
// deterministic step with derived actions and events. At the end the
// server's state and every frame its log holds must equal the oracle: a
// fresh store that, frame by frame from scratch and never rewinding,
// executes every input the server accepted — sorted by sender, each peer's
// in the order it produced them, local actions last — then runs the step.
// Along the way: no tick rewinds more than once (S-G1); a tick rewinds
// exactly when it received an input for a past frame the log does not hold,
// to before the oldest such frame — retransmissions of applied inputs never
// rewind (S-G1); Submit accepts exactly the inputs it should and drops the
// rest with the right reason (S-G5); every event is presented exactly once
// (the oracle, which never replays, presents each once).
func TestServerMatchesOracle(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	var cov serverOracleStats
	for seed := range n {
		runServerOracle(t, uint64(seed), &cov)
	}
	if cov.rewinds < n || cov.duplicates == 0 || cov.tooOld == 0 || cov.notOwner == 0 || cov.malformed == 0 ||
		cov.rejected == 0 || cov.locals == 0 || cov.skips == 0 || cov.reticks == 0 || cov.derivedDropped == 0 || cov.noRewindRetransmits == 0 {
		t.Fatalf("generator coverage too thin: %+v", cov)
	}
	t.Logf("%d scenarios: %+v", n, cov)
}

type serverOracleStats struct {
	ticks, inputs, rewinds, framesReplayed, duplicates, tooOld, notOwner, malformed int
	rejected, locals, skips, reticks, derivedDropped, noRewindRetransmits           int
}

// oracleBatch is one peer's inputs for one frame; they travel together.
type oracleBatch struct {
	frame  uint32
	sender Sender
	ins    []Input
	accept []bool // Submit must accept ins[i]
	clean  bool   // every input will execute: once delivered, the log holds them all
	inLog  bool   // delivered and accepted before the current tick
}

func runServerOracle(t *testing.T, seed uint64, cov *serverOracleStats) {
	defer func() {
		if t.Failed() { // also reached through t.Fatalf
			t.Logf("scenario seed %d failed", seed)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, 0x5e17e5))
	capacity := []int{4, 8, 16}[rng.IntN(3)]
	peers := 3 + rng.IntN(2)
	frames := 8 + rng.IntN(24)
	w, s := newServerWorld(t, LogConfig{FrameCapacity: capacity}, ServerConfig{}, true)
	rewindsThisTick := 0
	var lastRewind RewindEvent
	s.SetHooks(ServerHooks{OnRewind: func(r RewindEvent) { rewindsThisTick++; lastRewind = r }})

	// The inputs.
	var batches []*oracleBatch
	for f := range uint32(frames) {
		for p := range peers {
			if rng.IntN(10) < 7 {
				batches = append(batches, genOracleBatch(rng, w, Sender(p), f))
			}
		}
	}

	// The ticks: target frames, advancing by 1, sometimes 2 or 0.
	last := uint32(frames + capacity + 4)
	var targets []uint32
	for f := uint32(0); ; {
		targets = append(targets, f)
		if f >= last {
			break
		}
		switch r := rng.IntN(100); {
		case r < 10:
			f += 2
			cov.skips++
		case r < 16:
			cov.reticks++
		default:
			f++
		}
	}
	last = targets[len(targets)-1] // a 2-frame step may overshoot by one
	// Deliveries: before tick k the server's newest frame is targets[k-1];
	// a batch is delivered before the first tick whose target reaches its
	// arrival frame: up to 3 frames early, up to capacity−1 late (within
	// the ring). A quarter are retransmitted, early or late, possibly after
	// leaving the ring.
	deliveries := make([][]*oracleBatch, len(targets))
	deliver := func(b *oracleBatch, a int64) {
		k := 0
		for k < len(targets)-1 && int64(targets[k]) < a {
			k++
		}
		deliveries[k] = append(deliveries[k], b)
	}
	for _, b := range batches {
		deliver(b, int64(b.frame)-int64(rng.IntN(4))+int64(rng.IntN(capacity)))
		if rng.IntN(4) == 0 {
			deliver(b, int64(b.frame)-int64(rng.IntN(4))+int64(rng.IntN(capacity+4)))
		}
	}

	// Run the server, checking each tick.
	localByFrame := map[uint32][]Input{}
	var queued []Input
	newest := int64(-1)
	for k, target := range targets {
		rng.Shuffle(len(deliveries[k]), func(i, j int) { deliveries[k][i], deliveries[k][j] = deliveries[k][j], deliveries[k][i] })
		// Expected rewind: the oldest past frame receiving an input the
		// log does not hold.
		wantFrom, wantRewind := int64(-1), false
		var accepted []*oracleBatch
		for _, b := range deliveries[k] {
			oldest := max(newest-int64(capacity)+1, 0)
			tooOld := int64(b.frame) <= newest && int64(b.frame) < oldest
			any := false
			for i, in := range b.ins {
				err := submitIn(s, in)
				switch {
				case !b.accept[i]:
					if err == nil {
						t.Fatalf("frame %d: input %d of peer %d accepted, should be dropped", b.frame, i, b.sender)
					}
					if errors.Is(err, ErrNotOwner) {
						cov.notOwner++
					} else if errors.Is(err, ErrMalformed) {
						cov.malformed++
					} else if !errors.Is(err, ErrTooOld) {
						t.Fatalf("frame %d: input %d of peer %d: %v", b.frame, i, b.sender, err)
					}
				case tooOld:
					if !errors.Is(err, ErrTooOld) {
						t.Fatalf("frame %d with newest %d, capacity %d: %v, want ErrTooOld", b.frame, newest, capacity, err)
					}
					cov.tooOld++
				case err != nil:
					t.Fatalf("frame %d (newest %d): input %d of peer %d refused: %v", b.frame, newest, i, b.sender, err)
				default:
					any = true
					cov.inputs++
				}
			}
			if any {
				accepted = append(accepted, b)
				if int64(b.frame) <= newest && (!b.inLog || !b.clean) && (!wantRewind || int64(b.frame) < wantFrom) {
					wantFrom, wantRewind = int64(b.frame), true
				}
				if int64(b.frame) <= newest && b.inLog && b.clean {
					cov.noRewindRetransmits++
				}
			}
		}
		if rng.IntN(7) == 0 {
			for range 1 + rng.IntN(2) {
				in := genLocal(rng, w)
				if err := s.EnqueueAction(in.Type, in.Entity, in.Payload); err != nil {
					t.Fatal(err)
				}
				queued = append(queued, in)
			}
		}
		if int64(target) > newest && len(queued) > 0 {
			localByFrame[uint32(newest+1)] = queued
			cov.locals += len(queued)
			queued = nil
		}

		rewindsThisTick = 0
		mustTick(t, s, target)
		switch {
		case rewindsThisTick > 1:
			t.Fatalf("tick %d rewound %d times", target, rewindsThisTick)
		case wantRewind && (rewindsThisTick != 1 || int64(lastRewind.From) != wantFrom || int64(lastRewind.Through) != newest):
			t.Fatalf("tick %d: rewinds %d (%+v), want one over frames %d..%d", target, rewindsThisTick, lastRewind, wantFrom, newest)
		case !wantRewind && rewindsThisTick != 0:
			t.Fatalf("tick %d rewound (%+v) with no new input for a past frame", target, lastRewind)
		}
		for _, b := range accepted {
			b.inLog = true
		}
		newest = max(newest, int64(target))
		cov.ticks++
	}
	if s.Pending() != 0 || s.QueuedActions() != len(queued) {
		t.Fatalf("pending %d, queued %d after the last tick", s.Pending(), s.QueuedActions())
	}

	// The oracle: from scratch, frame by frame, never rewinding.
	o := newWorld(t, LogConfig{FrameCapacity: int(last) + 2}, 64)
	step := testStep(o)
	byFrame := make([][]*oracleBatch, last+1)
	for _, b := range batches {
		byFrame[b.frame] = append(byFrame[b.frame], b)
	}
	for f := uint32(0); f <= last; f++ {
		o.begin(t, f)
		for p := range Sender(peers) { // sorted by sender
			for _, b := range byFrame[f] {
				if b.sender != p || !b.inLog {
					continue
				}
				for i, in := range b.ins {
					if b.accept[i] {
						_ = o.x.Execute(in.Sender, in.Type, in.Entity, in.Payload)
					}
				}
			}
		}
		for _, in := range localByFrame[f] {
			_ = o.x.Execute(SenderLocal, in.Type, in.Entity, in.Payload)
		}
		o.x.SetDerived(true)
		step(f, false)
		o.x.SetDerived(false)
		o.close(t)
	}
	sameLogs(t, w.log, o.log, 0, last)
	if !bytes.Equal(snapshot(w.store), snapshot(o.store)) {
		t.Fatalf("capacity %d, %d peers, %d frames: server state differs from the oracle: %s", capacity, peers, frames, diffStores(w.store, o.store))
	}
	if w.pings != o.pings {
		t.Fatalf("events presented %d times, oracle %d", w.pings, o.pings)
	}
	st := s.Stats()
	cov.rewinds += int(st.Rewinds)
	cov.framesReplayed += int(st.FramesReplayed)
	cov.duplicates += int(st.Duplicates)
	cov.rejected += int(st.InputsRejected)
	cov.derivedDropped += int(st.DerivedDropped)
}

// genOracleBatch makes 1–3 distinct inputs of peer p for frame f. Most are
// honest; some are forged (another's entity: dropped at Submit), malformed
// (dropped), failing or touching another's entity (refused on execution,
// which makes the batch unclean: the log will not hold it).
func genOracleBatch(rng *rand.Rand, w *world, p Sender, f uint32) *oracleBatch {
	b := &oracleBatch{frame: f, sender: p, clean: true}
	own := func() Entity { return w.ents[2*int(p)+rng.IntN(2)] }
	n := 1 + rng.IntN(3)
	for len(b.ins) < n {
		in := Input{Frame: f, Sender: p}
		accept := true
		switch rng.IntN(20) {
		case 0, 1, 2, 3, 4:
			in.Type, in.Entity = w.ids.move.ID(), own()
			in.Payload = w.ids.move.Encode(nil, Move{rng.Int32N(11) - 3, rng.Int32N(11) - 5})
		case 5, 6, 7, 8:
			in.Type, in.Entity, in.Payload = w.ids.heal, own(), le32(rng.Int32N(40)-10)
		case 9, 10:
			in.Type, in.Entity = w.ids.damage, own()
			target := w.ents[rng.IntN(len(w.ents))]
			if rng.IntN(2) == 0 {
				target = own()
			}
			in.Payload = damagePayload(target, rng.Int32N(20))
			if owner, _ := w.store.Owner(target); owner != p {
				b.clean = false // refused on execution: touches another's entity
			}
		case 11, 12:
			in.Type, in.Payload = w.ids.ping, make([]byte, rng.IntN(5))
			for i := range in.Payload {
				in.Payload[i] = byte(rng.Uint32())
			}
			if rng.IntN(2) == 0 {
				in.Entity = own()
			}
		case 13, 14:
			in.Type, in.Entity, in.Payload = w.ids.setAll, own(), make([]byte, 13)
			for i := range in.Payload {
				in.Payload[i] = byte(rng.IntN(7))
			}
		case 15:
			in.Type, in.Entity, in.Payload = w.ids.checked, own(), []byte{byte(rng.IntN(256))}
			accept = in.Payload[0] != 0xFF
		case 16:
			in.Type, in.Entity = w.ids.fail, own()
			b.clean = false // Apply fails
		case 17:
			in.Type, in.Entity, in.Payload = w.ids.heal, own(), []byte{1, 2} // malformed
			accept = false
		default:
			other := w.ents[(2*int(p)+2+rng.IntN(len(w.ents)-2))%len(w.ents)] // forged: not p's
			in.Type, in.Entity, in.Payload = w.ids.heal, other, le32(50)
			accept = false
		}
		dup := false
		for _, x := range b.ins {
			if x.Type == in.Type && x.Entity == in.Entity && bytes.Equal(x.Payload, in.Payload) {
				dup = true
			}
		}
		if !dup {
			b.ins = append(b.ins, in)
			b.accept = append(b.accept, accept)
		}
	}
	return b
}

// genLocal makes a server-authored action: SenderLocal may act on anything.
func genLocal(rng *rand.Rand, w *world) Input {
	e := w.ents[rng.IntN(len(w.ents))]
	switch rng.IntN(3) {
	case 0:
		return Input{Type: w.ids.heal, Entity: e, Payload: le32(rng.Int32N(30))}
	case 1:
		return Input{Type: w.ids.move.ID(), Entity: e, Payload: w.ids.move.Encode(nil, Move{rng.Int32N(5), 1})}
	}
	return Input{Type: w.ids.ping, Entity: e, Payload: []byte{byte(rng.Uint32())}}
}
