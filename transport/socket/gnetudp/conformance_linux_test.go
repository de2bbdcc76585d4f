package gnetudp_test

import (
	"testing"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/gnetudp"
	"github.com/tickwire/tickwire/transport/socket/sockettest"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// S-A5: the engine passes the suite the batched UDP socket and the
// simulated link pass, in order: the kernel hashes a peer's address to one
// of the SO_REUSEPORT sockets, so all of one peer's datagrams go through
// one socket, one event loop and one FIFO queue. (Datagrams of different
// peers interleave, as on any UDP socket; the suite has one peer.)
//
// Two pairings: two engines (each side the engine, so its write path and
// its read path are both checked, in both directions), and an engine
// serving a client on the batched UDP socket, the deployment shape. The
// client's datagram limit is set to the engine's, since the engine only
// receives datagrams up to its MaxDatagramSize whole.
func TestConformance(t *testing.T) {
	configs := []struct {
		name string
		cfg  gnetudp.Config
	}{
		{"default", gnetudp.Config{}},
		{"noDrain", gnetudp.Config{DisableDrain: true}},
		{"oneLoop", gnetudp.Config{EventLoops: 1}},
		{"threeLoops", gnetudp.Config{EventLoops: 3}},
	}
	for _, c := range configs {
		t.Run("engine-engine/"+c.name, func(t *testing.T) {
			sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
				return openEngine(t, c.cfg), openEngine(t, c.cfg)
			})
		})
	}
	t.Run("udp-engine", func(t *testing.T) {
		sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
			e := openEngine(t, gnetudp.Config{})
			return openUDP(t, udp.Config{MaxDatagramSize: e.MaxDatagramSize()}), e
		})
	})
}
