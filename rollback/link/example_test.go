package link_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/rollback/link"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// A rollback server and two clients over real loopback UDP. Each side has
// its own clock (its own time origin, as separate processes would): the
// clients are told nothing but what the links send — the server's clock
// messages set their frame and lead, its start announcement says they
// start from the initial state at frame 0. Each client heals its own
// player every frame; when both have confirmed frame 60, each compares
// its checksum of that frame with the server's.
func Example() {
	const frames = 60
	loopback := netip.MustParseAddrPort("127.0.0.1:0")

	// The server: its world, its rollback server and replicator, the links
	// as its endpoint's handler.
	sg := newGame()
	srv, _ := rollback.NewServer(sg.x, nil, rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: 8, Checksum: sg.store.Checksum})
	repl, _ := rollback.NewReplicator(sg.log, nil)
	links := link.NewServerLinks(srv, repl, link.LinkConfig{}, nil)
	ssock, _ := udp.Open(loopback, udp.Config{})
	sep, _ := transport.Listen(ssock, transport.EndpointConfig{}, links)
	defer sep.Close()
	serverStart := time.Now()

	// The clients: a world built like the server's, a rollback client and
	// its link, made once the server says which peer this is.
	type client struct {
		start time.Time
		ep    *transport.Endpoint
		h     *link.ClientLinks[*rollback.Store]
		c     *rollback.Client[*rollback.Store]
		done  bool
		same  bool // its checksum of the frame equals the server's
	}
	var clients []*client
	for range 2 {
		cl := &client{start: time.Now()}
		g := newGame()
		cl.h = link.NewClientLinks(func(p rollback.Sender) (*link.ClientLink[*rollback.Store], error) {
			sample := func(f uint32, in *rollback.InputBuffer) {
				_ = in.Add(g.heal, g.players[p], binary.LittleEndian.AppendUint32(nil, 1))
			}
			c, err := rollback.NewClient(g.x, p, sample, nil, rollback.ClientConfig{Checksum: g.store.Checksum})
			if err != nil {
				return nil, err
			}
			cl.c = c
			return link.NewClientLink(c, link.LinkConfig{})
		})
		sock, _ := udp.Open(loopback, udp.Config{})
		cl.ep, _ = transport.Dial(sock, ssock.LocalAddr(), transport.EndpointConfig{ServerKey: sep.PublicKey()}, cl.h, time.Since(cl.start))
		defer cl.ep.Close()
		clients = append(clients, cl)
	}

	// The loops. Each side would run its own; here one goroutine turns all
	// three, each on its own clock.
	frame := uint32(0)
	for remaining, deadline := len(clients), serverStart.Add(10*time.Second); remaining > 0 && time.Now().Before(deadline); {
		now := time.Since(serverStart)
		_ = sep.Poll(now)
		if f := uint32(now/link.DefaultTickPeriod) + 1; f > frame {
			frame = f
			_ = srv.Tick(f)
			_ = links.Flush()
		}
		_ = sep.Flush(now)

		for i, cl := range clients {
			now := time.Since(cl.start)
			_ = cl.ep.Poll(now)
			if _, err := cl.h.Tick(now); err != nil {
				fmt.Println("client", i, err)
				return
			}
			_ = cl.ep.Flush(now)

			if cl.c != nil && !cl.done && cl.c.Confirmed() >= frames {
				mine, _ := cl.c.Checksum(frames)
				theirs, final, _ := srv.Checksum(frames)
				cl.same = final && mine == theirs
				cl.done = true
				remaining--
			}
		}
		time.Sleep(time.Millisecond)
	}
	// In client order: which one confirms first is the network's choice.
	for i, cl := range clients {
		if !cl.done {
			fmt.Println("client", i, "did not confirm frame", frames, "within 10 s")
			continue
		}
		fmt.Printf("client %d: frame %d confirmed, checksum equals the server's: %v\n", i, frames, cl.same)
	}
	// Output:
	// client 0: frame 60 confirmed, checksum equals the server's: true
	// client 1: frame 60 confirmed, checksum equals the server's: true
}

// game is one side's world: a store with a player entity per peer (0..3)
// and one action, heal (+amount on the player's hp). Every side builds it
// the same way, so every side starts from the same state at frame 0.
type game struct {
	store   *rollback.Store
	log     *rollback.ActionLog
	x       *rollback.Executor[*rollback.Store]
	heal    rollback.ActionTypeID
	players [4]rollback.Entity
}

func newGame() *game {
	const hp rollback.ComponentID = 0
	g := &game{}
	g.store, _ = rollback.NewStore(rollback.StoreConfig{Components: []rollback.ComponentSpec{{Name: "hp", Size: 4}}})
	for p := range g.players {
		g.players[p], _ = g.store.Create(rollback.Sender(p))
	}
	reg := rollback.NewRegistry[*rollback.Store]()
	g.heal, _ = reg.Register(rollback.ActionType[*rollback.Store]{
		Name: "heal", MinSize: 4, MaxSize: 4, Writes: []rollback.ComponentID{hp},
		Apply: func(w *rollback.Store, a rollback.Action) error {
			v, err := w.Component(a.Entity, hp)
			if err != nil {
				return err
			}
			binary.LittleEndian.PutUint32(v, binary.LittleEndian.Uint32(v)+binary.LittleEndian.Uint32(a.Payload))
			return nil
		},
	})
	g.log, _ = rollback.NewActionLog(rollback.LogConfig{})
	g.x, _ = rollback.NewExecutor(reg, g.log, g.store)
	return g
}
