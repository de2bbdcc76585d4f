package transport

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/tickwire/tickwire/wire"
)

var fuzzStranger = netip.MustParseAddrPort("10.9.9.9:999")

// fuzzServer returns a server with one session, made by a raw handshake on
// a zero-delay simulated link, with limits high enough that rate limiting
// hides nothing.
func fuzzServer(t testing.TB) (*epNet, *node, netip.AddrPort, [8]byte) {
	n := newEpNet(t, 40, epLink(0, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{HandshakeRate: 1e6, HandshakeBurst: 1e6,
		GlobalHandshakeRate: 1e9, GlobalHandshakeBurst: 1e9})
	r := n.raw("10.0.0.2:5000", srv)
	a, _, err := wire.ParseAccept(n.handshake(r, 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	var secret [8]byte
	binary.LittleEndian.PutUint64(secret[:], a.Secret)
	return n, srv, r.conn.LocalAddr(), secret
}

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
		fuzzAccept(wire.Accept{Nonce: 1, PeerID: 3, Secret: 0x8877665544332211, Token: tok}, Config{MaxMessageSize: 1 << 18}),
		fuzzAccept(wire.Accept{Nonce: 1, PeerID: 254}, Config{MaxMessageSize: 1}),
		fuzzAccept(wire.Accept{Nonce: 1, PeerID: 5, Secret: 7, Token: tok}, Config{MTU: MaxMTU, ReliableWindow: 1024, OrderedStreams: 8}),
		wire.AppendReject(nil, wire.Reject{Nonce: 1, Reason: wire.RejectServerFull}),
		sessionDatagram(secret, 100, []byte("hello")),
		wire.AppendKeepAliveFrame(wire.AppendChannelHeader(wire.AppendSessionHeader(nil, wire.SessionHeader{}), wire.ChannelHeader{Seq: 7, Ack: 3, AckBits: 5}), wire.KeepAliveFrame{}),
		wire.AppendDisconnectFrame(wire.AppendChannelHeader(wire.AppendSessionHeader(nil, wire.SessionHeader{}), wire.ChannelHeader{Seq: 8, NoAck: true}), wire.DisconnectFrame{Reason: wire.DisconnectClosed}),
	}
	return seeds
}

// fuzzAccept encodes a with the limits of a server configured with c.
func fuzzAccept(a wire.Accept, c Config) []byte {
	limitsOf(c).announce(&a)
	return wire.AppendAccept(nil, a)
}

// FuzzEndpointDatagram feeds arbitrary datagrams to the packet dispatcher
// of a server with one session, from a stranger or from the peer's
// address, optionally behind that session's valid header (S-E8). The
// endpoint must not panic, must count the datagram, must never answer a
// stranger with more bytes than it sent, must create no session for it,
// and must go on working.
func FuzzEndpointDatagram(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, false, false)
		f.Add(s, true, false)
		f.Add(s, true, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fromPeer, stamp bool) {
		n, srv, peer, secret := fuzzServer(t)
		b := append([]byte(nil), data...)
		if stamp && len(b) >= wire.SessionHeaderLen {
			b[0] = byte(wire.KindSession)
			copy(b[1:], secret[:])
		}
		from := fuzzStranger
		if fromPeer {
			from = peer
		}
		before := srv.ep.Stats()
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
		if a, n, err := wire.ParseAccept(data); err == nil && (a.PeerID > wire.MaxPeerID || !bytes.Equal(wire.AppendAccept(nil, a), data[:n])) {
			t.Fatal("Accept round trip")
		}
		if r, n, err := wire.ParseReject(data); err == nil && !bytes.Equal(wire.AppendReject(nil, r), data[:n]) {
			t.Fatal("Reject round trip")
		}

		n := newEpNet(t, 41, epLink(0, 0, 0))
		srv := n.server("10.0.0.1:9000", EndpointConfig{})
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
		cl.ep.handle(n.now, srv.conn.LocalAddr(), b)
		if p := cl.ep.Remote(); p != nil {
			c := p.Channel().Config()
			if p.ID() > wire.MaxPeerID || c.MTU < MinMTU || c.MTU > MaxMTU || c.MaxMessageSize > MaxMessageSizeFor(c.MTU) {
				t.Fatalf("client session with id %d, MTU %d, max message %d", p.ID(), c.MTU, c.MaxMessageSize)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("client session with an invalid channel config: %v", err)
			}
			// A session exists only with the limits the Accept announced.
			if a, _, err := wire.ParseAccept(b); err != nil || limitsOf(c) != limitsFromAccept(&a) {
				t.Fatalf("client session with %v for an Accept announcing %v (%v)", limitsOf(c), limitsFromAccept(&a), err)
			}
		}
		if err := cl.ep.Flush(n.now); err != nil && cl.ep.Err() == nil {
			t.Fatal(err)
		}
	})
}
