package link

import (
	"errors"
	"flag"
	"fmt"
	"hash/crc64"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/rollback"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

// The join rig: one server whose world is a few active entities (the
// standard ones, which the peers' inputs and the step change) plus a
// static background of incompressible entities that sets the snapshot's
// size, and clients joining it mid-game by a snapshot over simulated
// links, every setting at its default except ServerConfig.MaxRewindFrames
// (the replication delay; the package docs recommend 8–16).

var (
	joinSeeds    = flag.Int("join.seeds", 6, "TestJoinRandomized: how many seeds to run (1..N)")
	joinSeed     = flag.Uint64("join.seed", 0, "TestJoinRandomized: run only this seed")
	joinMaxBytes = flag.Int("join.maxbytes", 1<<20, "TestJoinRandomized: largest background of a world, in bytes (compressed ≈ raw)")
	joinVerbose  = flag.Bool("join.v", false, "TestJoinRandomized: log every seed's figures")
	joinFigDelay = flag.Int("join.figdelay", 0, "TestJoinLargeSnapshotSettles: also join over this one-way delay, ms")
	joinFigLoss  = flag.Float64("join.figloss", 10, "TestJoinLargeSnapshotSettles: loss of the -join.figdelay link, %")
	joinFigBytes = flag.Int("join.figbytes", 1<<20, "TestJoinLargeSnapshotSettles: world size of the -join.figdelay join, bytes")
)

// joinEntityBytes is what one background entity adds to a snapshot:
// 13 incompressible component bytes (and a handle and an owner that
// compress to almost nothing).
const joinEntityBytes = 13

// joinRig is a server and the clients joining it, stepped in lock-step
// ticks of 1/60 s on one goroutine (deterministic from the seed).
type joinRig struct {
	t      testing.TB
	net    *simNet
	link   simlink.LinkConfig
	sw     *world
	srv    *rollback.Server[*rollback.Store]
	repl   *rollback.Replicator
	src    *rollback.Snapshotter
	rewind int
	bg     int // background entities
	bgSeed uint64
	frame  uint32 // the server's newest frame
	last   uint32 // no client samples or predicts a frame beyond it
	lead   uint32 // handClock: frames a client runs ahead of the server, besides the one-way delay
	// handClock: the clients set their frame by hand (target) as a game
	// without the link's clock would; else they run ClientLink.Frame.
	handClock bool
	cls       []*joinClient
	skew      map[rollback.Sender]bool // clients whose step diverges from the server's
}

type joinClient struct {
	p     rollback.Sender
	w     *world
	c     *rollback.Client[*rollback.Store]
	link  *ClientLink[*rollback.Store]
	slink *ServerLink[*rollback.Store]
	se    *chanEnd
	ce    *chanEnd
	rng   *rand.Rand

	resident  bool    // there from frame 0, no snapshot
	clock     uint32  // the frame the client simulates through (its game clock)
	drift     float64 // time dilation not yet applied to the clock, in frames
	joinAt    int     // tick of the join (the connection and RequestSnapshot)
	installAt int     // tick of the first install (0: none yet)
	settleAt  int     // tick the join settled (0: not yet)
	bytes0    int64   // server channel bytes sent before the join
	bytesJoin int64   // server channel bytes sent from the join to settling
	inputs    int     // inputs sampled
}

var joinCRC = crc64.MakeTable(crc64.ECMA)

// activeSum is the rig's desync checksum: a CRC-64 over the active
// entities (those inputs and the step change). The background is static;
// the final comparison covers it (joinRig.check).
func activeSum(w *world) func() uint64 {
	return func() uint64 {
		var crc uint64
		for _, e := range w.ents {
			for c := range rollback.ComponentID(3) {
				b, err := w.store.Component(e, c)
				if err != nil {
					crc = crc64.Update(crc, joinCRC, []byte{0xEE})
					continue
				}
				crc = crc64.Update(crc, joinCRC, b)
			}
		}
		return crc
	}
}

// background adds n entities owned by the server, with random component
// bytes from seed, to s.
func background(tb testing.TB, s *rollback.Store, n int, seed uint64) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 0xB6))
	for range n {
		e, err := s.Create(rollback.SenderLocal)
		if err != nil {
			tb.Fatal(err)
		}
		for c := range rollback.ComponentID(3) {
			b, _ := s.Component(e, c)
			for k := range b {
				b[k] = byte(rng.Uint32())
			}
		}
	}
}

func newJoinRig(tb testing.TB, seed uint64, link simlink.LinkConfig, bg, rewind int) *joinRig {
	tb.Helper()
	r := &joinRig{t: tb, net: newSimNet(tb, seed, link), link: link, rewind: rewind, bg: bg, bgSeed: seed, last: ^uint32(0), lead: 2}
	r.sw = newWorld(tb, rollback.LogConfig{}, len(entityOwners)+bg)
	background(tb, r.sw.store, bg, r.bgSeed)
	var err error
	if r.srv, err = rollback.NewServer(r.sw.x, testStep(r.sw), rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: rewind, Checksum: activeSum(r.sw)}); err != nil {
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

// addClient connects peer p now: a resident shares the server's initial
// world (frame 0) and streams from frame 1; a joiner asks for a snapshot.
func (r *joinRig) addClient(p rollback.Sender, resident bool) *joinClient {
	r.t.Helper()
	cl := &joinClient{p: p, resident: resident, rng: rand.New(rand.NewPCG(uint64(p)+1, r.bgSeed)), joinAt: int(r.net.tick)}
	cl.w = newWorld(r.t, rollback.LogConfig{}, len(entityOwners)+r.bg)
	if resident {
		background(r.t, cl.w.store, r.bg, r.bgSeed)
	}
	sample := func(f uint32, in *rollback.InputBuffer) {
		if f > r.last {
			return
		}
		w := cl.w
		if err := in.Add(w.ids.move.ID(), w.ents[2*p], w.ids.move.Encode(nil, Move{cl.rng.Int32N(5) - 2, cl.rng.Int32N(5) - 2})); err != nil {
			r.t.Fatal(err)
		}
		cl.inputs++
		if cl.rng.IntN(3) == 0 {
			if err := in.Add(w.ids.heal, w.ents[2*p+1], le32(cl.rng.Int32N(9))); err != nil {
				r.t.Fatal(err)
			}
			cl.inputs++
		}
	}
	var err error
	step := testStep(cl.w)
	if r.skew[p] { // a simulation that does not match the server's: hp of the last entity drifts
		inner := step
		step = func(f uint32, replay bool) {
			inner(f, replay)
			if hp, err := cl.w.store.Component(cl.w.ents[9], cHP); err == nil && f%16 == 0 {
				add32(hp, 1)
			}
		}
	}
	if cl.c, err = rollback.NewClient(cl.w.x, p, sample, step, rollback.ClientConfig{Checksum: activeSum(cl.w)}); err != nil {
		r.t.Fatal(err)
	}
	if cl.link, err = NewClientLink(cl.c, LinkConfig{}); err != nil {
		r.t.Fatal(err)
	}
	if cl.slink, err = NewServerLink(r.srv, r.repl, p, 0, LinkConfig{}); err != nil {
		r.t.Fatal(err)
	}
	cl.se, cl.ce = r.net.pair(int(p), transport.Config{}, cl.slink, cl.link)
	sink, err := rollback.NewSnapshotter(cl.w.store, nil, rollback.SnapshotConfig{})
	if err != nil {
		r.t.Fatal(err)
	}
	cl.slink.SetSnapshots(r.src) // state bursts for everyone, as ServerLinks does
	cl.link.SetSnapshots(sink)
	if resident {
		if err := cl.link.InstallSnapshot(0); err != nil {
			r.t.Fatal(err)
		}
		cl.installAt, cl.settleAt = cl.joinAt, cl.joinAt
	} else {
		cl.slink.RequestSnapshot()
	}
	r.cls = append(r.cls, cl)
	return cl
}

// target (handClock) advances client cl's game clock by a tick and returns the frame
// it simulates through. A resident's clock starts lead frames ahead of the
// server; a joiner sets its clock when its snapshot is in, as a game
// would: from the server's frame as the link knows it (ServerFrame), plus
// its round trip in frames and the lead. Both then follow the server's
// time dilation (ClientLink.TimeDilation), a frame more or less whenever
// it adds up to one.
func (r *joinRig) target(cl *joinClient) uint32 {
	switch {
	case cl.clock == 0 && cl.resident:
		cl.clock = r.frame + r.lead
	case cl.clock == 0:
		sf, ok := cl.link.ServerFrame()
		if !ok {
			r.t.Fatalf("client %d: installed, but no announcement", cl.p)
		}
		rtt := uint32((cl.ce.ch.Stats().SRTT + tick60 - 1) / tick60)
		cl.clock = sf + rtt + r.lead
	default:
		cl.clock++
		cl.drift += cl.link.TimeDilation()
		if cl.drift >= 1 {
			cl.clock++
			cl.drift--
		} else if cl.drift <= -1 {
			cl.clock--
			cl.drift++
		}
	}
	return min(cl.clock, r.last)
}

// step runs one tick: the server receives, ticks (advance) and flushes;
// then every client receives, ticks and flushes.
func (r *joinRig) step(advance bool) {
	r.t.Helper()
	r.net.advance()
	now, tick := r.net.now, r.net.tick
	for _, cl := range r.cls {
		cl.se.receive(now, tick)
	}
	if advance || r.frame == 0 {
		r.frame++
	}
	if err := r.srv.Tick(r.frame); err != nil {
		r.t.Fatal(err)
	}
	for _, cl := range r.cls {
		if err := cl.slink.Flush(cl.se.ch); err != nil {
			r.t.Fatalf("server link %d: %v", cl.p, err)
		}
		cl.se.flush(now, tick)
	}
	ft, _ := r.srv.FinalThrough()
	for _, cl := range r.cls {
		cl.ce.receive(now, tick)
		if cl.c.Ready() {
			if cl.installAt == 0 {
				cl.installAt = int(tick)
			}
			f, _ := cl.link.Frame(now)
			if r.handClock {
				f = r.target(cl)
			}
			if err := cl.c.Tick(max(min(f, r.last), cl.c.Present())); err != nil && !errors.Is(err, rollback.ErrPredictionLimit) {
				r.t.Fatalf("client %d Tick: %v", cl.p, err)
			}
		}
		if err := cl.link.Flush(cl.ce.ch); err != nil {
			r.t.Fatalf("client link %d: %v", cl.p, err)
		}
		cl.ce.flush(now, tick)
		if cl.settleAt == 0 && r.caughtUp(cl, ft) {
			cl.settleAt = int(tick)
			cl.bytesJoin = int64(cl.se.ch.Stats().BytesSent) - cl.bytes0
		}
	}
}

// caughtUp reports whether cl's join has settled: a snapshot installed,
// nothing held or missing, and its confirmed frames within the stream's
// normal lag (the link's round trip and a few ticks) of the server's
// newest final frame.
func (r *joinRig) caughtUp(cl *joinClient, ft uint32) bool {
	if !cl.c.Ready() || cl.link.Receiver().Stats().HeldNow != 0 || cl.link.Receiver().NeedsResync() {
		return false
	}
	lag := uint32((2*(r.link.Delay+r.link.Jitter))/tick60) + 8
	return cl.c.Confirmed()+lag >= ft
}

// settle stops the server at r.last+rewind (frame r.last is final, and
// nothing after it replicates) and runs until every client has confirmed
// r.last and every slice has its verdict.
func (r *joinRig) settle(maxTicks int) error {
	for r.frame < r.last+uint32(r.rewind) {
		r.step(true)
	}
	for range maxTicks {
		done := true
		for _, cl := range r.cls {
			if cl.c.Confirmed() != r.last || cl.c.Present() != r.last || cl.slink.PendingAckCount() != 0 ||
				cl.link.asked || cl.link.wantResync || cl.link.recv.AwaitingSnapshot() { // a state burst is not on its way
				done = false
			}
		}
		if done {
			return nil
		}
		r.step(false)
	}
	msg := ""
	for _, cl := range r.cls {
		msg += fmt.Sprintf("; client %d: ready %v, present %d, confirmed %d of %d, held %d, pending acks %d",
			cl.p, cl.c.Ready(), cl.c.Present(), cl.c.Confirmed(), r.last, cl.link.Receiver().Stats().HeldNow, cl.slink.PendingAckCount())
	}
	return fmt.Errorf("not settled %d ticks after the last frame%s", maxTicks, msg)
}

// check compares every client's store with the server's state at r.last
// (the Snapshotter undoes the server's frames after it), the background
// included, byte for byte.
func (r *joinRig) check() error {
	want := emptyStoreLike(r.t, r.sw.store)
	msg, err := r.src.AppendSnapshot(nil, 0, r.last)
	if err != nil {
		return err
	}
	dec, err := rollback.NewSnapshotter(want, nil, rollback.SnapshotConfig{})
	if err != nil {
		return err
	}
	if _, err := dec.InstallSnapshot(msg); err != nil {
		return err
	}
	for _, cl := range r.cls {
		if got := cl.w.store.Checksum(); got != want.Checksum() {
			return fmt.Errorf("client %d: state at frame %d differs from the server's: %s; %s", cl.p, r.last, diffStores(cl.w.store, want), joinStats(cl))
		}
	}
	return nil
}

func emptyStoreLike(tb testing.TB, s *rollback.Store) *rollback.Store {
	tb.Helper()
	d, err := rollback.NewStore(rollback.StoreConfig{Components: testComponents, Capacity: s.Capacity()})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// joinCase is one randomized join scenario.
type joinCase struct {
	seed     uint64
	link     simlink.LinkConfig
	bg       int // background entities
	rewind   int
	resident bool
	joins    []int // tick of each joiner's join, peers 1.. (0 is the resident, or a joiner too)
}

func (c joinCase) String() string {
	return fmt.Sprintf("seed %d: world %d B (%d background entities), delay %v jitter %v loss %.0f%%, MaxRewindFrames %d, resident %v, joins at ticks %v",
		c.seed, c.bg*joinEntityBytes, c.bg, c.link.Delay, c.link.Jitter, c.link.Loss*100, c.rewind, c.resident, c.joins)
}

// newJoinCase draws a scenario from seed: a world from a few entities to
// maxBytes of background (log-uniform), 0–20 % loss, 5–80 ms of delay,
// 1–4 joiners (and perhaps a resident client) joining at random times, or
// all at the same tick (one case in three).
func newJoinCase(seed uint64, maxBytes int) joinCase {
	rng := rand.New(rand.NewPCG(seed, 0x101))
	c := joinCase{seed: seed, rewind: 8 + rng.IntN(9)}
	c.link = simlink.LinkConfig{
		Delay:  time.Duration(5+rng.IntN(76)) * time.Millisecond,
		Jitter: time.Duration(rng.IntN(11)) * time.Millisecond,
		Loss:   float64(rng.IntN(21)) / 100,
	}
	maxBg := max(1, maxBytes/joinEntityBytes)
	switch rng.IntN(4) {
	case 0:
		c.bg = rng.IntN(64)
	case 1:
		c.bg = maxBg
	default: // log-uniform
		c.bg = int(float64(maxBg) * math.Pow(2, -10*rng.Float64()))
	}
	c.resident = rng.IntN(2) == 0
	joiners := 1 + rng.IntN(4)
	if c.resident {
		joiners = 1 + rng.IntN(3)
	}
	together := rng.IntN(3) == 0 // all at once, or each at its own time
	at := 10 + rng.IntN(300)
	for range joiners {
		if !together {
			at = 10 + rng.IntN(300)
		}
		c.joins = append(c.joins, at)
	}
	return c
}

// joinOutcome is what runJoinCase measured.
type joinOutcome struct {
	snapBytes   int
	ticks       int
	maxJoin     int // ticks from the join to settling, the slowest joiner
	maxCatch    int // ticks from the install to settling, the slowest joiner
	snapshots   uint64
	desyncs     uint64
	refused     uint64
	resyncAsked uint64
}

// runJoinCase runs c and returns an error describing the first violation:
// a joiner that did not settle in time, asked for more than one retry,
// or does not end up equal to the server.
func runJoinCase(tb testing.TB, c joinCase) (joinOutcome, error) {
	var out joinOutcome
	r := newJoinRig(tb, c.seed, c.link, c.bg, c.rewind)
	if snap, err := r.src.AppendSnapshot(nil, 0, 0); err == nil {
		out.snapBytes = len(snap)
	}
	if c.resident {
		r.addClient(0, true)
	}
	next := rollback.Sender(0)
	if c.resident {
		next = 1
	}
	// A join must install its snapshot within a bound that grows with the
	// snapshot — 3 s plus 10 s per MiB, several times what the transport
	// takes, so it only catches a stall — and then catch up with the
	// stream within a second and a half.
	installBound := 180 + 600*out.snapBytes/(1<<20)
	const catchBound = 90
	lastJoin := 0
	for _, j := range c.joins {
		lastJoin = max(lastJoin, j)
	}
	for tick := 1; ; tick++ {
		for _, j := range c.joins {
			if j == tick {
				r.addClient(next, false)
				next++
			}
		}
		r.step(true)
		if tick < lastJoin {
			continue
		}
		done := true
		for _, cl := range r.cls {
			if cl.settleAt != 0 {
				continue
			}
			done = false
			now := int(r.net.tick)
			if cl.installAt == 0 && now-cl.joinAt > installBound {
				return out, fmt.Errorf("client %d joined at tick %d, no snapshot installed after %d ticks: %s", cl.p, cl.joinAt, installBound, joinStats(cl))
			}
			if cl.installAt != 0 && now-cl.installAt > catchBound {
				return out, fmt.Errorf("client %d joined at tick %d, installed at %d, not caught up %d ticks later: %s", cl.p, cl.joinAt, cl.installAt, catchBound, joinStats(cl))
			}
		}
		if done {
			break
		}
	}
	r.last = r.frame + 60 // play a second more, then stop
	if err := r.settle(600); err != nil {
		return out, err
	}
	out.ticks = int(r.net.tick)
	for _, cl := range r.cls {
		ls := cl.link.Stats()
		ss := cl.slink.Stats()
		out.snapshots += ss.Snapshots
		out.desyncs += ls.Desyncs
		out.refused += ss.InputsRefused
		out.resyncAsked += ls.ResyncRequests
		if !cl.resident {
			out.maxJoin = max(out.maxJoin, cl.settleAt-cl.joinAt)
			out.maxCatch = max(out.maxCatch, cl.settleAt-cl.installAt)
			if ss.Snapshots > 2 || ls.Snapshots > 2 {
				return out, fmt.Errorf("client %d: %d snapshots sent, %d installed (at most one retry): %s", cl.p, ss.Snapshots, ls.Snapshots, joinStats(cl))
			}
		}
		if ls.ChecksumsVerified == 0 {
			return out, fmt.Errorf("client %d: no checksum verified: %s", cl.p, joinStats(cl))
		}
		if cl.inputs == 0 {
			return out, fmt.Errorf("client %d sampled no input", cl.p)
		}
	}
	if err := r.check(); err != nil {
		return out, err
	}
	return out, nil
}

func joinStats(cl *joinClient) string {
	return fmt.Sprintf("server link %+v; client link %+v (last error %v); receiver %+v; client %+v (baseline %d, confirmed %d, present %d)", cl.slink.Stats(), cl.link.Stats(), cl.link.LastError(), cl.link.Receiver().Stats(), cl.c.Stats(), cl.c.Baseline(), cl.c.Confirmed(), cl.c.Present())
}

// Randomized joins: worlds from a few entities to -join.maxbytes of
// background, 0–20 % loss, 5–80 ms of delay, 1–4 joiners that play from
// their first frame, joining at random times or all at once, with or
// without a client that was there from the start. Every joiner installs
// its snapshot within a bound proportional to its size and then catches
// up within 1.5 s, with at most one snapshot retry, verifies checksums,
// and ends equal to the server byte for byte: a desync the link did not
// repair is a failure. A failing seed prints its reproduction.
// -join.seeds=N runs seeds 1..N (default 6, a second or two);
// -join.seed=S one seed; -join.v logs every seed's figures.
func TestJoinRandomized(t *testing.T) {
	seeds := []uint64{}
	if *joinSeed != 0 {
		seeds = append(seeds, *joinSeed)
	} else {
		for s := 1; s <= *joinSeeds; s++ {
			seeds = append(seeds, uint64(s))
		}
	}
	failed := 0
	for _, seed := range seeds {
		c := newJoinCase(seed, *joinMaxBytes)
		out, err := runJoinCase(t, c)
		if err != nil {
			failed++
			t.Errorf("%v\n  %v\n  reproduce: go test ./rollback -run TestJoinRandomized -join.seed=%d -join.maxbytes=%d", err, c, seed, *joinMaxBytes)
			continue
		}
		if *joinVerbose {
			t.Logf("%v: snapshot %d B, slowest join %d ticks (catch-up %d), snapshots %d, desyncs %d, refused inputs %d, resync requests %d",
				c, out.snapBytes, out.maxJoin, out.maxCatch, out.snapshots, out.desyncs, out.refused, out.resyncAsked)
		}
	}
	if failed > 0 {
		t.Logf("%d of %d seeds failed", failed, len(seeds))
	}
}

// Item 5: a client joins a server whose world compresses to about 1 MiB
// (17 snapshot parts at the default chunk) over sim(25, 5, 10) and
// sim(50, 5, 10), every setting at its default, next to a resident client
// that plays: the join settles with one snapshot. Before, the stream
// stopped while the parts waited for the channel's window, its frames
// aged out of the ring, and the server sent snapshot after snapshot (18
// in a minute at 50 ms); or the receiver's 64-slice window overflowed and
// the client asked for another. It logs the time to the install and to
// settling, and the bytes sent to the joiner meanwhile. Other links and
// sizes:
//
//	go test ./rollback -run TestJoinLargeSnapshotSettles -v -join.figdelay=70 -join.figloss=20 -join.figbytes=4194304
func TestJoinLargeSnapshotSettles(t *testing.T) {
	type link struct {
		delay int
		loss  float64
		bytes int
	}
	links := []link{{25, 10, 1 << 20}, {50, 10, 1 << 20}}
	if *joinFigDelay > 0 {
		links = append(links, link{*joinFigDelay, *joinFigLoss, *joinFigBytes})
	}
	for _, k := range links {
		cl, _ := joinLargeWorld(t, k.delay, k.loss, k.bytes)
		ss, ls := cl.slink.Stats(), cl.link.Stats()
		if cl.settleAt == 0 || ss.Snapshots != 1 || ls.Snapshots != 1 || ls.SnapshotErrors != 0 || ls.ResyncRequests != 0 {
			t.Fatalf("sim(%d, 5, %g), %d B: %s", k.delay, k.loss, k.bytes, joinStats(cl))
		}
	}
}

// joinLargeWorld runs one join of a world of bg bytes over sim(delay, 5,
// loss), with a resident client playing, and logs the figures.
func joinLargeWorld(t *testing.T, delay int, loss float64, bytes int) (*joinClient, *joinRig) {
	t.Helper()
	r := newJoinRig(t, 7, sim(delay, 5, loss), bytes/joinEntityBytes, 12)
	r.addClient(0, true)
	for range 60 {
		r.step(true)
	}
	cl := r.addClient(1, false)
	cl.bytes0 = int64(cl.se.ch.Stats().BytesSent)
	for range 60 * (60 + 10*bytes>>20) { // a minute, and 10 s per MiB
		r.step(true)
		if cl.settleAt != 0 {
			break
		}
	}
	ss, ls := cl.slink.Stats(), cl.link.Stats()
	cs := cl.se.ch.Stats()
	t.Logf("sim(%d, 5, %g): snapshot %d B in %d parts; installed after %.2f s, settled after %.2f s; %d B sent to the joiner meanwhile (%d datagrams, %d lost (%s), %d reliable re-sent, %d redundant copies); snapshots sent %d, installed %d, refused %d; resync requests %d",
		delay, loss, ss.SnapshotBytes/max(ss.Snapshots, 1), ss.SnapshotParts/max(ss.Snapshots, 1),
		float64(cl.installAt-cl.joinAt)/60, float64(cl.settleAt-cl.joinAt)/60, cl.bytesJoin,
		cs.DatagramsSent, cs.Ack.Lost, lossText(cs.Ack), cs.ReliableResent, cs.RedundantCopies,
		ss.Snapshots, ls.Snapshots, ls.SnapshotErrors, ls.ResyncRequests)
	return cl, r
}

// Item 6: a client joins over sim(25, 5, 10) and plays from its very
// first frame. It samples only frames the server still accepts (it learns
// where the server is from the snapshot's announcement), so none of its
// inputs is refused, and it stays in sync: every checksum verifies, and
// its state at the end equals the server's. Before, its first predicted
// frames were already final on the server: their inputs were refused
// while the client kept them, and the checksum mismatched for good.
func TestJoinPlaysFromFirstFrame(t *testing.T) {
	r := newJoinRig(t, 3, sim(25, 5, 10), 200, 12)
	r.addClient(0, true)
	for range 100 {
		r.step(true)
	}
	cl := r.addClient(1, false)
	for range 300 {
		r.step(true)
	}
	r.last = r.frame + 30
	if err := r.settle(600); err != nil {
		t.Fatal(err)
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	ss, ls := cl.slink.Stats(), cl.link.Stats()
	if ss.InputsRefused != 0 || ss.InputsAccepted == 0 || ls.Desyncs != 0 || ls.ChecksumsVerified == 0 || cl.c.SampleFrom() <= cl.c.Baseline()+1 {
		t.Fatalf("sampling from %d after a snapshot of %d: %s", cl.c.SampleFrom(), cl.c.Baseline(), joinStats(cl))
	}
	t.Logf("snapshot of frame %d, sampling from %d; %d inputs accepted, %d checksums verified", cl.c.Baseline(), cl.c.SampleFrom(), ss.InputsAccepted, ls.ChecksumsVerified)
}

// Refused inputs are reported back: a resident client 150 ms away (9
// frames) whose clock starts level with the server's has its inputs
// refused as too old (MaxRewindFrames 8) until the time dilation has
// moved its clock ahead. Each refusal comes back (0x08) and the client takes the input
// out — or corrects a frame it already applied with it, the checksum of
// that frame waiting for the correction — so it never desyncs and ends
// equal to the server. Before, every refused input was a permanent
// desync.
func TestRefusedInputsReported(t *testing.T) {
	r := newJoinRig(t, 5, sim(150, 5, 5), 0, 8)
	r.lead, r.handClock = 0, true // no clock sync: the client starts level with the server
	cl := r.addClient(0, true)
	for range 600 {
		r.step(true)
	}
	r.last = r.frame + 30
	if err := r.settle(600); err != nil {
		t.Fatal(err)
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	ss, ls, cs := cl.slink.Stats(), cl.link.Stats(), cl.c.Stats()
	if ss.InputsRefused == 0 || ss.RefusalsSent != ss.InputsRefused || ls.InputsRefused != ss.InputsRefused || ls.RefusalErrors != 0 ||
		ls.Desyncs != 0 || ls.ResyncRequests != 0 || ls.ChecksumsVerified == 0 {
		t.Fatalf("%s", joinStats(cl))
	}
	t.Logf("%d inputs refused and reported, %d frames corrected, %d checks deferred for a refusal, %d checksums verified",
		ss.InputsRefused, cs.ConfirmCorrections, ls.ChecksumsDeferred, ls.ChecksumsVerified)
}

// A desync repairs itself: the client's state is damaged behind the
// simulation's back, its checksum stops matching, and the link asks for a
// state burst by itself; the client installs it while it keeps applying
// the stream around it (the frames after the snapshot's that it has are
// kept) and ends equal to the server. RequestResync does the same on
// demand, for a client in sync. A simulation that diverges again after
// every burst makes the link stop asking after MaxDesyncResyncs.
func TestDesyncResyncs(t *testing.T) {
	r := newJoinRig(t, 9, sim(25, 5, 10), 1000, 12)
	damaged := r.addClient(0, true)
	asked := r.addClient(1, true)
	r.skew = map[rollback.Sender]bool{2: true}
	skewed := r.addClient(2, true)
	for range 120 {
		r.step(true)
	}
	hp, err := damaged.w.store.Component(damaged.w.ents[9], cHP)
	if err != nil {
		t.Fatal(err)
	}
	add32(hp, 5)
	asked.link.RequestResync()
	for range 600 {
		r.step(true)
	}
	for _, cl := range []*joinClient{damaged, asked} {
		ls := cl.link.Stats()
		if ls.Snapshots != 1 || ls.ResyncRequests != 1 || cl.link.Receiver().NeedsResync() || cl.c.Baseline() == 0 {
			t.Fatalf("client %d: %s", cl.p, joinStats(cl))
		}
	}
	if ls := damaged.link.Stats(); ls.Desyncs == 0 || ls.DesyncResyncs != 1 {
		t.Fatalf("damaged: %s", joinStats(damaged))
	}
	if ls := asked.link.Stats(); ls.Desyncs != 0 || ls.DesyncResyncs != 0 {
		t.Fatalf("asked: %s", joinStats(asked))
	}
	if ls := skewed.link.Stats(); ls.DesyncResyncs != MaxDesyncResyncs || ls.Snapshots != MaxDesyncResyncs || skewed.slink.Stats().Snapshots != MaxDesyncResyncs {
		t.Fatalf("skewed: %s", joinStats(skewed))
	}
	r.cls = r.cls[:2] // the skewed client cannot converge
	r.last = r.frame + 30
	if err := r.settle(600); err != nil {
		t.Fatal(err)
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
}

// lossText lists a sender's losses by cause, for logs.
func lossText(st ackmap.SendStats) string {
	out := ""
	for c := ackmap.CauseReorder; c <= ackmap.CauseTimeout; c++ {
		if n := st.LostBy(c); n > 0 {
			out += fmt.Sprintf(" %v=%d", c, n)
		}
	}
	if out == "" {
		return "none"
	}
	return out[1:]
}
