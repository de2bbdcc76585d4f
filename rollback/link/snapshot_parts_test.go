package link

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/rollback"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/wire"
)

// grow gives every store of the session — the server's, its state ring,
// and each client's as addClient builds it — n more entities (the same
// handles everywhere) with fixed, varied bytes, which the step never
// touches: a snapshot of the session then takes about a kilobyte, not a
// hundred bytes. Call it before addClient.
func (s *session) grow(n int) {
	s.t.Helper()
	fill := func(st *rollback.Store) {
		rng := rand.New(rand.NewPCG(5, 5))
		for range n {
			e, err := st.Create(rollback.Sender(rng.IntN(4)))
			if err != nil {
				s.t.Fatal(err)
			}
			p, _ := st.Component(e, cPos)
			for k := range p {
				p[k] = byte(rng.Uint32())
			}
			hp, _ := st.Component(e, cHP)
			binary.LittleEndian.PutUint32(hp, rng.Uint32N(1000))
		}
	}
	fill(s.sw.store)
	for _, st := range s.states {
		fill(st)
	}
	s.extra = fill
}

// Join, chunked: TestLinkSnapshotJoin with SnapshotChunk 256, so the
// joiner's snapshot crosses sim(25, 5, 10) as several part messages (the
// session grown to 64 entities so that it is larger than one chunk). The
// server counts the snapshot once, the client joins the parts, installs
// them, and converges byte for byte with its checksums verified.
func TestLinkSnapshotJoinChunked(t *testing.T) {
	for _, codec := range []rollback.Compression{rollback.CompressZstd, rollback.CompressS2} {
		s := newSession(t, 11, sim(25, 5, 10), LinkConfig{SnapshotChunk: 256})
		s.grow(54)
		late := s.joinLate(codec)
		ss, cs := late.slink.Stats(), late.link.Stats()
		if ss.Snapshots != 1 || ss.SnapshotParts < 2 || cs.Snapshots != 1 || cs.SnapshotParts != ss.SnapshotParts ||
			cs.SnapshotErrors != 0 || cs.Malformed != 0 || late.c.Stats().FramesPredicted == 0 {
			t.Fatalf("codec %d: server link %+v, client link %+v", codec, ss, cs)
		}
		t.Logf("codec %d: snapshot of frame %d, %d bytes in %d parts", codec, late.c.Baseline(), ss.SnapshotBytes, ss.SnapshotParts)
	}
}

// sendParts sends msg (a snapshot message, kind 0x03) as parts of chunk
// bytes from a channel configured by tcfg over sim(25, 5, 10), through
// snapshotParts, and joins them on the other side with a
// snapshotAssembler into a Snapshotter of dst. It returns the ticks until
// the install, the parts, and the Flushes that left parts for later.
func sendParts(t *testing.T, tcfg transport.Config, chunk int, msg []byte, dst *rollback.Store, frame uint32) (ticks, parts, stalls int) {
	t.Helper()
	net := newSimNet(t, 21, sim(25, 5, 10))
	dec, err := rollback.NewSnapshotter(dst, nil, rollback.SnapshotConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var asm snapshotAssembler
	installed, got := false, 0
	hc := &verdicts{msg: func(m transport.Message) {
		if m.Delivery != transport.Reliable || len(m.Payload) == 0 || m.Payload[0] != msgSnapshotPart {
			return
		}
		got++
		body, f, complete, _, err := asm.add(m.Payload)
		if err != nil {
			t.Fatalf("part %d: %v", got, err)
		}
		if !complete {
			return
		}
		if g, err := dec.InstallSnapshot(body); err != nil || g != frame || f != frame {
			t.Fatalf("install: %d (parts say %d) %v", g, f, err)
		}
		installed = true
	}}
	se, ce := net.pair(0, tcfg, &verdicts{}, hc)
	var p snapshotParts
	out := linkStream{id: DefaultLinkStream}
	if err := p.start(msg[1:], frame, chunk); err != nil {
		t.Fatal(err)
	}
	done := false
	for ticks = 1; ticks < 3000 && !installed; ticks++ {
		net.advance()
		se.receive(net.now, net.tick)
		if !done {
			n, d, err := p.next(se.ch, &out)
			if err != nil {
				t.Fatal(err)
			}
			parts += n
			if done = d; !done {
				stalls++
			}
		}
		se.flush(net.now, net.tick)
		ce.receive(net.now, net.tick)
		ce.flush(net.now, net.tick)
	}
	if !installed || got != parts || parts != p.count {
		t.Fatalf("installed %v after %d ticks; %d of %d parts queued, %d arrived", installed, ticks, parts, p.count, got)
	}
	return ticks, parts, stalls
}

// largeWorld returns a 60,000-entity store and its zstd snapshot message
// (kind 0x03) of frame 77: larger than one channel message at MTU 1200.
func largeWorld(t *testing.T) (*rollback.Store, []byte) {
	t.Helper()
	src := gameStore(t, 60000, 4)
	enc, err := rollback.NewSnapshotter(src, nil, rollback.SnapshotConfig{Compression: rollback.CompressZstd})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := enc.AppendSnapshot([]byte{msgSnapshot}, 0, 77)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg) <= transport.MaxMessageSizeFor(transport.DefaultMTU) {
		t.Fatalf("%d-byte snapshot fits one message", len(msg))
	}
	return src, msg
}

// A large world: a snapshot larger than the channel's largest message,
// which as one 0x03 message the channel refuses (ErrTooLarge), crosses
// sim(25, 5, 10) as 64 KiB parts and installs byte-identical.
func TestSnapshotPartsLargeWorld(t *testing.T) {
	src, msg := largeWorld(t)
	ch, err := transport.NewChannel(transport.Config{}, &verdicts{}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.SendReliable(DefaultLinkStream, msg); !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("%d-byte message as one: %v", len(msg), err)
	}
	dst := emptyLike(t, src)
	ticks, parts, _ := sendParts(t, transport.Config{}, defaultSnapshotChunk, msg, dst, 77)
	if src.Checksum() != dst.Checksum() {
		t.Fatal("checksums differ")
	}
	t.Logf("%d-byte snapshot (channel max %d) in %d parts, installed after %d ticks", len(msg), transport.MaxMessageSizeFor(transport.DefaultMTU), parts, ticks)
}

// Back-pressure: with a reliable window smaller than the snapshot (the
// least ReliableBytes the channel allows: about 299 KB at MTU 1200, 140 KB
// at MTU 576) the parts spread over several Flushes, as the peer's acks
// free the window, and still arrive in order and install.
func TestSnapshotPartsBackPressure(t *testing.T) {
	src, msg := largeWorld(t)
	for _, tc := range []struct {
		name  string
		tcfg  transport.Config
		chunk int
	}{
		{"least ReliableBytes", transport.Config{ReliableBytes: transport.MaxMessageSizeFor(transport.DefaultMTU) + 8}, defaultSnapshotChunk},
		{"least ReliableBytes, 16 KiB parts", transport.Config{ReliableBytes: transport.MaxMessageSizeFor(transport.DefaultMTU) + 8}, 16 << 10},
		{"MTU 576, least ReliableBytes", transport.Config{MTU: 576, ReliableBytes: transport.MaxMessageSizeFor(576) + 8}, defaultSnapshotChunk},
	} {
		dst := emptyLike(t, src)
		ticks, parts, stalls := sendParts(t, tc.tcfg, tc.chunk, msg, dst, 77)
		if stalls < 2 || src.Checksum() != dst.Checksum() {
			t.Fatalf("%s: %d Flushes left parts for later; checksums equal %v", tc.name, stalls, src.Checksum() == dst.Checksum())
		}
		t.Logf("%s: %d parts over %d Flushes with back-pressure, installed after %d ticks", tc.name, parts, stalls+1, ticks)
	}
}

// fakeStream is a StreamChannel that accepts room reliable messages
// (then ErrQueueFull) and keeps copies, and counts records.
type fakeStream struct {
	room    int
	rel     [][]byte
	records int
	tooBig  int  // refuse reliable messages larger than this (0: none)
	noClock bool // take clock messages without room, and keep them apart
	clocks  int
	next    wire.Seq // the next message id
}

func (f *fakeStream) SendRecord(uint64, []byte) error { f.records++; return nil }
func (f *fakeStream) SendReliable(_ uint8, p []byte) (wire.Seq, error) {
	if f.tooBig > 0 && len(p) > f.tooBig {
		return 0, transport.ErrTooLarge
	}
	if f.noClock && len(p) > 0 && p[0] == msgClock {
		f.clocks++
		f.next++
		return f.next - 1, nil
	}
	if f.room == 0 {
		return 0, transport.ErrQueueFull
	}
	f.room--
	f.rel = append(f.rel, bytes.Clone(p))
	f.next++
	return f.next - 1, nil
}
func (f *fakeStream) MaxSinglePayload(transport.Delivery) int { return 1100 }
func (f *fakeStream) MaxRecordSize() int                      { return 60000 }

// The server link under back-pressure, message by message: a chunked
// join snapshot is announced (msgAnnounce) and counted (and the stream
// resynced) when its first part is queued; while parts wait for the window
// the action stream goes on (slices are records, not on the reliable
// stream), and so does the clock, but no checksum is sent; a resync
// request arriving meanwhile waits until every part is queued and is then
// answered by the next snapshot. The client link joins the parts and
// installs both snapshots.
func TestServerLinkSnapshotPartsWait(t *testing.T) {
	w, srv := newServerWorld(t, rollback.LogConfig{FrameCapacity: 64}, rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: 2, Checksum: func() uint64 { return 1 }}, true)
	_ = w
	repl, _ := rollback.NewReplicator(w.log, nil)
	l, err := NewServerLink(srv, repl, 1, 0, LinkConfig{SnapshotChunk: 256})
	if err != nil {
		t.Fatal(err)
	}
	world := gameStore(t, 300, 4)
	src, err := rollback.NewSnapshotter(world, nil, rollback.SnapshotConfig{})
	if err != nil {
		t.Fatal(err)
	}
	l.SetSnapshots(src)
	l.RequestSnapshot()
	ch := &fakeStream{noClock: true}
	frame := uint32(0)
	flush := func(room int) {
		t.Helper()
		frame++
		if err := srv.Tick(frame); err != nil {
			t.Fatal(err)
		}
		ch.room = room
		if err := l.Flush(ch); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 { // until a frame is final
		flush(0)
	}
	if st := l.Stats(); st.Snapshots != 0 || ch.records != 0 || st.QueueFull == 0 {
		t.Fatalf("nothing fits yet: %+v", st)
	}
	flush(3)
	st := l.Stats()
	first := l.lastSnap
	if st.Snapshots != 1 || st.SnapshotParts != 2 || !l.parts.pending() || repl.LastAcked(1) != first || ch.rel[0][0] != msgAnnounce {
		t.Fatalf("after the announcement and the first parts: %+v, baseline %d, snapshot of %d", st, repl.LastAcked(1), first)
	}
	count := l.parts.count
	if count < 6 {
		t.Fatalf("only %d parts", count)
	}
	// A current request (the client's baseline is the snapshot's frame):
	// answered only once every part of the first snapshot is queued.
	l.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: []byte{msgResync, byte(first), 0, 0, 0}})
	flushes := 0
	for l.Stats().Snapshots < 2 || l.parts.pending() {
		st := l.Stats()
		if st.Snapshots == 2 && st.SnapshotParts < uint64(count+1) {
			t.Fatalf("second snapshot before the first's parts: %+v", st)
		}
		anns := 0
		for _, m := range ch.rel {
			if m[0] == msgAnnounce {
				anns++
			} else if m[0] != msgSnapshotPart {
				t.Fatalf("message of kind %#x on the reliable stream while parts wait: %+v", m[0], st)
			}
		}
		if anns > int(st.Snapshots)+1 || len(ch.rel) != anns+int(st.SnapshotParts) {
			t.Fatalf("%d announcements, %d messages: %+v", anns, len(ch.rel), st)
		}
		if flushes++; flushes > 100 {
			t.Fatalf("stuck: %+v", l.Stats())
		}
		flush(2)
	}
	if ch.records == 0 {
		t.Fatal("no slice while the parts waited")
	}
	flush(100)
	if st := l.Stats(); st.Snapshots != 2 || st.ChecksumsSent == 0 || st.SnapshotParts != uint64(2*count) || l.lastSnap <= first {
		t.Fatalf("after the parts: %+v, %d records", st, ch.records)
	}
	for i, m := range ch.rel[:2*count+2] {
		if want := msgSnapshotPart; i == 0 || i == count+1 {
			if m[0] != msgAnnounce {
				t.Fatalf("message %d: kind %#x, want the announcement", i, m[0])
			}
		} else if m[0] != want {
			t.Fatalf("message %d: kind %#x", i, m[0])
		}
	}

	// The client joins the parts (and takes the checksum message after).
	dst := emptyLike(t, world)
	cl := newPartsClient(t, dst)
	for _, m := range ch.rel[:2*count+2] {
		cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: m})
	}
	cs := cl.Stats()
	if cs.Snapshots != 2 || cs.SnapshotParts != uint64(2*count) || cs.Announcements != 2 || cs.SnapshotErrors != 0 || cs.Malformed != 0 || dst.Checksum() != world.Checksum() {
		t.Fatalf("client link %+v, last error %v", cs, cl.LastError())
	}
	if cl.Client().Baseline() != l.lastSnap {
		t.Fatalf("client baseline %d, last snapshot %d", cl.Client().Baseline(), l.lastSnap)
	}

	// A snapshot beyond MaxSnapshotParts, or a channel that refuses a part
	// as too large: ErrSnapshotTooLarge from Flush.
	var p snapshotParts
	if err := p.start(make([]byte, MaxSnapshotParts*minSnapshotChunk+1), 1, minSnapshotChunk); !errors.Is(err, rollback.ErrSnapshotTooLarge) || p.pending() {
		t.Fatalf("%d parts: %v", MaxSnapshotParts+1, err)
	}
	l.RequestSnapshot()
	ch.tooBig = 100
	ch.room = 100
	frame++
	_ = srv.Tick(frame)
	if err := l.Flush(ch); !errors.Is(err, rollback.ErrSnapshotTooLarge) || l.parts.pending() {
		t.Fatalf("part too large for the channel: %v", err)
	}
}

// newPartsClient returns a client link (SnapshotChunk irrelevant: the
// client takes any) whose sink writes dst.
func newPartsClient(t testing.TB, dst *rollback.Store) *ClientLink[*rollback.Store] {
	t.Helper()
	_, c := newClientWorld(t, rollback.LogConfig{FrameCapacity: 16}, 1, nil, false, rollback.ClientConfig{})
	cl, err := NewClientLink(c, LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := rollback.NewSnapshotter(dst, nil, rollback.SnapshotConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cl.SetSnapshots(sink)
	return cl
}

// makePart builds a snapshot-part message.
func makePart(frame uint32, index, count int, data []byte) []byte {
	b := []byte{msgSnapshotPart}
	b = wire.AppendUint32(b, frame)
	b = wire.AppendUint16(b, uint16(index))
	b = wire.AppendUint16(b, uint16(count))
	return append(b, data...)
}

// splitParts returns the part messages of the compressed snapshot body.
func splitParts(body []byte, frame uint32, chunk int) [][]byte {
	count := (len(body) + chunk - 1) / chunk
	var out [][]byte
	for i := range count {
		out = append(out, makePart(frame, i, count, body[i*chunk:min((i+1)*chunk, len(body))]))
	}
	return out
}

// Hostile parts at the client: every malformed or out-of-sequence part
// is refused and counted (Malformed; SnapshotErrors when it drops an
// assembly in progress; LastError wraps ErrMalformed), never a panic, and
// the store is unchanged; a whole snapshot mid-assembly replaces it; then
// a valid sequence installs.
func TestSnapshotAssemblerHostile(t *testing.T) {
	world := gameStore(t, 300, 4)
	enc, _ := rollback.NewSnapshotter(world, nil, rollback.SnapshotConfig{})
	body, err := enc.AppendSnapshot(nil, 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	const f = 9
	ps := splitParts(body, f, 256)
	n := len(ps)
	if n < 4 {
		t.Fatalf("%d parts", n)
	}
	d := func(i int) []byte { return ps[i][partHeaderLen:] }
	cases := []struct {
		name    string
		msgs    [][]byte // the last one is refused
		dropped bool     // it drops an assembly in progress
	}{
		{"truncated header", [][]byte{ps[0][:partHeaderLen-1]}, false},
		{"count 0", [][]byte{makePart(f, 0, 0, d(0))}, false},
		{"count above MaxSnapshotParts", [][]byte{makePart(f, 0, MaxSnapshotParts+1, d(0))}, false},
		{"index = count", [][]byte{makePart(f, n, n, d(0))}, false},
		{"no first part", [][]byte{ps[1]}, false},
		{"out of order", [][]byte{ps[0], ps[2]}, true},
		{"frame changes", [][]byte{ps[0], makePart(f+1, 1, n, d(1))}, true},
		{"count changes", [][]byte{ps[0], makePart(f, 1, n+1, d(1))}, true},
		{"empty data", [][]byte{ps[0], makePart(f, 1, n, nil)}, true},
		{"oversize data", [][]byte{makePart(f, 0, n, make([]byte, maxSnapshotChunk+1))}, false},
		{"short middle part", [][]byte{ps[0], makePart(f, 1, n, d(1)[:100])}, true},
		{"long last part", [][]byte{makePart(f, 0, 2, d(0)[:100]), makePart(f, 1, 2, d(1)[:101])}, true},
		{"duplicate part", [][]byte{ps[0], ps[1], ps[1]}, true},
		{"whole message then a stale part", [][]byte{ps[0], ps[1], append([]byte{msgSnapshot}, body...), ps[2]}, false},
	}
	for _, tc := range cases {
		dst := emptyLike(t, world)
		before := dst.Checksum()
		cl := newPartsClient(t, dst)
		for _, m := range tc.msgs {
			cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: m})
		}
		st := cl.Stats()
		whole := len(tc.msgs) > 1 && tc.msgs[len(tc.msgs)-2][0] == msgSnapshot
		if st.Malformed != 1 || !errors.Is(cl.LastError(), rollback.ErrMalformed) || (st.SnapshotErrors == 1) != tc.dropped || cl.asm.inProgress() {
			t.Fatalf("%s: %+v, last error %v", tc.name, st, cl.LastError())
		}
		if whole {
			if st.Snapshots != 1 || dst.Checksum() != world.Checksum() {
				t.Fatalf("%s: the whole snapshot did not install: %+v", tc.name, st)
			}
		} else if st.Snapshots != 0 || dst.Checksum() != before || cl.Client().Ready() {
			t.Fatalf("%s: the store changed: %+v", tc.name, st)
		}
		// Then a valid sequence installs.
		for _, m := range ps {
			cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: m})
		}
		if st2 := cl.Stats(); st2.Snapshots != st.Snapshots+1 || st2.Malformed != 1 || dst.Checksum() != world.Checksum() || cl.Client().Baseline() != f {
			t.Fatalf("%s: valid sequence after: %+v", tc.name, st2)
		}
	}
	// Without a sink, parts are malformed messages like snapshots.
	_, c := newClientWorld(t, rollback.LogConfig{FrameCapacity: 16}, 1, nil, false, rollback.ClientConfig{})
	cl, _ := NewClientLink(c, LinkConfig{})
	cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: ps[0]})
	if st := cl.Stats(); st.Malformed != 1 || st.SnapshotParts != 0 {
		t.Fatalf("no sink: %+v", st)
	}
	// Parts whose joined body does not decode: one snapshot error, store
	// unchanged.
	dst := emptyLike(t, world)
	before := dst.Checksum()
	cl = newPartsClient(t, dst)
	bad := bytes.Clone(body)
	bad[len(bad)/2] ^= 0xFF
	for _, m := range splitParts(bad, f, 256) {
		cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: m})
	}
	if st := cl.Stats(); st.SnapshotErrors != 1 || st.Snapshots != 0 || st.Malformed != 0 || dst.Checksum() != before {
		t.Fatalf("corrupt body: %+v", st)
	}
}

// Splitting and joining allocate nothing once the buffers have grown.
func TestSnapshotPartsNoAllocs(t *testing.T) {
	world := gameStore(t, 300, 4)
	enc, _ := rollback.NewSnapshotter(world, nil, rollback.SnapshotConfig{})
	body, _ := enc.AppendSnapshot(nil, 0, 9)
	var p snapshotParts
	var a snapshotAssembler
	ch := &discardStream{a: &a}
	out := linkStream{id: DefaultLinkStream}
	run := func() {
		if err := p.start(body, 9, 256); err != nil {
			t.Fatal(err)
		}
		if _, done, err := p.next(ch, &out); err != nil || !done || !ch.complete || !bytes.Equal(ch.body, body) {
			t.Fatalf("done %v, complete %v, %v", done, ch.complete, err)
		}
		ch.complete = false
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per snapshot", n)
	}
}

// discardStream hands each reliable message to an assembler.
type discardStream struct {
	a        *snapshotAssembler
	body     []byte
	complete bool
	id       wire.Seq
}

func (d *discardStream) SendRecord(uint64, []byte) error { return nil }
func (d *discardStream) SendReliable(_ uint8, p []byte) (wire.Seq, error) {
	body, _, complete, _, err := d.a.add(p)
	if err != nil {
		return 0, err
	}
	if complete {
		d.body, d.complete = body, true
	}
	d.id++
	return d.id - 1, nil
}
func (d *discardStream) MaxSinglePayload(transport.Delivery) int { return 1100 }
func (d *discardStream) MaxRecordSize() int                      { return 60000 }

// fuzzParts returns the part messages, kind byte left off, of body in
// three parts.
func fuzzParts(body []byte) [][]byte {
	var out [][]byte
	for _, m := range splitParts(body, 5, (len(body)+2)/3) {
		out = append(out, m[1:])
	}
	return out
}

// LinkConfig.SnapshotChunk: 0 (default 64 KiB) or 256..64 KiB.
func TestLinkConfigSnapshotChunk(t *testing.T) {
	for _, c := range []struct {
		chunk int
		ok    bool
	}{{0, true}, {minSnapshotChunk, true}, {4096, true}, {maxSnapshotChunk, true},
		{-1, false}, {1, false}, {minSnapshotChunk - 1, false}, {maxSnapshotChunk + 1, false}} {
		err := LinkConfig{SnapshotChunk: c.chunk}.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, rollback.ErrInvalidConfig)) {
			t.Fatalf("SnapshotChunk %d: %v", c.chunk, err)
		}
	}
	if got := (LinkConfig{}).WithDefaults().SnapshotChunk; got != defaultSnapshotChunk {
		t.Fatalf("default %d", got)
	}
}

// FuzzSnapshotAssembler feeds a client link a sequence of snapshot-part
// messages (each without its kind byte, prefixed by its length, u16 LE)
// whose sink writes a small
// store. It must never panic; every part is either accepted or counted
// Malformed; the store changes only when a snapshot installs; the
// assembly buffer stays within its bound. Seeds: a valid sequence, and
// testdata/fuzz/FuzzSnapshotAssembler.
func FuzzSnapshotAssembler(f *testing.F) {
	src, _ := rollback.NewStore(rollback.StoreConfig{Components: gameComponents, Capacity: 16})
	for i := range 10 {
		e, _ := src.Create(rollback.Sender(i))
		v, _ := src.Component(e, 0)
		v[0] = byte(i)
	}
	enc, _ := rollback.NewSnapshotter(src, nil, rollback.SnapshotConfig{Compression: rollback.CompressNone})
	body, _ := enc.AppendSnapshot(nil, 0, 5)
	seq := func(ms ...[]byte) []byte {
		var b []byte
		for _, m := range ms {
			b = binary.LittleEndian.AppendUint16(b, uint16(len(m)))
			b = append(b, m...)
		}
		return b
	}
	ps := fuzzParts(body)
	f.Add(seq(ps...))
	f.Add(seq(ps[0], ps[2], ps[1]))
	f.Add(seq(ps[0], makePart(6, 1, len(ps), ps[1][partHeaderLen:])[1:]))
	dst, _ := rollback.NewStore(rollback.StoreConfig{Components: gameComponents, Capacity: 16})
	cl := newPartsClient(f, dst)
	var msg []byte
	f.Fuzz(func(t *testing.T, b []byte) {
		cl.asm.abort()
		dst.Clear()
		before, base := dst.Checksum(), cl.Stats()
		msgs := 0
		for len(b) >= 2 {
			n := int(binary.LittleEndian.Uint16(b))
			b = b[2:]
			n = min(n, len(b))
			msg = append(append(msg[:0], msgSnapshotPart), b[:n]...)
			cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: msg})
			b = b[n:]
			msgs++
			st := cl.Stats()
			if st.Malformed-base.Malformed+st.SnapshotParts-base.SnapshotParts != uint64(msgs) {
				t.Fatalf("%d messages, %+v", msgs, st)
			}
			if st.Snapshots == base.Snapshots && dst.Checksum() != before {
				t.Fatal("store changed without an install")
			}
			if len(cl.asm.buf) > cl.asm.count*cl.asm.size || len(cl.asm.buf) > MaxSnapshotParts*maxSnapshotChunk {
				t.Fatalf("assembly of %d bytes, %d parts of %d", len(cl.asm.buf), cl.asm.count, cl.asm.size)
			}
		}
	})
}

// A first part always starts a new assembly: a snapshot the server gave up
// half sent is dropped (counted in SnapshotErrors, not as malformed) and
// the next one installs.
func TestSnapshotPartsFirstPartRestarts(t *testing.T) {
	world := gameStore(t, 400, 9)
	enc, err := rollback.NewSnapshotter(world, nil, rollback.SnapshotConfig{Compression: rollback.CompressNone})
	if err != nil {
		t.Fatal(err)
	}
	const f = 40
	body, err := enc.AppendSnapshot(nil, 0, f)
	if err != nil {
		t.Fatal(err)
	}
	ps := splitParts(body, f, 256)
	dst := emptyLike(t, world)
	cl := newPartsClient(t, dst)
	for _, m := range append([][]byte{ps[0], ps[1]}, ps...) {
		cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: m})
	}
	st := cl.Stats()
	if st.Malformed != 0 || st.SnapshotErrors != 1 || st.Snapshots != 1 || dst.Checksum() != world.Checksum() {
		t.Fatalf("%+v, last error %v", st, cl.LastError())
	}
}

// A client link that refuses a snapshot asks for another (a resync request
// whose baseline, 0xFFFFFFFF, no burst can be newer than), also before it
// ever joined; the server link answers it although it sent a snapshot
// since; a valid snapshot then installs. After MaxSnapshotRetries refusals
// in a row the client stops asking.
func TestRefusedSnapshotIsAskedForAgain(t *testing.T) {
	world := gameStore(t, 300, 4)
	enc, err := rollback.NewSnapshotter(world, nil, rollback.SnapshotConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const f = 30
	good, err := enc.AppendSnapshot([]byte{msgSnapshot}, 0, f)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte{msgSnapshot}, 0xff, 0xff, 0xff) // refused by the sink
	dst := emptyLike(t, world)
	cl := newPartsClient(t, dst)
	deliver := func(p []byte) {
		cl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: p})
	}
	ch := &fakeStream{}
	requests := func() (out []uint32) {
		ch.room, ch.rel = 100, nil
		if err := cl.Flush(ch); err != nil {
			t.Fatal(err)
		}
		for _, m := range ch.rel {
			if m[0] == msgResync {
				b, _, _ := wire.Uint32(m[1:])
				out = append(out, b)
			}
		}
		return out
	}

	if got := requests(); len(got) != 0 {
		t.Fatalf("requests before any snapshot: %v", got)
	}
	deliver(bad)
	got := requests()
	if len(got) != 1 || got[0] != refusedBaseline || cl.Client().Ready() {
		t.Fatalf("after a refused snapshot: requests %v, ready %v", got, cl.Client().Ready())
	}
	if got := requests(); len(got) != 0 {
		t.Fatalf("asked twice for one refusal: %v", got)
	}

	// The server answers it, though it sent a snapshot (of frame 50) since
	// the client's baseline.
	sw, srv := newServerWorld(t, rollback.LogConfig{FrameCapacity: 64}, rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: 2}, true)
	repl, _ := rollback.NewReplicator(sw.log, nil)
	sl, err := NewServerLink(srv, repl, 1, 0, LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sl.snapSent, sl.lastSnap = true, 50
	req := wire.AppendUint32([]byte{msgResync}, refusedBaseline)
	sl.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: req})
	if st := sl.Stats(); !sl.snapWant || st.ResyncRequests != 1 || st.ResyncIgnored != 0 {
		t.Fatalf("server link: want %v, %+v", sl.snapWant, st)
	}

	deliver(good)
	if st := cl.Stats(); st.Snapshots != 1 || st.SnapshotErrors != 1 || dst.Checksum() != world.Checksum() {
		t.Fatalf("after the good snapshot: %+v", st)
	}
	if got := requests(); len(got) != 0 {
		t.Fatalf("requests after an install: %v", got)
	}

	// A client that refuses every snapshot asks MaxSnapshotRetries times.
	asked := 0
	for range MaxSnapshotRetries + 3 {
		deliver(bad)
		asked += len(requests())
	}
	if asked != MaxSnapshotRetries {
		t.Fatalf("%d requests for %d refusals in a row, want %d", asked, MaxSnapshotRetries+3, MaxSnapshotRetries)
	}
}
