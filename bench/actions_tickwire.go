package bench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/rollback/link"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// actionsTWClient is one tickwire client of an actions row: its Endpoint,
// its ClientLinks and, once connected, its rollback Client. Everything but
// connected belongs to the client's goroutine.
type actionsTWClient struct {
	ep        *transport.Endpoint
	h         *link.ClientLinks[*rollback.Store]
	c         *rollback.Client[*rollback.Store] // set by newLink, inside Poll
	connected atomic.Bool
	err       error // from newLink's sampler
}

// newActionsTWClient returns a client whose link, built when the server
// assigns its peer id, predicts a world like the server's from frame 0
// and samples one move per frame into rec.
func newActionsTWClient(s Scenario, rec *actionsRecorder) *actionsTWClient {
	cl := &actionsTWClient{}
	cl.h = link.NewClientLinks(func(p rollback.Sender) (*link.ClientLink[*rollback.Store], error) {
		if int(p) >= s.Peers {
			return nil, fmt.Errorf("bench: actions: peer id %d beyond %d peers", p, s.Peers)
		}
		w, err := newActWorld(s.Peers, s.FrameCapacity)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, 0, actMoveSize)
		sample := func(f uint32, in *rollback.InputBuffer) {
			if !rec.generate(p, f) {
				return
			}
			if err := in.Add(w.move.ID(), w.ents[p], encodeMove(buf[:0], actMoveOf(p, f))); err != nil && cl.err == nil {
				cl.err = fmt.Errorf("bench: actions: peer %d frame %d: %w", p, f, err)
			}
		}
		c, err := rollback.NewClient(w.x, p, sample, nil, rollback.ClientConfig{})
		if err != nil {
			return nil, err
		}
		l, err := link.NewClientLink(c, link.LinkConfig{})
		if err != nil {
			return nil, err
		}
		cl.c = c
		// Every side starts from the same world: the snapshot is frame 0.
		// The link would install it by itself when the server's first Flush
		// announces it; the bench installs it at once so the client is ready
		// when the lobby opens. Likewise the bench's clients tick on the
		// row's shared clock (latency is measured on one time base), where
		// a deployment runs the link's (ClientLinks.Tick).
		return l, l.InstallSnapshot(0)
	})
	return cl
}

// tick is one turn of the client's network loop: Poll, then at each frame
// boundary Client.Tick (samples and predicts the new frames) and
// ClientLinks.Flush (sends their inputs), then Flush.
func (cl *actionsTWClient) tick(clk *actionsClock, now time.Duration) error {
	if err := cl.ep.Poll(now); err != nil {
		return fmt.Errorf("bench: actions: client poll: %w", err)
	}
	if err := cl.h.Err(); err != nil {
		return err
	}
	if cl.c != nil {
		cl.connected.Store(true)
		if f, ok := clk.frame(now); ok && f > cl.c.Present() {
			// At the prediction limit the client waits for confirmations:
			// the frames it could not predict yet are sampled later.
			if err := cl.c.Tick(f); err != nil && !errors.Is(err, rollback.ErrPredictionLimit) {
				return fmt.Errorf("bench: actions: client tick %d: %w", f, err)
			}
			if cl.err != nil {
				return cl.err
			}
			if err := cl.h.Flush(); err != nil {
				return fmt.Errorf("bench: actions: client link: %w", err)
			}
		}
	}
	if err := cl.ep.Flush(now); err != nil {
		return fmt.Errorf("bench: actions: client flush: %w", err)
	}
	return nil
}

// actionsTickwire runs an actions row over tickwire: ServerLinks on a
// server Endpoint, Peers ClientLinks on client Endpoints, each client
// through its own Relay.
func actionsTickwire(ctx context.Context, s Scenario, run *actionsRun, srv *actionsServer, rec *actionsRecorder) (actionsOutcome, error) {
	var out actionsOutcome
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	channel := transport.Config{MTU: s.MTU}
	channel.Ack.MaxInFlight = s.MaxInFlight
	// Every client reaches the server from a relay on 127.0.0.1, so the
	// per-source handshake limit (meant for one player per address) is
	// raised to let all of them in at once, as in the load profile.
	scfg := transport.EndpointConfig{
		Channel:              channel,
		MaxPeers:             s.Peers,
		HandshakeRate:        1e6,
		HandshakeBurst:       4 * s.Peers,
		GlobalHandshakeRate:  1e6,
		GlobalHandshakeBurst: 4 * s.Peers,
	}
	ccfg := transport.EndpointConfig{Channel: channel}

	repl, err := rollback.NewReplicator(srv.w.log, nil)
	if err != nil {
		return out, fmt.Errorf("bench: actions: %w", err)
	}
	links := link.NewServerLinks(srv.srv, repl, link.LinkConfig{}, nil)
	serverSock, err := udp.Open(loopback, udp.Config{RecvBuffer: throughputSocketBuffer, SendBuffer: throughputSocketBuffer})
	if err != nil {
		return out, fmt.Errorf("bench: actions server socket: %w", err)
	}
	sep, err := transport.Listen(serverSock, scfg, links)
	if err != nil {
		serverSock.Close()
		return out, fmt.Errorf("bench: actions server: %w", err)
	}
	ccfg.ServerKey = sep.PublicKey()
	var relays []*Relay
	var clients []*actionsTWClient
	closeAll := func() {
		sep.Close()
		for _, c := range clients {
			c.ep.Close()
		}
		for _, r := range relays {
			r.Close()
		}
	}

	link := s.Link.config()
	for i := range s.Peers {
		r, err := NewRelay(RelayConfig{Target: serverSock.LocalAddr(), Up: link, Down: link, Seed: relaySeed(s.Link.Seed, i)})
		if err != nil {
			closeAll()
			return out, fmt.Errorf("bench: actions relay %d: %w", i, err)
		}
		relays = append(relays, r)
		sock, err := udp.Open(loopback, udp.Config{})
		if err != nil {
			closeAll()
			return out, fmt.Errorf("bench: actions client socket %d: %w", i, err)
		}
		cl := newActionsTWClient(s, rec)
		if cl.ep, err = transport.Dial(sock, r.Addr(), ccfg, cl.h, time.Since(run.clk.start)); err != nil {
			sock.Close()
			closeAll()
			return out, fmt.Errorf("bench: actions client %d: %w", i, err)
		}
		clients = append(clients, cl)
	}

	run.wg.Add(1 + len(clients))
	go run.loop(func(now time.Duration) error {
		if err := sep.Poll(now); err != nil {
			return fmt.Errorf("bench: actions: server poll: %w", err)
		}
		ticked, err := srv.tick(run.clk, now)
		if err != nil {
			return err
		}
		if ticked {
			if err := links.Flush(); err != nil {
				return fmt.Errorf("bench: actions: server link: %w", err)
			}
		}
		if err := links.Err(); err != nil {
			return fmt.Errorf("bench: actions: server link: %w", err)
		}
		if err := sep.Flush(now); err != nil {
			return fmt.Errorf("bench: actions: server flush: %w", err)
		}
		return nil
	})
	for _, cl := range clients {
		go run.loop(func(now time.Duration) error { return cl.tick(run.clk, now) })
	}
	err = run.play(ctx, s, rec, func() bool {
		for _, cl := range clients {
			if !cl.connected.Load() {
				return false
			}
		}
		return true
	})
	close(run.stop)
	run.wg.Wait()
	closeAll()
	if err == nil {
		err = run.firstErr()
	}
	if err != nil {
		return out, err
	}
	for _, r := range relays {
		out.wireBytes += int64(r.Stats().WireBytes())
	}
	out.refused = srv.refused
	return out, nil
}
