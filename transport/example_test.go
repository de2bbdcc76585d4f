package transport_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// echo is the server's handler: it sends every message back the way it
// came (reliable on the same stream, or unreliable).
type echo struct{ transport.NopHandler }

func (echo) OnMessage(p *transport.Peer, m transport.Message) {
	if m.Delivery == transport.Reliable {
		p.Channel().SendReliable(m.Stream, m.Payload) // copies m.Payload
	} else {
		p.Channel().SendUnreliable(m.Payload)
	}
}

// player is the client's handler: once connected it sends one reliable and
// one unreliable message, and prints what comes back.
type player struct {
	transport.NopHandler
	replies int
}

func (*player) OnConnect(p *transport.Peer) {
	p.Channel().SendReliable(1, []byte("hello, reliably"))
	p.Channel().SendUnreliable([]byte("hello, unreliably"))
}

func (c *player) OnMessage(_ *transport.Peer, m transport.Message) {
	fmt.Printf("%v: %s\n", m.Delivery, m.Payload) // m.Payload is only valid during the call
	c.replies++
}

// A server and a client on loopback UDP exchanging a reliable and an
// unreliable message. A game drives each endpoint from its own tick loop:
// Poll (receive), game logic, Flush (send). Here one loop drives both.
func Example() {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	serverSock, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		panic(err)
	}
	clientSock, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		panic(err)
	}

	server, err := transport.Listen(serverSock, transport.EndpointConfig{}, echo{})
	if err != nil {
		panic(err)
	}
	defer server.Close()

	start := time.Now()
	c := &player{}
	client, err := transport.Dial(clientSock, serverSock.LocalAddr(), transport.EndpointConfig{}, c, 0)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	for tick := 0; tick < 1000 && c.replies < 2; tick++ {
		now := time.Since(start) // any monotonic clock
		server.Poll(now)
		client.Poll(now)
		server.Flush(now)
		client.Flush(now)
		time.Sleep(time.Millisecond)
	}
	// Output:
	// reliable: hello, reliably
	// unreliable: hello, unreliably
}
