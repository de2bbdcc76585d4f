package transport_test

import (
	"context"
	"errors"
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
// unreliable message, driven by hand: a game drives each endpoint from its
// own loop — Poll (receive), game logic, Flush (send) — at a fixed tick or
// on every wake-up of Endpoint.Wait. Here one loop drives both. (Run is
// that loop, ready-made.)
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

	c := &player{}
	client, err := transport.Dial(clientSock, serverSock.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, c, transport.Now())
	if err != nil {
		panic(err)
	}
	defer client.Close()

	for tick := 0; tick < 1000 && c.replies < 2; tick++ {
		now := transport.Now() // the endpoints' clock (EndpointConfig.Clock)
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

// greeter is a client handler that reports the echo of its greeting.
type greeter struct {
	transport.NopHandler
	done chan struct{}
}

func (g *greeter) OnConnect(p *transport.Peer) { p.Channel().SendReliable(1, []byte("hello")) }

func (g *greeter) OnMessage(_ *transport.Peer, m transport.Message) {
	fmt.Printf("echo: %s\n", m.Payload)
	close(g.done)
}

// Run drives an endpoint on its own goroutine until its context ends, then
// shuts down in order: the server disconnects its clients
// (DisconnectShutdown), their Run returns an error wrapping ErrNoSession,
// and the server's returns nil. DialContext connects a client, bounded by
// HandshakeTimeout and its context.
func ExampleRun() {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	serverSock, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		panic(err)
	}
	server, err := transport.Listen(serverSock, transport.EndpointConfig{}, echo{})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	serverDone := make(chan error)
	go func() { serverDone <- transport.Run(ctx, server, transport.RunConfig{}) }() // event-driven

	clientSock, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		panic(err)
	}
	dialCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	g := &greeter{done: make(chan struct{})}
	client, err := transport.DialContext(dialCtx, clientSock, serverSock.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, g)
	if err != nil {
		panic(err)
	}
	clientDone := make(chan error)
	go func() {
		clientDone <- transport.Run(context.Background(), client, transport.RunConfig{Tick: time.Second / 60})
	}()

	<-g.done
	stop() // the server shuts down: drain, Disconnect, close
	fmt.Println("server Run:", <-serverDone)
	fmt.Println("client session ended:", errors.Is(<-clientDone, transport.ErrNoSession))
	// Output:
	// echo: hello
	// server Run: <nil>
	// client session ended: true
}

// chat is a server handler that prints what it receives.
type chat struct {
	transport.NopHandler
	received chan struct{}
}

func (h *chat) OnMessage(_ *transport.Peer, m transport.Message) {
	fmt.Printf("server got %q on stream %d\n", m.Payload, m.Stream)
	h.received <- struct{}{}
}

// Endpoint.Send is how goroutines other than the loop's send: it copies
// the message into a bounded outbox that the loop drains at its next
// round (and wakes an event-driven loop at once). Here the client's
// messages come from a goroutine of their own while Run drives the
// client; a full outbox would return an error wrapping ErrQueueFull.
func ExampleEndpoint_Send() {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	serverSock, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		panic(err)
	}
	h := &chat{received: make(chan struct{}, 3)}
	server, err := transport.Listen(serverSock, transport.EndpointConfig{}, h)
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go transport.Run(ctx, server, transport.RunConfig{})

	clientSock, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		panic(err)
	}
	client, err := transport.DialContext(ctx, clientSock, serverSock.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, nil)
	if err != nil {
		panic(err)
	}
	toServer := client.Remote() // read before Run takes the endpoint
	go transport.Run(ctx, client, transport.RunConfig{})

	go func() { // another goroutine: only Send, Wake and Now are allowed here
		for _, line := range []string{"gg", "rematch?", "ready"} {
			if err := client.Send(toServer, transport.Reliable, 1, []byte(line)); err != nil {
				fmt.Println(err)
			}
		}
	}()
	for range 3 {
		<-h.received
	}
	// Output:
	// server got "gg" on stream 1
	// server got "rematch?" on stream 1
	// server got "ready" on stream 1
}
