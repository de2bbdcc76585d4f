package transport

import (
	"net/netip"
	"testing"
)

// BenchmarkEndpointTick measures one steady-state tick of a connected
// pair on a perfect simulated link: each side sends one 64-byte unreliable
// message, then both Poll and Flush. The simulated network's cost is
// included.
func BenchmarkEndpointTick(b *testing.B) {
	n := newEpNet(b, 50, epLink(0, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{})
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
	n.runUntil(120, "connect", isConnected(cl))
	sp, cp := srv.rec.connects[0], cl.ep.Remote()
	msg := testPayload(msgKey{from: 1, stream: 9}, 64)
	b.ReportAllocs()
	b.SetBytes(2 * int64(len(msg)))
	for b.Loop() {
		if err := cp.Channel().SendUnreliable(msg); err != nil {
			b.Fatal(err)
		}
		if err := sp.Channel().SendUnreliable(msg); err != nil {
			b.Fatal(err)
		}
		n.step()
	}
	if srv.rec.unreliable == 0 {
		b.Fatal("nothing delivered")
	}
}

// BenchmarkServerConnectRequest measures what one ConnectRequest from a
// new (spoofed) source costs the server: parse, rate limit, cookie HMAC,
// Challenge. This is the per-datagram price of a handshake flood that gets
// past the global budget.
func BenchmarkServerConnectRequest(b *testing.B) {
	n := newEpNet(b, 51, epLink(0, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{HandshakeRate: 1e6, HandshakeBurst: 1e6,
		GlobalHandshakeRate: 1e9, GlobalHandshakeBurst: 1e9})
	req := rawRequest(7)
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	i := 0
	for b.Loop() {
		i++
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{100, byte(i >> 16), byte(i >> 8), byte(i)}), 1000)
		srv.ep.handle(n.now, addr, req)
		if i%64 == 0 {
			srv.ep.writeOut()
		}
	}
	srv.ep.writeOut()
	if s := srv.ep.Stats(); s.Challenges == 0 || srv.ep.StateSize() != 0 {
		b.Fatalf("challenges %d, state %d", s.Challenges, srv.ep.StateSize())
	}
}
