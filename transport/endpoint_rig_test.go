package transport

import (
	"bytes"
	"crypto/ecdh"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// This file is the test rig for endpoints: a server and clients (and raw
// sockets that speak the handshake by hand) on one simulated network,
// stepped in lock-step ticks of 1/60 s on one goroutine, every random
// choice seeded, so every test is deterministic.

const epTick = time.Second / 60

// link returns sim(delay ms, jitter ms, loss) with room for the largest MTU.
func epLink(delayMs, jitterMs int, loss float64) simlink.LinkConfig {
	return simlink.LinkConfig{
		Delay:  time.Duration(delayMs) * time.Millisecond,
		Jitter: time.Duration(jitterMs) * time.Millisecond,
		Loss:   loss,
		MTU:    MaxMTU,
	}
}

// seededRand returns a deterministic random source for EndpointConfig.Rand.
func seededRand(seed uint64, who string) *rand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	copy(s[8:], who)
	return rand.NewChaCha8(s)
}

// msgKey identifies one test message: who sent it, on which stream, and its
// sequence number in that stream.
type msgKey struct {
	from   uint8 // sender's tag
	stream uint8
	seq    uint32
}

// testPayload encodes a test message: tag, stream, seq, then filler up to
// size bytes.
func testPayload(k msgKey, size int) []byte {
	p := make([]byte, max(size, 6))
	p[0], p[1] = k.from, k.stream
	binary.LittleEndian.PutUint32(p[2:], k.seq)
	for i := 6; i < len(p); i++ {
		p[i] = byte(i) ^ byte(k.seq)
	}
	return p
}

func parsePayload(p []byte) (msgKey, bool) {
	if len(p) < 6 {
		return msgKey{}, false
	}
	k := msgKey{from: p[0], stream: p[1], seq: binary.LittleEndian.Uint32(p[2:])}
	for i := 6; i < len(p); i++ {
		if p[i] != byte(i)^byte(k.seq) {
			return msgKey{}, false
		}
	}
	return k, true
}

// recorder is an EndpointHandler that remembers everything.
type recorder struct {
	t        testing.TB
	name     string
	connects []*Peer
	resumes  []*Peer
	suspends []wire.DisconnectReason
	suspAt   []time.Duration
	discs    []wire.DisconnectReason
	discAt   []time.Duration
	discPeer []*Peer
	clock    *time.Duration

	reliable   map[msgKey]int
	nextOrder  map[[2]uint8]uint32 // (from, stream) → next expected seq on an ordered stream
	unreliable int
	corrupt    int
	records    map[uint64]bool
}

func newRecorder(t testing.TB, name string, clock *time.Duration) *recorder {
	return &recorder{t: t, name: name, clock: clock, reliable: map[msgKey]int{},
		nextOrder: map[[2]uint8]uint32{}, records: map[uint64]bool{}}
}

func (r *recorder) OnConnect(p *Peer) { r.connects = append(r.connects, p) }
func (r *recorder) OnSuspend(p *Peer, why wire.DisconnectReason) {
	r.suspends = append(r.suspends, why)
	r.suspAt = append(r.suspAt, *r.clock)
}
func (r *recorder) OnResume(p *Peer) { r.resumes = append(r.resumes, p) }
func (r *recorder) OnDisconnect(p *Peer, why wire.DisconnectReason) {
	r.discs = append(r.discs, why)
	r.discAt = append(r.discAt, *r.clock)
	r.discPeer = append(r.discPeer, p)
}
func (r *recorder) OnRecord(p *Peer, tag uint64, ok bool) { r.records[tag] = ok }

func (r *recorder) OnMessage(p *Peer, m Message) {
	k, ok := parsePayload(m.Payload)
	if !ok {
		r.corrupt++
		return
	}
	switch m.Delivery {
	case Reliable:
		if k.stream != m.Stream {
			r.t.Errorf("%s: message for stream %d arrived on stream %d", r.name, k.stream, m.Stream)
		}
		r.reliable[k]++
		if m.Stream != 0 {
			key := [2]uint8{k.from, k.stream}
			if want := r.nextOrder[key]; k.seq != want {
				r.t.Errorf("%s: ordered stream %d from %d: got %d, want %d", r.name, k.stream, k.from, k.seq, want)
			}
			r.nextOrder[key] = k.seq + 1
		}
	default:
		r.unreliable++
	}
}

// node is one endpoint in the rig.
type node struct {
	name   string
	ep     *Endpoint
	conn   *simlink.Conn
	rec    *recorder
	silent bool  // skip Flush: sends nothing
	deaf   bool  // skip Poll: hears nothing
	err    error // last error from Poll or Flush
}

// epNet is a simulated network of endpoints.
type epNet struct {
	t     testing.TB
	seed  uint64
	net   *simlink.Network
	now   time.Duration
	nodes []*node
	raws  []*rawPeer
	pumps []func() // run at the start of every step (an on-path interposer)
}

func newEpNet(t testing.TB, seed uint64, l simlink.LinkConfig) *epNet {
	t.Helper()
	n := simlink.New(seed)
	if err := n.SetDefaultLink(l); err != nil {
		t.Fatal(err)
	}
	n.AdvanceTo(rigOrigin)
	return &epNet{t: t, seed: seed, net: n, now: rigOrigin}
}

// rigOrigin is where the rig's clock starts: not 0, so that a timer that
// silently assumes the clock starts with the session (a zero-valued
// "last time" measured against now) shows up as a failure. The stall clock
// once did.
const rigOrigin = time.Hour

func (n *epNet) listen(addr string) *simlink.Conn {
	n.t.Helper()
	c, err := n.net.Listen(netip.MustParseAddrPort(addr))
	if err != nil {
		n.t.Fatal(err)
	}
	return c
}

// server starts a server endpoint at addr.
func (n *epNet) server(addr string, cfg EndpointConfig) *node {
	n.t.Helper()
	conn := n.listen(addr)
	if cfg.Rand == nil {
		cfg.Rand = seededRand(n.seed, addr)
	}
	nd := &node{name: "server " + addr, conn: conn, rec: newRecorder(n.t, "server "+addr, &n.now)}
	ep, err := Listen(conn, cfg, nd.rec)
	if err != nil {
		n.t.Fatal(err)
	}
	nd.ep = ep
	n.nodes = append(n.nodes, nd)
	return nd
}

// client starts a client endpoint at addr dialling srv.
func (n *epNet) client(addr string, srv *node, cfg EndpointConfig) *node {
	n.t.Helper()
	conn := n.listen(addr)
	if cfg.Rand == nil {
		cfg.Rand = seededRand(n.seed, addr)
	}
	if cfg.ServerKey == nil && !cfg.InsecureCleartext && cfg.Token == nil && srv.ep != nil {
		cfg.ServerKey = srv.ep.PublicKey() // pinned, as a real client would (a token client may not)
	}
	nd := &node{name: "client " + addr, conn: conn, rec: newRecorder(n.t, "client "+addr, &n.now)}
	ep, err := Dial(conn, srv.conn.LocalAddr(), cfg, nd.rec, n.now)
	if err != nil {
		n.t.Fatal(err)
	}
	nd.ep = ep
	n.nodes = append(n.nodes, nd)
	return nd
}

// step runs one tick: every node polls, then every node flushes, then the
// clock advances.
func (n *epNet) step() {
	for _, f := range n.pumps {
		f()
	}
	for _, nd := range n.nodes {
		if !nd.deaf {
			if err := nd.ep.Poll(n.now); err != nil {
				nd.err = err
			}
		}
	}
	for _, r := range n.raws {
		r.read()
	}
	for _, nd := range n.nodes {
		if !nd.silent {
			if err := nd.ep.Flush(n.now); err != nil {
				nd.err = err
			}
		}
	}
	n.now += epTick
	n.net.AdvanceTo(n.now)
}

func (n *epNet) run(ticks int) {
	for range ticks {
		n.step()
	}
}

// runUntil steps until cond holds, failing after max ticks. It returns the
// ticks it took.
func (n *epNet) runUntil(max int, what string, cond func() bool) int {
	n.t.Helper()
	for i := 0; i < max; i++ {
		if cond() {
			return i
		}
		n.step()
	}
	if cond() {
		return max
	}
	n.t.Fatalf("%s: not reached after %d ticks (%v)", what, max, n.now)
	return 0
}

func isConnected(nd *node) func() bool {
	return func() bool { p := nd.ep.Remote(); return p != nil && p.State() == PeerConnected }
}

// rawPeer is a socket that speaks the handshake by hand: the attacker, or a
// client under a test's full control.
//
// It runs the real key exchange (handshake): after an Accept, secret,
// sess and body hold the session's keys and the opened Accept body, so a
// test can speak in the session (datagram) or resume it with a proof.
type rawPeer struct {
	t      testing.TB
	conn   *simlink.Conn
	server netip.AddrPort
	in     []socket.Message
	got    [][]byte

	serverKey *ecdh.PublicKey // nil: the server runs InsecureCleartext
	eph       *ecdh.PrivateKey
	resp      []byte // the last ConnectResponse sent by handshake
	keyed     bool   // secret, sess and body are set
	// ctok, if set, is a connect token's sealed bytes the raw peer
	// presents in its next new-session ConnectResponse, and km the key
	// material it mixes in (nil: it does not know the keys, as an
	// attacker who copied a token); unpinned leaves es out.
	ctok     []byte
	km       []byte
	unpinned bool
	secret   seal.Secret
	sess     *seal.Session
	body     wire.AcceptBody
}

func (n *epNet) raw(addr string, srv *node) *rawPeer {
	r := &rawPeer{t: n.t, conn: n.listen(addr), server: srv.conn.LocalAddr()}
	if srv.ep != nil && !srv.ep.cfg.InsecureCleartext {
		r.serverKey = srv.ep.PublicKey()
	}
	r.in = make([]socket.Message, socket.IdealBatchSize)
	for i := range r.in {
		r.in[i].Buf = make([]byte, MaxMTU+1)
	}
	n.raws = append(n.raws, r)
	return r
}

func (r *rawPeer) send(b []byte) {
	r.t.Helper()
	if _, err := r.conn.WriteBatch([]socket.Message{{Buf: b, N: len(b), Addr: r.server}}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawPeer) read() {
	for {
		n, err := r.conn.TryReadBatch(r.in)
		if err != nil {
			return // closed by the test
		}
		for _, m := range r.in[:n] {
			r.got = append(r.got, append([]byte(nil), m.Buf[:m.N]...))
		}
		if n < len(r.in) {
			return
		}
	}
}

// take returns and forgets what the raw peer received.
func (r *rawPeer) take() [][]byte {
	g := r.got
	r.got = nil
	return g
}

// lastOf returns the last received datagram of kind k, or nil.
func lastOf(ds [][]byte, k wire.PacketKind) []byte {
	for i := len(ds) - 1; i >= 0; i-- {
		if len(ds[i]) > 0 && wire.PacketKind(ds[i][0]) == k {
			return ds[i]
		}
	}
	return nil
}

func rawRequest(nonce uint64) []byte {
	return wire.AppendConnectRequest(nil, wire.ConnectRequest{Version: wire.ProtocolVersion, Nonce: nonce})
}

// rawEph is the ephemeral key of the raw ConnectResponses below: a valid
// X25519 key whose private half no test uses.
var rawEph = func() wire.PublicKey {
	k, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		panic(err)
	}
	return wire.PublicKey(k.PublicKey().Bytes())
}()

func rawResponse(nonce uint64, c wire.Cookie) []byte {
	return wire.AppendConnectResponse(nil, wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: nonce, Cookie: c, Ephemeral: rawEph})
}

func rawResumeResponse(nonce uint64, c wire.Cookie, tok wire.Token) []byte {
	return wire.AppendConnectResponse(nil, wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: nonce, Cookie: c, Resume: true, Token: tok, Ephemeral: rawEph})
}

// response builds r's ConnectResponse with a fresh ephemeral key and, for
// a resume (tok not nil) by a peer holding keys, the proof of its secret.
func (r *rawPeer) response(nonce uint64, c wire.Cookie, tok *wire.Token) []byte {
	k, err := ecdh.X25519().GenerateKey(crand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	r.eph = k
	q := wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: nonce, Cookie: c, Cleartext: r.serverKey == nil,
		Ephemeral: wire.PublicKey(k.PublicKey().Bytes())}
	if tok != nil {
		q.Resume, q.Token = true, *tok
	} else if r.ctok != nil {
		q.ConnectToken, q.Unpinned = r.ctok, r.unpinned
	}
	b := wire.AppendConnectResponse(nil, q)
	if tok != nil && r.keyed {
		proof := resumeProof(&r.secret, b)
		copy(b[wire.ConnectResponseProofOff:], proof[:])
	}
	r.resp = b
	return b
}

// accepted runs the client's half of the key exchange on an Accept for
// r.resp and keeps the keys; false if the Accept does not authenticate.
func (r *rawPeer) accepted(accept []byte) bool {
	a, _, err := wire.ParseAccept(accept)
	if err != nil {
		return false
	}
	q, _, _ := wire.ParseConnectResponse(r.resp)
	var es []byte
	if r.serverKey != nil && !q.Unpinned {
		if es, err = staticDH(r.eph, r.serverKey.Bytes()); err != nil {
			return false
		}
	}
	var old *seal.Secret
	var km []byte
	if r.keyed && q.Resume {
		old = &r.secret
	} else if q.ConnectToken != nil {
		km = r.km
	}
	ikm, err := handshakeIKM(r.eph, a.Ephemeral[:], es, old, km)
	if err != nil {
		return false
	}
	th := transcript(r.resp, accept[:wire.AcceptHeaderLen])
	secret, err := seal.DeriveSecret(ikm, a.ServerRandom[:], th[:])
	if err != nil {
		return false
	}
	var plain [wire.AcceptBodyLen]byte
	if !openAcceptBody(&secret, accept[:wire.AcceptHeaderLen], &a.Body, &plain) {
		return false
	}
	if r.body, _, err = wire.ParseAcceptBody(plain[:]); err != nil {
		return false
	}
	r.secret, r.keyed = secret, true
	r.sess = nil
	if r.serverKey != nil {
		if r.sess, err = seal.New(seal.Config{}, seal.Client, &secret); err != nil {
			r.t.Fatal(err)
		}
	}
	return true
}

// wireSecret is the cleartext session secret of r's session.
func (r *rawPeer) wireSecret() [8]byte { return [8]byte(r.secret[:8]) }

// datagram returns a session datagram of r's session carrying a channel
// header with seq and one unreliable frame with payload: sealed, or with
// the cleartext header if the server runs InsecureCleartext.
func (r *rawPeer) datagram(seq wire.Seq, payload []byte) []byte {
	r.t.Helper()
	if r.sess == nil {
		return sessionDatagram(r.wireSecret(), seq, payload)
	}
	b := make([]byte, seal.HeaderLen, MaxMTU)
	b = wire.AppendChannelHeader(b, wire.ChannelHeader{Seq: seq, NoAck: true})
	b = wire.AppendUnreliableFrame(b, wire.UnreliableFrame{Payload: payload})
	b, err := r.sess.Seal(b)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// handshake runs a raw handshake with nonce (and a resume token if tok is
// not nil) and returns the server's final reply (Accept or Reject).
func (n *epNet) handshake(r *rawPeer, nonce uint64, tok *wire.Token) []byte {
	n.t.Helper()
	r.take()
	q := wire.ConnectRequest{Version: wire.ProtocolVersion, Nonce: nonce, Cleartext: r.serverKey == nil}
	if tok != nil {
		q.Resume, q.Token = true, *tok
	}
	r.send(wire.AppendConnectRequest(nil, q))
	var ch []byte
	n.runUntil(120, "challenge", func() bool {
		ch = lastOf(r.got, wire.KindChallenge)
		return ch != nil || lastOf(r.got, wire.KindReject) != nil
	})
	if ch == nil {
		return lastOf(r.take(), wire.KindReject)
	}
	c, _, err := wire.ParseChallenge(ch)
	if err != nil {
		n.t.Fatal(err)
	}
	r.take()
	r.send(r.response(nonce, c.Cookie, tok))
	var reply []byte
	n.runUntil(120, "accept or reject", func() bool {
		reply = lastOf(r.got, wire.KindAccept)
		if reply == nil {
			reply = lastOf(r.got, wire.KindReject)
		}
		return reply != nil
	})
	r.take()
	if reply != nil && reply[0] == byte(wire.KindAccept) && !r.accepted(reply) {
		n.t.Fatal("raw handshake: the Accept does not authenticate")
	}
	return reply
}

// sendSome queues one message per stream in streams from nd to p, tagged
// with tag, numbering each stream from next[stream].
func sendSome(t testing.TB, p *Peer, tag uint8, next map[uint8]uint32, streams []uint8, size int) {
	t.Helper()
	for _, s := range streams {
		k := msgKey{from: tag, stream: s, seq: next[s]}
		if _, err := p.Channel().SendReliable(s, testPayload(k, size)); err != nil {
			if errors.Is(err, ErrQueueFull) {
				continue // back-pressure: try again next tick
			}
			t.Fatal(err)
		}
		next[s]++
	}
}

// checkExactlyOnce checks that rec received every message 0..next[s]−1 of
// every stream from tag exactly once.
func checkExactlyOnce(t testing.TB, rec *recorder, tag uint8, next map[uint8]uint32) {
	t.Helper()
	for s, n := range next {
		for i := uint32(0); i < n; i++ {
			if c := rec.reliable[msgKey{from: tag, stream: s, seq: i}]; c != 1 {
				t.Fatalf("%s: message %d of stream %d from %d delivered %d times", rec.name, i, s, tag, c)
			}
		}
	}
	for k, c := range rec.reliable {
		if k.from == tag && k.seq >= next[k.stream] {
			t.Fatalf("%s: message %+v was never sent but delivered %d times", rec.name, k, c)
		}
	}
}

func (nd *node) String() string { return fmt.Sprintf("%s (%v)", nd.name, nd.ep.LocalAddr()) }
