package udp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// TestNoAllocs proves the steady state allocates nothing: one WriteBatch
// of 64 datagrams over loopback and the ReadBatch calls that receive them,
// and a TryReadBatch that finds nothing, on every socket variant. (On Linux the plain socket's standard-library
// calls and its non-blocking receive allocate nothing either.)
func TestNoAllocs(t *testing.T) {
	for _, v := range variants {
		for _, size := range []int{64, 1200} {
			t.Run(fmt.Sprintf("%s/%dB", v.name, size), func(t *testing.T) {
				cfg := v.cfg
				cfg.RecvBuffer, cfg.SendBuffer = 1<<20, 1<<20
				a, b := openPair(t, variant{v.name, v.open, cfg, v.want}, lo4)
				out := make([]socket.Message, socket.IdealBatchSize)
				for i := range out {
					out[i] = socket.Message{Buf: make([]byte, size), N: size, Addr: b.LocalAddr()}
				}
				in := make([]socket.Message, socket.IdealBatchSize)
				for i := range in {
					in[i].Buf = make([]byte, 2048)
				}
				// A lost datagram would block ReadBatch: bound the test.
				watchdog := time.AfterFunc(20*time.Second, func() { b.Close() })
				defer watchdog.Stop()
				allocs := testing.AllocsPerRun(50, func() {
					if n, err := a.WriteBatch(out); n != len(out) || err != nil {
						t.Fatalf("WriteBatch = %d, %v", n, err)
					}
					for got := 0; got < len(in); {
						n, err := b.ReadBatch(in[got:])
						if err != nil {
							t.Fatalf("ReadBatch: %v", err)
						}
						got += n
					}
				})
				if allocs != 0 {
					t.Fatalf("%v allocations per 64-datagram batch, want 0", allocs)
				}
				// A tick loop polling an idle socket allocates nothing either.
				idle := testing.AllocsPerRun(50, func() {
					if n, err := b.TryReadBatch(in); n != 0 || err != nil {
						t.Fatalf("idle TryReadBatch = %d, %v", n, err)
					}
				})
				if idle != 0 {
					t.Fatalf("%v allocations per idle TryReadBatch, want 0", idle)
				}
			})
		}
	}
}
