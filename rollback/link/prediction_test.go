package link

import (
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/rollback"
)

// addHeldClient connects peer p like session.addClient, with a game whose
// inputs persist: every frame the peer moves its entity in a held
// direction, which changes on average every 30 frames. noPredict turns the
// client's prediction of the other peers' inputs off.
func (s *session) addHeldClient(p rollback.Sender, seed uint64, noPredict bool) *sessClient {
	s.t.Helper()
	cl := &sessClient{p: p, rng: rand.New(rand.NewPCG(seed, uint64(p)+1)), from: 1, to: s.last}
	cl.w = newWorld(s.t, rollback.LogConfig{FrameCapacity: 64}, 64)
	dir := Move{1, 0}
	sample := func(f uint32, in *rollback.InputBuffer) {
		if f < cl.from || f > cl.to {
			return
		}
		if cl.rng.IntN(30) == 0 {
			dir = Move{cl.rng.Int32N(5) - 2, cl.rng.Int32N(5) - 2}
		}
		w := cl.w
		if err := in.Add(w.ids.move.ID(), w.ents[2*p], w.ids.move.Encode(nil, dir)); err != nil {
			s.t.Fatal(err)
		}
	}
	var err error
	cfg := rollback.ClientConfig{Checksum: cl.w.store.Checksum, NoRemotePrediction: noPredict}
	if cl.c, err = rollback.NewClient(cl.w.x, p, sample, testStep(cl.w), cfg); err != nil {
		s.t.Fatal(err)
	}
	if cl.link, err = NewClientLink(cl.c, s.lcfg); err != nil {
		s.t.Fatal(err)
	}
	if cl.slink, err = NewServerLink(s.srv, s.repl, p, 0, s.lcfg); err != nil {
		s.t.Fatal(err)
	}
	cl.se, cl.ce = s.net.pair(len(s.cls), s.tcfg, cl.slink, cl.link)
	s.cls = append(s.cls, cl)
	s.installClient(cl, 0, nil)
	return cl
}

// heldGame plays 600 frames of a two-client game of held directions over
// sim(25 ms one way, 5 % loss), to convergence, and returns each client's
// rewinds and prediction hits.
func heldGame(t *testing.T, seed uint64, noPredict bool) (rewinds, hits [2]uint64) {
	t.Helper()
	const frames = 600
	s := newSession(t, seed, sim(25, 0, 5), LinkConfig{})
	s.last = frames
	for p := range rollback.Sender(2) {
		s.addHeldClient(p, seed, noPredict)
	}
	for s.frame < frames {
		s.step(true)
	}
	s.settle(600)
	s.checkConverged()
	for i, cl := range s.cls {
		st := cl.c.Stats()
		rewinds[i], hits[i] = st.Rewinds, st.PredictionHits
		if !noPredict && st.RemoteInputsPredicted == 0 {
			t.Fatalf("client %d predicted no remote input: %+v", cl.p, st)
		}
	}
	return rewinds, hits
}

// Remote-input prediction over the network: two clients, each holding a
// movement direction that changes about every 30 frames, play 600 frames
// over sim(25 ms, 5 % loss) through the links. Without predicting each
// other's inputs, nearly every confirmed frame holds an input the client
// did not predict and forces a rewind; repeating the other peer's last
// known input, a client rewinds about once per change of direction. Both
// games converge to the server's state exactly (checkConverged). Run with
// -v for the figures:
//
//	go test ./rollback/link -run TestRemotePredictionRewinds -v
func TestRemotePredictionRewinds(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	var before, after uint64
	for _, seed := range seeds {
		rb, hb := heldGame(t, seed, true)
		ra, ha := heldGame(t, seed, false)
		t.Logf("seed %d, rewinds per 600 frames per client: %d, %d without remote prediction (hits %d, %d); %d, %d with it (hits %d, %d)",
			seed, rb[0], rb[1], hb[0], hb[1], ra[0], ra[1], ha[0], ha[1])
		before += rb[0] + rb[1]
		after += ra[0] + ra[1]
	}
	n := uint64(2 * len(seeds))
	t.Logf("mean rewinds per client per 600 frames over sim(25 ms, 5 %% loss): %d before remote prediction, %d after", before/n, after/n)
	if after*10 >= before {
		t.Fatalf("remote prediction: %d rewinds against %d without; want fewer than a tenth", after, before)
	}
}
