package transport

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// sessionDatagram builds a valid session datagram with secret carrying one
// unreliable message.
func sessionDatagram(secret [8]byte, seq wire.Seq, payload []byte) []byte {
	b := wire.AppendSessionHeader(nil, wire.SessionHeader{Secret: binary.LittleEndian.Uint64(secret[:])})
	b = wire.AppendChannelHeader(b, wire.ChannelHeader{Seq: seq, NoAck: true})
	return wire.AppendUnreliableFrame(b, wire.UnreliableFrame{Payload: payload})
}

// S-E2: a session datagram from an address with no session — even with a
// valid secret copied from another session — or from the session's address
// with a wrong secret, never reaches channel state; each is counted. A
// genuine one still does.
//
// This is the cleartext session format (InsecureCleartext); the sealed
// one's checks are TestOnPathAttacker's.
func TestSessionDatagramChecks(t *testing.T) {
	n := newEpNet(t, 30, epLink(5, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{InsecureCleartext: true})
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{InsecureCleartext: true})
	n.runUntil(120, "connect", isConnected(cl))
	n.run(30)
	cl.silent = true // from now on only the test's datagrams reach the server
	n.run(10)
	sp := srv.rec.connects[0]
	before, msgs := sp.Stats(), srv.rec.unreliable
	msg := testPayload(msgKey{from: 1, stream: 9}, 30)

	att := n.raw("10.0.0.66:4000", srv)
	for i := range 10 {
		att.send(sessionDatagram(sp.wireSecret, wire.Seq(5000+i), msg)) // right secret, wrong address
	}
	wrong := sp.wireSecret
	wrong[7] ^= 0x40
	var batch []socket.Message
	for i := range 10 {
		d := sessionDatagram(wrong, wire.Seq(6000+i), msg) // right address, wrong secret
		batch = append(batch, socket.Message{Buf: d, N: len(d), Addr: srv.conn.LocalAddr()})
	}
	short := []byte{byte(wire.KindSession), 1, 2, 3}
	batch = append(batch, socket.Message{Buf: short, N: len(short), Addr: srv.conn.LocalAddr()})
	if _, err := cl.conn.WriteBatch(batch); err != nil {
		t.Fatal(err)
	}
	n.run(5)
	after := sp.Stats()
	if after.DatagramsReceived != before.DatagramsReceived || after.BytesReceived != before.BytesReceived ||
		after.Malformed != before.Malformed || srv.rec.unreliable != msgs {
		t.Fatalf("forged datagrams reached the channel: %d → %d received", before.DatagramsReceived, after.DatagramsReceived)
	}
	s := srv.ep.Stats()
	if s.UnknownSource != 10 || s.WrongSecret != 10 || s.Malformed(MalformedSessionHeader) != 1 {
		t.Fatalf("unknown source %d, wrong secret %d, short %d", s.UnknownSource, s.WrongSecret, s.Malformed(MalformedSessionHeader))
	}

	// The genuine article passes: the client speaks again.
	cl.silent = false
	if err := cl.ep.Remote().Channel().SendUnreliable(msg); err != nil {
		t.Fatal(err)
	}
	n.run(3)
	if sp.Stats().DatagramsReceived <= before.DatagramsReceived || srv.rec.unreliable != msgs+1 {
		t.Fatal("a genuine datagram did not reach the channel")
	}

	// The client checks the server's datagrams the same way.
	cs := cl.ep.Stats()
	cp := cl.ep.Remote()
	att.server = cl.conn.LocalAddr()
	att.send(sessionDatagram(cp.wireSecret, 1, msg))
	n.run(3)
	if cl.ep.Stats().UnknownSource != cs.UnknownSource+1 {
		t.Fatal("client accepted a session datagram from a stranger")
	}
}

// drops sums the counters under which an endpoint files a datagram it
// drops before any channel sees it.
func drops(s EndpointStats) uint64 {
	d := s.UnknownSource + s.WrongSecret + s.StrayReplies + s.RateLimited + s.RateLimitedGlobal +
		s.BadCookie + s.ExpiredCookie + s.ForeignVersion + s.SealDropsTotal() + s.AcceptForged +
		s.ResumeProofFailed + s.KeyExchangeFailed
	return d + s.MalformedTotal() - s.Malformed(MalformedChannel)
}

// S-E8: random bytes behind every packet kind byte (and behind invalid
// ones), at a server and at a client mid-handshake, never panic and each is
// dropped and counted exactly once, malformed ones by reason; random
// session datagrams with a valid header from the peer's address reach the
// channel, which refuses the undecodable ones, counted at both levels.
func TestRandomDatagramsCounted(t *testing.T) {
	n := newEpNet(t, 31, epLink(5, 0, 0))
	lim := EndpointConfig{HandshakeRate: 1e6, HandshakeBurst: 1e6, GlobalHandshakeRate: 1e9, GlobalHandshakeBurst: 1e9}
	srv := n.server("10.0.0.1:9000", lim)
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
	n.runUntil(120, "connect", isConnected(cl))
	pending := n.client("10.0.0.3:5000", srv, EndpointConfig{})
	pending.deaf = true // stays mid-handshake: receives only what the test hands it
	n.run(2)
	sp := srv.rec.connects[0]
	rng := rand.New(rand.NewPCG(31, 8))
	stranger := netip.MustParseAddrPort("10.0.0.99:1234")
	random := func(kind byte) []byte {
		size := rng.IntN(120)
		if rng.IntN(10) == 0 {
			size = rng.IntN(MaxMTU + 50)
		}
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if size > 0 {
			b[0] = kind
		}
		return b
	}
	for _, kind := range []byte{0, 1, 2, 3, 4, 5, 6, 7, 0x42, 0x80, 0x81, 0x82, 0xff} {
		for _, target := range []*node{srv, pending} {
			from := stranger
			if target == pending {
				from = srv.conn.LocalAddr()
			}
			start := target.ep.Stats()
			for range 400 {
				before := drops(target.ep.Stats())
				target.ep.handle(n.now, from, random(kind))
				if d := drops(target.ep.Stats()) - before; d != 1 {
					t.Fatalf("kind %#x at %s: a datagram counted %d times", kind, target.name, d)
				}
			}
			end := target.ep.Stats()
			var mal [malformedReasons]uint64
			for r := range mal {
				mal[r] = end.Malformed(MalformedReason(r)) - start.Malformed(MalformedReason(r))
			}
			t.Logf("kind %#02x at %-22s malformed %v, unknown source %d, stray %d", kind, target.name, mal,
				end.UnknownSource-start.UnknownSource, end.StrayReplies-start.StrayReplies)
		}
	}
	if srv.ep.StateSize() != 1 || pending.ep.StateSize() != 0 || len(pending.rec.connects) != 0 {
		t.Fatal("random datagrams created sessions")
	}

	// Random session datagrams sealed under the session's keys (the
	// client's own seal.Session, so its packet numbers stay in order),
	// from the peer: they authenticate and reach the channel.
	before, beforeEp := sp.Stats(), srv.ep.Stats()
	const k = 2000
	for i := range k {
		if i%500 == 0 {
			srv.ep.pollSeq++ // as a new Poll would: stay within the peer's budget
		}
		b := random(0)
		b = append(make([]byte, seal.HeaderLen, MaxMTU), b[:min(len(b), MaxMTU-seal.Overhead)]...)
		b, err := cl.ep.Remote().sess.Seal(b)
		if err != nil {
			t.Fatal(err)
		}
		srv.ep.handle(n.now, sp.Addr(), b)
	}
	after, afterEp := sp.Stats(), srv.ep.Stats()
	if after.DatagramsReceived-before.DatagramsReceived != k {
		t.Fatalf("%d of %d reached the channel", after.DatagramsReceived-before.DatagramsReceived, k)
	}
	refused := afterEp.Malformed(MalformedChannel) - beforeEp.Malformed(MalformedChannel)
	if refused == 0 || refused != after.Malformed-before.Malformed {
		t.Fatalf("channel malformed: endpoint %d, channel %d", refused, after.Malformed-before.Malformed)
	}
	t.Logf("random session datagrams: %d of %d refused as malformed", refused, k)

	// The session still works.
	n.run(30)
	if sp.State() != PeerConnected || cl.ep.Remote().State() != PeerConnected {
		t.Fatal("random datagrams broke the session")
	}

	// The same through the socket: nothing panics, everything is counted.
	att := n.raw("10.0.0.77:4000", srv)
	in := srv.ep.Stats().DatagramsIn
	for i := range 300 {
		b := random(byte(i % 9))
		att.send(b[:min(len(b), MaxMTU)])
	}
	n.run(3)
	if got := srv.ep.Stats().DatagramsIn - in; got < 300 {
		t.Fatalf("server read %d of 300", got)
	}
}

// Off-path forgery of handshake replies: an attacker who spoofs the
// server's address but cannot see the client's nonce cannot abort or hijack
// the handshake with a forged Reject, Challenge or Accept — the client
// drops replies whose nonce is not its attempt's (counted as stray) and
// connects to the real server.
func TestForgedRepliesIgnored(t *testing.T) {
	n := newEpNet(t, 32, epLink(40, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{})
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
	n.step() // the ConnectRequest is on its way
	// Forged replies, "from" the server (the simulated attacker writes
	// through the server's socket: source spoofing), with guessed nonces.
	var forged []socket.Message
	for i := range uint64(20) {
		for _, b := range [][]byte{
			wire.AppendReject(nil, wire.Reject{Nonce: i, Reason: wire.RejectServerFull}),
			wire.AppendChallenge(nil, wire.Challenge{Nonce: i}),
			wire.AppendAccept(nil, wire.Accept{Nonce: i, Ephemeral: rawEph}),
		} {
			forged = append(forged, socket.Message{Buf: b, N: len(b), Addr: cl.conn.LocalAddr()})
		}
	}
	if _, err := srv.conn.WriteBatch(forged); err != nil {
		t.Fatal(err)
	}
	n.runUntil(120, "connect", isConnected(cl))
	if cl.ep.Err() != nil || cl.ep.Stats().StrayReplies != uint64(len(forged)) {
		t.Fatalf("err %v, stray %d of %d", cl.ep.Err(), cl.ep.Stats().StrayReplies, len(forged))
	}
	if cl.ep.Remote().ID() != srv.rec.connects[0].ID() || cl.ep.Remote().secret != srv.rec.connects[0].secret {
		t.Fatal("the client adopted a forged Accept")
	}
}

// Token replay: every resume rotates the token, so a token seen on the
// wire before a resume is dead after it — presenting it is refused (as
// expired: the server minted it, no session holds it) and the session is
// untouched. A token that never left the server cannot be guessed: 64
// random bits plus a 64-bit MAC.
func TestTokenReplayAfterResume(t *testing.T) {
	n := newEpNet(t, 33, epLink(10, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{})
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
	n.runUntil(120, "connect", isConnected(cl))
	sp := srv.rec.connects[0]
	stolen := sp.token
	if err := cl.ep.Resume(n.now, nil); err != nil {
		t.Fatal(err)
	}
	n.runUntil(120, "resume", func() bool { return len(cl.rec.resumes) == 1 })
	// The replaced token names the session until the client speaks under
	// the new secret (a client whose resume Accept was lost retries with
	// it); the client does so at its next Flush.
	n.runUntil(3, "the server hears the resumed client", func() bool { return !sp.prevLive })
	att := n.raw("10.0.0.66:4000", srv)
	rj, _, err := wire.ParseReject(n.handshake(att, 99, &stolen))
	if err != nil || rj.Reason != wire.RejectExpiredToken {
		t.Fatalf("replayed token: %+v %v", rj, err)
	}
	if sp.Addr() != cl.conn.LocalAddr() || sp.State() != PeerConnected || len(srv.rec.resumes) != 1 {
		t.Fatal("a replayed token moved the session")
	}
}

// One peer flooding its authenticated session cannot take a Poll's work
// from the others: with PeerDatagramsPerPoll 64, a client that queued 160
// datagrams while the server was not polling has 64 handed to its channel
// by the next Poll, the other 96 dropped and counted, while a second
// client's datagrams in the same Poll all arrive. (The per-peer half of
// SECURITY.md §5.)
func TestPeerDatagramBudget(t *testing.T) {
	n := newEpNet(t, 21, epLink(5, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{PeerDatagramsPerPoll: 64})
	a := n.client("10.0.0.2:5000", srv, EndpointConfig{})
	b := n.client("10.0.0.3:5000", srv, EndpointConfig{})
	n.runUntil(300, "both connected", func() bool { return isConnected(a)() && isConnected(b)() })
	n.run(30) // settle: nothing in flight
	var pa *Peer
	for _, p := range srv.rec.connects {
		if p.Addr() == a.conn.LocalAddr() {
			pa = p
		}
	}
	unreliable0, over0, recv0 := srv.rec.unreliable, srv.ep.Stats().PeerOverBudget, pa.Stats().DatagramsReceived

	const steps, burst = 5, 32
	srv.deaf = true
	nextB := map[uint8]uint32{}
	for i := range steps {
		for j := range burst {
			// 1,100 bytes: one message per datagram at the default MTU.
			k := msgKey{from: 1, stream: 0, seq: uint32(i*burst + j)}
			if err := a.ep.Remote().Channel().SendUnreliable(testPayload(k, 1100)); err != nil {
				t.Fatal(err)
			}
		}
		sendSome(t, b.ep.Remote(), 2, nextB, []uint8{0}, 40)
		n.step()
	}
	srv.deaf = false
	n.step() // one Poll reads everything queued
	srv.deaf = true

	// The flooding client's datagrams: its 160 messages, and an ack or
	// keep-alive or two of its own.
	recv := pa.Stats().DatagramsReceived - recv0
	over := srv.ep.Stats().PeerOverBudget - over0
	if recv != 64 || over < steps*burst-64 {
		t.Errorf("flooding client: %d datagrams reached its channel (want 64), %d over budget (want at least %d)", recv, over, steps*burst-64)
	}
	if got := srv.rec.unreliable - unreliable0; got > 64 || got < 60 {
		t.Errorf("flooding client: %d messages delivered, want 60..64", got)
	}
	for seq := range uint32(steps) {
		if srv.rec.reliable[msgKey{from: 2, stream: 0, seq: seq}] != 1 {
			t.Errorf("second client's message %d not delivered in the same Poll", seq)
		}
	}
}

// A client whose resume Accept was lost retries with the token it has —
// with a new nonce, from yet another address (NAT rebinding), proving the
// secret it still holds, the one that resume replaced — and gets that
// resume's token again, with keys of a fresh exchange, instead of
// RejectExpiredToken (the conformance harness found clients ended that
// way after two rebinds); once it speaks under the new keys, the replaced
// token is spent.
func TestResumeRetryAfterLostAccept(t *testing.T) {
	n := newEpNet(t, 34, epLink(10, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{})
	first := n.raw("10.0.0.2:5000", srv)
	if _, _, err := wire.ParseAccept(n.handshake(first, 1, nil)); err != nil {
		t.Fatal(err)
	}
	a1, s1 := first.body, first.secret
	// The same client at a new address: it holds the session's keys.
	second := n.raw("10.0.0.3:5000", srv)
	second.keyed, second.secret = true, s1
	if _, _, err := wire.ParseAccept(n.handshake(second, 2, &a1.Token)); err != nil { // this Accept is "lost"
		t.Fatal(err)
	}
	a2, s2 := second.body, second.secret
	if a2.Token == a1.Token || s2 == s1 {
		t.Fatalf("first resume: %+v", a2)
	}
	third := n.raw("10.0.0.4:5000", srv)
	third.keyed, third.secret = true, s1 // the client never got the second Accept
	a3b, _, err := wire.ParseAccept(n.handshake(third, 3, &a1.Token))
	a3, s3 := third.body, third.secret
	if err != nil || a3.Token != a2.Token || s3 == s2 || s3 == s1 || a3b.Nonce != 3 || a3.PeerID != a1.PeerID {
		t.Fatalf("retry with the replaced token: %+v %v (want token of %+v, new keys)", a3, err, a2)
	}
	sp := srv.ep.peers[a1.PeerID]
	if sp.Addr() != third.conn.LocalAddr() || len(srv.rec.resumes) != 1 || len(srv.rec.connects) != 1 {
		t.Fatalf("session at %v, resumes %d, connects %d", sp.Addr(), len(srv.rec.resumes), len(srv.rec.connects))
	}
	// The client speaks under the new keys.
	third.send(third.datagram(1, []byte("hi")))
	n.runUntil(10, "the server hears the resumed client", func() bool { return !sp.prevLive })
	rj, _, err := wire.ParseReject(n.handshake(n.raw("10.0.0.5:5000", srv), 4, &a1.Token))
	if err != nil || rj.Reason != wire.RejectExpiredToken {
		t.Fatalf("replaced token after the client spoke: %+v %v", rj, err)
	}
}
