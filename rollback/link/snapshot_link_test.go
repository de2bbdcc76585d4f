package link

import (
	"testing"

	"github.com/tickwire/tickwire/rollback"

	"github.com/tickwire/tickwire/transport"
)

// withSnapshots gives cl's links snapshotters: the server's reads the
// server's store and log, the client's writes the client's store.
func (s *session) withSnapshots(cl *sessClient, cfg rollback.SnapshotConfig) {
	s.t.Helper()
	src, err := rollback.NewSnapshotter(s.sw.store, s.sw.log, cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	sink, err := rollback.NewSnapshotter(cl.w.store, nil, cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	cl.slink.SetSnapshots(src)
	cl.link.SetSnapshots(sink)
}

// stepJoin runs one tick and marks a client whose link installed a
// snapshot ready, sampling inputs only for frames the server can still
// take once they arrive.
func (s *session) stepJoin(advance bool) {
	s.step(advance)
	for _, cl := range s.cls {
		if !cl.ready && cl.c.Ready() {
			cl.ready = true
			cl.from = s.frame + s.lead + 1
		}
	}
}

// joinLate runs the join scenario on s: client 0 plays from the start,
// client 1 joins at frame 100 by a snapshot (codec) and plays to frame
// 400; both must converge with the server. It returns the joiner.
func (s *session) joinLate(codec rollback.Compression) *sessClient {
	s.t.Helper()
	s.addClient(0, true)
	s.last = 400
	for s.frame < 100 {
		s.step(true)
	}
	late := s.addClient(1, false)
	late.from = ^uint32(0)
	s.withSnapshots(late, rollback.SnapshotConfig{Compression: codec})
	late.slink.RequestSnapshot()
	for s.frame < s.last {
		s.stepJoin(true)
	}
	if !late.ready || late.c.Baseline() < 100-sessRewind {
		s.t.Fatalf("codec %d: joiner ready %v, baseline %d", codec, late.ready, late.c.Baseline())
	}
	s.settle(600)
	s.checkConverged()
	return late
}

// Join: a client joins mid-game over sim(25, 5, 10). The server sends it a
// snapshot of its newest final frame — taken from the live store by
// undoing the newer frames — as one reliable message; the client installs
// it on arrival (the S-H7 gate: nothing applied before), the stream
// continues after the snapshot's frame, and in the end the joiner, like
// the client that was there from the start, equals the server byte for
// byte, record for record, with its checksums verified.
func TestLinkSnapshotJoin(t *testing.T) {
	for _, codec := range []rollback.Compression{rollback.CompressZstd, rollback.CompressS2} {
		s := newSession(t, 11, sim(25, 5, 10), LinkConfig{})
		late := s.joinLate(codec)
		ss, cs := late.slink.Stats(), late.link.Stats()
		if ss.Snapshots != 1 || cs.Snapshots != 1 || cs.SnapshotErrors != 0 || late.c.Stats().FramesPredicted == 0 {
			t.Fatalf("codec %d: server link %+v, client link %+v", codec, ss, cs)
		}
		t.Logf("codec %d: snapshot of frame %d, %d bytes", codec, late.c.Baseline(), ss.SnapshotBytes)
	}
}

// Repair: the link of one client dies for longer than the ring, so frames
// age out unacknowledged (Replicator.NeedsResync) and the client's
// receiver finds a gap it can never fill. The server sends state bursts
// by itself — at most one per ring of frames while the link is dead — and
// once the link is back the client installs them, asks for one more if
// its receiver still lacks a frame, and converges to the server byte for
// byte without any manual step.
func TestLinkStateBurstRepairs(t *testing.T) {
	s := newSession(t, 99, sim(25, 2, 10), LinkConfig{})
	cl := s.addClient(2, true)
	other := s.addClient(3, true)
	s.withSnapshots(cl, rollback.SnapshotConfig{})
	cl.to = 200
	for s.frame < 300 {
		s.stepJoin(true)
	}
	if cl.slink.Stats().Snapshots != 0 {
		t.Fatalf("burst before any loss: %+v", cl.slink.Stats())
	}
	s.net.setPair(cl.se, cl.ce, sim(25, 0, 100))
	for range 150 {
		s.stepJoin(true)
	}
	if st := s.repl.Peer(cl.p); st.AgedOut == 0 {
		t.Fatalf("nothing aged out: %+v", st)
	}
	bursts := cl.slink.Stats().Snapshots
	if bursts == 0 || bursts > 150/64+1 {
		t.Fatalf("%d bursts during the outage", bursts)
	}
	s.net.setPair(cl.se, cl.ce, sim(25, 2, 10))
	s.last = s.frame + 100
	for s.frame < s.last {
		s.stepJoin(true)
	}
	s.settle(600)
	want := s.states[s.last%64]
	for _, c := range []*sessClient{cl, other} {
		sameStores(t, c.w.store, want, "client "+c.p.String())
		oldest, _ := c.w.log.Oldest()
		sameLogs(t, c.w.log, s.sw.log, max(oldest, c.c.Baseline()+1), s.last)
		if c.link.Stats().Desyncs != 0 || c.link.Receiver().NeedsResync() || s.repl.NeedsResync(c.p) || c.slink.PendingAckCount() != 0 {
			t.Fatalf("client %d: %+v %+v", c.p, c.link.Stats(), s.repl.Peer(c.p))
		}
	}
	ls := cl.link.Stats()
	if ls.Snapshots == 0 || ls.SnapshotErrors != 0 || ls.ChecksumsVerified == 0 {
		t.Fatalf("client link %+v", ls)
	}
	// A client's request: one made before the last burst is ignored, a
	// current one answered on the next Flush.
	ask := func(base uint32) {
		cl.slink.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: []byte{msgResync, byte(base), byte(base >> 8), byte(base >> 16), byte(base >> 24)}})
	}
	sent := cl.slink.Stats().Snapshots
	ask(cl.c.Baseline() - 1)
	s.step(true)
	ask(cl.c.Baseline())
	mid := cl.slink.Stats().Snapshots
	s.step(true)
	if st := cl.slink.Stats(); mid != sent || st.Snapshots != sent+1 || st.ResyncIgnored != 1 {
		t.Fatalf("requests: %+v", st)
	}
	t.Logf("aged out %d; bursts sent %d, installed %d; resync requests %d (server: %d, ignored %d)",
		s.repl.Peer(cl.p).AgedOut, cl.slink.Stats().Snapshots, ls.Snapshots, ls.ResyncRequests,
		cl.slink.Stats().ResyncRequests, cl.slink.Stats().ResyncIgnored)
}

// A large snapshot (10,000 entities; about 80 datagrams even compressed)
// crosses sim(25, 5, 10) as one reliable message: the channel fragments it
// and repairs lost pieces, and the receiving Snapshotter installs it
// byte-identical.
func TestSnapshotFragmentedOverLossyLink(t *testing.T) {
	net := newSimNet(t, 21, sim(25, 5, 10))
	src := gameStore(t, 10000, 4)
	dst := emptyLike(t, src)
	enc, err := rollback.NewSnapshotter(src, nil, rollback.SnapshotConfig{Compression: rollback.CompressZstd})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := rollback.NewSnapshotter(dst, nil, rollback.SnapshotConfig{})
	if err != nil {
		t.Fatal(err)
	}
	installed := false
	hc := &verdicts{msg: func(m transport.Message) {
		if m.Delivery != transport.Reliable || len(m.Payload) == 0 || m.Payload[0] != msgSnapshot {
			return
		}
		if f, err := dec.InstallSnapshot(m.Payload[1:]); err != nil || f != 77 {
			t.Errorf("install: %d %v", f, err)
		}
		installed = true
	}}
	se, ce := net.pair(0, transport.Config{}, &verdicts{}, hc)
	msg, err := enc.AppendSnapshot([]byte{msgSnapshot}, 0, 77)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := se.ch.SendReliable(DefaultLinkStream, msg); err != nil {
		t.Fatalf("%d-byte message: %v", len(msg), err)
	}
	for tick := 0; tick < 2000 && !installed; tick++ {
		net.advance()
		se.receive(net.now, net.tick)
		se.flush(net.now, net.tick)
		ce.receive(net.now, net.tick)
		ce.flush(net.now, net.tick)
	}
	if !installed || src.Checksum() != dst.Checksum() {
		t.Fatalf("installed %v", installed)
	}
	t.Logf("%d bytes in %d fragments, %d ticks", len(msg), se.ch.Stats().FragmentsSent, net.tick)
}
