package transport_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

type counter struct {
	transport.NopHandler
	connected bool
	messages  int
}

func (c *counter) OnConnect(*transport.Peer)                    { c.connected = true }
func (c *counter) OnMessage(*transport.Peer, transport.Message) { c.messages++ }

// BenchmarkLoopbackReliable is reliable-ordered messages per second between
// two endpoints over real loopback UDP (batched sockets), one op per
// message delivered: the client keeps its reliable window full and both
// sides Poll and Flush in one loop, as fast as they can (a Flush per
// iteration, so the per-Flush burst cap of 32 datagrams is not the limit).
func BenchmarkLoopbackReliable(b *testing.B) {
	for _, size := range []int{64, 1000} {
		b.Run(map[int]string{64: "64B", 1000: "1000B"}[size], func(b *testing.B) {
			loop := netip.MustParseAddrPort("127.0.0.1:0")
			ss, err := udp.Open(loop, udp.Config{})
			if err != nil {
				b.Fatal(err)
			}
			cs, err := udp.Open(loop, udp.Config{})
			if err != nil {
				b.Fatal(err)
			}
			srvH, cliH := &counter{}, &counter{}
			srv, err := transport.Listen(ss, transport.EndpointConfig{}, srvH)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			start := time.Now()
			cli, err := transport.Dial(cs, ss.LocalAddr(), transport.EndpointConfig{ServerKey: srv.PublicKey()}, cliH, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer cli.Close()
			step := func() {
				now := time.Since(start)
				srv.Poll(now)
				cli.Poll(now)
				srv.Flush(now)
				cli.Flush(now)
			}
			for i := 0; !cliH.connected; i++ {
				if i > 100000 {
					b.Fatal("no connection")
				}
				step()
			}
			msg := make([]byte, size)
			ch := cli.Remote().Channel()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			sent := 0
			deadline := time.Now().Add(time.Minute)
			for srvH.messages < b.N {
				for sent < b.N {
					if _, err := ch.SendReliable(1, msg); errors.Is(err, transport.ErrQueueFull) {
						break
					} else if err != nil {
						b.Fatal(err)
					}
					sent++
				}
				step()
				if time.Now().After(deadline) {
					b.Fatalf("delivered %d of %d in a minute", srvH.messages, b.N)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
