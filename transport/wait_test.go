package transport_test

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// wakeCounter records that its endpoint connected, and hands every message
// it receives to a channel.
type wakeCounter struct {
	transport.NopHandler
	connected atomic.Bool
	got       chan string
}

func (c *wakeCounter) OnConnect(*transport.Peer) { c.connected.Store(true) }

func (c *wakeCounter) OnMessage(_ *transport.Peer, m transport.Message) { c.got <- string(m.Payload) }

// Event-driven loops: a server and a client each run Poll, Flush and a
// Wait with a 10 s period on their own goroutine, over real loopback UDP.
// With a period that long, the handshake and every echo complete only if
// Wait returns when a datagram arrives (the server and the client's
// receive) and when Wake is called (the test handing the client a message
// to send). Bounded: 20 echoes, at most 10 s.
func TestWaitWakesForDatagramsAndWake(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the UDP socket's Wait wakes for datagrams on Linux only")
	}
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	ss, err := udp.Open(loop, udp.Config{})
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
	h := &wakeCounter{got: make(chan string, 64)}
	start := time.Now()
	client, err := transport.Dial(cs, ss.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, h, 0)
	if err != nil {
		t.Fatal(err)
	}
	const period = 10 * time.Second

	var stop atomic.Bool
	var wg sync.WaitGroup
	run := func(e *transport.Endpoint, before func()) {
		defer wg.Done()
		defer e.Close()
		for !stop.Load() {
			if before != nil {
				before()
			}
			now := time.Since(start)
			if err := e.Poll(now); err != nil {
				return
			}
			if err := e.Flush(now); err != nil {
				return
			}
			if err := e.Wait(period); err != nil {
				return
			}
		}
	}
	outbox := make(chan string, 64)
	wg.Add(2)
	go run(server, nil)
	go run(client, func() {
		for {
			select {
			case m := <-outbox:
				client.Remote().Channel().SendReliable(1, []byte(m))
			default:
				return
			}
		}
	})
	defer func() {
		stop.Store(true)
		server.Wake()
		client.Wake()
		wg.Wait()
	}()

	deadline := time.After(10 * time.Second)
	// The handshake: the client's first Flush sent its request; each
	// reply wakes the other side.
	for !h.connected.Load() {
		select {
		case <-deadline:
			t.Fatal("not connected: Wait did not wake for the handshake's datagrams")
		case <-time.After(time.Millisecond):
		}
	}
	for i := range 20 {
		want := fmt.Sprintf("m%d", i)
		outbox <- want
		client.Wake()
		select {
		case got := <-h.got:
			if got != want {
				t.Fatalf("echo %d = %q, want %q", i, got, want)
			}
		case <-deadline:
			t.Fatalf("echo %d did not come back: a Wait slept through a datagram or a Wake", i)
		}
	}
}

// On a socket that is not a socket.Waiter, Wait sleeps for its period or
// until Wake; after Close it reports ErrClosed.
func TestWaitFallback(t *testing.T) {
	conn, err := simlink.New(1).Listen(netip.MustParseAddrPort("10.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := transport.Listen(conn, transport.EndpointConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := e.Wait(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 15*time.Millisecond {
		t.Fatalf("Wait(20ms) returned after %v", d)
	}
	e.Wake()
	t0 = time.Now()
	if err := e.Wait(time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("Wait after Wake slept %v", d)
	}
	go func() { time.Sleep(10 * time.Millisecond); e.Wake() }()
	if err := e.Wait(time.Hour); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if err := e.Wait(time.Millisecond); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Wait after Close = %v, want ErrClosed", err)
	}
}
