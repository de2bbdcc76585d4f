package transport

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// Cookies verify for the address, nonce and bucket they were made for —
// the current bucket and the previous one — and for nothing else.
func TestCookie(t *testing.T) {
	j := newCookieJar(time.Second, seededRand(1, "cookie"))
	a := netip.MustParseAddrPort("192.0.2.1:4000")
	c, err := j.make(1500*time.Millisecond, a, 42)
	if err != nil {
		t.Fatal(err)
	}
	check := func(now time.Duration, addr netip.AddrPort, nonce uint64, c wire.Cookie, want cookieVerdict) {
		t.Helper()
		if v, err := j.verify(now, addr, nonce, c); err != nil || v != want {
			t.Fatalf("verify at %v: %v %v, want %v", now, v, err, want)
		}
	}
	check(1900*time.Millisecond, a, 42, c, cookieOK)
	check(2500*time.Millisecond, a, 42, c, cookieOK) // previous bucket
	check(2500*time.Millisecond, netip.MustParseAddrPort("192.0.2.1:4001"), 42, c, cookieForged)
	check(2500*time.Millisecond, netip.MustParseAddrPort("192.0.2.2:4000"), 42, c, cookieForged)
	check(2500*time.Millisecond, a, 43, c, cookieForged)
	bad := c
	bad.Tag[3] ^= 1
	check(2500*time.Millisecond, a, 42, bad, cookieForged)
	future := c
	future.Bucket += 5
	check(2500*time.Millisecond, a, 42, future, cookieForged)
	check(3500*time.Millisecond, a, 42, c, cookieExpired) // two buckets on
	// A key gone after a gap of several buckets: the previous slot is empty.
	c2, _ := j.make(3600*time.Millisecond, a, 7)
	check(9*time.Second, a, 7, c2, cookieExpired)

	// Making and verifying within a bucket allocate nothing.
	c3, _ := j.make(10*time.Second, a, 9)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := j.make(10*time.Second, a, 9); err != nil {
			t.Fatal(err)
		}
		if v, _ := j.verify(10*time.Second, a, 9, c3); v != cookieOK {
			t.Fatal("verify failed")
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// Tokens: a minted token is genuine; a changed one, or one minted with
// another key, is not — which is how the server tells an expired token
// from an unknown one without remembering ended sessions.
func TestTokenMinter(t *testing.T) {
	rnd := seededRand(2, "tokens")
	m, err := newTokenMinter(rnd)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newTokenMinter(rnd)
	tok, err := m.mint(rnd)
	if err != nil {
		t.Fatal(err)
	}
	if !m.genuine(&tok) {
		t.Fatal("minted token not genuine")
	}
	if other.genuine(&tok) {
		t.Fatal("token genuine under another key")
	}
	for i := range tok {
		bad := tok
		bad[i] ^= 0x80
		if m.genuine(&bad) {
			t.Fatalf("token with byte %d flipped is genuine", i)
		}
	}
	tok2, _ := m.mint(rnd)
	if tok2 == tok {
		t.Fatal("two mints gave the same token")
	}
}

// The rate limiter: a per-source burst then a steady rate, sources
// independent, a global budget over all, a fixed table.
func TestRateLimiter(t *testing.T) {
	cfg := EndpointConfig{HandshakeRate: 10, HandshakeBurst: 3, GlobalHandshakeRate: 100, GlobalHandshakeBurst: 10, Rand: seededRand(3, "rl")}.WithDefaults()
	r, err := newRateLimiter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddrPort("198.51.100.1:1000")
	b := netip.MustParseAddrPort("198.51.100.2:1000")
	now := time.Duration(0)
	for i := range 3 {
		if v := r.allow(now, a); v != rateAllowed {
			t.Fatalf("burst datagram %d: %v", i, v)
		}
	}
	if v := r.allow(now, a); v != rateSource {
		t.Fatalf("4th datagram: %v", v)
	}
	// Same IP, another port: the same source.
	if v := r.allow(now, netip.MustParseAddrPort("198.51.100.1:2000")); v != rateSource {
		t.Fatalf("same host, other port: %v", v)
	}
	if v := r.allow(now, b); v != rateAllowed {
		t.Fatalf("another source: %v", v)
	}
	now += 100 * time.Millisecond // one interval: one more
	if r.allow(now, a) != rateAllowed || r.allow(now, a) != rateSource {
		t.Fatal("refill")
	}
	// IPv6: one /64 is one source.
	x := netip.MustParseAddrPort("[2001:db8:1:2::1]:1000")
	y := netip.MustParseAddrPort("[2001:db8:1:2:ffff::9]:1000")
	if r.slot(x) != r.slot(y) {
		t.Fatal("addresses of one /64 in different slots")
	}
	// Global: distinct sources exhaust the global budget.
	allowed, global := 0, 0
	for i := range 100 {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 1)
		switch r.allow(now, src) {
		case rateAllowed:
			allowed++
		case rateGlobal:
			global++
		}
	}
	if allowed > 10 || global < 80 {
		t.Fatalf("global budget: %d allowed, %d refused", allowed, global)
	}
	if len(r.slots) != DefaultRateLimitSlots {
		t.Fatal("the table grew")
	}
	if n := testing.AllocsPerRun(100, func() { r.allow(now, a) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// S-E4: peer ids are 0..253. An allocator for more than 254 ids cannot be
// made, a full one refuses with ErrPeerID, and it never hands out 254 or
// 255.
func TestPeerIDAllocator(t *testing.T) {
	if _, err := newIDAllocator(255); !errors.Is(err, ErrPeerID) {
		t.Fatalf("255 ids: %v", err)
	}
	a, err := newIDAllocator(MaxPeersLimit)
	if err != nil {
		t.Fatal(err)
	}
	for want := range MaxPeersLimit {
		id, err := a.alloc()
		if err != nil || int(id) != want {
			t.Fatalf("alloc %d: id %d, %v", want, id, err)
		}
	}
	if id, err := a.alloc(); !errors.Is(err, ErrPeerID) {
		t.Fatalf("255th id: %d, %v", id, err)
	}
	a.free(7)
	a.free(7)
	if id, err := a.alloc(); id != 7 || err != nil || a.inUse() != MaxPeersLimit {
		t.Fatalf("after free: %d %v, in use %d", id, err, a.inUse())
	}
}

// S-E4: a server with MaxPeers 254 gives out exactly the ids 0..253, and
// refuses the 255th client; an admission for which no id can be found is
// refused with RejectInvalidPeerID before any state exists.
func TestPeerIDsOnTheWire(t *testing.T) {
	n := newEpNet(t, 21, epLink(1, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{MaxPeers: MaxPeersLimit, IdleTimeout: time.Hour,
		HandshakeRate: 1000, HandshakeBurst: 1000})
	seen := map[uint8]bool{}
	for i := range MaxPeersLimit + 1 {
		r := n.raw(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 5000).String(), srv)
		reply := n.handshake(r, uint64(i+1), nil)
		if i == MaxPeersLimit {
			rj, _, err := wire.ParseReject(reply)
			if err != nil || rj.Reason != wire.RejectServerFull {
				t.Fatalf("255th client: %x", reply)
			}
			break
		}
		_, _, err := wire.ParseAccept(reply)
		a := r.body // opened by the raw handshake
		if err != nil || seen[a.PeerID] || a.PeerID > wire.MaxPeerID {
			t.Fatalf("client %d: id %d, %v", i, a.PeerID, err)
		}
		seen[a.PeerID] = true
		r.conn.Close() // stop collecting its keep-alives
	}
	if len(seen) != MaxPeersLimit || srv.ep.StateSize() != MaxPeersLimit {
		t.Fatalf("%d ids, state %d", len(seen), srv.ep.StateSize())
	}

	// Defence in depth: an allocator with no free id under MaxPeers.
	n2 := newEpNet(t, 22, epLink(1, 0, 0))
	srv2 := n2.server("10.0.0.1:9000", EndpointConfig{MaxPeers: 4})
	srv2.ep.ids, _ = newIDAllocator(1)
	if _, _, err := wire.ParseAccept(n2.handshake(n2.raw("10.0.0.2:5000", srv2), 1, nil)); err != nil {
		t.Fatal(err)
	}
	rj, _, err := wire.ParseReject(n2.handshake(n2.raw("10.0.0.3:5000", srv2), 2, nil))
	if err != nil || rj.Reason != wire.RejectInvalidPeerID {
		t.Fatalf("no id: %+v %v", rj, err)
	}
	if srv2.ep.StateSize() != 1 || srv2.ep.Stats().Rejects(wire.RejectInvalidPeerID) != 1 {
		t.Fatalf("state %d", srv2.ep.StateSize())
	}
}

// S-E4: a client refuses an Accept naming peer id 254 or 255 (provenance
// markers) before creating any state, and keeps no session. The hostile
// server runs the real key exchange without a static key, so the client
// is in InsecureCleartext mode (an encrypted client would not even open
// the body: see TestOnPathImpersonation).
func TestClientRefusesProvenancePeerID(t *testing.T) {
	for _, id := range []uint8{254, 255} {
		n := newEpNet(t, 23, epLink(5, 0, 0))
		fake := n.listen("10.0.0.1:9000") // a hostile server
		cl := n.client("10.0.0.2:5000", &node{conn: fake}, EndpointConfig{HandshakeTimeout: 2 * time.Second, InsecureCleartext: true})
		in := make([]socket.Message, 8)
		for i := range in {
			in[i].Buf = make([]byte, MaxMTU)
		}
		n.runUntil(600, "client gives up", func() bool {
			k, _ := fake.TryReadBatch(in)
			for _, m := range in[:k] {
				b := m.Buf[:m.N]
				var reply []byte
				switch wire.PacketKind(b[0]) {
				case wire.KindConnectRequest:
					r, _, _ := wire.ParseConnectRequest(b)
					reply = wire.AppendChallenge(nil, wire.Challenge{Nonce: r.Nonce})
				case wire.KindConnectResponse:
					r, _, _ := wire.ParseConnectResponse(b)
					a, _, err := makeAccept(nil, &r, b, wire.AcceptBody{PeerID: id, MTU: DefaultMTU, MaxMessage: 1000}, nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					reply = a[:]
				}
				fake.WriteBatch([]socket.Message{{Buf: reply, N: len(reply), Addr: m.Addr}})
			}
			return cl.ep.Err() != nil
		})
		if !errors.Is(cl.ep.Err(), ErrHandshakeTimeout) || cl.ep.StateSize() != 0 || len(cl.rec.connects) != 0 || cl.ep.Remote() != nil {
			t.Fatalf("id %d: err %v, state %d", id, cl.ep.Err(), cl.ep.StateSize())
		}
		if cl.ep.Stats().Malformed(MalformedEncoding) == 0 {
			t.Fatalf("id %d: refusal not counted", id)
		}
	}
}

// S-E3: 10,000 ConnectRequests (and forged ConnectResponses) from spoofed
// sources — distinct simulated addresses — create no per-source state on
// the server, and the server never sends an address more bytes than it
// received from it. With the default global budget, a flood in one tick is
// cut to the budget and the rest is dropped unanswered.
func TestSpoofedFloodNoState(t *testing.T) {
	n := newEpNet(t, 24, epLink(2, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{GlobalHandshakeRate: 1e6, GlobalHandshakeBurst: 1 << 20})
	srvAddr := srv.conn.LocalAddr()
	in, out := map[netip.AddrPort]int{}, map[netip.AddrPort]int{}
	violations := 0
	n.net.SetTrace(func(ev simlink.Event) {
		if ev.Kind != simlink.EventSend {
			return
		}
		if ev.Dst == srvAddr {
			in[ev.Src] += ev.Size
		}
		if ev.Src == srvAddr {
			out[ev.Dst] += ev.Size
			if out[ev.Dst] > in[ev.Dst] {
				violations++
			}
		}
	})
	spoof := func(i int, msgs ...[]byte) {
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{100, 64 + byte(i>>16), byte(i >> 8), byte(i)}), uint16(1024+i%5000))
		c, err := n.net.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		batch := make([]socket.Message, len(msgs))
		for k, m := range msgs {
			batch[k] = socket.Message{Buf: m, N: len(m), Addr: srvAddr}
		}
		if _, err := c.WriteBatch(batch); err != nil {
			t.Fatal(err)
		}
		c.Close() // nobody receives at a spoofed address
	}
	const flood = 10000
	var forged wire.Cookie
	for i := range flood {
		forged.Bucket, forged.Tag[0] = uint32(i), byte(i)
		msgs := [][]byte{rawRequest(uint64(i))}
		if i%4 == 0 {
			msgs = append(msgs, rawResponse(uint64(i), forged))
		}
		if i%7 == 0 {
			tok := wire.Token{byte(i)}
			msgs = append(msgs, wire.AppendConnectRequest(nil, wire.ConnectRequest{Version: wire.ProtocolVersion, Nonce: 1, Resume: true, Token: tok}))
		}
		spoof(i, msgs...)
		if i%500 == 499 {
			n.step()
			if srv.ep.StateSize() != 0 || len(srv.ep.byAddr) != 0 {
				t.Fatalf("after %d spoofed sources: state %d", i+1, srv.ep.StateSize())
			}
		}
	}
	n.run(10)
	s := srv.ep.Stats()
	if srv.ep.StateSize() != 0 || len(srv.ep.byAddr) != 0 || s.Connects != 0 {
		t.Fatalf("state %d after the flood", srv.ep.StateSize())
	}
	if violations != 0 || s.ReplySuppressed != 0 {
		t.Fatalf("%d replies exceeded the bytes their address sent", violations)
	}
	requests := uint64(flood + (flood+6)/7)
	total := requests + flood/4
	if s.Challenges != s.ConnectRequests || s.ConnectRequests+s.ConnectResponses+s.RateLimited != total ||
		s.Challenges < requests*9/10 {
		t.Fatalf("challenges %d, requests %d, responses %d, rate-limited %d; sent %d", s.Challenges,
			s.ConnectRequests, s.ConnectResponses, s.RateLimited, total)
	}
	if s.BadCookie+s.ExpiredCookie != s.ConnectResponses || s.Rejects(wire.RejectBadCookie) != s.ConnectResponses {
		t.Fatalf("forged cookies: bad %d expired %d of %d", s.BadCookie, s.ExpiredCookie, s.ConnectResponses)
	}
	totalIn, totalOut := 0, 0
	for a, b := range in {
		totalIn += b
		totalOut += out[a]
	}
	t.Logf("flood: %d B in, %d B out (%.2f), %d challenges, %d bad cookies, %d rate-limited",
		totalIn, totalOut, float64(totalOut)/float64(totalIn), s.Challenges, s.BadCookie+s.ExpiredCookie, s.RateLimited)

	// The default global budget caps a one-tick flood.
	srv2 := n.server("10.0.0.9:9000", EndpointConfig{})
	srvAddr = srv2.conn.LocalAddr()
	for i := range 5000 {
		spoof(flood+i, rawRequest(uint64(i)))
	}
	n.run(3)
	s2 := srv2.ep.Stats()
	if s2.Challenges > DefaultGlobalHandshakeBurst+100 || s2.RateLimitedGlobal < 4500 ||
		s2.Challenges+s2.RateLimitedGlobal+s2.RateLimited != 5000 || srv2.ep.StateSize() != 0 {
		t.Fatalf("global budget: %d challenges, %d over budget, %d over a source's", s2.Challenges, s2.RateLimitedGlobal, s2.RateLimited)
	}
	t.Logf("one-tick flood of 5000: %d challenges, %d dropped over the global budget", s2.Challenges, s2.RateLimitedGlobal)
}

// S-E3: every reply the server makes to an unproven address is smaller
// than the request: Challenge and Reject to a ConnectRequest, Reject to a
// bad ConnectResponse, and a version-mismatch Reject to the shortest
// request it can read (15 bytes).
func TestNoAmplification(t *testing.T) {
	n := newEpNet(t, 25, epLink(1, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{MaxPeers: 1})
	r := n.raw("10.0.0.2:5000", srv)
	check := func(req []byte, want wire.PacketKind) {
		t.Helper()
		r.send(req)
		n.run(3)
		got := r.take()
		if len(got) != 1 || wire.PacketKind(got[0][0]) != want || len(got[0]) >= len(req) {
			t.Fatalf("request of %d B: replies %x", len(req), got)
		}
	}
	check(rawRequest(1), wire.KindChallenge)
	check(rawResponse(1, wire.Cookie{}), wire.KindReject)
	v2 := rawRequest(2)[:15]
	v2[5] = 1 // version 1, before the Accept grew
	check(v2, wire.KindReject)
	v2r := rawResponse(2, wire.Cookie{})[:15]
	v2r[5] = 9
	check(v2r, wire.KindReject)
	if srv.ep.Stats().ForeignVersion != 2 || srv.ep.Stats().Rejects(wire.RejectVersionMismatch) != 2 {
		t.Fatalf("%+v", srv.ep.Stats())
	}
	// Server full: the cheap early Reject is smaller too.
	if _, _, err := wire.ParseAccept(n.handshake(n.raw("10.0.0.3:5000", srv), 3, nil)); err != nil {
		t.Fatal(err)
	}
	check(rawRequest(4), wire.KindReject)
	if srv.ep.StateSize() != 1 {
		t.Fatal("state")
	}
}
