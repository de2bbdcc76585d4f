package transport_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// README.md's "Embed it" section shows this file from the line below to
// the end; internal/doccheck fails if the two differ.

// echoServer sends every message back to its sender, reliably.
type echoServer struct{ transport.NopHandler }

func (echoServer) OnMessage(p *transport.Peer, m transport.Message) {
	p.Channel().SendReliable(m.Stream, m.Payload) // copies m.Payload
}

// printer hands what comes back to the game's goroutine.
type printer struct {
	transport.NopHandler
	got chan string
}

func (c printer) OnMessage(_ *transport.Peer, m transport.Message) {
	c.got <- string(m.Payload) // m.Payload is only valid during the call
}

// A server at 60 Hz and an event-driven client, each on its own goroutine.
func Example_embed() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop() // shuts both down: drain, disconnect, close
	local := netip.MustParseAddrPort("127.0.0.1:0")

	serverSock, err := udp.Open(local, udp.Config{})
	if err != nil {
		panic(err)
	}
	server, err := transport.Listen(serverSock, transport.EndpointConfig{}, echoServer{})
	if err != nil {
		panic(err)
	}
	go transport.Run(ctx, server, transport.RunConfig{Tick: time.Second / 60})

	clientSock, err := udp.Open(local, udp.Config{})
	if err != nil {
		panic(err)
	}
	c := printer{got: make(chan string, 1)}
	client, err := transport.DialContext(ctx, clientSock, serverSock.LocalAddr(),
		transport.EndpointConfig{ServerKey: server.PublicKey()}, c) // pin the server's key
	if err != nil {
		panic(err) // after HandshakeTimeout (5 s) or when ctx ends
	}
	toServer := client.Remote() // before Run owns the endpoint
	go transport.Run(ctx, client, transport.RunConfig{})

	// Send is safe from any goroutine; Run's loop sends it.
	if err := client.Send(toServer, transport.Reliable, 1, []byte("hello")); err != nil {
		panic(err)
	}
	fmt.Println(<-c.got)
	// Output: hello
}
