package transport

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/token"
	"github.com/tickwire/tickwire/wire"
)

var fuzzStranger = netip.MustParseAddrPort("10.9.9.9:999")

// fuzzServer returns an encrypted server with one session, made by a raw
// handshake (the real key exchange) on a zero-delay simulated link, with
// limits high enough that rate limiting hides nothing, and the raw peer
// holding that session's keys.
func fuzzServer(t testing.TB) (*epNet, *node, *rawPeer) {
	n := newEpNet(t, 40, epLink(0, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{HandshakeRate: 1e6, HandshakeBurst: 1e6,
		GlobalHandshakeRate: 1e9, GlobalHandshakeBurst: 1e9})
	r := n.raw("10.0.0.2:5000", srv)
	if _, _, err := wire.ParseAccept(n.handshake(r, 1, nil)); err != nil {
		t.Fatal(err)
	}
	return n, srv, r
}

// fuzzResponse is a ConnectResponse the Accept seeds answer.
var fuzzResponse = wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: 1, Ephemeral: rawEph}

// fuzzSeeds are valid encodings of every packet kind, and a few broken
// ones, for both fuzz targets.
func fuzzSeeds() [][]byte {
	var cookie wire.Cookie
	cookie.Bucket = 3
	for i := range cookie.Tag {
		cookie.Tag[i] = byte(0xa0 + i)
	}
	tok := wire.Token{0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf}
	var secret [8]byte
	seeds := [][]byte{
		nil,
		{0},
		{0xff, 1, 2},
		rawRequest(0x0807060504030201),
		wire.AppendConnectRequest(nil, wire.ConnectRequest{Version: wire.ProtocolVersion, Nonce: 9, Resume: true, Token: tok}),
		wire.AppendConnectRequest(nil, wire.ConnectRequest{Version: 7, Nonce: 9})[:15],
		wire.AppendChallenge(nil, wire.Challenge{Nonce: 1, Cookie: cookie}),
		rawResponse(1, cookie),
		rawResumeResponse(1, cookie, tok),
		fuzzAccept(wire.AcceptBody{PeerID: 3, Token: tok}, Config{MaxMessageSize: 1 << 18}),
		fuzzAccept(wire.AcceptBody{PeerID: 254}, Config{MaxMessageSize: 1}),
		fuzzAccept(wire.AcceptBody{PeerID: 5, Token: tok}, Config{MTU: MaxMTU, ReliableWindow: 1024, OrderedStreams: 8}),
		wire.AppendReject(nil, wire.Reject{Nonce: 1, Reason: wire.RejectServerFull}),
		sessionDatagram(secret, 100, []byte("hello")),
		wire.AppendKeepAliveFrame(wire.AppendChannelHeader(wire.AppendSessionHeader(nil, wire.SessionHeader{}), wire.ChannelHeader{Seq: 7, Ack: 3, AckBits: 5}), wire.KeepAliveFrame{}),
		wire.AppendDisconnectFrame(wire.AppendChannelHeader(wire.AppendSessionHeader(nil, wire.SessionHeader{}), wire.ChannelHeader{Seq: 8, NoAck: true}), wire.DisconnectFrame{Reason: wire.DisconnectClosed}),
	}
	// Sealed datagrams (of a session no fuzz server has: they fail the
	// tag) and broken ones: a reserved kind bit, too short.
	var sec seal.Secret
	for _, suite := range []seal.Suite{seal.AES128GCM, seal.ChaCha20Poly1305} {
		sess, err := seal.New(seal.Config{Suite: suite}, seal.Client, &sec)
		if err != nil {
			panic(err)
		}
		b := wire.AppendChannelHeader(make([]byte, seal.HeaderLen, 64), wire.ChannelHeader{Seq: 7, Ack: 3, AckBits: 5})
		b = wire.AppendUnreliableFrame(b, wire.UnreliableFrame{Payload: []byte("hi")})
		if b, err = sess.Seal(b); err != nil {
			panic(err)
		}
		seeds = append(seeds, b, append([]byte{0x83}, b[1:]...), b[:seal.Overhead-1])
	}
	// ConnectResponses carrying a connect token (docs/WIRE.md §9.4):
	// pinned, unpinned, and truncated.
	ft := fuzzToken()
	for _, unpinned := range []bool{false, true} {
		seeds = append(seeds, wire.AppendConnectResponse(nil, wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: 1,
			Cookie: cookie, Ephemeral: rawEph, ConnectToken: ft.Sealed, Unpinned: unpinned}))
	}
	seeds = append(seeds, wire.AppendConnectResponse(nil, wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: 1,
		Cookie: cookie, Ephemeral: rawEph, ConnectToken: ft.Sealed[:100]}))
	return append(seeds,
		wire.AppendReject(nil, wire.Reject{Nonce: 1, Reason: wire.RejectTokenBound}),
		wire.AppendReject(nil, wire.Reject{Nonce: 1, Reason: wire.RejectApp(7)}))
}

// fuzzToken is the connect token of the fuzz seeds: fixed key, times and
// randomness, so its bytes are the same every run.
func fuzzToken() token.Token {
	tok, err := token.Issue(fleetKey(1), token.Params{ProtocolID: testProtocolID, ClientID: 5, Created: tokenEpoch,
		Expires: tokenEpoch.Add(time.Minute), Servers: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:9000")}}, seededRand(1, "fuzz token"))
	if err != nil {
		panic(err)
	}
	return tok
}

// fuzzAccept encodes an Accept answering fuzzResponse whose body is a
// with the limits of a server configured with c, sealed under the keys
// of that exchange (no static key).
func fuzzAccept(a wire.AcceptBody, c Config) []byte {
	limitsOf(c).announce(&a)
	raw := wire.AppendConnectResponse(nil, fuzzResponse)
	acc, _, err := makeAccept(nil, &fuzzResponse, raw, a, nil, nil)
	if err != nil {
		panic(err)
	}
	return acc[:]
}

// sealAs seals data (as a session datagram's plaintext: channel header
// and frames) under r's session keys.
func sealAs(t testing.TB, r *rawPeer, data []byte) []byte {
	b := make([]byte, seal.HeaderLen, seal.HeaderLen+len(data)+seal.TagLen)
	b, err := r.sess.Seal(append(b, data...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzEndpointDatagram feeds arbitrary datagrams to the packet dispatcher
// of an encrypted server with one session, from a stranger or from the
// peer's address, optionally sealed under that session's keys (stamp: the
// channel then decodes the arbitrary plaintext; S-E8). The endpoint must
// not panic, must count the datagram, must never answer a stranger with
// more bytes than it sent, must create no session for it, must let no
// unsealed byte reach the channel, and must go on working.
func FuzzEndpointDatagram(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, false, false)
		f.Add(s, true, false)
		f.Add(s, true, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fromPeer, stamp bool) {
		n, srv, r := fuzzServer(t)
		b := append([]byte(nil), data...)
		if stamp && len(b) <= MaxMTU-seal.Overhead {
			b = sealAs(t, r, b)
		}
		from := fuzzStranger
		if fromPeer {
			from = r.conn.LocalAddr()
		}
		before := srv.ep.Stats()
		p := srv.ep.byAddr[r.conn.LocalAddr()]
		chBefore := p.ch.Stats()
		srv.ep.handle(n.now, from, b)
		srv.ep.writeOut()
		after := srv.ep.Stats()
		if after.DatagramsIn != before.DatagramsIn+1 {
			t.Fatal("datagram not counted")
		}
		if !fromPeer && after.BytesOut-before.BytesOut > uint64(len(b)) {
			t.Fatalf("%d bytes sent to a stranger for %d received", after.BytesOut-before.BytesOut, len(b))
		}
		if srv.ep.StateSize() > 1 || (!fromPeer && srv.ep.byAddr[fuzzStranger] != nil) {
			t.Fatal("a datagram created a session")
		}
		if after.Opened == before.Opened && p.ch.Stats() != chBefore {
			t.Fatal("a datagram that did not authenticate touched the channel")
		}
		for range 3 {
			if err := srv.ep.Flush(n.now); err != nil {
				t.Fatal(err)
			}
			n.step()
		}
	})
}

// FuzzHandshake runs the handshake decoders on arbitrary input (a decoded
// message must re-encode to the bytes it came from) and hands the input to
// a server as a ConnectRequest or ConnectResponse from a stranger, and to a
// client mid-handshake as a Challenge, Accept or Reject from its server,
// with the client's real nonce patched in when asked. The server must keep
// no state and never reply with more bytes than it got; the client must
// never hold a session with a peer id above 253, limits outside the
// channel's ranges, or limits other than the Accept announced.
func FuzzHandshake(f *testing.F) {
	for _, s := range fuzzSeeds() {
		for k := range uint8(5) {
			f.Add(k, s, k%2 == 0)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte, patchNonce bool) {
		// Decoders: round trip what decodes.
		if r, n, err := wire.ParseConnectRequest(data); err == nil && !bytes.Equal(wire.AppendConnectRequest(nil, r), data[:n]) {
			t.Fatal("ConnectRequest round trip")
		}
		if c, n, err := wire.ParseChallenge(data); err == nil && !bytes.Equal(wire.AppendChallenge(nil, c), data[:n]) {
			t.Fatal("Challenge round trip")
		}
		if r, n, err := wire.ParseConnectResponse(data); err == nil && !bytes.Equal(wire.AppendConnectResponse(nil, r), data[:n]) {
			t.Fatal("ConnectResponse round trip")
		}
		if a, n, err := wire.ParseAccept(data); err == nil && !bytes.Equal(wire.AppendAccept(nil, a), data[:n]) {
			t.Fatal("Accept round trip")
		}
		if a, n, err := wire.ParseAcceptBody(data); err == nil && (a.PeerID > wire.MaxPeerID || !bytes.Equal(wire.AppendAcceptBody(nil, a), data[:n])) {
			t.Fatal("AcceptBody round trip")
		}
		if r, n, err := wire.ParseReject(data); err == nil && !bytes.Equal(wire.AppendReject(nil, r), data[:n]) {
			t.Fatal("Reject round trip")
		}

		n := newEpNet(t, 41, epLink(0, 0, 0))
		srv := n.server("10.0.0.1:9000", n.tokenServerCfg(t, fleetKey(1), false))
		b := append([]byte(nil), data...)

		// Server.
		if len(b) > 0 {
			b[0] = byte([]wire.PacketKind{wire.KindConnectRequest, wire.KindConnectResponse}[kind%2])
		}
		srv.ep.handle(n.now, fuzzStranger, b)
		srv.ep.writeOut()
		if s := srv.ep.Stats(); s.BytesOut > uint64(len(b)) || srv.ep.StateSize() != 0 {
			t.Fatalf("server: %d bytes out for %d in, state %d", s.BytesOut, len(b), srv.ep.StateSize())
		}

		// Client, mid-handshake.
		cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
		d := &cl.ep.dial
		k := []wire.PacketKind{wire.KindChallenge, wire.KindAccept, wire.KindReject}[kind%3]
		if k == wire.KindAccept {
			d.phase = dialResponse
		}
		b = append(b[:0], data...)
		if len(b) > 0 {
			b[0] = byte(k)
		}
		if patchNonce && len(b) >= 9 {
			binary.LittleEndian.PutUint64(b[1:], d.nonce)
		}
		before := cl.ep.Stats()
		cl.ep.handle(n.now, srv.conn.LocalAddr(), b)
		// No input makes a session: an Accept must open under the keys of
		// this client's exchange with the pinned server, which only the
		// server can seal. One that parses with the right nonce is counted
		// as forged.
		if cl.ep.Remote() != nil {
			t.Fatal("fuzz input made a client session")
		}
		if _, _, err := wire.ParseAccept(b); err == nil && patchNonce && k == wire.KindAccept && cl.ep.Stats().AcceptForged != before.AcceptForged+1 {
			t.Fatal("forged Accept not counted")
		}
		if err := cl.ep.Flush(n.now); err != nil && cl.ep.Err() == nil {
			t.Fatal(err)
		}
	})
}

var genCorpus = flag.Bool("transport.gencorpus", false,
	"add the sealed-datagram and v3 handshake seeds of fuzzSeeds to testdata/fuzz (FuzzEndpointDatagram, FuzzHandshake)")

// TestFuzzCorpusSeeds checks that the fuzz targets' checked-in corpora
// hold the seeds of the sealed format and the protocol-3 handshake
// (kinds 0x80/0x81, a 120-byte ConnectResponse, one carrying a connect
// token, a 109-byte Accept; the old seeds stay as foreign-version and
// malformed inputs). Run
//
//	go test ./transport -run TestFuzzCorpusSeeds -transport.gencorpus
//
// to write them after changing a format.
func TestFuzzCorpusSeeds(t *testing.T) {
	quote := func(b []byte) string {
		var sb strings.Builder
		for _, c := range b {
			fmt.Fprintf(&sb, "\\x%02x", c)
		}
		return sb.String()
	}
	for i, s := range fuzzSeeds() {
		token := len(s) > wire.ConnectResponseLen && s[0] == byte(wire.KindConnectResponse)
		if len(s) == 0 || (s[0]&^1 != seal.KindPhase0 && len(s) != wire.ConnectResponseLen && len(s) != wire.AcceptLen && !token) {
			continue
		}
		files := map[string]string{
			filepath.Join("testdata", "fuzz", "FuzzEndpointDatagram", fmt.Sprintf("v3-seed-%02d-peer", i)): fmt.Sprintf("go test fuzz v1\n[]byte(\"%s\")\nbool(true)\nbool(false)\n", quote(s)),
			filepath.Join("testdata", "fuzz", "FuzzHandshake", fmt.Sprintf("v3-seed-%02d", i)):             fmt.Sprintf("go test fuzz v1\nbyte('\\x01')\n[]byte(\"%s\")\nbool(true)\n", quote(s)),
		}
		for path, body := range files {
			if *genCorpus {
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			// An Accept seed's keys are fresh per run (makeAccept draws
			// from crypto/rand): only its presence is checked.
			if err != nil || string(got) != body && len(s) != wire.AcceptLen {
				t.Errorf("%s missing or stale (run with -transport.gencorpus): %v", path, err)
			}
		}
	}
}
