package link

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

var (
	clockSeed    = flag.Uint64("clock.seed", 1, "clock tests: the seed of the simulated network")
	clockSeconds = flag.Int("clock.seconds", 0, "clock tests: seconds of game to run after the join (0: the test's default)")
	clockDelay   = flag.Int("clock.delay", 25, "clock tests: one-way delay of the simulated links, ms")
	clockJitter  = flag.Int("clock.jitter", 5, "clock tests: jitter of the simulated links, ms")
	clockLoss    = flag.Float64("clock.loss", 5, "clock tests: loss of the simulated links, %")
)

// clockLink is the clock tests' link: sim(25, 5, 5) unless the flags say
// otherwise.
func clockLink() simlink.LinkConfig { return sim(*clockDelay, *clockJitter, *clockLoss) }

// The clock rig: a server and clients, each with its own clock — the
// client's local time is origin + rate × (the network's time), so its
// clock may run fast or slow and starts anywhere — over simulated links,
// stepped every millisecond of network time. The server ticks at its own
// clock (60 Hz); each client runs exactly the loop the package doc gives
// (receive, ClientLink.Tick, flush) and nothing else: it is never told a
// frame or installs frame 0 by hand.
type clockRig struct {
	t     testing.TB
	net   *simNet
	sw    *world
	srv   *rollback.Server[*rollback.Store]
	repl  *rollback.Replicator
	src   *rollback.Snapshotter
	frame uint32 // the server's newest frame
	now   time.Duration
	cls   []*clockClient
}

type clockClient struct {
	p      rollback.Sender
	w      *world
	c      *rollback.Client[*rollback.Store]
	link   *ClientLink[*rollback.Store]
	slink  *ServerLink[*rollback.Store]
	se, ce *chanEnd
	rng    *rand.Rand
	origin time.Duration // the client's clock at network time 0
	rate   float64       // its clock's rate against the network's

	joinAt      time.Duration // network time of the connection
	firstAccept time.Duration // network time the server first accepted one of its inputs (0: not yet)
	// From settleAt (network time) on: inputs the server took and refused.
	settleAt                 time.Duration
	accepted0, refused0      uint64
	steps0                   uint64 // ClockSteps at settleFrom
	minDepth, maxDepth       int
	depthSamples, depthTotal int
}

const clockRewind = 8 // ServerConfig.MaxRewindFrames

func newClockRig(tb testing.TB, seed uint64, link simlink.LinkConfig) *clockRig {
	tb.Helper()
	r := &clockRig{t: tb, net: newSimNet(tb, seed, link)}
	r.sw = newWorld(tb, rollback.LogConfig{FrameCapacity: 64}, 64)
	var err error
	if r.srv, err = rollback.NewServer(r.sw.x, testStep(r.sw), rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: clockRewind, Checksum: r.sw.store.Checksum}); err != nil {
		tb.Fatal(err)
	}
	if r.repl, err = rollback.NewReplicator(r.sw.log, nil); err != nil {
		tb.Fatal(err)
	}
	if r.src, err = rollback.NewSnapshotter(r.sw.store, r.sw.log, rollback.SnapshotConfig{}); err != nil {
		tb.Fatal(err)
	}
	return r
}

// local returns client cl's clock at the rig's network time.
func (r *clockRig) local(cl *clockClient) time.Duration {
	return cl.origin + time.Duration(float64(r.now)*cl.rate)
}

// addClient connects peer p now, its clock at origin and running at rate;
// join asks for a join snapshot, else the client starts from the initial
// state (frame 0), which its link installs when the server says so.
func (r *clockRig) addClient(p rollback.Sender, origin time.Duration, rate float64, join bool) *clockClient {
	r.t.Helper()
	cl := &clockClient{p: p, rng: rand.New(rand.NewPCG(uint64(p)+1, 99)), origin: origin, rate: rate, joinAt: r.now, minDepth: 1 << 30, maxDepth: -1 << 30}
	cl.w = newWorld(r.t, rollback.LogConfig{FrameCapacity: 64}, 64)
	sample := func(f uint32, in *rollback.InputBuffer) {
		w := cl.w
		if err := in.Add(w.ids.move.ID(), w.ents[2*p], w.ids.move.Encode(nil, Move{cl.rng.Int32N(5) - 2, cl.rng.Int32N(5) - 2})); err != nil {
			r.t.Fatal(err)
		}
	}
	var err error
	if cl.c, err = rollback.NewClient(cl.w.x, p, sample, testStep(cl.w), rollback.ClientConfig{Checksum: cl.w.store.Checksum}); err != nil {
		r.t.Fatal(err)
	}
	if cl.link, err = NewClientLink(cl.c, LinkConfig{}); err != nil {
		r.t.Fatal(err)
	}
	if cl.slink, err = NewServerLink(r.srv, r.repl, p, 0, LinkConfig{}); err != nil {
		r.t.Fatal(err)
	}
	sink, err := rollback.NewSnapshotter(cl.w.store, nil, rollback.SnapshotConfig{})
	if err != nil {
		r.t.Fatal(err)
	}
	cl.slink.SetSnapshots(r.src)
	cl.link.SetSnapshots(sink)
	if join {
		cl.slink.RequestSnapshot()
	}
	cl.se, cl.ce = r.net.pair(int(p), transport.Config{}, cl.slink, cl.link)
	r.cls = append(r.cls, cl)
	return cl
}

// run advances the network by d, a millisecond at a time.
func (r *clockRig) run(d time.Duration) {
	r.t.Helper()
	for end := r.now + d; r.now < end; {
		r.now += time.Millisecond
		r.net.net.AdvanceTo(r.now)
		r.stepServer()
		for _, cl := range r.cls {
			r.stepClient(cl)
		}
	}
}

func (r *clockRig) stepServer() {
	for _, cl := range r.cls {
		cl.se.receive(r.now, 0)
		if cl.firstAccept == 0 && cl.slink.Stats().InputsAccepted > 0 {
			cl.firstAccept = r.now
		}
	}
	if f := uint32(r.now/tick60) + 1; f > r.frame {
		r.frame = f
		if err := r.srv.Tick(f); err != nil {
			r.t.Fatal(err)
		}
		for _, cl := range r.cls {
			if err := cl.slink.Flush(cl.se.ch); err != nil {
				r.t.Fatalf("server link %d: %v", cl.p, err)
			}
			if cl.settleAt != 0 && r.now >= cl.settleAt {
				d := r.srv.Peer(cl.p).LastDepth
				cl.minDepth, cl.maxDepth = min(cl.minDepth, d), max(cl.maxDepth, d)
				cl.depthSamples++
				cl.depthTotal += d
			}
		}
	}
	for _, cl := range r.cls {
		cl.se.flush(r.now, 0)
	}
}

// stepClient is the client's whole loop turn, on its own clock.
func (r *clockRig) stepClient(cl *clockClient) {
	now := r.local(cl)
	cl.ce.receive(now, 0)
	if _, err := cl.link.Tick(now, cl.ce.ch); err != nil {
		r.t.Fatalf("client %d: %v", cl.p, err)
	}
	cl.ce.flush(now, 0)
}

// settleFrom starts counting cl's inputs after the join has settled.
func (r *clockRig) settleFrom(cl *clockClient) {
	cl.settleAt = r.now
	st := cl.slink.Stats()
	cl.accepted0, cl.refused0 = st.InputsAccepted, st.InputsRefused
	cl.steps0 = cl.link.Stats().ClockSteps
}

// refusedShare returns the share of cl's inputs the server refused since
// settleFrom, and how many it took in all.
func (cl *clockClient) refusedShare() (float64, uint64) {
	st := cl.slink.Stats()
	acc, ref := st.InputsAccepted-cl.accepted0, st.InputsRefused-cl.refused0
	if acc+ref == 0 {
		return 1, 0
	}
	return float64(ref) / float64(acc+ref), acc + ref
}

func (cl *clockClient) String() string {
	ls, ss := cl.link.Stats(), cl.slink.Stats()
	share, n := cl.refusedShare()
	return fmt.Sprintf("peer %d (clock ×%.3f): join→first accepted input %v; after settling %.2f%% of %d inputs refused, depth %d..%d (mean %.2f); clock steps %d, dilation %+.4f; link: accepted %d refused %d, checksums verified %d, desyncs %d",
		cl.p, cl.rate, cl.firstAccept-cl.joinAt, 100*share, n, cl.minDepth, cl.maxDepth, float64(cl.depthTotal)/float64(max(cl.depthSamples, 1)),
		ls.ClockSteps, cl.link.TimeDilation(), ss.InputsAccepted, ss.InputsRefused, ls.ChecksumsVerified, ls.Desyncs)
}

// check asserts what every client of a clock test must show: its inputs
// accepted within a bound of its join, none refused after settling, its
// inputs arriving a few frames ahead of the server, and its state in step
// with the server's (checksums verified, none differing).
func (r *clockRig) check(cl *clockClient, maxJoin time.Duration) {
	r.t.Helper()
	ls := cl.link.Stats()
	share, n := cl.refusedShare()
	switch {
	case cl.firstAccept == 0 || cl.firstAccept-cl.joinAt > maxJoin:
		r.t.Errorf("%v: first input accepted later than %v", cl, maxJoin)
	case n == 0 || share > 0.005:
		r.t.Errorf("%v: refused share after settling", cl)
	case cl.minDepth < -clockRewind/2 || cl.maxDepth > 12:
		r.t.Errorf("%v: inputs arrive too late or too early", cl)
	case ls.ChecksumsVerified == 0 || ls.Desyncs != 0 || ls.InputsRefused != cl.slink.Stats().InputsRefused:
		r.t.Errorf("%v: not in step with the server", cl)
	}
}

// Clock sync at join, over sim(25 ms, 5 ms jitter, 5 % loss): a client
// there from the start (its link installs frame 0 when the server says so)
// and one joining 3 s in by a snapshot, each on its own clock (different
// origins, none the server's). Neither is told a frame by the test: the
// server's clock messages set their clocks. Both have their inputs
// accepted from their first frames — the joiner within a few round trips
// of connecting, the snapshot's transfer included — and after settling
// none is refused as too old or too far ahead.
func TestClockSyncAtJoin(t *testing.T) {
	seconds := 10
	if *clockSeconds > 0 {
		seconds = *clockSeconds
	}
	r := newClockRig(t, *clockSeed, clockLink())
	defer func() {
		if t.Failed() {
			t.Logf("reproduce: go test ./rollback/link -run TestClockSyncAtJoin -clock.seed=%d -clock.delay=%d -clock.jitter=%d -clock.loss=%g", *clockSeed, *clockDelay, *clockJitter, *clockLoss)
		}
	}()
	resident := r.addClient(0, 7*time.Hour+123*time.Millisecond, 1, false)
	r.run(3 * time.Second)
	joiner := r.addClient(1, 42*time.Second+7*time.Millisecond, 1, true)
	r.run(time.Second)
	r.settleFrom(resident)
	r.settleFrom(joiner)
	r.run(time.Duration(seconds) * time.Second)
	for _, cl := range r.cls {
		t.Log(cl)
	}
	r.check(resident, 500*time.Millisecond)
	r.check(joiner, 500*time.Millisecond)
	if st := resident.link.Stats(); st.Starts != 1 || st.Snapshots != 0 {
		t.Errorf("resident: %d start announcements, %d snapshots; want 1 and 0", st.Starts, st.Snapshots)
	}
	if st := joiner.link.Stats(); st.Snapshots != 1 {
		t.Errorf("joiner: %d snapshots, want 1", st.Snapshots)
	}
}

// A client's clock that runs 1 % fast or 1 % slow against the server's is
// corrected: the time dilation the server sends steers it, so over 30 s —
// 18 frames of drift uncorrected, far beyond the rewind window — its
// inputs keep arriving a few frames ahead and none is refused; the clock
// is set at the join (once, or twice as the server's first round-trip
// estimate improves) and never stepped after.
func TestClockDriftCorrected(t *testing.T) {
	seconds := 30
	if testing.Short() {
		seconds = 10
	}
	if *clockSeconds > 0 {
		seconds = *clockSeconds
	}
	r := newClockRig(t, *clockSeed, clockLink())
	defer func() {
		if t.Failed() {
			t.Logf("reproduce: go test ./rollback/link -run TestClockDriftCorrected -clock.seed=%d -clock.delay=%d -clock.jitter=%d -clock.loss=%g", *clockSeed, *clockDelay, *clockJitter, *clockLoss)
		}
	}()
	fast := r.addClient(0, 3*time.Second, 1.01, false)
	slow := r.addClient(1, 9*time.Hour, 0.99, true)
	r.run(2 * time.Second)
	r.settleFrom(fast)
	r.settleFrom(slow)
	r.run(time.Duration(seconds) * time.Second)
	for _, cl := range r.cls {
		t.Log(cl)
		r.check(cl, 500*time.Millisecond)
		if st := cl.link.Stats(); st.ClockSteps != cl.steps0 || st.ClockSteps > 2 {
			t.Errorf("peer %d: clock stepped %d times, %d of them after settling; want 1 or 2 (the first estimates), none after", cl.p, st.ClockSteps, st.ClockSteps-cl.steps0)
		}
	}
	// The dilation settles against the drift: the fast clock is slowed, the
	// slow one sped up.
	if d := fast.link.TimeDilation(); d >= 0 {
		t.Errorf("fast clock: dilation %+.4f, want negative", d)
	}
	if d := slow.link.TimeDilation(); d <= 0 {
		t.Errorf("slow clock: dilation %+.4f, want positive", d)
	}
}
