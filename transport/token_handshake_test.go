package transport

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/token"
	"github.com/tickwire/tickwire/wire"
)

// Connect tokens in the handshake (docs/WIRE.md §9.4, §9.8, §14.7) and the
// admission hook, on the simulated network.

const testProtocolID = 0x7469636b77697265

// tokenEpoch is the wall time the rig's token clocks read at rigOrigin.
var tokenEpoch = time.Unix(1796083200, 0) // 2026-12-01 00:00:00 UTC

func fleetKey(b byte) token.Key {
	var k token.Key
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

// tokenClock is a TokenConfig.Clock that follows the rig's clock.
func (n *epNet) tokenClock() func() time.Time {
	return func() time.Time { return tokenEpoch.Add(n.now - rigOrigin) }
}

// tokenServerCfg is a server config verifying tokens of fleet key k.
func (n *epNet) tokenServerCfg(t testing.TB, k token.Key, required bool) EndpointConfig {
	v, err := token.NewVerifier(testProtocolID, k)
	if err != nil {
		t.Fatal(err)
	}
	return EndpointConfig{Tokens: TokenConfig{Verifier: v, Required: required, Clock: n.tokenClock()}}
}

// issue makes a token of fleet key k for servers, seeded by seed, valid
// for a minute from the rig's current time unless p says otherwise.
func (n *epNet) issue(t testing.TB, k token.Key, seed uint64, p token.Params, servers ...string) *token.Token {
	t.Helper()
	if p.ProtocolID == 0 {
		p.ProtocolID = testProtocolID
	}
	now := n.tokenClock()()
	if p.Created.IsZero() {
		p.Created = now.Add(-time.Second)
	}
	if p.Expires.IsZero() {
		p.Expires = now.Add(time.Minute)
	}
	if p.ClientID == 0 {
		p.ClientID = seed
	}
	for _, s := range servers {
		p.Servers = append(p.Servers, netip.MustParseAddrPort(s))
	}
	tok, err := token.Issue(k, p, seededRand(seed, "token"))
	if err != nil {
		t.Fatal(err)
	}
	return &tok
}

// rejectedWith runs until cl's handshake fails and checks it was
// rejected for reason.
func rejectedWith(t *testing.T, n *epNet, cl *node, reason wire.RejectReason) *RejectError {
	t.Helper()
	n.runUntil(300, "the handshake fails", func() bool { return cl.ep.Err() != nil })
	var re *RejectError
	if !errors.As(cl.ep.Err(), &re) || re.Reason != reason || !errors.Is(cl.ep.Err(), ErrRejected) {
		t.Fatalf("client error %v, want a RejectError for %v", cl.ep.Err(), reason)
	}
	if !strings.Contains(re.Error(), reason.String()) {
		t.Fatalf("the error %q does not name %q", re.Error(), reason)
	}
	if cl.ep.Stats().Rejects(reason) != 1 {
		t.Fatalf("client counted %d Rejects for %v", cl.ep.Stats().Rejects(reason), reason)
	}
	return re
}

// TestTokenFleet: one token admits its client to any server of the fleet
// that it names (two servers, one fleet key, different static keys; the
// client pins no server key, or pins one), and not to a server of the
// same fleet that it does not name. The server learns the client id.
func TestTokenFleet(t *testing.T) {
	n := newEpNet(t, 70, epLink(5, 0, 0))
	k := fleetKey(1)
	a := n.server("10.0.0.1:9000", n.tokenServerCfg(t, k, true))
	b := n.server("10.0.0.3:9000", n.tokenServerCfg(t, k, true))
	c := n.server("10.0.0.4:9000", n.tokenServerCfg(t, k, true))
	tok := n.issue(t, k, 42, token.Params{UserData: []byte("match 7")}, "10.0.0.1:9000", "10.0.0.3:9000")

	unpinned := n.client("10.0.0.2:5000", a, EndpointConfig{Token: tok})
	pinned := n.client("10.0.0.2:5001", b, EndpointConfig{Token: tok, ServerKey: b.ep.PublicKey()})
	stranger := n.client("10.0.0.2:5002", c, EndpointConfig{Token: tok})
	n.runUntil(300, "both named servers admit", func() bool { return isConnected(unpinned)() && isConnected(pinned)() })
	for _, s := range []*node{a, b} {
		p := s.rec.connects[0]
		if id, ok := p.ClientID(); !ok || id != 42 {
			t.Fatalf("%v: client id %d, %v", s, id, ok)
		}
	}
	// Both sessions carry traffic: the two ends derived the same keys.
	for _, cl := range []*node{unpinned, pinned} {
		if _, err := cl.ep.Remote().Channel().SendReliable(1, testPayload(msgKey{from: 1, stream: 1}, 40)); err != nil {
			t.Fatal(err)
		}
	}
	n.runUntil(120, "messages over both sessions", func() bool {
		return a.rec.reliable[msgKey{from: 1, stream: 1}] == 1 && b.rec.reliable[msgKey{from: 1, stream: 1}] == 1
	})
	for _, s := range []*node{a, b} {
		st := s.ep.Stats()
		if st.TokensVerified != 1 || st.TokensBound != 1 || st.TokenRefusalsTotal() != 0 {
			t.Fatalf("%v: verified %d, bound %d, refused %d", s, st.TokensVerified, st.TokensBound, st.TokenRefusalsTotal())
		}
	}
	// The unpinned client resumes: no token again, no es, the session's
	// secret authenticates the server.
	if err := unpinned.ep.Resume(n.now, nil); err != nil {
		t.Fatal(err)
	}
	n.runUntil(300, "the unpinned client resumes", func() bool { return len(unpinned.rec.resumes) == 1 && isConnected(unpinned)() })
	if a.ep.Stats().Resumes != 1 || a.ep.Stats().TokensVerified != 1 {
		t.Fatalf("resumes %d, tokens verified %d", a.ep.Stats().Resumes, a.ep.Stats().TokensVerified)
	}
	re := rejectedWith(t, n, stranger, wire.RejectTokenNotForServer)
	if !strings.Contains(re.Error(), "the token names 2 servers, 10.0.0.4:9000 not among them") {
		t.Fatalf("detail: %v", re)
	}
	if st := c.ep.Stats(); st.TokenRefusals(TokenNotForServer) != 1 || c.ep.StateSize() != 0 || st.Connects != 0 {
		t.Fatalf("server c: %d refusals, state %d", st.TokenRefusals(TokenNotForServer), c.ep.StateSize())
	}
}

// TestTokenRefusals: each bad token is refused after the cookie with its
// own reason, which the client sees and both ends count, and leaves no
// state; a server that requires tokens refuses a client without one. Every
// refusal is a 10-byte Reject for a ConnectResponse of at least 120.
func TestTokenRefusals(t *testing.T) {
	k, other := fleetKey(1), fleetKey(100)
	const srvAddr = "10.0.0.1:9000"
	cases := []struct {
		name   string
		tok    func(n *epNet) *token.Token
		srv    func(c *EndpointConfig)
		reason wire.RejectReason
		count  TokenRefusal
	}{
		{"expired", func(n *epNet) *token.Token {
			now := n.tokenClock()()
			return n.issue(t, k, 1, token.Params{Created: now.Add(-time.Hour), Expires: now.Add(-time.Second)}, srvAddr)
		}, nil, wire.RejectTokenExpired, TokenExpired},
		{"foreign protocol", func(n *epNet) *token.Token {
			return n.issue(t, k, 2, token.Params{ProtocolID: 99}, srvAddr)
		}, nil, wire.RejectTokenProtocol, TokenProtocol},
		{"wrong key", func(n *epNet) *token.Token { return n.issue(t, other, 3, token.Params{}, srvAddr) },
			nil, wire.RejectTokenWrongKey, TokenWrongKey},
		{"tampered", func(n *epNet) *token.Token {
			tok := n.issue(t, k, 4, token.Params{}, srvAddr)
			tok.Sealed[len(tok.Sealed)/2] ^= 1
			return tok
		}, nil, wire.RejectTokenTampered, TokenTampered},
		{"truncated", func(n *epNet) *token.Token {
			tok := n.issue(t, k, 5, token.Params{UserData: make([]byte, 40)}, srvAddr)
			tok.Sealed = tok.Sealed[:len(tok.Sealed)-20]
			return tok
		}, nil, wire.RejectTokenMalformed, TokenMalformed},
		{"lifetime", func(n *epNet) *token.Token {
			return n.issue(t, k, 6, token.Params{Expires: n.tokenClock()().Add(2 * time.Hour)}, srvAddr)
		}, nil, wire.RejectTokenLifetime, TokenLifetime},
		{"required", func(*epNet) *token.Token { return nil }, nil, wire.RejectTokenRequired, TokenRequired},
		{"no verifier", func(n *epNet) *token.Token { return n.issue(t, k, 7, token.Params{}, srvAddr) },
			func(c *EndpointConfig) { c.Tokens = TokenConfig{} }, wire.RejectTokenWrongKey, TokenWrongKey},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newEpNet(t, 80+uint64(i), epLink(5, 0, 0))
			cfg := n.tokenServerCfg(t, k, true)
			if c.srv != nil {
				c.srv(&cfg)
			}
			srv := n.server(srvAddr, cfg)
			ccfg := EndpointConfig{Token: c.tok(n)}
			if ccfg.Token == nil {
				ccfg.ServerKey = srv.ep.PublicKey()
			}
			cl := n.client("10.0.0.2:5000", srv, ccfg)
			rejectedWith(t, n, cl, c.reason)
			st := srv.ep.Stats()
			if st.TokenRefusals(c.count) != 1 || st.TokenRefusalsTotal() != 1 || st.Rejects(c.reason) != 1 {
				t.Fatalf("server counted %d %v refusals (%d in all), %d Rejects", st.TokenRefusals(c.count), c.count, st.TokenRefusalsTotal(), st.Rejects(c.reason))
			}
			if srv.ep.StateSize() != 0 || st.Connects != 0 || st.TokensVerified != 0 {
				t.Fatalf("state %d, connects %d, verified %d", srv.ep.StateSize(), st.Connects, st.TokensVerified)
			}
			if srv.ep.tok != nil && srv.ep.tok.guard.Len() != 0 {
				t.Fatal("a refused token is in the guard")
			}
			if st.BytesOut > st.BytesIn {
				t.Fatalf("the server sent %d bytes for %d", st.BytesOut, st.BytesIn)
			}
		})
	}
}

// TestTokenGuardFull: a guard whose every slot holds an unexpired token
// refuses a new one at the handshake (the client sees the reason), and
// the first client keeps its session.
func TestTokenGuardFull(t *testing.T) {
	n := newEpNet(t, 90, epLink(5, 0, 0))
	k := fleetKey(1)
	cfg := n.tokenServerCfg(t, k, true)
	cfg.Tokens.Guard.Capacity = 1
	srv := n.server("10.0.0.1:9000", cfg)
	first := n.client("10.0.0.2:5000", srv, EndpointConfig{Token: n.issue(t, k, 1, token.Params{}, "10.0.0.1:9000")})
	n.runUntil(300, "the first client", isConnected(first))
	n.runUntil(60, "its token bound", func() bool { return srv.ep.Stats().TokensBound == 1 })
	second := n.client("10.0.0.2:5001", srv, EndpointConfig{Token: n.issue(t, k, 2, token.Params{}, "10.0.0.1:9000")})
	rejectedWith(t, n, second, wire.RejectTokenGuardFull)
	if st := srv.ep.Stats(); st.TokenRefusals(TokenGuardFull) != 1 || srv.ep.StateSize() != 1 || !isConnected(first)() {
		t.Fatalf("guard-full refusals %d, state %d", st.TokenRefusals(TokenGuardFull), srv.ep.StateSize())
	}
}

// rawTokenHandshake runs r's handshake presenting the sealed token ctok
// (with key material km, nil if r does not know it) and returns the
// server's final reply, without requiring it to open.
func (n *epNet) rawTokenHandshake(r *rawPeer, nonce uint64, ctok, km []byte) []byte {
	n.t.Helper()
	r.ctok, r.km = ctok, km
	r.take()
	r.send(rawRequest(nonce))
	var ch []byte
	n.runUntil(120, "challenge", func() bool { ch = lastOf(r.got, wire.KindChallenge); return ch != nil })
	c, _, err := wire.ParseChallenge(ch)
	if err != nil {
		n.t.Fatal(err)
	}
	r.take()
	r.send(r.response(nonce, c.Cookie, nil))
	r.ctok = nil
	var reply []byte
	n.runUntil(120, "accept or reject", func() bool {
		if reply = lastOf(r.got, wire.KindAccept); reply == nil {
			reply = lastOf(r.got, wire.KindReject)
		}
		return reply != nil
	})
	r.take()
	return reply
}

// TestTokenReplayOnPath: an on-path attacker copies a client's sealed
// token from its ConnectResponse and presents it from its own address. It
// gets an Accept it cannot open (it lacks the token's keys), so it can
// never send a datagram that opens and never binds the token; the real
// client's first datagram binds it to the client's address, the real
// client keeps its session, and the attacker's next attempt is refused
// as bound to another address.
func TestTokenReplayOnPath(t *testing.T) {
	n := newEpNet(t, 91, epLink(5, 0, 0))
	k := fleetKey(1)
	cfg := n.tokenServerCfg(t, k, true)
	cfg.HandshakeRate, cfg.HandshakeBurst = 1000, 1000
	srv := n.server("10.0.0.1:9000", cfg)
	m := newMITM(n, "10.0.0.9:9000", "10.0.0.9:7000", srv)
	tok := n.issue(t, k, 42, token.Params{}, "10.0.0.1:9000")
	// Hold back the client's session datagrams until the attacker has
	// tried: the server must not bind the token before the client speaks.
	hold := true
	m.tamper = func(b []byte) []byte {
		if hold && b[0]&^1 == seal.KindPhase0 {
			return nil
		}
		return b
	}
	cl := n.client("10.0.0.2:5000", m.node(), EndpointConfig{Token: tok, IdleTimeout: 60e9, ResumeAfter: NoResume})
	n.runUntil(300, "the client connects", isConnected(cl))
	var copied []byte
	for _, d := range m.up {
		if len(d) > wire.ConnectResponseLen && d[0] == byte(wire.KindConnectResponse) {
			copied = d[wire.ConnectResponseProofOff:]
		}
	}
	if !bytes.Equal(copied, tok.Sealed) {
		t.Fatal("the attacker did not see the sealed token")
	}
	if srv.ep.Stats().TokensBound != 0 {
		t.Fatal("the token was bound before the client spoke")
	}

	atk := n.raw("10.0.0.66:4000", srv)
	reply := n.rawTokenHandshake(atk, 77, copied, nil)
	if reply == nil || reply[0] != byte(wire.KindAccept) || atk.accepted(reply) {
		t.Fatalf("the attacker's copy: reply % x; it must get an Accept it cannot open", reply)
	}
	// Its guesses at the session go nowhere: nothing opens, nothing binds.
	for i := range 5 {
		atk.send(append([]byte{seal.KindPhase0, byte(i), 0}, make([]byte, 40)...))
	}
	n.run(5)
	if srv.ep.Stats().TokensBound != 0 || srv.ep.Stats().SealDrops(SealDropAuth) < 5 {
		t.Fatalf("bound %d, auth drops %d", srv.ep.Stats().TokensBound, srv.ep.Stats().SealDrops(SealDropAuth))
	}

	// The client speaks: its first datagram binds the token to its address.
	hold = false
	if _, err := cl.ep.Remote().Channel().SendReliable(1, testPayload(msgKey{from: 1, stream: 1}, 40)); err != nil {
		t.Fatal(err)
	}
	n.runUntil(120, "the client's message", func() bool { return srv.rec.reliable[msgKey{from: 1, stream: 1}] == 1 })
	if st := srv.ep.Stats(); st.TokensBound != 1 || st.TokenRefusals(TokenBindFailed) != 0 {
		t.Fatalf("bound %d, bind failures %d", st.TokensBound, st.TokenRefusals(TokenBindFailed))
	}
	// The attacker's session, which could never bind, is gone with it.
	if srv.ep.StateSize() != 1 || srv.ep.byAddr[atk.conn.LocalAddr()] != nil || srv.ep.Stats().Disconnects(wire.DisconnectTokenRefused) != 1 {
		t.Fatalf("state %d after the bind; the copy's session %v", srv.ep.StateSize(), srv.ep.byAddr[atk.conn.LocalAddr()])
	}

	// The attacker again: refused, bound to another address.
	reply = n.rawTokenHandshake(atk, 78, copied, nil)
	if r, _, err := wire.ParseReject(reply); err != nil || r.Reason != wire.RejectTokenBound {
		t.Fatalf("the replay: % x (%v)", reply, err)
	}
	if st := srv.ep.Stats(); st.TokenRefusals(TokenBoundElsewhere) != 1 {
		t.Fatalf("bound-elsewhere refusals %d", st.TokenRefusals(TokenBoundElsewhere))
	}
	// The real client's session goes on.
	if _, err := cl.ep.Remote().Channel().SendReliable(1, testPayload(msgKey{from: 1, stream: 1, seq: 1}, 40)); err != nil {
		t.Fatal(err)
	}
	n.runUntil(120, "the client's next message", func() bool { return srv.rec.reliable[msgKey{from: 1, stream: 1, seq: 1}] == 1 })
	if !isConnected(cl)() || cl.ep.Remote().State() != PeerConnected || len(cl.rec.discs) != 0 {
		t.Fatal("the client lost its session")
	}
}

// TestTokenBindFailsLate: two holders of one token's keys (a token shared
// by two machines) both complete the handshake before either speaks; the
// first to send a datagram binds it, and the other's session, which can
// never bind now, is ended at once with DisconnectTokenRefused. A token
// that expires between the handshake and the client's first datagram
// fails to bind: the session is ended the same way, counted as a bind
// failure, and the datagram goes no further.
func TestTokenBindFailsLate(t *testing.T) {
	n := newEpNet(t, 92, epLink(5, 0, 0))
	k := fleetKey(1)
	srv := n.server("10.0.0.1:9000", n.tokenServerCfg(t, k, true))
	tok := n.issue(t, k, 42, token.Params{}, "10.0.0.1:9000")
	km := tok.KeyMaterial()
	r1, r2 := n.raw("10.0.0.2:5000", srv), n.raw("10.0.0.3:5000", srv)
	for i, r := range []*rawPeer{r1, r2} {
		reply := n.rawTokenHandshake(r, uint64(10+i), tok.Sealed, km[:])
		if reply == nil || reply[0] != byte(wire.KindAccept) || !r.accepted(reply) {
			t.Fatalf("holder %d: % x", i, reply)
		}
	}
	if srv.ep.StateSize() != 2 {
		t.Fatalf("state %d", srv.ep.StateSize())
	}
	r1.send(r1.datagram(0, testPayload(msgKey{from: 1}, 10)))
	n.run(2)
	st := srv.ep.Stats()
	if st.TokensBound != 1 || srv.ep.StateSize() != 1 || len(srv.rec.discs) != 1 || srv.rec.discs[0] != wire.DisconnectTokenRefused {
		t.Fatalf("bound %d, state %d, disconnects %v", st.TokensBound, srv.ep.StateSize(), srv.rec.discs)
	}
	r2.send(r2.datagram(0, testPayload(msgKey{from: 2}, 10)))
	n.run(2)
	if srv.rec.unreliable != 1 || srv.ep.Stats().UnknownSource == 0 {
		t.Fatalf("%d messages delivered, want the first holder's only", srv.rec.unreliable)
	}

	// Expired before the first datagram.
	short := n.issue(t, k, 43, token.Params{Expires: n.tokenClock()().Add(2 * time.Second)}, "10.0.0.1:9000")
	skm := short.KeyMaterial()
	r3 := n.raw("10.0.0.4:5000", srv)
	if reply := n.rawTokenHandshake(r3, 30, short.Sealed, skm[:]); reply == nil || reply[0] != byte(wire.KindAccept) || !r3.accepted(reply) {
		t.Fatalf("short-lived token: % x", reply)
	}
	n.run(3 * 60)
	r3.send(r3.datagram(0, testPayload(msgKey{from: 3}, 10)))
	n.run(10)
	if st := srv.ep.Stats(); st.TokenRefusals(TokenBindFailed) != 1 || srv.rec.unreliable != 1 || srv.ep.StateSize() != 1 ||
		srv.rec.discs[len(srv.rec.discs)-1] != wire.DisconnectTokenRefused {
		t.Fatalf("bind failures %d, delivered %d, state %d, disconnects %v", st.TokenRefusals(TokenBindFailed), srv.rec.unreliable, srv.ep.StateSize(), srv.rec.discs)
	}
}

// TestAdmitHook: the admission hook sees the client id, user data and
// address (zero without a token), runs once per admission, and refuses
// with an application code the client sees as a *RefusedError; a refused
// client leaves no state.
func TestAdmitHook(t *testing.T) {
	n := newEpNet(t, 93, epLink(5, 0, 0))
	k := fleetKey(1)
	cfg := n.tokenServerCfg(t, k, false)
	var seen []AdmitRequest
	cfg.Admit = func(r AdmitRequest) error {
		r.UserData = append([]byte(nil), r.UserData...) // valid only during the call
		seen = append(seen, r)
		if bytes.Equal(r.UserData, []byte("banned")) {
			return Refuse(7)
		}
		if r.Addr.Port() == 5002 {
			return errors.New("no reason given")
		}
		return nil
	}
	srv := n.server("10.0.0.1:9000", cfg)
	banned := n.client("10.0.0.2:5000", srv, EndpointConfig{Token: n.issue(t, k, 9, token.Params{UserData: []byte("banned")}, "10.0.0.1:9000")})
	n.runUntil(300, "the banned client is refused", func() bool { return banned.ep.Err() != nil })
	var re *RefusedError
	if err := banned.ep.Err(); !errors.As(err, &re) || re.Code != 7 || !errors.Is(err, ErrRefused) || !errors.Is(err, ErrRejected) ||
		err.Error() != "transport: refused by the server's admission hook: code 7" {
		t.Fatalf("client error %v", err)
	}
	if st := srv.ep.Stats(); srv.ep.StateSize() != 0 || st.AdmitRefused != 1 || st.RejectsTotal() != 0 || st.Connects != 0 || srv.ep.tok.guard.Len() != 0 {
		t.Fatalf("server: state %d, refused %d, rejects %d", srv.ep.StateSize(), st.AdmitRefused, st.RejectsTotal())
	}
	if banned.ep.Stats().AdmitRefused != 1 {
		t.Fatal("the client did not count the refusal")
	}
	if len(seen) != 1 || !seen[0].Token || seen[0].ClientID != 9 || seen[0].Addr != banned.conn.LocalAddr() {
		t.Fatalf("the hook saw %+v", seen)
	}

	plain := n.client("10.0.0.2:5001", srv, EndpointConfig{})
	n.runUntil(300, "a client without a token is admitted", isConnected(plain))
	if r := seen[len(seen)-1]; r.Token || r.ClientID != 0 || len(r.UserData) != 0 || r.Addr != plain.conn.LocalAddr() {
		t.Fatalf("the hook saw %+v for a client without a token", r)
	}
	if _, ok := srv.rec.connects[0].ClientID(); ok {
		t.Fatal("a session without a token has a client id")
	}
	other := n.client("10.0.0.2:5002", srv, EndpointConfig{})
	n.runUntil(300, "refused with code 0", func() bool { return other.ep.Err() != nil })
	if !errors.As(other.ep.Err(), &re) || re.Code != 0 {
		t.Fatalf("client error %v", other.ep.Err())
	}
	if len(seen) != 3 || srv.ep.StateSize() != 1 {
		t.Fatalf("hook calls %d, state %d", len(seen), srv.ep.StateSize())
	}
}

// TestTokenRetryFreshKeys: two handshakes with the same token from the
// same address (a retry) derive different secrets, so no (key, nonce) pair
// of their first datagrams repeats: the token's keys are key material,
// never the session's keys. A resume of a token session needs no token.
func TestTokenRetryFreshKeys(t *testing.T) {
	n := newEpNet(t, 94, epLink(0, 0, 0))
	k := fleetKey(1)
	srv := n.server("10.0.0.1:9000", n.tokenServerCfg(t, k, true))
	tok := n.issue(t, k, 42, token.Params{}, "10.0.0.1:9000")
	km := tok.KeyMaterial()
	r := n.raw("10.0.0.2:5000", srv)
	type use struct{ key, iv string }
	seen := map[use]bool{}
	for i := range 3 {
		r.keyed = false
		reply := n.rawTokenHandshake(r, uint64(20+i), tok.Sealed, km[:])
		if reply == nil || reply[0] != byte(wire.KindAccept) || !r.accepted(reply) {
			t.Fatalf("handshake %d: % x", i, reply)
		}
		for _, dir := range []string{"c2s", "s2c"} {
			key, iv := trafficKey(&r.secret, dir)
			u := use{string(key), string(iv)}
			if seen[u] {
				t.Fatalf("handshake %d reuses the %s key and nonce base of an earlier one", i, dir)
			}
			seen[u] = true
		}
		r.send(r.datagram(0, []byte("hello")))
		n.run(2)
	}
	if st := srv.ep.Stats(); st.TokensBound != 3 || st.Superseded != 2 || st.TokenRefusalsTotal() != 0 {
		t.Fatalf("bound %d (the same address each time), superseded %d, refused %d", st.TokensBound, st.Superseded, st.TokenRefusalsTotal())
	}

	// A resume of the token session carries no token: the proof of the
	// session's secret is enough.
	tokBody := r.body.Token
	reply := n.handshake(r, 30, &tokBody)
	if reply == nil || reply[0] != byte(wire.KindAccept) {
		t.Fatalf("resume: % x", reply)
	}
	if q, _, err := wire.ParseConnectResponse(r.resp); err != nil || q.ConnectToken != nil || !q.Resume {
		t.Fatalf("the resume presented a token: %+v %v", q, err)
	}
	if srv.ep.Stats().Resumes != 1 {
		t.Fatal("not resumed")
	}
}

// trafficKey derives a direction's first AES-128-GCM key and IV from a
// session secret as docs/WIRE.md §13.5 does.
func trafficKey(secret *seal.Secret, dir string) ([]byte, []byte) {
	ts, _ := hkdf.Expand(sha256.New, secret[:], "tickwire seal v1 traffic "+dir, 32)
	key, _ := hkdf.Expand(sha256.New, ts, "tickwire seal v1 key aes128gcm", 16)
	iv, _ := hkdf.Expand(sha256.New, ts, "tickwire seal v1 iv", 12)
	return key, iv
}

// TestTokenConfig: Validate and Listen refuse a half-configured token
// server; Dial takes a token in place of a pinned key.
func TestTokenConfig(t *testing.T) {
	n := newEpNet(t, 95, epLink(0, 0, 0))
	if err := (EndpointConfig{Tokens: TokenConfig{Required: true}}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Required without a Verifier: %v", err)
	}
	if err := (EndpointConfig{Tokens: TokenConfig{Guard: token.GuardConfig{Capacity: -1}}}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("a negative guard capacity: %v", err)
	}
	if err := (EndpointConfig{Token: &token.Token{Sealed: make([]byte, 100)}}).Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "100 bytes") {
		t.Fatalf("a short sealed token: %v", err)
	}
	v, err := token.NewVerifier(testProtocolID, fleetKey(1))
	if err != nil {
		t.Fatal(err)
	}
	any := netip.MustParseAddrPort("0.0.0.0:9000")
	if _, err := newTokenServer(TokenConfig{Verifier: v}, any); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("an unspecified address without Tokens.Addr: %v", err)
	}
	if ts, err := newTokenServer(TokenConfig{Verifier: v, Addr: netip.MustParseAddrPort("192.0.2.1:9000")}, any); err != nil || ts.addr != netip.MustParseAddrPort("192.0.2.1:9000") {
		t.Fatalf("Tokens.Addr: %v", err)
	}
	ep, err := Listen(n.listen("10.0.0.1:9000"), EndpointConfig{Tokens: TokenConfig{Verifier: v}}, nil)
	if err != nil || ep.tok.addr != netip.MustParseAddrPort("10.0.0.1:9000") {
		t.Fatalf("Tokens.Addr from the socket: %v", err)
	}
	if _, err := Dial(n.listen("10.0.0.2:1"), netip.MustParseAddrPort("10.0.0.1:9000"), EndpointConfig{}, nil, 0); !errors.Is(err, ErrNoServerKey) {
		t.Fatalf("no key, no token: %v", err)
	}
	tok := n.issue(t, fleetKey(1), 1, token.Params{}, "10.0.0.1:9000")
	if _, err := Dial(n.listen("10.0.0.2:2"), netip.MustParseAddrPort("10.0.0.1:9000"), EndpointConfig{Token: tok}, nil, 0); err != nil {
		t.Fatalf("a token in place of a key: %v", err)
	}
}

// TestTokenTimeoutIsIdleTimeout: the Timeout a backend writes into a
// connect token is the idle time-out of the session it admits — a client
// silent that long is reaped by the server, whatever the server's own
// IdleTimeout — clamped to [4×KeepAliveInterval, 1 h]; a token without
// one leaves the server's IdleTimeout. On the rig's clock, to the tick.
func TestTokenTimeoutIsIdleTimeout(t *testing.T) {
	n := newEpNet(t, 95, epLink(5, 0, 0))
	k := fleetKey(3)
	cfg := n.tokenServerCfg(t, k, true)
	cfg.IdleTimeout, cfg.ResumeGrace = 5*time.Second, NoResume
	srv := n.server("10.0.0.1:9000", cfg)
	cases := []struct {
		timeout, want time.Duration
	}{
		{2 * time.Second, 2 * time.Second},
		{100 * time.Millisecond, 4 * KeepAliveInterval},
		{0, 5 * time.Second},
	}
	var cls []*node
	for i, c := range cases {
		tok := n.issue(t, k, uint64(10+i), token.Params{Timeout: c.timeout}, "10.0.0.1:9000")
		cls = append(cls, n.client(fmt.Sprintf("10.0.0.2:%d", 5000+i), srv,
			EndpointConfig{Token: tok, IdleTimeout: time.Minute, ResumeAfter: NoResume}))
	}
	n.runUntil(300, "all connect", func() bool {
		for _, cl := range cls {
			if !isConnected(cl)() {
				return false
			}
		}
		return true
	})
	n.run(30)
	for _, cl := range cls {
		cl.silent, cl.deaf = true, true
	}
	n.runUntil(60*7, "the server reaps all three", func() bool { return len(srv.rec.discs) == len(cases) })
	for i, c := range cases {
		var sp *Peer
		var at time.Duration
		for d, p := range srv.rec.discPeer {
			if id, _ := p.ClientID(); id == uint64(10+i) {
				sp, at = p, srv.rec.discAt[d]
			}
		}
		if sp == nil || srv.rec.discs[0] != wire.DisconnectTimeout {
			t.Fatalf("token Timeout %v: the server did not reap its session", c.timeout)
		}
		if idle := at - sp.LastReceived(); idle < c.want || idle > c.want+epTick {
			t.Errorf("token Timeout %v: reaped after %v of silence, want %v", c.timeout, idle, c.want)
		}
	}
}

// TestTokenTimeoutOnlyOnceBound: a session that never binds its token —
// here four on-path copies of it, from four addresses, that get Accepts
// they cannot open — keeps the server's IdleTimeout, not the token's
// hour: copies cannot hold slots for the token's Timeout.
func TestTokenTimeoutOnlyOnceBound(t *testing.T) {
	n := newEpNet(t, 96, epLink(5, 0, 0))
	k := fleetKey(1)
	cfg := n.tokenServerCfg(t, k, true)
	cfg.IdleTimeout, cfg.ResumeGrace = 5*time.Second, NoResume
	cfg.HandshakeRate, cfg.HandshakeBurst = 1000, 1000
	srv := n.server("10.0.0.1:9000", cfg)
	tok := n.issue(t, k, 42, token.Params{Timeout: time.Hour}, "10.0.0.1:9000")
	for i := range 4 {
		atk := n.raw(fmt.Sprintf("10.0.0.%d:4000", 60+i), srv)
		if reply := n.rawTokenHandshake(atk, uint64(77+i), tok.Sealed, nil); reply == nil || reply[0] != byte(wire.KindAccept) {
			t.Fatalf("copy %d: reply % x", i, reply)
		}
	}
	if srv.ep.StateSize() != 4 {
		t.Fatalf("state %d after 4 copies", srv.ep.StateSize())
	}
	n.run(int((cfg.IdleTimeout + time.Second) / epTick))
	if got := srv.ep.StateSize(); got != 0 {
		t.Fatalf("%d never-bound sessions held after %v of silence (IdleTimeout %v, token Timeout 1h)",
			got, cfg.IdleTimeout+time.Second, cfg.IdleTimeout)
	}
}

// TestTokenTimeoutResumeHorizon: a server holds a token session for the
// token's Timeout plus ResumeGrace, and the client holding that token
// tries to resume as long: a 45 s outage, longer than both ends'
// IdleTimeout plus ResumeGrace (40 s) but within the token's 60 s plus
// 30 s, ends in a resume, not two ends that disagree.
func TestTokenTimeoutResumeHorizon(t *testing.T) {
	n := newEpNet(t, 97, epLink(5, 0, 0))
	k := fleetKey(1)
	cfg := n.tokenServerCfg(t, k, true)
	cfg.IdleTimeout, cfg.ResumeGrace = 10*time.Second, 30*time.Second
	srv := n.server("10.0.0.1:9000", cfg)
	tok := n.issue(t, k, 42, token.Params{Timeout: time.Minute, Expires: n.tokenClock()().Add(time.Hour)}, "10.0.0.1:9000")
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{Token: tok, IdleTimeout: 10 * time.Second, ResumeGrace: 30 * time.Second})
	n.runUntil(300, "the client connects", isConnected(cl))
	n.run(30)
	a, b := cl.conn.LocalAddr(), srv.conn.LocalAddr()
	if err := n.net.SetPair(a, b, epLink(5, 0, 1)); err != nil {
		t.Fatal(err)
	}
	n.run(int(45 * time.Second / epTick))
	if err := n.net.SetPair(a, b, epLink(5, 0, 0)); err != nil {
		t.Fatal(err)
	}
	n.runUntil(int(10*time.Second/epTick), "the session resumes", func() bool {
		return cl.ep.Remote().State() == PeerConnected && len(cl.rec.resumes) > 0
	})
	if len(cl.rec.discs) != 0 || len(srv.rec.discs) != 0 || srv.ep.StateSize() != 1 {
		t.Fatalf("client discs %v, server discs %v, server state %d", cl.rec.discs, srv.rec.discs, srv.ep.StateSize())
	}
}
