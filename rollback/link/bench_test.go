package link

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/wire"
)

// loopSink collects a channel's datagrams for delivery straight to the
// other channel: no socket, no simulated link.
type loopSink struct {
	bufs [][]byte
	out  [][]byte
}

func (s *loopSink) Buffer() []byte {
	if len(s.out) == len(s.bufs) {
		s.bufs = append(s.bufs, make([]byte, 0, transport.MaxMTU))
	}
	return s.bufs[len(s.out)][:0]
}

func (s *loopSink) Commit(d []byte) { s.out = append(s.out, d) }

// loopPair is two channels back to back: srv (handler hs) and cli
// (handler hc).
type loopPair struct {
	srv, cli   *transport.Channel
	sSink, cSk loopSink
}

func newLoopPair(tb testing.TB, i int, hs, hc transport.Handler) *loopPair {
	tb.Helper()
	p := &loopPair{}
	var err error
	if p.srv, err = transport.NewChannel(transport.Config{}, hs, wire.Seq(100+i), 7); err != nil {
		tb.Fatal(err)
	}
	if p.cli, err = transport.NewChannel(transport.Config{}, hc, wire.Seq(5000+i), 7); err != nil {
		tb.Fatal(err)
	}
	return p
}

// flushServer flushes the server channel and delivers to the client.
func (p *loopPair) flushServer(now time.Duration, tick uint64) {
	p.srv.Flush(now, &p.sSink)
	p.deliverToClient(now, tick)
}

// flushClient flushes the client channel and delivers to the server.
func (p *loopPair) flushClient(now time.Duration, tick uint64) {
	p.cli.Flush(now, &p.cSk)
	p.deliverToServer(now, tick)
}

func (p *loopPair) deliverToClient(now time.Duration, tick uint64) {
	for _, d := range p.sSink.out {
		_ = p.cli.Receive(now, d[wire.SessionHeaderLen:])
	}
	p.sSink.out = p.sSink.out[:0]
}

func (p *loopPair) deliverToServer(now time.Duration, tick uint64) {
	for _, d := range p.cSk.out {
		_ = p.srv.Receive(now, d[wire.SessionHeaderLen:])
	}
	p.cSk.out = p.cSk.out[:0]
}

// nopHandler ignores everything (a peer that only acks).
type nopHandler struct{ records int }

func (h *nopHandler) OnMessage(m transport.Message) {
	if m.Delivery == transport.Record {
		h.records++
	}
}
func (*nopHandler) OnRecord(uint64, bool)              {}
func (*nopHandler) OnDisconnect(wire.DisconnectReason) {}

// peerBench is a server with 64 connected peers over back-to-back
// channels: each peer moves its entity every frame (an input message on
// the reliable stream), the server ticks, and every ServerLink flushes
// (pack the final frames owed + SendRecord) before its channel flushes.
type peerBench struct {
	srv    *rollback.Server[*rollback.Store]
	links  []*ServerLink[*rollback.Store]
	pairs  []*loopPair
	cli    []nopHandler
	msgs   [][]byte
	pay    []byte
	frame  uint32
	now    time.Duration
	tick   uint64
	ids    actionIDs
	ents   []rollback.Entity
	inputs []rollback.Input
}

func newPeerBench(tb testing.TB, peers int) *peerBench {
	tb.Helper()
	x, _, ents, ids := peerWorld(tb, 64, 64, rollback.LogConfig{})
	srv, err := rollback.NewServer(x, nil, rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: 8})
	if err != nil {
		tb.Fatal(err)
	}
	repl, _ := rollback.NewReplicator(x.Log(), nil)
	pb := &peerBench{srv: srv, cli: make([]nopHandler, peers), ids: ids, ents: ents}
	for p := range peers {
		l, err := NewServerLink(srv, repl, rollback.Sender(p), 0, LinkConfig{ChecksumEvery: NoChecksums})
		if err != nil {
			tb.Fatal(err)
		}
		pb.links = append(pb.links, l)
		pb.pairs = append(pb.pairs, newLoopPair(tb, p, l, &pb.cli[p]))
		pb.msgs = append(pb.msgs, nil)
	}
	pb.inputs = make([]rollback.Input, 1)
	return pb
}

// clientSide is the peers' work: each receives what the server sent last
// tick (acking it) and sends its input for the next frame.
func (pb *peerBench) clientSide() {
	f := pb.frame + 1
	for p, pair := range pb.pairs {
		pair.deliverToClient(pb.now, pb.tick)
		pb.pay = pb.ids.move.Encode(pb.pay[:0], Move{1, int32(f)})
		pb.inputs[0] = rollback.Input{Frame: f, Sender: rollback.Sender(p), Type: pb.ids.move.ID(), Entity: pb.ents[p], Payload: pb.pay}
		pb.msgs[p] = appendInputs(pb.msgs[p][:0], f, rollback.Sender(p), pb.inputs)
		if _, err := pair.cli.SendReliable(DefaultLinkStream, pb.msgs[p]); err != nil {
			panic(err)
		}
		pair.cli.Flush(pb.now, &pair.cSk)
	}
}

// serverSide is the server's tick: receive every peer's datagrams (inputs
// to ServerLink.OnMessage and Server.Submit, acks to the record
// verdicts), Server.Tick, then per peer ServerLink.Flush and Channel.Flush.
func (pb *peerBench) serverSide() {
	pb.frame++
	pb.tick++
	pb.now += tick60
	for _, pair := range pb.pairs {
		pair.deliverToServer(pb.now, pb.tick)
	}
	if err := pb.srv.Tick(pb.frame); err != nil {
		panic(err)
	}
	for p, l := range pb.links {
		if err := l.Flush(pb.pairs[p].srv); err != nil {
			panic(err)
		}
		pb.pairs[p].srv.Flush(pb.now, &pb.pairs[p].sSink)
	}
}

// A 60 Hz server tick with 64 peers over back-to-back channels (no
// sockets), timing everything the server does: receive each peer's
// datagram (its input message → ServerLink.OnMessage → Submit; its
// acks → the record verdicts → Replicator.OnRecord), Server.Tick (64
// inputs, no step), then for each peer ServerLink.Flush (pack the final
// frames owed, SendRecord) and Channel.Flush (build the datagram). The
// peers' own work — receiving, acking, sending inputs — runs with the timer
// stopped. Every peer is sent the other 63 peers' inputs, so each frame fans
// out to 64 × 63 = 4,032 records (about one datagram per peer per frame),
// packed again while unacknowledged.
func BenchmarkPeerServerTick64(b *testing.B) {
	pb := newPeerBench(b, 64)
	for range 200 {
		pb.clientSide()
		pb.serverSide()
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		pb.clientSide()
		b.StartTimer()
		pb.serverSide()
	}
	b.StopTimer()
	st := pb.links[0].Stats()
	if pb.cli[0].records == 0 || st.Slices == 0 || pb.links[63].PendingAckCount() > 4 {
		b.Fatalf("nothing replicated: %+v", st)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64, "ns/peer")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tick60.Nanoseconds())*100, "%tick")
}

func TestNoAllocsLinks(t *testing.T) {
	sw := newWorld(t, rollback.LogConfig{FrameCapacity: 16}, 64)
	srv, err := rollback.NewServer(sw.x, testStep(sw), rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: 4, Checksum: sw.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	var cw *world
	move := make([]byte, 0, 8)
	sample := func(f uint32, in *rollback.InputBuffer) {
		move = cw.ids.move.Encode(move[:0], Move{int32(f % 3), -1})
		_ = in.Add(cw.ids.move.ID(), cw.ents[2], move)
	}
	cw = newWorld(t, rollback.LogConfig{FrameCapacity: 16}, 64)
	c, _ := rollback.NewClient(cw.x, 1, sample, testStep(cw), rollback.ClientConfig{Checksum: cw.store.Checksum})
	repl, _ := rollback.NewReplicator(sw.log, nil)
	sl, err := NewServerLink(srv, repl, 1, 0, LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := NewClientLink(c, LinkConfig{})
	if err := cl.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	pair := newLoopPair(t, 0, sl, cl)
	var now time.Duration
	f := uint32(0)
	op := func() {
		f++
		now += tick60
		pair.flushClient(now, uint64(f))
		if err := srv.Tick(f); err != nil {
			t.Fatal(err)
		}
		if err := sl.Flush(pair.srv); err != nil {
			t.Fatal(err)
		}
		pair.flushServer(now, uint64(f))
		if _, err := cl.Tick(now+time.Hour, pair.cli); err != nil { // the client's clock: its own origin
			t.Fatal(err)
		}
	}
	for range 600 { // past the reliable streams' 256-slot windows
		op()
	}
	if n := testing.AllocsPerRun(200, op); n != 0 {
		t.Fatalf("a tick of both links allocates %.1f times", n)
	}
	ls, ss := cl.Stats(), sl.Stats()
	if ls.ChecksumsVerified < 200 || ls.Desyncs != 0 || ss.InputsAccepted < 200 || ss.Slices < 200 || ls.Clocks < 20 || c.Present() < f {
		t.Fatalf("the measured path did not run: client %+v, server %+v", ls, ss)
	}
}

// The server's side of BenchmarkPeerServerTick64 allocates nothing per
// tick once warmed as the benchmark warms it (200 ticks, far fewer than a
// reliable stream's 256-slot window holds clock messages: one every 30
// frames per peer). Until the reliable sender reused the buffers of acked
// messages, each clock message claimed a fresh slot's buffer: about 2
// allocations a tick for 64 peers, for 256 × 30 frames (two minutes).
// Only serverSide is counted, as the benchmark times only it.
func TestPeerServerTick64NoAllocs(t *testing.T) {
	pb := newPeerBench(t, 64)
	for range 200 {
		pb.clientSide()
		pb.serverSide()
	}
	const ticks = 300 // 10 clock messages per peer
	mallocs, where := allocsIn("(*peerBench).serverSide", func() {
		for range ticks {
			pb.clientSide()
			pb.serverSide()
		}
	})
	if mallocs != 0 {
		t.Fatalf("the server's tick with 64 peers allocated %d times in %d ticks (%.2f a tick), first at:%s", mallocs, ticks, float64(mallocs)/ticks, where)
	}
	if st := pb.links[0].Stats(); st.ClocksSent < 10 || st.Slices < ticks {
		t.Fatalf("the measured path did not run: %+v", st)
	}
}

// allocsIn runs f with every allocation recorded (MemProfileRate 1) and
// returns how many objects f allocated on stacks that pass through a
// function whose name ends in frame, and where the first of them was
// allocated (for the failure message). Counting by stack, rather than by
// MemStats.Mallocs around each call, leaves out what the runtime
// allocates for itself meanwhile (an OS thread started when a
// ReadMemStats restarts the world) and what other goroutines allocate.
func allocsIn(frame string, f func()) (int64, string) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	count := func() map[[32]uintptr]int64 {
		runtime.GC() // the profile is published by the GC cycles after an allocation
		runtime.GC()
		n, _ := runtime.MemProfile(nil, true)
		recs := make([]runtime.MemProfileRecord, n+64)
		for {
			var ok bool
			if n, ok = runtime.MemProfile(recs, true); ok {
				break
			}
			recs = make([]runtime.MemProfileRecord, n+64)
		}
		by := make(map[[32]uintptr]int64)
		for _, r := range recs[:n] {
			frames := runtime.CallersFrames(r.Stack())
			for {
				fr, more := frames.Next()
				if strings.HasSuffix(fr.Function, frame) {
					by[r.Stack0] += r.AllocObjects
					break
				}
				if !more {
					break
				}
			}
		}
		return by
	}
	before := count()
	f()
	var total int64
	var where string
	for stack, n := range count() {
		if d := n - before[stack]; d > 0 {
			total += d
			if where == "" {
				where = describeStack(stack)
			}
		}
	}
	return total, where
}

// describeStack names a recorded stack's frames, innermost first.
func describeStack(stack [32]uintptr) string {
	var b strings.Builder
	pcs := stack[:]
	for i, pc := range pcs {
		if pc == 0 {
			pcs = pcs[:i]
			break
		}
	}
	frames := runtime.CallersFrames(pcs)
	for {
		fr, more := frames.Next()
		fmt.Fprintf(&b, "\n\t%s (%s:%d)", fr.Function, filepath.Base(fr.File), fr.Line)
		if !more {
			return b.String()
		}
	}
}

// allocsIn sees an allocation 20 calls below the marked frame, and none
// outside it.
func TestAllocsIn(t *testing.T) {
	var sink [][]byte
	if n, where := allocsIn("link.markedFrame", func() { markedFrame(20, &sink) }); n < 1 || !strings.Contains(where, "deepAlloc") {
		t.Fatalf("allocsIn counted %d allocations under the marked frame, want ≥ 1 in deepAlloc; first at:%s", n, where)
	}
	if n, _ := allocsIn("link.markedFrame", func() { sink = append(sink, make([]byte, 64)) }); n != 0 {
		t.Fatalf("allocsIn counted %d allocations outside the marked frame", n)
	}
}

//go:noinline
func markedFrame(depth int, sink *[][]byte) { deepAlloc(depth, sink) }

//go:noinline
func deepAlloc(depth int, sink *[][]byte) {
	if depth > 0 {
		deepAlloc(depth-1, sink)
		return
	}
	*sink = append(*sink, make([]byte, 64))
}
