package transport

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// Endpoint.Send refuses at once, with the numbers, what could never be
// sent: a peer of another endpoint, a stream that does not exist, a
// message above MaxMessageSize, a Record; and a full outbox is
// back-pressure wrapping ErrQueueFull that accepts nothing.
func TestSendRefusals(t *testing.T) {
	n := newEpNet(t, 31, epLink(5, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{})
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{OutboxMessages: 3, OutboxBytes: 1 << 10})
	n.runUntil(120, "connect", isConnected(cl))
	cp := cl.ep.Remote()
	for _, tc := range []struct {
		name   string
		err    error
		p      *Peer
		d      Delivery
		stream uint8
		size   int
		want   string
	}{
		{"nil peer", ErrNoSession, nil, Reliable, 1, 1, ""},
		{"other endpoint's peer", ErrNoSession, srv.rec.connects[0], Reliable, 1, 1, ""},
		{"reliable stream", ErrNoStream, cp, Reliable, 5, 1, "reliable stream 5, streams are 0..4"},
		{"sequenced stream", ErrNoStream, cp, Sequenced, 9, 1, "sequenced stream 9, SequencedStreams 4"},
		{"too large", ErrTooLarge, cp, Unreliable, 0, cp.Channel().Config().MaxMessageSize + 1, "MaxMessageSize"},
		{"record", errors.ErrUnsupported, cp, Record, 0, 1, "record"},
	} {
		err := cl.ep.Send(tc.p, tc.d, tc.stream, make([]byte, tc.size))
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %v with %q", tc.name, err, tc.err, tc.want)
		}
	}
	if cfg := cp.Channel().Config(); cfg.OrderedStreams != 4 || cfg.SequencedStreams != 4 {
		t.Fatalf("the stream cases assume 4 ordered and 4 sequenced streams: %d, %d", cfg.OrderedStreams, cfg.SequencedStreams)
	}
	// Bytes: 1000 + 100 fits no 1 KiB outbox.
	if err := cl.ep.Send(cp, Reliable, 1, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	err := cl.ep.Send(cp, Reliable, 1, make([]byte, 100))
	if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "outbox holds 1 messages, 1000 bytes (OutboxMessages 3, OutboxBytes 1024); 100-byte message refused") {
		t.Fatalf("bytes: %v", err)
	}
	// Messages: three fit, the fourth does not.
	n.step()
	for i := range 3 {
		if err := cl.ep.Send(cp, Unreliable, 0, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ep.Send(cp, Unreliable, 0, []byte{3}); !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "outbox holds 3 messages") {
		t.Fatalf("messages: %v", err)
	}
	n.step()
	if err := cl.ep.Send(cp, Unreliable, 0, []byte{4}); err != nil {
		t.Fatalf("after a Flush drained it: %v", err)
	}
	if s := cl.ep.Stats(); s.OutboxSent != 4 || s.OutboxDropped != 0 {
		t.Fatalf("sent %d, dropped %d", s.OutboxSent, s.OutboxDropped)
	}
}

// A channel whose reliable window is full keeps its peer's outbox
// messages, in order, for later Flushes: 1000 reliable messages sent
// through the outbox in one go, four times the window, all arrive exactly
// once and in order, and none is dropped.
func TestSendBackPressureKeepsOrder(t *testing.T) {
	n := newEpNet(t, 32, epLink(10, 2, 0.05))
	srv := n.server("10.0.0.1:9000", EndpointConfig{})
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
	n.runUntil(120, "connect", isConnected(cl))
	cp := cl.ep.Remote()
	const msgs = 1000
	for i := range msgs {
		k := msgKey{from: 1, stream: 1 + uint8(i%2), seq: uint32(i / 2)}
		if err := cl.ep.Send(cp, Reliable, k.stream, testPayload(k, 40)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	n.runUntil(60*30, "all delivered", func() bool { return len(srv.rec.reliable) == msgs })
	for k, c := range srv.rec.reliable {
		if c != 1 {
			t.Fatalf("%+v delivered %d times", k, c)
		}
	}
	if s := cl.ep.Stats(); s.OutboxSent != msgs || s.OutboxDropped != 0 {
		t.Fatalf("sent %d, dropped %d", s.OutboxSent, s.OutboxDropped)
	}
	// (recorder checks the order on every ordered stream.)
}

// A message whose session ended before the Flush is dropped and counted;
// after Close, Send, Poll, Flush and Wait all return errors matching
// net.ErrClosed (and ErrClosed), and what the outbox held is counted.
func TestSendAfterEndAndClose(t *testing.T) {
	n := newEpNet(t, 33, epLink(5, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{})
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{})
	n.runUntil(120, "connect", isConnected(cl))
	sp := srv.rec.connects[0]
	if err := srv.ep.Disconnect(sp, wire.DisconnectKicked); err != nil {
		t.Fatal(err)
	}
	if err := srv.ep.Send(sp, Reliable, 1, []byte("late")); err != nil {
		t.Fatal(err)
	}
	n.step()
	if s := srv.ep.Stats(); s.OutboxDropped != 1 || s.OutboxSent != 0 {
		t.Fatalf("sent %d, dropped %d", s.OutboxSent, s.OutboxDropped)
	}
	cp := cl.ep.Remote()
	if err := cl.ep.Send(cp, Reliable, 1, []byte("queued")); err != nil {
		t.Fatal(err)
	}
	if err := cl.ep.Close(); err != nil {
		t.Fatal(err)
	}
	if s := cl.ep.Stats(); s.OutboxDropped != 1 {
		t.Fatalf("Close dropped %d", s.OutboxDropped)
	}
	for name, err := range map[string]error{
		"Send":  cl.ep.Send(cp, Reliable, 1, []byte("x")),
		"Poll":  cl.ep.Poll(n.now),
		"Flush": cl.ep.Flush(n.now),
		"Wait":  cl.ep.Wait(time.Millisecond),
	} {
		if !errors.Is(err, net.ErrClosed) || !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	// The socket closed under the endpoint: the same contract, with the
	// socket's error and address.
	if err := srv.conn.Close(); err != nil {
		t.Fatal(err)
	}
	err := srv.ep.Poll(n.now)
	if !errors.Is(err, net.ErrClosed) || !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "10.0.0.1:9000") {
		t.Fatalf("Poll on a closed socket: %v", err)
	}
	if err2 := srv.ep.Flush(n.now); err2 != err {
		t.Fatalf("Flush after the socket closed: %v, want %v", err2, err)
	}
}

// logBuffer collects a slog handler's output (the rig runs on one goroutine).
type logBuffer struct{ bytes.Buffer }

// Lifecycle events reach the Logger — connect, reject, disconnect with the
// reason, suspend, resume, a handshake time-out — and per-datagram traffic
// does not (TestEndpointNoAllocs/logger+outbox runs the steady state with
// a Logger at Debug and allocates nothing).
func TestLifecycleLogging(t *testing.T) {
	var srvLog, clLog logBuffer
	logger := func(b *logBuffer) *slog.Logger {
		return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n := newEpNet(t, 34, epLink(5, 0, 0))
	srv := n.server("10.0.0.1:9000", EndpointConfig{MaxPeers: 1, Logger: logger(&srvLog)})
	cl := n.client("10.0.0.2:5000", srv, EndpointConfig{Logger: logger(&clLog)})
	n.runUntil(120, "connect", isConnected(cl))
	// A second client is refused: the server is full. The server refuses
	// at the ConnectRequest, before the address is proven, so it logs
	// nothing (a spoofed flood would be as many records); the client does.
	var fullLog logBuffer
	full := n.client("10.0.0.3:5000", srv, EndpointConfig{Logger: logger(&fullLog)})
	n.runUntil(120, "refused", func() bool { return full.ep.Err() != nil })
	// Traffic, then a silent server: the client suspends and resumes.
	for i := range 50 {
		cl.ep.Remote().Channel().SendReliable(1, testPayload(msgKey{from: 1, stream: 1, seq: uint32(i)}, 30))
		n.step()
	}
	srv.silent = true
	n.runUntil(60*5, "suspended", func() bool { return len(cl.rec.suspends) == 1 })
	srv.silent = false
	n.runUntil(60*5, "resumed", func() bool { return len(cl.rec.resumes) == 1 })
	if err := srv.ep.Disconnect(srv.rec.connects[0], wire.DisconnectKicked); err != nil {
		t.Fatal(err)
	}
	n.runUntil(120, "ended", func() bool { return len(cl.rec.discs) == 1 })
	// A client of a server that never answers.
	var lostLog logBuffer
	deaf := n.server("10.0.0.9:9000", EndpointConfig{})
	deaf.deaf, deaf.silent = true, true
	lost := n.client("10.0.0.4:5000", deaf, EndpointConfig{HandshakeTimeout: time.Second, Logger: logger(&lostLog)})
	n.runUntil(120, "timed out", func() bool { return lost.ep.Err() != nil })

	for _, c := range []struct {
		who  string
		log  *logBuffer
		want []string
	}{
		{"server", &srvLog, []string{
			`msg="transport: peer connected" peer=0 addr=10.0.0.2:5000`,
			`msg="transport: peer resumed" peer=0 addr=10.0.0.2:5000`,
			`msg="transport: peer disconnected" reason=kicked peer=0`,
		}},
		{"client", &clLog, []string{
			`msg="transport: connected" handshake=`,
			`msg="transport: session suspended; resuming" reason=timeout peer=0 addr=10.0.0.1:9000`,
			`msg="transport: session resumed" peer=0`,
			`msg="transport: peer disconnected" reason=kicked peer=0 addr=10.0.0.1:9000`,
		}},
		{"refused client", &fullLog, []string{
			`level=WARN msg="transport: handshake failed" server=10.0.0.1:9000 err="transport: connection rejected: server full"`,
		}},
		{"lost client", &lostLog, []string{
			// Sends at 0, 0.25 and 0.75 s; the first Flush at or past 1 s.
			`level=WARN msg="transport: handshake timed out" server=10.0.0.9:9000 after=1.0`,
			`datagrams=3 challenged=false`,
		}},
	} {
		out := c.log.String()
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s log lacks %q:\n%s", c.who, w, out)
			}
		}
		if lines := strings.Count(out, "\n"); lines > 8 {
			t.Errorf("%s log has %d records for a handful of events:\n%s", c.who, lines, out)
		}
	}
}
