package link

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

// The link's stream is the channel's highest ordered stream unless set:
// the default is the highest of a default channel, an adapter moves it to
// its channel's highest, a stream set by hand stays, and one beyond the
// channel's streams is refused with the numbers.
func TestLinkStreamBind(t *testing.T) {
	s := newLinkStream(LinkConfig{})
	if s.id != transport.DefaultOrderedStreams || !s.auto {
		t.Fatalf("default stream %d", s.id)
	}
	if err := s.bind(9); err != nil || s.id != 9 {
		t.Fatalf("bound to %d: %v", s.id, err)
	}
	s = newLinkStream(LinkConfig{Stream: 2})
	if err := s.bind(9); err != nil || s.id != 2 {
		t.Fatalf("a set stream moved to %d: %v", s.id, err)
	}
	s = newLinkStream(LinkConfig{Stream: 7})
	err := s.bind(4)
	if !errors.Is(err, rollback.ErrInvalidConfig) || !strings.Contains(err.Error(), "link stream 7 beyond the channel's 4 ordered streams") {
		t.Fatalf("stream 7 of 4: %v", err)
	}
}

// A game that sends on the link's stream by mistake gets a clear error
// from the link's next Flush, on either side (ErrStreamShared, with the
// message ids and the count; StreamShared counts them), and the link is
// not corrupted: the peer's link counts the foreign messages Malformed
// and drops them, and the session converges as if nothing had happened.
// The game's streams below the link's are the game's.
func TestLinkStreamShared(t *testing.T) {
	s := newSession(t, 11, sim(25, 5, 5), LinkConfig{})
	cl := s.addClient(0, true)
	other := s.addClient(1, true)
	s.last = 400
	for s.frame < 100 {
		s.step(true)
	}
	if cl.link.Stream() != DefaultLinkStream || cl.slink.Stream() != DefaultLinkStream {
		t.Fatalf("streams %d / %d", cl.link.Stream(), cl.slink.Stream())
	}
	// The game's own traffic on a stream below the link's is not the link's
	// business.
	for st := uint8(0); st < DefaultLinkStream; st++ {
		if _, err := cl.ce.ch.SendReliable(st, []byte("game")); err != nil {
			t.Fatal(err)
		}
	}
	// The mistake, both ways: three game messages on the link's stream.
	foreign := [][]byte{[]byte("hello"), {msgResync, 1}, {msgClock}}
	for _, p := range foreign {
		if _, err := cl.ce.ch.SendReliable(DefaultLinkStream, p); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.se.ch.SendReliable(DefaultLinkStream, p); err != nil {
			t.Fatal(err)
		}
	}
	// The links' next messages report it, once each side.
	var errs [2][]error
	s.linkErr = func(p rollback.Sender, server bool, err error) {
		if p != cl.p {
			t.Fatalf("peer %d: %v", p, err)
		}
		if server {
			errs[0] = append(errs[0], err)
		} else {
			errs[1] = append(errs[1], err)
		}
	}
	for range 60 {
		s.step(true)
	}
	for side, es := range errs {
		if len(es) != 1 || !errors.Is(es[0], ErrStreamShared) || !strings.Contains(es[0].Error(), "3 message(s) the link did not send") {
			t.Fatalf("side %d: Flush errors after the game sent on the link's stream: %v", side, es)
		}
		t.Logf("reported: %v", es[0])
	}
	if cl.link.Stats().StreamShared != 3 || cl.slink.Stats().StreamShared != 3 {
		t.Fatalf("StreamShared %d / %d", cl.link.Stats().StreamShared, cl.slink.Stats().StreamShared)
	}
	s.linkErr = nil
	// The session goes on, and converges.
	for s.frame < s.last {
		s.step(true)
	}
	s.settle(600)
	if cs, ss := cl.link.Stats(), cl.slink.Stats(); cs.Malformed != 3 || ss.Malformed != 3 || ss.Other != uint64(DefaultLinkStream) {
		t.Fatalf("foreign messages: client %+v\nserver %+v", cs, ss)
	}
	// checkConverged wants Malformed 0 on the server link: check the rest.
	cl.slink.st.Malformed = 0
	s.checkConverged()
	_ = other
}

// A client that joins without a snapshot is told where it starts: its
// link installs the baseline (frame 0, the initial state it built like
// the server's) when the server's first Flush announces it (size 0), and
// its clock is set by the first clock message — the game calls neither
// InstallSnapshot nor sets a frame. Over Endpoints and real handshakes,
// ServerLinks and ClientLinks, with the client loop of the package doc.
func TestLinkStartAnnounced(t *testing.T) {
	net := simlink.New(8)
	if err := net.SetDefaultLink(sim(25, 5, 5)); err != nil {
		t.Fatal(err)
	}
	sw := newWorld(t, rollback.LogConfig{FrameCapacity: 64}, 64)
	srv, err := rollback.NewServer(sw.x, testStep(sw), rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: sessRewind, Checksum: sw.store.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	repl, _ := rollback.NewReplicator(sw.log, nil)
	links := NewServerLinks(srv, repl, LinkConfig{}, nil)
	serverAddr := netip.MustParseAddrPort("127.0.0.1:9000")
	sconn, err := net.Listen(serverAddr)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := transport.EndpointConfig{Rand: seededRand{rand.New(rand.NewPCG(3, 1))}}
	ecfg.Channel.OrderedStreams = 6 // the link takes stream 6
	sep, err := transport.Listen(sconn, ecfg, links)
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := net.Listen(netip.MustParseAddrPort("127.0.0.1:9100"))
	var c *rollback.Client[*rollback.Store]
	h := NewClientLinks(func(p rollback.Sender) (*ClientLink[*rollback.Store], error) {
		w := newWorld(t, rollback.LogConfig{FrameCapacity: 64}, 64)
		sample := func(f uint32, in *rollback.InputBuffer) {
			_ = in.Add(w.ids.heal, w.ents[2*p+1], le32(1))
		}
		var err error
		if c, err = rollback.NewClient(w.x, p, sample, testStep(w), rollback.ClientConfig{Checksum: w.store.Checksum}); err != nil {
			return nil, err
		}
		return NewClientLink(c, LinkConfig{})
	})
	// Each side its own clock: the client's starts at 5 s.
	const clientOrigin = 5 * time.Second
	ccfg := transport.EndpointConfig{Rand: seededRand{rand.New(rand.NewPCG(4, 1))}, ServerKey: sep.PublicKey()}
	cep, err := transport.Dial(conn, serverAddr, ccfg, h, clientOrigin)
	if err != nil {
		t.Fatal(err)
	}
	var now time.Duration
	frame := uint32(0)
	for now < 4*time.Second {
		now += time.Millisecond
		net.AdvanceTo(now)
		if err := sep.Poll(now); err != nil {
			t.Fatal(err)
		}
		if f := uint32(now/tick60) + 1; f > frame {
			frame = f
			if err := srv.Tick(f); err != nil {
				t.Fatal(err)
			}
			if err := links.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := sep.Flush(now); err != nil {
			t.Fatal(err)
		}
		local := clientOrigin + now
		if err := cep.Poll(local); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Tick(local); err != nil {
			t.Fatal(err)
		}
		if err := cep.Flush(local); err != nil {
			t.Fatal(err)
		}
	}
	if links.Err() != nil || h.Err() != nil || c == nil {
		t.Fatalf("links: %v, %v", links.Err(), h.Err())
	}
	l, sl := h.Link(), links.Link(uint8(c.Peer()))
	ls, ss := l.Stats(), sl.Stats()
	t.Logf("client: baseline %d, present %d, confirmed %d (server at %d); %+v", c.Baseline(), c.Present(), c.Confirmed(), frame, ls)
	if l.Stream() != 6 || sl.Stream() != 6 {
		t.Fatalf("link streams %d / %d, want the highest, 6", l.Stream(), sl.Stream())
	}
	if ls.Starts != 1 || ss.Starts != 1 || c.Baseline() != 0 || !c.Ready() || ls.ChecksumsVerified == 0 || ls.Desyncs != 0 || ss.InputsRefused != 0 || ss.InputsAccepted < 150 {
		t.Fatalf("client link %+v\nserver link %+v", ls, ss)
	}
	// Its clock leads the server by about the round trip and
	// TargetBufferFrames: inputs arrive a few frames early.
	if d := srv.Peer(c.Peer()).AvgDepth; d < 1 || d > 6 {
		t.Fatalf("inputs arrive %.1f frames early", d)
	}
}

// LinkConfig.TickPeriod: zero is 1/60 s, 1 ms..1 s is valid, outside is
// refused with the numbers.
func TestLinkConfigTickPeriod(t *testing.T) {
	if p := (LinkConfig{}).WithDefaults().TickPeriod; p != time.Second/60 {
		t.Fatalf("default %v", p)
	}
	for _, p := range []time.Duration{time.Millisecond, time.Second / 30, time.Second} {
		if err := (LinkConfig{TickPeriod: p}).Validate(); err != nil {
			t.Fatalf("%v: %v", p, err)
		}
	}
	for _, p := range []time.Duration{-1, time.Millisecond - 1, time.Second + 1} {
		err := (LinkConfig{TickPeriod: p}).Validate()
		if !errors.Is(err, rollback.ErrInvalidConfig) || !strings.Contains(err.Error(), "outside 1ms..1s") {
			t.Fatalf("%v: %v", p, err)
		}
	}
}
