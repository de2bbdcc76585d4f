package simlink

import (
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/sockettest"
)

// TestConformance is S-A5 for the simulated link: a Conn pair passes the
// same conformance suite as the UDP socket and the gnet engine.
func TestConformance(t *testing.T) {
	// Zero delay: every datagram is readable as WriteBatch returns, so the
	// suite's blocking reads complete with no clock movement at all.
	t.Run("zero-delay", func(t *testing.T) {
		sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
			n := New(1)
			return listen(t, n, addr(1, 1000)), listen(t, n, addr(2, 2000))
		})
	})

	// Delay and a bandwidth cap (FIFO: no jitter), with a goroutine driving
	// the virtual clock, so blocked reads are woken by Advance from another
	// goroutine, as in a threaded protocol test. The driver is paced (one
	// 1 ms step per 50 µs of real time) only to keep CPU use modest; the
	// suite's own bounded waits decide pass or fail.
	t.Run("delayed", func(t *testing.T) {
		sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
			n := New(2)
			if err := n.SetDefaultLink(LinkConfig{Delay: 3 * ms, Bandwidth: 10 << 20}); err != nil {
				t.Fatal(err)
			}
			a, b := listen(t, n, addr(1, 1000)), listen(t, n, addr(2, 2000))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					n.Advance(ms)
					time.Sleep(50 * time.Microsecond)
				}
			})
			t.Cleanup(func() {
				close(stop)
				wg.Wait()
			})
			return a, b
		})
	})
}
