package transport_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

type collector struct {
	transport.NopHandler
	got *[]string
}

func (c *collector) OnMessage(_ *transport.Peer, m transport.Message) {
	*c.got = append(*c.got, string(m.Payload))
}

// Poll drains the socket even when a read returns a short batch: with GRO
// the UDP socket hands out at most 16 buffers per call, and a Poll that
// took a short batch for an empty socket left a busy server reading 16
// datagrams per tick, further behind every tick. 24 clients' datagrams must
// all be read by one Poll.
func TestPollDrainsPastShortBatches(t *testing.T) {
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	ss, err := udp.Open(loop, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !ss.Features().GRO {
		t.Log("GRO is off on this kernel; the test still checks that one Poll drains 24 datagrams")
	}
	var got []string
	cfg := transport.EndpointConfig{HandshakeRate: 1000, HandshakeBurst: 1000, GlobalHandshakeRate: 1000, GlobalHandshakeBurst: 1000}
	server, err := transport.Listen(ss, cfg, &collector{got: &got})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	start := time.Now()
	const n = 24
	var clients []*transport.Endpoint
	for range n {
		cs, err := udp.Open(loop, udp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := transport.Dial(cs, ss.LocalAddr(), cfg, transport.NopHandler{}, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	connected := func() bool {
		for _, c := range clients {
			if p := c.Remote(); p == nil || p.State() != transport.PeerConnected {
				return false
			}
		}
		return true
	}
	for !connected() {
		if time.Since(start) > 10*time.Second {
			t.Fatal("clients did not connect in 10 s")
		}
		now := time.Since(start)
		server.Poll(now)
		server.Flush(now)
		for _, c := range clients {
			c.Poll(now)
			c.Flush(now)
		}
		time.Sleep(time.Millisecond)
	}
	server.Poll(time.Since(start)) // take any handshake leftovers
	got = got[:0]
	now := time.Since(start)
	for _, c := range clients {
		c.Remote().Channel().SendReliable(1, []byte("x"))
		c.Flush(now)
	}
	time.Sleep(50 * time.Millisecond) // loopback delivery
	if err := server.Poll(time.Since(start)); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("one Poll delivered %d of %d messages", len(got), n)
	}
}
