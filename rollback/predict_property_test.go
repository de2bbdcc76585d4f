package rollback

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
)

var seedFlag = flag.Uint64("seed", 0, "run only this seed of the randomized rollback scenarios (0: all)")

// Property, with other peers' inputs predicted (repeat-last): a server and
// a client (a random peer of three) play random games whose inputs persist
// — each peer holds a direction that changes now and then, and sometimes
// heals or pings — over a network that delays, reorders and loses inputs
// and confirmed frames alike. Throughout, every confirmed frame that
// differs from what the client predicted for it is rewound exactly once:
// a tick in which mispredicted frames are applied rewinds once, from the
// oldest of them, through every one of them; a tick in which none is,
// never rewinds. At the end the client's state equals the server's (the
// oracle) byte for byte, and so does every frame of its log. The same games
// without remote prediction rewind more.
func TestClientPredictionConverges(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() {
		seeds = 8
	}
	first := uint64(1)
	if *seedFlag != 0 {
		first, seeds = *seedFlag, 1
	}
	var on, off predictRun
	for seed := first; seed < first+seeds; seed++ {
		a := runPredictScenario(t, seed, false)
		b := runPredictScenario(t, seed, true)
		if t.Failed() {
			t.Fatalf("reproduce: go test ./rollback -run TestClientPredictionConverges -seed=%d", seed)
		}
		on.add(a)
		off.add(b)
	}
	t.Logf("%d games: predicting %+v", seeds, on)
	t.Logf("%d games: not predicting %+v", seeds, off)
	if on.mispredicted == 0 || on.hits == 0 || on.remotePredicted == 0 || on.outOfOrder == 0 || on.lostInputs == 0 {
		t.Fatalf("generator coverage too thin: %+v", on)
	}
	if seeds > 1 && on.rewinds >= off.rewinds {
		t.Fatalf("remote prediction did not reduce rewinds: %d with, %d without", on.rewinds, off.rewinds)
	}
}

type predictRun struct {
	frames, rewinds, mispredicted, hits uint64
	remotePredicted, outOfOrder         uint64
	lostInputs                          uint64
}

func (r *predictRun) add(o predictRun) {
	r.frames += o.frames
	r.rewinds += o.rewinds
	r.mispredicted += o.mispredicted
	r.hits += o.hits
	r.remotePredicted += o.remotePredicted
	r.outOfOrder += o.outOfOrder
	r.lostInputs += o.lostInputs
}

// heldInputs samples one peer's inputs for a frame: a move in a held
// direction that changes about every 20 frames, now and then a heal (a
// state-writing input that does not persist) or a ping (an event, never
// predicted).
type heldInputs struct {
	rng *rand.Rand
	dir Move
}

func (h *heldInputs) sample(w *world, p Sender, f uint32) []Input {
	if h.rng.IntN(20) == 0 {
		h.dir = Move{h.rng.Int32N(5) - 2, h.rng.Int32N(3) - 1}
	}
	ins := []Input{{Frame: f, Sender: p, Type: w.ids.move.ID(), Entity: w.ents[2*int(p)], Payload: w.ids.move.Encode(nil, h.dir)}}
	if h.rng.IntN(12) == 0 {
		ins = append(ins, healIn(w, int(p), f, h.rng.Int32N(5)+1))
	}
	if h.rng.IntN(25) == 0 {
		ins = append(ins, Input{Frame: f, Sender: p, Type: w.ids.ping, Entity: w.ents[2*int(p)], Payload: []byte{byte(f)}})
	}
	return ins
}

func runPredictScenario(t *testing.T, seed uint64, noPrediction bool) predictRun {
	t.Helper()
	const (
		last      = 200
		lead      = 4
		rewindMax = 8
	)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("seed %d (prediction off %v): %s", seed, noPrediction, fmt.Sprintf(format, args...))
	}
	net := rand.New(rand.NewPCG(seed, 1))
	me := Sender(net.IntN(3))
	sw, s := newServerWorld(t, LogConfig{FrameCapacity: 32}, ServerConfig{FirstFrame: 1, MaxRewindFrames: rewindMax}, true)
	var atLast []byte
	s.SetHooks(ServerHooks{OnFrame: func(f uint32, _ bool) {
		if f == last {
			atLast = snapshot(sw.store)
		}
	}})
	cw := newWorld(t, LogConfig{FrameCapacity: 32}, 64)
	mine := &heldInputs{rng: rand.New(rand.NewPCG(seed, 2))}
	sample := func(f uint32, in *InputBuffer) {
		if f > last-10 {
			return
		}
		for _, x := range mine.sample(cw, me, f) {
			_ = in.Add(x.Type, x.Entity, x.Payload)
		}
	}
	c, err := NewClient(cw.x, me, sample, testStep(cw), ClientConfig{NoRemotePrediction: noPrediction})
	if err != nil {
		t.Fatal(err)
	}
	var rewinds []RewindEvent
	c.SetHooks(ClientHooks{OnRewind: func(r RewindEvent) { rewinds = append(rewinds, r) }})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}

	var run predictRun
	others := map[Sender]*heldInputs{}
	for p := Sender(0); p < 3; p++ {
		if p != me {
			others[p] = &heldInputs{rng: rand.New(rand.NewPCG(seed, 10+uint64(p)))}
		}
	}
	toServer := map[uint32][]Input{}  // arrival tick → inputs
	toClient := map[uint32][]uint32{} // arrival tick → confirmed frames
	delivered := map[uint32]bool{}    // frames the client was given
	final := map[uint32][]Record{}    // the server's final frames
	deliver := func(at uint32, ins ...Input) {
		for _, in := range ins {
			in.Payload = bytes.Clone(in.Payload)
			toServer[at] = append(toServer[at], in)
		}
	}
	sent := uint32(0)
	for tick := uint32(1); ; tick++ {
		// The other peers run about as far ahead as the client: their
		// input for a frame arrives from two ticks early to two late; 5 %
		// are lost and resent three ticks later.
		if f := tick + 2; f <= last-10 {
			for p := Sender(0); p < 3; p++ {
				if p == me {
					continue
				}
				at := tick + uint32(net.IntN(5))
				if net.IntN(20) == 0 {
					at += 3
					run.lostInputs++
				}
				deliver(at, others[p].sample(sw, p, f)...)
			}
		}
		for _, in := range toServer[tick] {
			_ = submitIn(s, in) // some too old, some retransmissions
		}
		delete(toServer, tick)
		mustTick(t, s, tick)

		// Final frames go to the client in 1–4 ticks (so out of order);
		// 5 % of them are lost and sent again 4–7 ticks later.
		if ft, ok := s.FinalThrough(); ok {
			for f := sent + 1; f <= ft && f <= last; f++ {
				final[f] = frameRecords(t, sw.log, f)
				at := tick + 1 + uint32(net.IntN(4))
				if net.IntN(20) == 0 {
					at += 4
				}
				toClient[at] = append(toClient[at], f)
				sent = f
			}
		}

		// What the client is given now, and which of it it mispredicted:
		// a frame it has simulated and not applied yet whose log differs.
		var mis []uint32
		for _, f := range toClient[tick] {
			if delivered[f] {
				continue
			}
			if f > c.Confirmed()+1 {
				run.outOfOrder++
			}
			if f <= c.Present() {
				if !sameRecords(frameRecords(t, cw.log, f), final[f]) {
					mis = append(mis, f)
				} else {
					run.hits++
				}
			}
			if err := c.Confirm(f, final[f]); err != nil {
				fail("Confirm(%d): %v", f, err)
				return run
			}
			delivered[f] = true
		}
		delete(toClient, tick)
		rewinds = rewinds[:0]
		target := min(tick+lead, last)
		if err := c.Tick(target); err != nil && !errors.Is(err, ErrPredictionLimit) {
			fail("client Tick(%d): %v", target, err)
			return run
		}
		run.mispredicted += uint64(len(mis))
		run.rewinds += uint64(len(rewinds))
		switch {
		case len(mis) == 0 && len(rewinds) != 0:
			fail("tick %d: no misprediction, but rewinds %+v", tick, rewinds)
			return run
		case len(mis) > 0 && len(rewinds) != 1:
			fail("tick %d: mispredicted frames %v, rewinds %+v (want exactly one)", tick, mis, rewinds)
			return run
		case len(mis) > 0:
			lo, hi := mis[0], mis[0]
			for _, f := range mis {
				lo, hi = min(lo, f), max(hi, f)
			}
			if r := rewinds[0]; r.From != lo || r.Through < hi {
				fail("tick %d: mispredicted frames %v, rewind %d..%d", tick, mis, r.From, r.Through)
				return run
			}
		}

		// The client's own inputs: 20 % of its packets are lost, the rest
		// arrive in 1–2 ticks.
		if net.IntN(5) > 0 {
			deliver(tick+1+uint32(net.IntN(2)), c.PendingInputs(nil)...)
		}
		if c.Confirmed() == last {
			break
		}
		if tick > 4*last {
			fail("no convergence: confirmed %d", c.Confirmed())
			return run
		}
	}
	if atLast == nil || !bytes.Equal(snapshot(cw.store), atLast) {
		fail("the client's state at frame %d differs from the server's", last)
		return run
	}
	sameLogs(t, cw.log, sw.log, last-20, last)
	st := c.Stats()
	run.frames = uint64(last)
	run.remotePredicted = st.RemoteInputsPredicted
	if st.Rewinds != run.rewinds || st.ConfirmedRejected != 0 {
		fail("client stats %+v, rewinds seen %d", st, run.rewinds)
	}
	return run
}
