package link

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/rollback"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

// seededRand is a deterministic io.Reader for the endpoints' secrets.
type seededRand struct{ r *rand.Rand }

func (s seededRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(s.r.Uint32())
	}
	return len(p), nil
}

// The action stream over real Endpoints: a server and three clients
// connected by the handshake on sim(25, 5, 10), the links created by
// ServerLinks/ClientLinks as the endpoint admits each client (the rollback
// peer id is the endpoint's peer id), inputs predicted by the clients and
// replayed by the server, final frames replicated back. Every client
// verifies the server's checksum of final frames against its own state
// and none ever differs.
func TestEndpointLinks(t *testing.T) {
	net := simlink.New(5)
	if err := net.SetDefaultLink(sim(25, 5, 10)); err != nil {
		t.Fatal(err)
	}
	sw := newWorld(t, rollback.LogConfig{FrameCapacity: 64}, 64)
	srv, err := rollback.NewServer(sw.x, testStep(sw), rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: sessRewind, Checksum: sw.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	repl, err := rollback.NewReplicator(sw.log, nil)
	if err != nil {
		t.Fatal(err)
	}
	links := NewServerLinks(srv, repl, LinkConfig{}, nil)
	serverAddr := netip.MustParseAddrPort("127.0.0.1:9000")
	sconn, err := net.Listen(serverAddr)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := func(seed uint64) transport.EndpointConfig {
		return transport.EndpointConfig{Rand: seededRand{rand.New(rand.NewPCG(seed, 1))}}
	}
	sep, err := transport.Listen(sconn, ecfg(1), links)
	if err != nil {
		t.Fatal(err)
	}

	type client struct {
		ep *transport.Endpoint
		h  *ClientLinks[*rollback.Store]
		c  *rollback.Client[*rollback.Store]
	}
	var clients []*client
	for i := range 3 {
		conn, err := net.Listen(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(10 + i)}), 9000))
		if err != nil {
			t.Fatal(err)
		}
		cl := &client{}
		cl.h = NewClientLinks(func(p rollback.Sender) (*ClientLink[*rollback.Store], error) {
			w := newWorld(t, rollback.LogConfig{FrameCapacity: 64}, 64)
			rng := rand.New(rand.NewPCG(uint64(p)+1, 77))
			sample := func(f uint32, in *rollback.InputBuffer) {
				in.Add(w.ids.move.ID(), w.ents[2*p], w.ids.move.Encode(nil, Move{rng.Int32N(5) - 2, rng.Int32N(5) - 2}))
			}
			c, err := rollback.NewClient(w.x, p, sample, testStep(w), rollback.ClientConfig{Checksum: w.store.Checksum})
			if err != nil {
				return nil, err
			}
			cl.c = c
			l, err := NewClientLink(c, LinkConfig{})
			if err != nil {
				return nil, err
			}
			// Every client starts from the initial state, frame 0.
			return l, l.InstallSnapshot(0)
		})
		ccfg := ecfg(uint64(100 + i))
		ccfg.ServerKey = sep.PublicKey()
		if cl.ep, err = transport.Dial(conn, serverAddr, ccfg, cl.h, 0); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
	}

	var now time.Duration
	frame := uint32(0)
	const frames = 600
	// A lobby: the game starts once every client is connected (a client
	// joining a running game needs a snapshot: TestLinkSnapshotJoin).
	started := false
	for tick := 0; tick < 2000+frames; tick++ {
		now += time.Second / 60
		net.AdvanceTo(now)
		if err := sep.Poll(now); err != nil {
			t.Fatal(err)
		}
		if !started {
			started = true
			for _, cl := range clients {
				started = started && cl.c != nil
			}
		}
		if started && frame < frames+sessRewind {
			frame++
		}
		if err := srv.Tick(frame); err != nil {
			t.Fatal(err)
		}
		if err := links.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := sep.Flush(now); err != nil {
			t.Fatal(err)
		}
		for _, cl := range clients {
			if err := cl.ep.Poll(now); err != nil {
				t.Fatal(err)
			}
			if started {
				if err := cl.c.Tick(max(min(frame+2, frames), cl.c.Present())); err != nil && !errors.Is(err, rollback.ErrPredictionLimit) {
					t.Fatal(err)
				}
			}
			if err := cl.h.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := cl.ep.Flush(now); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !started {
		t.Fatal("the clients never all connected")
	}
	if links.Err() != nil {
		t.Fatal(links.Err())
	}
	for i, cl := range clients {
		if cl.h.Err() != nil || cl.h.Link() == nil {
			t.Fatalf("client %d: link %v, error %v", i, cl.h.Link(), cl.h.Err())
		}
		ls := cl.h.Link().Stats()
		t.Logf("client %d (peer %d): confirmed %d, checksums verified %d, desyncs %d", i, cl.c.Peer(), cl.c.Confirmed(), ls.ChecksumsVerified, ls.Desyncs)
		if ls.Desyncs != 0 || ls.ChecksumsVerified < frames/2 || cl.c.Confirmed() < frames {
			t.Fatalf("client %d: %+v, confirmed %d", i, ls, cl.c.Confirmed())
		}
	}
}
