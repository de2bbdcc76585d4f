package link

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/rollback"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/wire"
)

// session is a whole action-stream session on the simulated link: a
// Server with its Replicator, and clients each with a Client, a ClientLink
// and, on the server, a ServerLink — every pair joined by two
// transport.Channels over simlink, stepped in lock-step ticks on one
// goroutine (deterministic from the seed).
type session struct {
	t    testing.TB
	net  *simNet
	sw   *world
	srv  *rollback.Server[*rollback.Store]
	repl *rollback.Replicator
	cls  []*sessClient
	lead uint32 // frames the clients run ahead of the server
	last uint32 // the clients predict no frame beyond it

	states  []*rollback.Store // the server's state at the last close of frame f, at f % len
	frame   uint32            // the server's newest frame
	tcfg    transport.Config
	lcfg    LinkConfig
	maxSeen int                   // largest PendingAckCount seen
	extra   func(*rollback.Store) // if set, run on every client's store once built (session.grow)
	// linkErr, if set, takes the links' Flush errors (server: the server
	// link's) instead of failing the test.
	linkErr func(p rollback.Sender, server bool, err error)
}

type sessClient struct {
	p     rollback.Sender
	w     *world
	c     *rollback.Client[*rollback.Store]
	link  *ClientLink[*rollback.Store]
	slink *ServerLink[*rollback.Store]
	se    *chanEnd // server side of the pair
	ce    *chanEnd // client side
	rng   *rand.Rand
	from  uint32 // sample inputs for frames in [from, to]
	to    uint32
	ready bool // InstallSnapshot done
}

const sessRewind = 12 // ServerConfig.MaxRewindFrames: the replication delay

func newSession(t testing.TB, seed uint64, link simlink.LinkConfig, lcfg LinkConfig) *session {
	t.Helper()
	s := &session{t: t, net: newSimNet(t, seed, link), lead: 4, last: ^uint32(0), lcfg: lcfg}
	s.sw = newWorld(t, rollback.LogConfig{FrameCapacity: 64}, 64)
	var err error
	s.srv, err = rollback.NewServer(s.sw.x, testStep(s.sw), rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: sessRewind, Checksum: s.sw.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	s.states = make([]*rollback.Store, 64)
	for i := range s.states {
		if s.states[i], err = rollback.NewStore(rollback.StoreConfig{Components: testComponents, Capacity: 64}); err != nil {
			t.Fatal(err)
		}
		populate(t, s.states[i]) // same entities; copyStore copies the bytes
	}
	s.srv.SetHooks(rollback.ServerHooks{OnFrame: func(f uint32, _ bool) { copyStore(s.states[f%64], s.sw.store) }})
	if s.repl, err = rollback.NewReplicator(s.sw.log, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// addClient connects peer p, whose snapshot will be of the initial state
// (frame 0): the server starts its stream at frame 1 at once; the client
// installs the snapshot now if install, else later (installClient).
func (s *session) addClient(p rollback.Sender, install bool) *sessClient {
	s.t.Helper()
	cl := &sessClient{p: p, rng: rand.New(rand.NewPCG(uint64(p)+1, 77)), from: 1, to: ^uint32(0)}
	cl.w = newWorld(s.t, rollback.LogConfig{FrameCapacity: 64}, 64)
	if s.extra != nil {
		s.extra(cl.w.store)
	}
	sample := func(f uint32, in *rollback.InputBuffer) {
		if f < cl.from || f > cl.to {
			return
		}
		w := cl.w
		if err := in.Add(w.ids.move.ID(), w.ents[2*p], w.ids.move.Encode(nil, Move{cl.rng.Int32N(5) - 2, cl.rng.Int32N(5) - 2})); err != nil {
			s.t.Fatal(err)
		}
		if cl.rng.IntN(3) == 0 {
			if err := in.Add(w.ids.heal, w.ents[2*p+1], le32(cl.rng.Int32N(9))); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	var err error
	if cl.c, err = rollback.NewClient(cl.w.x, p, sample, testStep(cl.w), rollback.ClientConfig{Checksum: cl.w.store.Checksum}); err != nil {
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
	if install {
		s.installClient(cl, 0, nil)
	}
	return cl
}

// installClient installs a snapshot of frame f (state: from, or the
// client's own initial state when nil) through the link.
func (s *session) installClient(cl *sessClient, f uint32, from *rollback.Store) {
	s.t.Helper()
	if from != nil {
		copyStore(cl.w.store, from)
	}
	if err := cl.link.InstallSnapshot(f); err != nil {
		s.t.Fatal(err)
	}
	cl.ready = true
}

// step runs one tick: the server receives, ticks (advance) and flushes;
// then every client receives, ticks and flushes.
func (s *session) step(advance bool) {
	s.t.Helper()
	s.net.advance()
	now, tick := s.net.now, s.net.tick
	for _, cl := range s.cls {
		cl.se.receive(now, tick)
	}
	if advance || s.frame == 0 {
		s.frame++
	}
	if err := s.srv.Tick(s.frame); err != nil {
		s.t.Fatal(err)
	}
	for _, cl := range s.cls {
		if err := cl.slink.Flush(cl.se.ch); err != nil {
			if s.linkErr == nil {
				s.t.Fatal(err)
			}
			s.linkErr(cl.p, true, err)
		}
		cl.se.flush(now, tick)
		s.maxSeen = max(s.maxSeen, cl.slink.PendingAckCount())
	}
	for _, cl := range s.cls {
		cl.ce.receive(now, tick)
		if cl.ready {
			target := min(s.frame+s.lead, s.last)
			if err := cl.c.Tick(max(target, cl.c.Present())); err != nil && !errors.Is(err, rollback.ErrPredictionLimit) {
				s.t.Fatalf("client %d Tick: %v", cl.p, err)
			}
		}
		if err := cl.link.Flush(cl.ce.ch); err != nil {
			if s.linkErr == nil {
				s.t.Fatal(err)
			}
			s.linkErr(cl.p, false, err)
		}
		cl.ce.flush(now, tick)
	}
}

// settle stops the server at s.last+sessRewind (so frame s.last is final
// and nothing after it replicates) and runs until every client has
// confirmed s.last and every channel and link is idle.
func (s *session) settle(maxTicks int) {
	s.t.Helper()
	for s.frame < s.last+sessRewind {
		s.step(true)
	}
	for range maxTicks {
		done := true
		for _, cl := range s.cls {
			if cl.c.Confirmed() != s.last || cl.slink.PendingAckCount() != 0 || cl.se.ch.PendingCount() != 0 || cl.ce.ch.PendingCount() != 0 {
				done = false
			}
		}
		if done {
			return
		}
		s.step(false)
	}
	for _, cl := range s.cls {
		s.t.Logf("client %d: confirmed %d of %d, pending %d, channel pending %d/%d", cl.p, cl.c.Confirmed(), s.last,
			cl.slink.PendingAckCount(), cl.se.ch.PendingCount(), cl.ce.ch.PendingCount())
	}
	s.t.Fatalf("not settled after %d ticks", maxTicks)
}

// checkConverged asserts that every client's confirmed state equals the
// server's state at frame s.last byte for byte, that every replicated frame
// both logs hold is the same, record for record (the client's log holds
// its own inputs put back among the stream's), and that nothing went
// wrong on the way: no desync, no refused or malformed input, nothing aged
// out or dropped.
func (s *session) checkConverged() {
	s.t.Helper()
	want := s.states[s.last%64]
	for _, cl := range s.cls {
		if cl.c.Present() != s.last || cl.c.Confirmed() != s.last {
			s.t.Fatalf("client %d: present %d, confirmed %d, want %d", cl.p, cl.c.Present(), cl.c.Confirmed(), s.last)
		}
		sameStores(s.t, cl.w.store, want, "client "+cl.p.String())
		if cl.w.store.Checksum() != want.Checksum() {
			s.t.Fatalf("client %d: checksum differs", cl.p)
		}
		oldest, _ := cl.w.log.Oldest()
		sameLogs(s.t, cl.w.log, s.sw.log, oldest, s.last)
		ls, cs, rs := cl.link.Stats(), cl.c.Stats(), cl.link.Receiver().Stats()
		if ls.Desyncs != 0 || cs.Desyncs != 0 || ls.ChecksumsVerified == 0 || ls.UnpackErrors != 0 || rs.Dropped != 0 || rs.Refused != 0 || cl.link.Receiver().NeedsResync() {
			s.t.Fatalf("client %d: link %+v\nclient %+v\nreceiver %+v", cl.p, ls, cs, rs)
		}
		ss, ps := cl.slink.Stats(), s.repl.Peer(cl.p)
		if ss.InputsRefused != 0 || ss.Malformed != 0 || ps.AgedOut != 0 || ps.NeedsResync || ps.Pending != 0 {
			s.t.Fatalf("client %d: server link %+v\nreplicator %+v", cl.p, ss, ps)
		}
	}
}

// End to end: one server and three clients on sim(25, 5, 10) for 3,000
// ticks (600 with -short), each client moving and healing its
// own entities by inputs it predicts, the server simulating with late
// inputs (rewinds) and the step's derived records, the action stream
// replicating final frames, the clients reconciling. At the end every
// client's confirmed state equals the server's byte for byte (column
// compare and Store.Checksum), every replicated frame matches the server's
// log, the desync checksum (sent over the link and verified by the client)
// never fired, and the pending ack counts are back to 0 (S-H5).
func TestLinkEndToEnd(t *testing.T) {
	ticks := uint32(3000)
	if testing.Short() {
		ticks = 600
	}
	s := newSession(t, 42, sim(25, 5, 10), LinkConfig{})
	s.lead = 2 // inputs often arrive after their frame: the server rewinds
	for p := range rollback.Sender(3) {
		s.addClient(p, true)
	}
	s.last = ticks
	for s.frame < ticks {
		s.step(true)
	}
	s.settle(600)
	s.checkConverged()
	ss := s.srv.Stats()
	if ss.Rewinds == 0 || ss.DroppedTotal() != 0 {
		t.Fatalf("server %+v", ss)
	}
	var verified, rewinds uint64
	for _, cl := range s.cls {
		verified += cl.link.Stats().ChecksumsVerified
		rewinds += cl.c.Stats().Rewinds
	}
	t.Logf("%d ticks: server rewinds %d, client rewinds %d, checksums verified %d, max pending acks %d",
		ticks, ss.Rewinds, rewinds, verified, s.maxSeen)
	for _, cl := range s.cls {
		t.Logf("client %d: replicator %+v", cl.p, s.repl.Peer(cl.p))
		// Time-dilation feedback reached every client: its inputs arrive
		// late (lead 2 against a server that wants them early), so the
		// server asks it to speed up, and the client holds what the server
		// last said, to the message's 1/10,000 resolution.
		got, want := cl.link.TimeDilation(), s.srv.TimeDilation(cl.p)
		t.Logf("client %d: time dilation %.4f (server now %.4f), %d messages", cl.p, got, want, cl.link.Stats().Clocks)
		if cl.link.Stats().Clocks == 0 || got <= 0 || got-want > 0.005 || want-got > 0.005 {
			t.Fatalf("client %d: time dilation %v after %d messages", cl.p, got, cl.link.Stats().Clocks)
		}
	}
}

// S-H7 through the links: a client whose snapshot arrives late gets the
// stream from the start, but applies nothing — no frame staged, Confirm
// never even called — until ClientLink.InstallSnapshot; the slices that
// arrived meanwhile are held, not lost, and apply right after, and the
// client converges.
func TestLinkGateBeforeSnapshot(t *testing.T) {
	s := newSession(t, 7, sim(25, 5, 10), LinkConfig{})
	early := s.addClient(0, true)
	late := s.addClient(1, false)
	// Its server link does not say where it starts (as if its join
	// snapshot were late): without that, its link would install the
	// baseline by itself (TestLinkStartAnnounced).
	late.slink.started = true
	const installAt = 40
	late.from = installAt + s.lead + 1
	s.last = 300
	for s.frame < installAt {
		s.step(true)
	}
	cs, rs := late.c.Stats(), late.link.Receiver().Stats()
	if cs.FramesConfirmed != 0 || cs.ConfirmRefused != 0 || cs.FramesPredicted != 0 || rs.Frames != 0 || rs.HeldNow == 0 {
		t.Fatalf("before the snapshot: client %+v, receiver %+v", cs, rs)
	}
	// Frame 0's state is the initial state; the server's stream has been
	// running since frame 1 (AddPeer with baseline 0).
	s.installClient(late, 0, nil)
	if rs := late.link.Receiver().Stats(); rs.Frames == 0 {
		t.Fatalf("held slices not applied at install: %+v", rs)
	}
	for s.frame < s.last {
		s.step(true)
	}
	s.settle(600)
	s.checkConverged()
	_ = early
}

// S-H4 and S-H5: under sim(25, 2, 10) a client's view of every replicated
// frame converges to the server's (record for record, and its state byte
// for byte). Then the link goes dead for longer than the ring: the frames
// that age out of the ring unacknowledged are counted and the client
// flagged for a resync — none is lost silently — while the pending count
// stays bounded; after the link returns, a state burst (snapshot of a final
// frame, InstallSnapshot + Resync) makes the client whole again, and the
// pending count returns to 0.
func TestLinkConvergesAndCountsAgedOut(t *testing.T) {
	s := newSession(t, 99, sim(25, 2, 10), LinkConfig{})
	cl := s.addClient(2, true)
	other := s.addClient(3, true)
	cl.to = 200
	for s.frame < 300 {
		s.step(true)
	}
	// Converged so far: every final frame matches.
	ft, _ := s.srv.FinalThrough()
	oldest, _ := cl.w.log.Oldest()
	sameLogs(t, cl.w.log, s.sw.log, oldest, min(ft, cl.c.Confirmed()))
	if cl.c.Confirmed()+sessRewind+4 < ft || s.repl.Peer(cl.p).AgedOut != 0 {
		t.Fatalf("confirmed %d, final %d, %+v", cl.c.Confirmed(), ft, s.repl.Peer(cl.p))
	}

	// The link dies for 150 ticks (ring: 64 frames).
	s.net.setPair(cl.se, cl.ce, simlink.LinkConfig{Delay: 25e6, Loss: 1})
	for range 150 {
		s.step(true)
	}
	st := s.repl.Peer(cl.p)
	// Pending stays bounded by the channel: its in-flight window (64
	// datagrams, the oldest evicted as lost) plus its record queue.
	if st.AgedOut == 0 || !st.NeedsResync || st.Pending > 64+transport.DefaultRecordQueue {
		t.Fatalf("after the outage: %+v", st)
	}
	s.net.setPair(cl.se, cl.ce, sim(25, 2, 10))
	for range 30 {
		s.step(true)
	}
	if cl.c.Confirmed() >= s.frame-sessRewind-64 {
		t.Fatalf("client confirmed %d although frames aged out", cl.c.Confirmed())
	}
	// State burst: the server's state at its newest final frame.
	f, _ := s.srv.FinalThrough()
	s.installClient(cl, f, s.states[f%64])
	if err := cl.slink.Resync(f); err != nil {
		t.Fatal(err)
	}
	s.last = s.frame + 100
	for s.frame < s.last {
		s.step(true)
	}
	s.settle(600)
	// checkConverged, minus the link's cumulative aged-out count.
	want := s.states[s.last%64]
	for _, c := range []*sessClient{cl, other} {
		sameStores(t, c.w.store, want, "client "+c.p.String())
		oldest, _ := c.w.log.Oldest()
		sameLogs(t, c.w.log, s.sw.log, max(oldest, f+1), s.last)
		if c.link.Stats().Desyncs != 0 || c.link.Receiver().NeedsResync() || s.repl.NeedsResync(c.p) || c.slink.PendingAckCount() != 0 {
			t.Fatalf("client %d: %+v %+v", c.p, c.link.Stats(), s.repl.Peer(c.p))
		}
	}
	t.Logf("aged out and counted: %d frames; after the resync: %+v", st.AgedOut, s.repl.Peer(cl.p))
}

// S-H2 with C4: slices larger than one datagram (a budget of three) over
// sim(25, 5, 10), so some fragmented records lose a fragment and are
// abandoned although their other fragments were acked. At every verdict
// the baseline never passes a frame the client did not apply; the frames of
// abandoned records are re-sent until they arrive; in the end the client
// holds every frame exactly, and the pending count is 0 (S-H5).
func TestFragmentedSliceCreditedWhole(t *testing.T) {
	const frames = 300
	net := newSimNet(t, 5, sim(25, 5, 10))
	w := newWorld(t, rollback.LogConfig{FrameCapacity: 64}, 64)
	repl, _ := rollback.NewReplicator(w.log, nil)
	const peer = 6
	_ = repl.AddPeer(peer, 0)
	tg := newRecTarget(t, peer)
	rv := newTestReceiver(t, w, tg, rollback.ReceiverConfig{})
	_ = rv.Reset(0)

	srvH := &verdicts{on: func(tag uint64, ok bool) {
		repl.OnRecord(peer, tag, ok)
		if repl.LastAcked(peer) > rv.AppliedThrough() {
			t.Fatalf("baseline %d passed the client's applied frame %d", repl.LastAcked(peer), rv.AppliedThrough())
		}
	}}
	cliH := &verdicts{msg: func(m transport.Message) {
		if m.Delivery == transport.Record {
			if err := rv.Unpack(m.Payload); err != nil {
				t.Fatal(err)
			}
		}
	}}
	se, ce := net.pair(0, transport.Config{}, srvH, cliH)
	single := se.ch.MaxSinglePayload(transport.Record)
	budget := 3 * single
	var confirmed, abandoned, fragmented int
	srvH.count = func(ok bool) {
		if ok {
			confirmed++
		} else {
			abandoned++
		}
	}
	buf := make([]byte, 0, budget)
	pay := make([]byte, 12)
	for tick := uint32(1); tick < frames+400; tick++ {
		net.advance()
		se.receive(net.now, net.tick)
		if tick <= frames {
			fillFrame(t, w, tick, func() {
				for i := range 60 {
					pay[0], pay[1] = byte(i), byte(tick)
					_ = w.x.Execute(rollback.SenderLocal, w.ids.ping, rollback.NoEntity, pay)
				}
			})
		}
		newest, _ := w.log.Newest()
		if repl.PendingAckCount(peer) < defaultMaxPendingRecords {
			pk, out, err := repl.PackForPeer(peer, newest, buf[:0], budget)
			if err != nil {
				t.Fatal(err)
			}
			if pk.Frames > 0 {
				if err := se.ch.SendRecord(pk.Tag, out); err != nil {
					t.Fatal(err)
				}
				repl.Sent(pk)
				if pk.Bytes > single {
					fragmented++
				}
			}
		}
		se.flush(net.now, net.tick)
		ce.receive(net.now, net.tick)
		ce.flush(net.now, net.tick)
		if tick > frames && repl.LastAcked(peer) == frames && repl.PendingAckCount(peer) == 0 && se.ch.PendingCount() == 0 {
			break
		}
	}
	if rv.AppliedThrough() != frames || repl.LastAcked(peer) != frames || repl.PendingAckCount(peer) != 0 {
		t.Fatalf("applied %d, baseline %d, pending %d", rv.AppliedThrough(), repl.LastAcked(peer), repl.PendingAckCount(peer))
	}
	oldest, _ := w.log.Oldest()
	for f := oldest; f <= frames; f++ {
		if !sameRecords(tg.frames[f], logRecords(t, w.log, f, peer, nil)) {
			t.Fatalf("frame %d differs", f)
		}
	}
	if abandoned == 0 || fragmented == 0 || confirmed == 0 || se.ch.Stats().FragmentsSent == 0 {
		t.Fatalf("confirmed %d, abandoned %d, fragmented sends %d", confirmed, abandoned, fragmented)
	}
	t.Logf("%d fragmented sends, %d records confirmed, %d abandoned", fragmented, confirmed, abandoned)
}

// verdicts is a transport.Handler of plain functions.
type verdicts struct {
	on    func(tag uint64, ok bool)
	count func(ok bool)
	msg   func(transport.Message)
}

func (v *verdicts) OnMessage(m transport.Message) {
	if v.msg != nil {
		v.msg(m)
	}
}

func (v *verdicts) OnRecord(tag uint64, ok bool) {
	if v.count != nil {
		v.count(ok)
	}
	if v.on != nil {
		v.on(tag, ok)
	}
}

func (v *verdicts) OnDisconnect(wire.DisconnectReason) {}

// The server link refuses malformed input messages whole (and inputs
// claiming another sender), never panics, submits good ones under the
// channel's peer id, and hands messages it does not handle to OnOther.
func TestServerLinkMessages(t *testing.T) {
	w, srv := newServerWorld(t, rollback.LogConfig{FrameCapacity: 16}, rollback.ServerConfig{FirstFrame: 1}, false)
	repl, _ := rollback.NewReplicator(w.log, nil)
	var other int
	l, err := NewServerLink(srv, repl, 1, 0, LinkConfig{OnOther: func(transport.Message) { other++ }})
	if err != nil {
		t.Fatal(err)
	}
	heal := []rollback.Input{{Frame: 2, Sender: 1, Type: w.ids.heal, Entity: w.ents[3], Payload: le32(5)}}
	good := appendInputs(nil, 2, 1, heal)
	forged := appendInputs(nil, 2, 0, heal)
	for _, b := range [][]byte{nil, {msgInputs}, good[:len(good)-1], append(bytes.Clone(good), 0), forged, {msgChecksum, 1, 2}} {
		l.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: b})
	}
	l.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: good})
	l.OnMessage(transport.Message{Delivery: transport.Unreliable, Payload: good})
	st := l.Stats()
	if st.Malformed != 6 || st.InputsAccepted != 1 || other != 1 || srv.Pending() != 1 {
		t.Fatalf("%+v, other %d, pending %d", st, other, srv.Pending())
	}
	if _, err := NewServerLink(srv, repl, 1, 0, LinkConfig{}); !errors.Is(err, rollback.ErrPeerExists) {
		t.Fatalf("second link for peer 1: %v", err)
	}
	if _, err := NewServerLink(srv, repl, 2, 0, LinkConfig{Budget: 10}); !errors.Is(err, rollback.ErrInvalidConfig) {
		t.Fatalf("bad config: %v", err)
	}
	l.Close()
	if err := l.Flush(nil); !errors.Is(err, rollback.ErrUnknownPeer) {
		t.Fatalf("Flush after Close: %v", err)
	}
}

// Several slices per tick (SlicesPerFlush 4) on a stream larger than a
// datagram per frame, over sim(25, 5, 20): slices arrive after gaps and are
// held, abandoned ranges are re-sent ahead of new frames, and confirmed
// slices ahead of a gap credit nothing until it closes — at every verdict
// the baseline stays at or before the last frame the client applied
// (S-H2). In the end the client holds every frame exactly, nothing aged
// out, and the pending count is 0 (S-H5).
func TestPipelinedSlicesConverge(t *testing.T) {
	const frames = 400
	net := newSimNet(t, 21, sim(25, 5, 20))
	w := newWorld(t, rollback.LogConfig{FrameCapacity: 64}, 64)
	srv, err := rollback.NewServer(w.x, nil, rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: 4, MaxQueuedActions: 4096})
	if err != nil {
		t.Fatal(err)
	}
	repl, _ := rollback.NewReplicator(w.log, nil)
	link, err := NewServerLink(srv, repl, 0, 0, LinkConfig{ChecksumEvery: NoChecksums})
	if err != nil {
		t.Fatal(err)
	}
	tg := newRecTarget(t, 0)
	rv := newTestReceiver(t, w, tg, rollback.ReceiverConfig{})
	_ = rv.Reset(0)
	srvH := &verdicts{on: func(tag uint64, ok bool) {
		link.OnRecord(tag, ok)
		if repl.LastAcked(0) > rv.AppliedThrough() {
			t.Fatalf("baseline %d passed the client's applied frame %d", repl.LastAcked(0), rv.AppliedThrough())
		}
	}}
	cliH := &verdicts{msg: func(m transport.Message) {
		if m.Delivery == transport.Record {
			if err := rv.Unpack(m.Payload); err != nil {
				t.Fatal(err)
			}
		}
	}}
	se, ce := net.pair(0, transport.Config{}, srvH, cliH)
	pay := make([]byte, 12)
	tick := uint32(0)
	for ; tick < frames+600; tick++ {
		net.advance()
		se.receive(net.now, net.tick)
		if tick < frames {
			for i := range 40 {
				pay[0], pay[1] = byte(i), byte(tick)
				_ = srv.EnqueueAction(w.ids.ping, rollback.NoEntity, pay)
			}
			if err := srv.Tick(tick + 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := link.Flush(se.ch); err != nil {
			t.Fatal(err)
		}
		se.flush(net.now, net.tick)
		ce.receive(net.now, net.tick)
		ce.flush(net.now, net.tick)
		ft, _ := srv.FinalThrough()
		if tick >= frames && repl.LastAcked(0) == ft && link.PendingAckCount() == 0 && se.ch.PendingCount() == 0 {
			break
		}
	}
	ft, _ := srv.FinalThrough()
	if rv.AppliedThrough() != ft || repl.LastAcked(0) != ft || link.PendingAckCount() != 0 {
		t.Fatalf("applied %d, baseline %d, final %d, pending %d", rv.AppliedThrough(), repl.LastAcked(0), ft, link.PendingAckCount())
	}
	oldest, _ := w.log.Oldest()
	for f := oldest; f <= ft; f++ {
		if !sameRecords(tg.frames[f], logRecords(t, w.log, f, 0, nil)) {
			t.Fatalf("frame %d differs", f)
		}
	}
	st, rs := repl.Peer(0), rv.Stats()
	if st.AgedOut != 0 || rs.Held == 0 || rs.Dropped != 0 || st.Abandoned == 0 || link.Stats().Slices <= uint64(frames) {
		t.Fatalf("replicator %+v\nreceiver %+v\nlink %+v", st, rs, link.Stats())
	}
	t.Logf("%d slices for %d frames, %d abandoned, %d held at the client; settled at tick %d", link.Stats().Slices, ft, st.Abandoned, rs.Held, tick)
}

// A refused input comes back: the server link queues a report of every
// input Server.Submit refuses (kind 0x08: frame, reason, the record)
// and sends it on the next Flush; the client link hands it to
// Client.Refused, which takes the input out of the client's unconfirmed
// history. Malformed reports and announcements are counted and change
// nothing.
func TestLinkRefusalMessages(t *testing.T) {
	w, srv := newServerWorld(t, rollback.LogConfig{FrameCapacity: 16}, rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: 4}, false)
	repl, _ := rollback.NewReplicator(w.log, nil)
	sl, err := NewServerLink(srv, repl, 1, 0, LinkConfig{ChecksumEvery: NoChecksums})
	if err != nil {
		t.Fatal(err)
	}
	mustTick(t, srv, 10) // frames up to 6 are final: an input for 3 is too old
	var cw *world
	cw, c := newClientWorld(t, rollback.LogConfig{FrameCapacity: 16}, 1, func(f uint32, in *rollback.InputBuffer) {
		_ = in.Add(cw.ids.heal, cw.ents[3], le32(int32(f)))
	}, false, rollback.ClientConfig{})
	cl, err := NewClientLink(c, LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(4); err != nil {
		t.Fatal(err)
	}
	in := c.PendingInputs(nil)[2] // frame 3's
	msg := appendInputs(nil, in.Frame, 1, []rollback.Input{in})
	sl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: msg})
	ch := &fakeStream{room: 10}
	if err := sl.Flush(ch); err != nil {
		t.Fatal(err)
	}
	if st := sl.Stats(); st.InputsRefused != 1 || st.RefusalsSent != 1 || len(ch.rel) == 0 {
		t.Fatalf("server link %+v", st)
	}
	var report []byte
	for _, m := range ch.rel {
		if m[0] == msgRefused {
			report = m
		}
	}
	if len(report) < 6 || report[5] != byte(rollback.DropTooOld) {
		t.Fatalf("report %x", report)
	}
	bad := [][]byte{
		report[:5], report[:len(report)-1], append(bytes.Clone(report), 0),
		{msgAnnounce, 1, 2, 3}, {msgChecksum, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, {msgChecksum, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0},
	}
	other := bytes.Clone(report)
	other[6] = 2 // the record claims peer 2
	bad = append(bad, other)
	for _, b := range bad {
		cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: b})
	}
	if st := cl.Stats(); st.Malformed != uint64(len(bad)) || st.InputsRefused != 0 || len(c.PendingInputs(nil)) != 4 {
		t.Fatalf("after malformed reports: %+v, %d pending", st, len(c.PendingInputs(nil)))
	}
	cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: report})
	pend := c.PendingInputs(nil)
	if st := cl.Stats(); st.InputsRefused != 1 || st.RefusalErrors != 0 || len(pend) != 3 {
		t.Fatalf("after the report: %+v, pending %+v", st, pend)
	}
	for _, p := range pend {
		if p.Frame == 3 {
			t.Fatalf("frame 3's refused input still pending: %+v", pend)
		}
	}
}
