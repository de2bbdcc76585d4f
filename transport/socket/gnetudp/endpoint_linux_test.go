package gnetudp_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/gnetudp"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// The Endpoint runs unchanged over every socket backend: a server on the
// gnet engine or the batched UDP socket, a client on the batched socket,
// over real loopback UDP, exchanging reliable messages exactly once and in
// order. Bounded: 200 messages, at most 10 s.
func TestEndpointOverBackends(t *testing.T) {
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	backends := map[string]func() (socket.Conn, error){
		"udp":  func() (socket.Conn, error) { return udp.Open(loop, udp.Config{}) },
		"gnet": func() (socket.Conn, error) { return gnetudp.Open(loop, gnetudp.Config{}) },
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			ss, err := open()
			if err != nil {
				t.Fatal(err)
			}
			cs, err := udp.Open(loop, udp.Config{})
			if err != nil {
				t.Fatal(err)
			}
			server, err := transport.Listen(ss, transport.EndpointConfig{}, echo{})
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			var got []string
			c := &collector{got: &got}
			start := time.Now()
			client, err := transport.Dial(cs, ss.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, c, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			const n = 200
			sent := 0
			for len(got) < n {
				if time.Since(start) > 10*time.Second {
					t.Fatalf("%d of %d echoes after 10 s", len(got), n)
				}
				now := time.Since(start)
				server.Poll(now)
				client.Poll(now)
				if p := client.Remote(); p != nil && p.State() == transport.PeerConnected && sent < n {
					if _, err := p.Channel().SendReliable(1, []byte{byte(sent), byte(sent >> 8)}); err == nil {
						sent++
					}
				}
				server.Flush(now)
				client.Flush(now)
				time.Sleep(200 * time.Microsecond)
			}
			for i, g := range got {
				if g != string([]byte{byte(i), byte(i >> 8)}) {
					t.Fatalf("echo %d out of order or corrupted", i)
				}
			}
		})
	}
}

type collector struct {
	transport.NopHandler
	got *[]string
}

func (c *collector) OnMessage(_ *transport.Peer, m transport.Message) {
	*c.got = append(*c.got, string(m.Payload))
}

type echo struct{ transport.NopHandler }

func (echo) OnMessage(p *transport.Peer, m transport.Message) {
	p.Channel().SendReliable(m.Stream, m.Payload)
}
