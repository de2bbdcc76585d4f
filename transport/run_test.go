package transport_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/udp"
	"github.com/tickwire/tickwire/wire"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

func openUDP(t *testing.T) *udp.Conn {
	t.Helper()
	c, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// deadPort returns a loopback address nobody listens on: a socket's port,
// closed.
func deadPort(t *testing.T) netip.AddrPort {
	c, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := c.LocalAddr()
	c.Close()
	return a
}

// Dialing a dead port over real loopback UDP fails once HandshakeTimeout
// has passed — not before, and not much after — with a
// *HandshakeTimeoutError that is a net.Error with Timeout(), says what it
// tried, and leaves the socket closed.
func TestDialContextDeadPort(t *testing.T) {
	const limit = 400 * time.Millisecond
	dead := deadPort(t)
	conn := openUDP(t)
	start := time.Now()
	e, err := transport.DialContext(context.Background(), conn, dead, transport.EndpointConfig{HandshakeTimeout: limit, ServerKey: anyKey(t)}, nil)
	took := time.Since(start)
	if e != nil || !errors.Is(err, transport.ErrHandshakeTimeout) {
		t.Fatalf("DialContext: %v, %v", e, err)
	}
	if took < limit || took > limit+time.Second {
		t.Fatalf("failed after %v; HandshakeTimeout %v", took, limit)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%v: not a net.Error with Timeout()", err)
	}
	if _, ok := err.(net.Error); !ok {
		t.Fatalf("%T is not itself a net.Error", err)
	}
	var te *transport.HandshakeTimeoutError
	if !errors.As(err, &te) || te.Server != dead || te.Limit != limit || te.Datagrams != 2 || te.Challenged {
		// Sends at 0 and 0.25 s before the 0.4 s deadline.
		t.Fatalf("%#v", te)
	}
	if !strings.Contains(err.Error(), dead.String()) || !strings.Contains(err.Error(), "2 handshake datagrams") {
		t.Fatalf("message lacks the numbers: %v", err)
	}
	if _, err := conn.WriteBatch([]socket.Message{{Addr: loopback}}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the socket is still open after a failed DialContext: %v", err)
	}
}

// DialContext ends with its context: a deadline before HandshakeTimeout
// fails at the deadline with an error that wraps context.DeadlineExceeded
// and reports Timeout(); a cancel fails at once with context.Canceled.
func TestDialContextEndsWithContext(t *testing.T) {
	dead := deadPort(t)
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := transport.DialContext(ctx, openUDP(t), dead, transport.EndpointConfig{ServerKey: anyKey(t)}, nil) // HandshakeTimeout 5 s
		took := time.Since(start)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, transport.ErrHandshakeTimeout) {
			t.Fatalf("%v", err)
		}
		if took < 300*time.Millisecond || took > 1300*time.Millisecond {
			t.Fatalf("failed after %v; the context's deadline was 300ms", took)
		}
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Fatalf("%v: not a net.Error with Timeout()", err)
		}
		if !strings.Contains(err.Error(), dead.String()) || !strings.Contains(err.Error(), "handshake datagrams sent") {
			t.Fatalf("message lacks the numbers: %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := transport.DialContext(ctx, openUDP(t), dead, transport.EndpointConfig{ServerKey: anyKey(t)}, nil)
		took := time.Since(start)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%v", err)
		}
		if took > 1100*time.Millisecond {
			t.Fatalf("cancel took %v to end DialContext", took)
		}
		if ne, ok := err.(net.Error); !ok || ne.Timeout() {
			t.Fatalf("%v: a cancel is not a time-out", err)
		}
	})
}

// tally is a handler that checks what it receives from several senders:
// every message exactly once, and in order per stream. Payload: sender
// (1 byte), then a little-endian u32 counter per (sender, stream). It is
// called on the loop's goroutine and read by the test's.
type tally struct {
	transport.NopHandler
	mu      sync.Mutex
	next    map[[2]uint8]uint32 // (sender, stream) → next counter
	got     int
	bad     []string
	connect chan *transport.Peer
	discs   []wire.DisconnectReason
}

func newTally() *tally {
	return &tally{next: map[[2]uint8]uint32{}, connect: make(chan *transport.Peer, 16)}
}

func (h *tally) OnConnect(p *transport.Peer) { h.connect <- p }

func (h *tally) OnDisconnect(_ *transport.Peer, why wire.DisconnectReason) {
	h.mu.Lock()
	h.discs = append(h.discs, why)
	h.mu.Unlock()
}

func (h *tally) OnMessage(_ *transport.Peer, m transport.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(m.Payload) < 5 {
		h.bad = append(h.bad, fmt.Sprintf("short message %x", m.Payload))
		return
	}
	k := [2]uint8{m.Payload[0], m.Stream}
	if c := binary.LittleEndian.Uint32(m.Payload[1:]); c != h.next[k] {
		h.bad = append(h.bad, fmt.Sprintf("sender %d stream %d: got %d, want %d", k[0], k[1], c, h.next[k]))
	}
	h.next[k]++
	h.got++
}

func (h *tally) count() (int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got, append([]string(nil), h.bad...)
}

// sendAll sends n reliable messages from sender on stream through e.Send,
// retrying on back-pressure, and returns the first other error.
func sendAll(e *transport.Endpoint, p *transport.Peer, sender, stream uint8, n int) error {
	buf := make([]byte, 64)
	buf[0] = sender
	for i := range n {
		binary.LittleEndian.PutUint32(buf[1:], uint32(i))
		for {
			err := e.Send(p, transport.Reliable, stream, buf) // copies buf
			if err == nil {
				break
			}
			if !errors.Is(err, transport.ErrQueueFull) {
				return err
			}
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}

// Several goroutines send through Endpoint.Send, both ways, while Run
// drives each endpoint over real loopback UDP (event-driven server,
// fixed-rate client): every message arrives exactly once and in order per
// stream. Under -race this is the proof of the threading contract: the
// senders touch only Send.
func TestSendFromGoroutines(t *testing.T) {
	const senders, perSender = 4, 400
	srvH, clH := newTally(), newTally()
	server, err := transport.Listen(openUDP(t), transport.EndpointConfig{OutboxMessages: 64}, srvH)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srvDone := make(chan error, 1)
	go func() { srvDone <- transport.Run(ctx, server, transport.RunConfig{}) }()

	client, err := transport.DialContext(ctx, openUDP(t), server.LocalAddr(), transport.EndpointConfig{OutboxMessages: 64, ServerKey: server.PublicKey()}, clH)
	if err != nil {
		t.Fatal(err)
	}
	toServer := client.Remote() // handed to the senders by the go statements below
	clDone := make(chan error, 1)
	go func() { clDone <- transport.Run(ctx, client, transport.RunConfig{Tick: 2 * time.Millisecond}) }()
	toClient := <-srvH.connect

	var wg sync.WaitGroup
	errs := make(chan error, 2*senders)
	for g := range senders {
		stream := uint8(g%4 + 1) // senders share streams: order is per sender
		wg.Go(func() { errs <- sendAll(client, toServer, uint8(g), stream, perSender) })
		wg.Go(func() { errs <- sendAll(server, toClient, uint8(g), stream, perSender) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, sbad := srvH.count()
		c, cbad := clH.count()
		if len(sbad)+len(cbad) > 0 {
			t.Fatalf("server: %v; client: %v", sbad, cbad)
		}
		if s == senders*perSender && c == senders*perSender {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s the server has %d and the client %d of %d messages", s, c, senders*perSender)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-srvDone; err != nil {
		t.Fatalf("server Run: %v", err)
	}
	if err := <-clDone; err != nil && !errors.Is(err, transport.ErrNoSession) {
		t.Fatalf("client Run: %v", err)
	}
	s, _ := srvH.count()
	if s != senders*perSender {
		t.Fatalf("server got %d after the shutdown", s)
	}
}

// Run's shutdown on cancel is orderly: reliable messages queued just
// before the cancel still arrive, the client hears DisconnectShutdown and
// its Run returns ErrNoSession with that reason, the server's Run returns
// nil within its Drain, and the endpoint is closed (net.ErrClosed).
func TestRunShutdown(t *testing.T) {
	srvH, clH := newTally(), newTally()
	server, err := transport.Listen(openUDP(t), transport.EndpointConfig{}, srvH)
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stopServer := context.WithCancel(context.Background())
	defer stopServer()
	srvDone := make(chan error, 1)
	go func() { srvDone <- transport.Run(srvCtx, server, transport.RunConfig{Tick: 5 * time.Millisecond}) }()
	client, err := transport.DialContext(context.Background(), openUDP(t), server.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, clH)
	if err != nil {
		t.Fatal(err)
	}
	clDone := make(chan error, 1)
	go func() { clDone <- transport.Run(context.Background(), client, transport.RunConfig{}) }()
	p := <-srvH.connect
	const n = 200
	if err := sendAll(server, p, 7, 1, n); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stopServer()
	if err := <-srvDone; err != nil {
		t.Fatalf("server Run: %v", err)
	}
	if took := time.Since(start); took > transport.DefaultRunDrain+500*time.Millisecond {
		t.Fatalf("shutdown took %v; Drain is %v", took, transport.DefaultRunDrain)
	}
	err = <-clDone
	if !errors.Is(err, transport.ErrNoSession) || !strings.Contains(err.Error(), wire.DisconnectShutdown.String()) {
		t.Fatalf("client Run: %v", err)
	}
	got, bad := clH.count()
	if got != n || len(bad) > 0 {
		t.Fatalf("client got %d of %d before the shutdown (%v)", got, n, bad)
	}
	clH.mu.Lock()
	discs := clH.discs
	clH.mu.Unlock()
	if len(discs) != 1 || discs[0] != wire.DisconnectShutdown {
		t.Fatalf("client disconnects: %v", discs)
	}
	for name, e := range map[string]*transport.Endpoint{"server": server, "client": client} {
		if err := e.Poll(e.Now()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("%s Poll after Run: %v", name, err)
		}
	}
}

// Run refuses a config out of range and a clock behind the endpoint's
// time, closing the endpoint either way.
func TestRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  transport.RunConfig
		ecfg transport.EndpointConfig
		now  time.Duration
		want string
	}{
		{"tick", transport.RunConfig{Tick: time.Microsecond}, transport.EndpointConfig{}, 0, "RunConfig.Tick 1µs"},
		{"drain", transport.RunConfig{Drain: -1}, transport.EndpointConfig{}, 0, "RunConfig.Drain -1ns"},
		{"clock", transport.RunConfig{}, transport.EndpointConfig{Clock: func() time.Duration { return time.Second }}, time.Hour, "Clock reads 1s, behind the 1h0m0s"},
	} {
		tc.ecfg.ServerKey = anyKey(t)
		e, err := transport.Dial(openUDP(t), deadPort(t), tc.ecfg, nil, tc.now)
		if err != nil {
			t.Fatal(err)
		}
		err = transport.Run(context.Background(), e, tc.cfg)
		if !errors.Is(err, transport.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err := e.Flush(0); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s: endpoint not closed: %v", tc.name, err)
		}
	}
}

// Resume onto a new socket moves Wait and Wake to that socket too: the
// old one is closed, and a Wait on it would report the endpoint closed.
func TestResumeMovesWait(t *testing.T) {
	srvH := newTally()
	server, err := transport.Listen(openUDP(t), transport.EndpointConfig{}, srvH)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srvDone := make(chan error, 1)
	go func() { srvDone <- transport.Run(ctx, server, transport.RunConfig{}) }()
	defer func() { cancel(); <-srvDone }()
	clH := newTally()
	client, err := transport.DialContext(ctx, openUDP(t), server.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, clH)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Resume(client.Now(), openUDP(t)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); client.Remote().State() != transport.PeerConnected; {
		if time.Now().After(deadline) {
			t.Fatalf("no resume in 5 s: %v", client.Remote().State())
		}
		if err := client.Wait(10 * time.Millisecond); err != nil {
			t.Fatalf("Wait after Resume onto a new socket: %v", err)
		}
		if err := client.Poll(client.Now()); err != nil {
			t.Fatal(err)
		}
		if err := client.Flush(client.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if client.Stats().Resumes != 1 {
		t.Fatalf("%d resumes", client.Stats().Resumes)
	}
}

// anyKey returns a fresh X25519 public key, for a client of a server that
// is not there.
func anyKey(t testing.TB) *ecdh.PublicKey {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k.PublicKey()
}
