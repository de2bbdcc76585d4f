package gnetudp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket/gnetudp"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// TestAge: a datagram's Age is how long it sat in the engine's queue, from
// its event loop's OnTraffic to the read, bounded by what the test saw
// pass between the send and the read's return (one monotonic clock).
func TestAge(t *testing.T) {
	for _, drain := range []bool{true, false} {
		t.Run(fmt.Sprintf("drain=%v", drain), func(t *testing.T) {
			e := openEngine(t, gnetudp.Config{DisableDrain: !drain})
			c := openUDP(t, udp.Config{})
			watchdog := time.AfterFunc(10*time.Second, func() { e.Close() })
			defer watchdog.Stop()
			in := buffers(4, 256)
			// send writes n datagrams and waits until the engine queued them.
			send := func(n int) {
				t.Helper()
				q := e.Stats().Received
				if k, err := c.WriteBatch(messages(n, 100, e.LocalAddr())); k != n || err != nil {
					t.Fatalf("WriteBatch = %d, %v", k, err)
				}
				deadline := time.Now().Add(5 * time.Second)
				for e.Stats().Received < q+uint64(n) {
					if time.Now().After(deadline) {
						t.Fatalf("%d datagrams not queued within 5 s", n)
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
			read := func(n int) {
				t.Helper()
				for got := 0; got < n; {
					k, err := e.ReadBatch(in[got:n])
					if err != nil {
						t.Fatalf("ReadBatch: %v", err)
					}
					got += k
				}
			}

			t0 := time.Now()
			send(1)
			time.Sleep(30 * time.Millisecond)
			read(1)
			if el := time.Since(t0); in[0].Age < 30*time.Millisecond || in[0].Age > el {
				t.Errorf("queued 30 ms: Age %v, want in [30ms, %v]", in[0].Age, el)
			}

			t0 = time.Now()
			send(3)
			read(3)
			el := time.Since(t0)
			for i, m := range in[:3] {
				if m.Age < 0 || m.Age > el {
					t.Errorf("read at once, datagram %d: Age %v, want in [0, %v]", i, m.Age, el)
				}
			}
		})
	}
}
