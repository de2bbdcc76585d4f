package pconn_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/pconn"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// An Endpoint runs unchanged over the adapter: a server on a
// net.PacketConn (here one from net.ListenPacket), a client on the batched
// UDP socket, over real loopback UDP, both driven by transport.Run; 200
// reliable messages echo back exactly once and in order. Bounded: 10 s.
func TestEndpointOverPacketConn(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := pconn.New(pc, pconn.Config{})
	if err != nil {
		t.Fatal(err)
	}
	server, err := transport.Listen(ss, transport.EndpointConfig{}, echo{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	serverDone := make(chan error, 1)
	go func() { serverDone <- transport.Run(ctx, server, transport.RunConfig{}) }()

	cs, err := udp.Open(netip.MustParseAddrPort("127.0.0.1:0"), udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 256)
	client, err := transport.DialContext(ctx, cs, ss.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, collector{got: got})
	if err != nil {
		t.Fatal(err)
	}
	toServer := client.Remote()
	clientDone := make(chan error, 1)
	go func() { clientDone <- transport.Run(ctx, client, transport.RunConfig{}) }()

	const n = 200
	for i := range n {
		for {
			err := client.Send(toServer, transport.Reliable, 1, []byte{byte(i), byte(i >> 8)})
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			time.Sleep(time.Millisecond) // back-pressure: the outbox is full
		}
	}
	for i := range n {
		select {
		case g := <-got:
			if g != string([]byte{byte(i), byte(i >> 8)}) {
				t.Fatalf("echo %d out of order or corrupted: % x", i, g)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d echoes within 10 s", i, n)
		}
	}
	cancel()
	for _, done := range []chan error{serverDone, clientDone} {
		<-done // both loops end and close their endpoints
	}
	if st := ss.Stats(); st.DatagramsIn == 0 {
		t.Fatalf("adapter stats: %+v", st)
	}
}

type echo struct{ transport.NopHandler }

func (echo) OnMessage(p *transport.Peer, m transport.Message) {
	p.Channel().SendReliable(m.Stream, m.Payload)
}

type collector struct {
	transport.NopHandler
	got chan<- string
}

func (c collector) OnMessage(_ *transport.Peer, m transport.Message) { c.got <- string(m.Payload) }
