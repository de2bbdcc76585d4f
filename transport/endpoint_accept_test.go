package transport

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// The client adopts the limits the server's Accept announces (issue 9,
// item 4): a zero-config client joins a server of any MTU and window
// sizes, ends up with exactly the shared limits of the server's end of the
// session, and carries reliable messages of every size up to the
// negotiated maximum; a client whose explicit config conflicts refuses the
// Accept on the wire, and the server frees the session at once.

// acceptServers are the server configs every zero-config client must join.
var acceptServers = []struct {
	name string
	cfg  Config
}{
	{"MTU 576", Config{MTU: MinMTU}},
	{"MTU 1200", Config{}},
	{"MTU 1472", Config{MTU: MaxMTU}},
	{"MTU 1472, other windows", Config{MTU: MaxMTU, ReliableWindow: 1024, ReliableBytes: 4 << 20,
		MaxPartial: 16, OrderedStreams: 8, SequencedStreams: 2, MaxMessageSize: 100_000}},
}

// sizeClasses returns one reliable payload size of every class the channel
// c treats differently, up to its MaxMessageSize: the smallest test
// payload, the redundancy budget and one byte over it, the largest single
// datagram and one byte over it (two pieces), a few pieces, one Flush's
// burst of pieces, and the largest message.
func sizeClasses(c *Channel) []int {
	cfg := c.Config()
	single := c.MaxSinglePayload(Reliable)
	var sizes []int
	for _, s := range []int{6, cfg.RedundancyBytes, cfg.RedundancyBytes + 1, single, single + 1,
		3 * single, cfg.MaxDatagramsPerFlush * single, cfg.MaxMessageSize - 1, cfg.MaxMessageSize} {
		if s >= 6 && s <= cfg.MaxMessageSize && !slices.Contains(sizes, s) {
			sizes = append(sizes, s)
		}
	}
	slices.Sort(sizes)
	return sizes
}

// plannedSend is one reliable message a test sends.
type plannedSend struct {
	stream uint8
	size   int
}

// sender sends a plan of reliable messages from p in order, tagged tag,
// retrying a message the stream's window refuses on the next tick.
type sender struct {
	t    testing.TB
	p    *Peer
	tag  uint8
	plan []plannedSend
	next map[uint8]uint32
}

func (s *sender) pump() {
	s.t.Helper()
	for len(s.plan) > 0 {
		m := s.plan[0]
		k := msgKey{from: s.tag, stream: m.stream, seq: s.next[m.stream]}
		if _, err := s.p.Channel().SendReliable(m.stream, testPayload(k, m.size)); err != nil {
			if errors.Is(err, ErrQueueFull) {
				return
			}
			s.t.Fatalf("peer %d: SendReliable(%d, %d B): %v", s.tag, m.stream, m.size, err)
		}
		s.next[m.stream]++
		s.plan = s.plan[1:]
	}
}

// everySizeOnStreams plans every size class of c on each of streams.
func everySizeOnStreams(c *Channel, streams ...uint8) []plannedSend {
	var plan []plannedSend
	for _, size := range sizeClasses(c) {
		for _, s := range streams {
			plan = append(plan, plannedSend{stream: s, size: size})
		}
	}
	return plan
}

// checkSharedLimits fails unless the client's channel has exactly the
// shared limits of the server's end of the session and of the server's
// config, and the client's Endpoint.Config reports the channel config it
// adopted.
func checkSharedLimits(t testing.TB, srvCfg Config, sp, cp *Peer, cl *Endpoint) {
	t.Helper()
	want := limitsOf(srvCfg)
	if got := limitsOf(sp.Channel().Config()); got != want {
		t.Fatalf("server's channel has %v, its config %v", got, want)
	}
	if got := limitsOf(cp.Channel().Config()); got != want {
		t.Fatalf("client adopted %v; the server has %v", got, want)
	}
	if cl.Config().Channel != cp.Channel().Config() {
		t.Fatalf("client's Endpoint.Config().Channel %+v, its channel %+v", cl.Config().Channel, cp.Channel().Config())
	}
	if err := cp.Channel().Config().Validate(); err != nil {
		t.Fatalf("adopted config: %v", err)
	}
}

// TestZeroConfigClientJoinsEveryServer: a client with a zero
// EndpointConfig joins servers at MTU 576, 1200 and 1472 and one with
// other windows and stream counts, adopts exactly their shared limits
// (with its own defaults derived from them: UnreliableBytes from the
// server's max message, not from MTU 1200), and exchanges reliable
// messages of every size class up to the negotiated MaxMessageSize both
// ways, on the unordered stream and the last ordered stream, exactly once
// and in order. Before the fix, the 1472 servers were unreachable
// (ErrProtocol: "UnreliableBytes 299370 below MaxMessageSize 368722").
func TestZeroConfigClientJoinsEveryServer(t *testing.T) {
	for i, sc := range acceptServers {
		t.Run(sc.name, func(t *testing.T) {
			seed := uint64(90 + i)
			n := newEpNet(t, seed, epLink(10, 2, 0))
			srv := n.server("10.0.0.1:9000", EndpointConfig{Channel: sc.cfg})
			cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
			n.runUntil(120, "connect", isConnected(cl))
			sp, cp := srv.rec.connects[0], cl.ep.Remote()
			checkSharedLimits(t, sc.cfg, sp, cp, cl.ep)
			if cl.err != nil || cl.ep.Err() != nil {
				t.Fatalf("client error %v / %v", cl.err, cl.ep.Err())
			}
			last := uint8(cp.Channel().Config().OrderedStreams)
			cs := &sender{t: t, p: cp, tag: 1, plan: everySizeOnStreams(cp.Channel(), 0, last), next: map[uint8]uint32{}}
			ss := &sender{t: t, p: sp, tag: 2, plan: everySizeOnStreams(sp.Channel(), 0, last), next: map[uint8]uint32{}}
			t.Logf("sizes %v", sizeClasses(cp.Channel()))
			n.runUntil(60*60, "every size both ways", func() bool {
				cs.pump()
				ss.pump()
				return len(cs.plan) == 0 && len(ss.plan) == 0 &&
					allDelivered(srv.rec, 1, cs.next) && allDelivered(cl.rec, 2, ss.next)
			})
			n.run(30)
			checkExactlyOnce(t, srv.rec, 1, cs.next)
			checkExactlyOnce(t, cl.rec, 2, ss.next)
			for who, st := range map[string]ChannelStats{"server": sp.Stats(), "client": cp.Stats()} {
				if st.BadStream != 0 || st.ReliableOutside != 0 || st.FragmentsRefused != 0 || st.Malformed != 0 {
					t.Fatalf("%s channel refused traffic: bad stream %d, outside %d, fragments refused %d, malformed %d (seed %d)",
						who, st.BadStream, st.ReliableOutside, st.FragmentsRefused, st.Malformed, seed)
				}
			}
			if srv.rec.corrupt+cl.rec.corrupt != 0 {
				t.Fatalf("%d corrupt deliveries", srv.rec.corrupt+cl.rec.corrupt)
			}
		})
	}
}

// TestClientSharesServerWindows: a server at the default MTU with a
// reliable window of 1024 messages and eight ordered streams — a server
// the client could join before the fix, with its own 256 and 4 — sends a
// burst of 600 messages on stream 8 over a lossy link. The client buffers
// what arrives behind a loss over its adopted window of 1024; with 256 it
// dropped the messages beyond it (ReliableOutside) after their datagrams
// were acked, or every one of them as a stream it did not have.
func TestClientSharesServerWindows(t *testing.T) {
	srvCfg := Config{ReliableWindow: 1024, OrderedStreams: 8}
	for seed := uint64(1); seed <= 3; seed++ {
		n := newEpNet(t, seed, epLink(20, 2, 0.05))
		srv := n.server("10.0.0.1:9000", EndpointConfig{Channel: srvCfg})
		cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
		n.runUntil(600, "connect", isConnected(cl))
		sp, cp := srv.rec.connects[0], cl.ep.Remote()
		checkSharedLimits(t, srvCfg, sp, cp, cl.ep)
		plan := make([]plannedSend, 600)
		for i := range plan {
			plan[i] = plannedSend{stream: 8, size: 100}
		}
		ss := &sender{t: t, p: sp, tag: 2, plan: plan, next: map[uint8]uint32{}}
		ss.pump()
		if len(ss.plan) != 0 {
			t.Fatalf("seed %d: the server's window took %d of 600", seed, 600-len(ss.plan))
		}
		n.runUntil(60*60, "600 messages", func() bool { return allDelivered(cl.rec, 2, ss.next) })
		checkExactlyOnce(t, cl.rec, 2, ss.next)
		st := cp.Stats()
		if st.BadStream != 0 || st.ReliableOutside != 0 {
			t.Fatalf("seed %d: client dropped %d beyond its window, %d on unknown streams", seed, st.ReliableOutside, st.BadStream)
		}
		t.Logf("seed %d: %d buffered out of order at the client", seed, st.ReliableBuffered)
	}
}

// refusalCase is a client config that cannot honour a default server at
// MTU 1472, and what its error must say.
type refusalCase struct {
	name   string
	client Config
	want   []string // substrings of the error
	// invalid: the conflict is a field of the client's own out of range
	// under the server's limits (the error wraps ErrInvalidConfig too).
	invalid bool
}

var refusalCases = []refusalCase{
	{"own UnreliableBytes below the server's max message", Config{UnreliableBytes: 300_000},
		[]string{"UnreliableBytes 300000", "MaxMessageSize 366172", "MTU 1472"}, true},
	{"explicit MTU", Config{MTU: 1200}, []string{"MTU 1200 here, 1472 on the server"}, false},
	{"explicit window and streams", Config{ReliableWindow: 512, OrderedStreams: 2},
		[]string{"ReliableWindow 512 here, 256 on the server", "OrderedStreams 2 here, 4 on the server"}, false},
	{"explicit MaxPartial", Config{MaxPartial: 4}, []string{"MaxPartial 4 here, 8 on the server"}, false},
}

// checkRefusal checks a client's refusal error.
func checkRefusal(t testing.TB, rc refusalCase, err error) {
	t.Helper()
	if !errors.Is(err, ErrIncompatible) || errors.Is(err, ErrInvalidConfig) != rc.invalid {
		t.Fatalf("error %v: want ErrIncompatible (and ErrInvalidConfig: %v)", err, rc.invalid)
	}
	for _, w := range rc.want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
}

// TestIncompatibleClientRefusesAccept: a client whose explicit channel
// config the server's limits (MTU 1472) cannot satisfy gets the Accept,
// refuses it with a Disconnect (incompatible limits) in the new session,
// and fails with an error wrapping ErrIncompatible that names the fields
// and both numbers; the server frees the session one path delay after it
// admitted it — not after its 10 s idle time-out and 30 s grace.
func TestIncompatibleClientRefusesAccept(t *testing.T) {
	srvCfg := EndpointConfig{Channel: Config{MTU: MaxMTU}}
	for i, rc := range refusalCases {
		t.Run(rc.name, func(t *testing.T) {
			n := newEpNet(t, uint64(70+i), epLink(30, 0, 0))
			srv := n.server("10.0.0.1:9000", srvCfg)
			cl := n.client("10.0.0.2:5000", srv, EndpointConfig{Channel: rc.client})
			n.runUntil(120, "server admits", func() bool { return len(srv.rec.connects) == 1 })
			admitted := n.now // OnConnect ran in the last tick
			n.runUntil(10, "client fails", func() bool { return cl.ep.Err() != nil })
			checkRefusal(t, rc, cl.ep.Err())
			if !errors.Is(cl.err, ErrIncompatible) {
				t.Fatalf("Flush returned %v", cl.err)
			}
			if cl.ep.Remote() != nil || cl.ep.StateSize() != 0 || len(cl.rec.connects) != 0 {
				t.Fatalf("client kept a session: state %d, connects %d", cl.ep.StateSize(), len(cl.rec.connects))
			}
			if s := cl.ep.Stats(); s.AcceptsRefused != 1 {
				t.Fatalf("client AcceptsRefused %d", s.AcceptsRefused)
			}
			n.runUntil(10, "server frees the session", func() bool { return srv.ep.StateSize() == 0 })
			if len(srv.rec.connects) != 1 || len(srv.rec.discs) != 1 || srv.rec.discs[0] != wire.DisconnectIncompatible {
				t.Fatalf("server connects %d, disconnects %v; want 1, [incompatible limits]", len(srv.rec.connects), srv.rec.discs)
			}
			// The Accept goes out at admission; the client refuses it in the
			// Poll that reads it; the refusal is back one round trip (60 ms)
			// later, read at the server's next Poll.
			held := srv.rec.discAt[0] - admitted
			t.Logf("server freed the session %v after admitting it: %v", held, cl.ep.Err())
			if held > 60*time.Millisecond+2*epTick {
				t.Fatalf("server held the refused session for %v", held)
			}
			if s := srv.ep.Stats(); s.Disconnects(wire.DisconnectIncompatible) != 1 || s.Peers != 0 || s.Suspended != 0 {
				t.Fatalf("server stats: disconnects %d, peers %d, suspended %d", s.DisconnectsTotal(), s.Peers, s.Suspended)
			}
			// The session is gone for good: nothing left to time out.
			n.run(60 * 12)
			if srv.ep.StateSize() != 0 || len(srv.rec.suspends) != 0 || len(srv.rec.discs) != 1 {
				t.Fatalf("server later: state %d, suspends %v, discs %v", srv.ep.StateSize(), srv.rec.suspends, srv.rec.discs)
			}
		})
	}
}

// TestRefusalSurvivesLoss: the refusal goes out DisconnectRepeats times at
// once, so a lossy path still frees the server's session in one delay, for
// most seeds; the seeds whose every copy was lost fall back to the idle
// time-out, never worse.
func TestRefusalSurvivesLoss(t *testing.T) {
	freed := 0
	const seeds = 10
	for seed := uint64(1); seed <= seeds; seed++ {
		n := newEpNet(t, seed, epLink(20, 5, 0.3))
		srv := n.server("10.0.0.1:9000", EndpointConfig{Channel: Config{MTU: MaxMTU}, ResumeGrace: NoResume})
		// 30 % loss each way: give the handshake the time it needs to
		// reach the Accept (the 5 s default gives up on some seeds).
		cl := n.client("10.0.0.2:5000", srv, EndpointConfig{Channel: Config{MTU: MinMTU}, HandshakeTimeout: 25 * time.Second})
		n.runUntil(60*30, "client fails", func() bool { return cl.ep.Err() != nil })
		if !errors.Is(cl.ep.Err(), ErrIncompatible) {
			t.Fatalf("seed %d: %v", seed, cl.ep.Err())
		}
		n.run(6)
		if srv.ep.StateSize() == 0 {
			freed++
			continue
		}
		n.runUntil(60*12, "idle time-out", func() bool { return srv.ep.StateSize() == 0 })
	}
	t.Logf("the refusal freed the session at once for %d of %d seeds", freed, seeds)
	// 4 copies at 30 % loss: all lost with probability 0.8 %.
	if freed < seeds-1 {
		t.Fatalf("the refusal freed the session at once for %d of %d seeds", freed, seeds)
	}
}

// fakeServer is a hand-driven server socket in InsecureCleartext mode: it
// answers a ConnectRequest with a Challenge and a ConnectResponse with an
// Accept whose body is accept(nonce) (keyed by makeAccept, the real key
// exchange without a static key; secrets lists the secrets it derived),
// and keeps every session datagram it receives.
type fakeServer struct {
	conn    *simlink.Conn
	accept  func(nonce uint64, resume bool) wire.AcceptBody
	in      []socket.Message
	session [][]byte
	secrets []seal.Secret
}

// wireSecret is the cleartext session header secret of f's i-th session
// key.
func (f *fakeServer) wireSecret(i int) uint64 { return binary.LittleEndian.Uint64(f.secrets[i][:8]) }

func newFakeServer(n *epNet, addr string, accept func(uint64, bool) wire.AcceptBody) *fakeServer {
	f := &fakeServer{conn: n.listen(addr), accept: accept, in: make([]socket.Message, 8)}
	for i := range f.in {
		f.in[i].Buf = make([]byte, MaxMTU)
	}
	return f
}

func (f *fakeServer) node() *node { return &node{conn: f.conn} }

// serve answers what arrived.
func (f *fakeServer) serve() {
	for {
		k, _ := f.conn.TryReadBatch(f.in)
		if k == 0 {
			return
		}
		for _, m := range f.in[:k] {
			b := m.Buf[:m.N]
			var reply []byte
			switch wire.PacketKind(b[0]) {
			case wire.KindConnectRequest:
				r, _, _ := wire.ParseConnectRequest(b)
				reply = wire.AppendChallenge(nil, wire.Challenge{Nonce: r.Nonce})
			case wire.KindConnectResponse:
				r, _, _ := wire.ParseConnectResponse(b)
				var old *seal.Secret
				if r.Resume && len(f.secrets) > 0 {
					old = &f.secrets[len(f.secrets)-1]
				}
				a, sec, err := makeAccept(nil, &r, b, f.accept(r.Nonce, r.Resume), old, nil)
				if err != nil {
					panic(err)
				}
				f.secrets = append(f.secrets, sec)
				reply = a[:]
			case wire.KindSession:
				f.session = append(f.session, append([]byte(nil), b...))
			}
			if reply != nil {
				f.conn.WriteBatch([]socket.Message{{Buf: reply, N: len(reply), Addr: m.Addr}})
			}
		}
	}
}

// disconnects returns the reasons of the Disconnect frames in the session
// datagrams stamped with the secret of f's i-th key exchange.
func (f *fakeServer) disconnects(t testing.TB, i int) []wire.DisconnectReason {
	t.Helper()
	secret := f.wireSecret(i)
	var why []wire.DisconnectReason
	for _, d := range f.session {
		h, k, err := wire.ParseSessionHeader(d)
		if err != nil || h.Secret != secret {
			continue
		}
		_, m, err := wire.ParseChannelHeader(d[k:])
		if err != nil {
			t.Fatalf("session datagram % x: %v", d, err)
		}
		for rest := d[k+m:]; len(rest) > 0; {
			ft, n, err := wire.SkipFrame(rest)
			if err != nil {
				t.Fatalf("session datagram % x: %v", d, err)
			}
			if ft == wire.FrameDisconnect {
				df, _, _ := wire.ParseDisconnectFrame(rest)
				why = append(why, df.Reason)
			}
			rest = rest[n:]
		}
	}
	return why
}

// defaultAccept is the Accept body of a default server, for peer 3.
func defaultAccept() wire.AcceptBody {
	a := wire.AcceptBody{PeerID: 3, Token: wire.Token{1}}
	limitsOf(Config{}).announce(&a)
	return a
}

// TestClientRefusalOnTheWire pins the refusal's bytes (docs/WIRE.md §9.7):
// one session datagram per copy — session header with the Accept's
// secret, a channel header with no ack, a Disconnect frame — sent
// DisconnectRepeats times in the Poll that read the Accept. An Accept
// whose limits no valid config has (a reliable window of 3) is refused the
// same way with the protocol-error reason, and reported as ErrProtocol.
func TestClientRefusalOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client Config
		mutate func(*wire.AcceptBody)
		sent   error
		reason wire.DisconnectReason
		want   string
	}{
		{"incompatible", Config{SequencedStreams: 8}, func(*wire.AcceptBody) {}, ErrIncompatible,
			wire.DisconnectIncompatible, "SequencedStreams 8 here, 4 on the server"},
		{"out of range", Config{}, func(a *wire.AcceptBody) { a.ReliableWindow = 3 }, ErrProtocol,
			wire.DisconnectProtocolError, "ReliableWindow 3 not a power of two"},
		{"zero stream count", Config{}, func(a *wire.AcceptBody) { a.OrderedStreams = 0 }, ErrProtocol,
			wire.DisconnectProtocolError, "OrderedStreams 0"},
		{"MTU above the largest", Config{}, func(a *wire.AcceptBody) { a.MTU = 9000 }, ErrProtocol,
			wire.DisconnectProtocolError, "MTU 9000 not in [576, 1472]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newEpNet(t, 31, epLink(5, 0, 0))
			f := newFakeServer(n, "10.0.0.1:9000", func(nonce uint64, _ bool) wire.AcceptBody {
				a := defaultAccept()
				tc.mutate(&a)
				return a
			})
			cl := n.client("10.0.0.2:5000", f.node(), EndpointConfig{Channel: tc.client, InsecureCleartext: true})
			n.runUntil(120, "client fails", func() bool { f.serve(); return cl.ep.Err() != nil })
			if err := cl.ep.Err(); !errors.Is(err, tc.sent) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: want %v saying %q", err, tc.sent, tc.want)
			}
			n.run(3)
			f.serve()
			if len(f.session) != DefaultDisconnectRepeats {
				t.Fatalf("%d session datagrams, want %d", len(f.session), DefaultDisconnectRepeats)
			}
			// Session kind, secret; channel header: no ack (0x20), seq 0;
			// Disconnect (0x07), reason. 14 bytes.
			want := binary.LittleEndian.AppendUint64([]byte{0x06}, f.wireSecret(0))
			want = append(want, 0x20, 0x00, 0x00, 0x07, byte(tc.reason))
			for _, d := range f.session {
				if string(d) != string(want) {
					t.Fatalf("refusal % x, want % x", d, want)
				}
			}
			if why := f.disconnects(t, 0); len(why) != DefaultDisconnectRepeats || why[0] != tc.reason {
				t.Fatalf("refusal reasons %v, want %v", why, tc.reason)
			}
			if cl.ep.Remote() != nil || cl.ep.StateSize() != 0 {
				t.Fatal("client kept a session")
			}
		})
	}
}

// TestResumeAcceptWithOtherLimits: a resume Accept whose limits differ
// from the session's (a server that changed under the same token) ends
// the session with ErrProtocol; the client tells the server, under the
// new secret, with a protocol-error Disconnect.
func TestResumeAcceptWithOtherLimits(t *testing.T) {
	n := newEpNet(t, 32, epLink(5, 0, 0))
	f := newFakeServer(n, "10.0.0.1:9000", func(nonce uint64, resume bool) wire.AcceptBody {
		a := defaultAccept()
		if resume {
			a.MaxPartial = 16
		}
		return a
	})
	cl := n.client("10.0.0.2:5000", f.node(), EndpointConfig{InsecureCleartext: true})
	n.runUntil(120, "connect", func() bool { f.serve(); return isConnected(cl)() })
	if err := cl.ep.Resume(n.now, nil); err != nil {
		t.Fatal(err)
	}
	n.runUntil(120, "resume refused", func() bool { f.serve(); return cl.ep.Err() != nil })
	err := cl.ep.Err()
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "MaxPartial 16") || !strings.Contains(err.Error(), "MaxPartial 8") {
		t.Fatalf("error %v", err)
	}
	if len(cl.rec.discs) != 1 || cl.rec.discs[0] != wire.DisconnectProtocolError || cl.ep.Remote().State() != PeerClosed {
		t.Fatalf("client disconnects %v, state %v", cl.rec.discs, cl.ep.Remote().State())
	}
	n.run(3)
	f.serve()
	if why := f.disconnects(t, 1); len(why) == 0 || why[0] != wire.DisconnectProtocolError {
		t.Fatalf("server told %v under the new secret", why)
	}
}

// TestAdoptLimits covers the derivation itself: zero fields take the
// server's values and their dependents follow; equal explicit values are
// honoured; a conflict names every field.
func TestAdoptLimits(t *testing.T) {
	srv := limitsOf(Config{MTU: MaxMTU})
	c, err := adoptLimits(Config{}, srv)
	if err != nil {
		t.Fatal(err)
	}
	if limitsOf(c) != srv || c.UnreliableBytes != max(DefaultUnreliableBytes, MaxMessageSizeFor(MaxMTU)+maxFraming) {
		t.Fatalf("adopted %v, UnreliableBytes %d", limitsOf(c), c.UnreliableBytes)
	}
	// The client's own fields stay its own.
	c, err = adoptLimits(Config{RedundancyBytes: NoRedundancy, UnreliableBytes: 1 << 20, MTU: MaxMTU, ReliableWindow: 256}, srv)
	if err != nil || c.RedundancyBytes != NoRedundancy || c.UnreliableBytes != 1<<20 {
		t.Fatalf("%+v %v", c, err)
	}
	// Every announced server config adopts to itself.
	for _, sc := range acceptServers {
		l := limitsOf(sc.cfg)
		if err := l.check(); err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		var a wire.AcceptBody
		l.announce(&a)
		b, _, err := wire.ParseAcceptBody(wire.AppendAcceptBody(nil, a))
		if err != nil || limitsFromAccept(&b) != l {
			t.Fatalf("%s: announced %v, read back %v (%v)", sc.name, l, limitsFromAccept(&b), err)
		}
		if c, err := adoptLimits(Config{}, l); err != nil || limitsOf(c) != l {
			t.Fatalf("%s: %v %v", sc.name, limitsOf(c), err)
		}
	}
	// A redundancy budget above the server's MTU is out of range there.
	if _, err := adoptLimits(Config{RedundancyBytes: 1000}, limitsOf(Config{MTU: MinMTU})); !errors.Is(err, ErrIncompatible) ||
		!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "RedundancyBytes 1000") {
		t.Fatalf("RedundancyBytes over the MTU: %v", err)
	}
}

// TestEndpointConfigAcceptFieldLimits: a server cannot be configured with
// a limit its Accept cannot carry.
func TestEndpointConfigAcceptFieldLimits(t *testing.T) {
	for _, c := range []Config{{ReliableBytes: 1 << 33}, {MaxPartial: 1 << 33}} {
		if err := (EndpointConfig{Channel: c}).Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
}
