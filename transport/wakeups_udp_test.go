package transport_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// wakeSide counts one endpoint's rounds (OnTick calls) while Run drives it.
type wakeSide struct {
	conn   *udp.Conn
	rounds atomic.Uint64
}

func (s *wakeSide) onTick(time.Duration) { s.rounds.Add(1) }

// wakeCounts is what one side did over the measured window.
type wakeCounts struct {
	rounds, recv, send, in, out uint64
}

func (s *wakeSide) snapshot() wakeCounts {
	st := s.conn.Stats()
	return wakeCounts{rounds: s.rounds.Load(), recv: st.RecvSyscalls, send: st.SendSyscalls, in: st.DatagramsIn, out: st.DatagramsOut}
}

func (c wakeCounts) sub(o wakeCounts) wakeCounts {
	return wakeCounts{c.rounds - o.rounds, c.recv - o.recv, c.send - o.send, c.in - o.in, c.out - o.out}
}

// echoer echoes every message back on its reliable stream 1, as the
// bench's echo server does.
type echoer struct {
	transport.NopHandler
	got atomic.Uint64
}

func (h *echoer) OnMessage(p *transport.Peer, m transport.Message) {
	h.got.Add(1)
	if _, err := p.Channel().SendReliable(1, m.Payload); err != nil {
		panic(err)
	}
}

// runWakePair connects a client to a server over real loopback UDP, both
// driven by an event-driven Run with the default RunConfig, and measures
// for window (wall clock) with the client sending rate 64-byte reliable
// messages a second (0: idle), which the server echoes. It returns each
// side's counts and the echoes the client received in the window.
func runWakePair(t *testing.T, rate int, window time.Duration) (srv, cli wakeCounts, echoes uint64) {
	t.Helper()
	ss, cs := &wakeSide{conn: openUDP(t)}, &wakeSide{conn: openUDP(t)}
	sh, ch := &echoer{}, &echoer{}
	server, err := transport.Listen(ss.conn, transport.EndpointConfig{}, sh)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- transport.Run(ctx, server, transport.RunConfig{OnTick: ss.onTick}) }()
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	client, err := transport.DialContext(dctx, cs.conn, ss.conn.LocalAddr(), transport.EndpointConfig{ServerKey: server.PublicKey()}, clientSink{h: ch})
	dcancel()
	if err != nil {
		cancel()
		<-done
		t.Fatal(err)
	}
	peer := client.Remote()
	go func() { done <- transport.Run(ctx, client, transport.RunConfig{OnTick: cs.onTick}) }()
	defer func() {
		cancel()
		<-done
		<-done
	}()
	time.Sleep(300 * time.Millisecond) // settle: the handshake's last datagrams, the first keep-alives

	msg := make([]byte, 64)
	s0, c0, e0 := ss.snapshot(), cs.snapshot(), ch.got.Load()
	start := time.Now()
	if rate > 0 {
		period := time.Second / time.Duration(rate)
		for i := 0; ; i++ {
			d := time.Duration(i)*period - time.Since(start)
			if d > 0 {
				time.Sleep(d)
			}
			if time.Since(start) >= window {
				break
			}
			msg[0] = byte(i)
			if err := client.Send(peer, transport.Reliable, 1, msg); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		time.Sleep(window)
	}
	return ss.snapshot().sub(s0), cs.snapshot().sub(c0), ch.got.Load() - e0
}

// clientSink counts the echoes the client receives.
type clientSink struct {
	transport.NopHandler
	h *echoer
}

func (c clientSink) OnMessage(*transport.Peer, transport.Message) { c.h.got.Add(1) }

// An event-driven Run wakes only when something is due or arrives:
// measured over real loopback UDP on the wall clock (a shared, loaded
// machine: the figures are counts, logged for the record), an idle
// connected pair makes a few rounds a second per side (keep-alives every
// 250 ms, their acks), not the 200 a second of a fixed 5 ms timer; and
// the bench's echo pattern (60 messages a second each way) about two
// rounds a message per side — its arrival and its send — with every echo
// back. The bounds are generous (a loaded machine delays, never adds,
// wake-ups); what they catch is a fixed timer or a deadline stuck in the
// past (a busy loop: thousands of rounds a second).
func TestEventLoopWakeups(t *testing.T) {
	if testing.Short() {
		t.Skip("measures over 2 s of wall clock")
	}
	const window = time.Second
	perSec := func(n uint64) float64 { return float64(n) / window.Seconds() }

	srv, cli, _ := runWakePair(t, 0, window)
	t.Logf("idle pair: server %.0f rounds/s, %d recv + %d send syscalls; client %.0f rounds/s, %d recv + %d send syscalls",
		perSec(srv.rounds), srv.recv, srv.send, perSec(cli.rounds), cli.recv, cli.send)
	for _, c := range []struct {
		side string
		n    wakeCounts
	}{{"server", srv}, {"client", cli}} {
		if perSec(c.n.rounds) > 40 {
			t.Errorf("idle %s: %.0f rounds a second (keep-alives need about 8)", c.side, perSec(c.n.rounds))
		}
	}

	const rate = 60
	srv, cli, echoes := runWakePair(t, rate, window)
	msgs := float64(rate) * window.Seconds()
	t.Logf("echo %d msg/s: server %.0f rounds/s, %.2f syscalls/msg (%d recv + %d send, %d datagrams in, %d out); client %.0f rounds/s, %.2f syscalls/msg (%d recv + %d send, %d in, %d out); %d echoes",
		rate, perSec(srv.rounds), float64(srv.recv+srv.send)/msgs, srv.recv, srv.send, srv.in, srv.out,
		perSec(cli.rounds), float64(cli.recv+cli.send)/msgs, cli.recv, cli.send, cli.in, cli.out, echoes)
	if float64(echoes) < msgs*0.9 {
		t.Errorf("%d echoes of about %.0f messages in the window", echoes, msgs)
	}
	for _, c := range []struct {
		side string
		n    wakeCounts
	}{{"server", srv}, {"client", cli}} {
		if perSec(c.n.rounds) > 8*rate {
			t.Errorf("echo %s: %.0f rounds a second for %d messages a second each way", c.side, perSec(c.n.rounds), rate)
		}
	}
}
