package simlink

import (
	"fmt"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// benchLinks are the link configs the benchmarks run over.
var benchLinks = []struct {
	name string
	cfg  LinkConfig
}{
	{"clean", LinkConfig{}},
	{"delay", LinkConfig{Delay: 20 * ms}},
	{"jitter+loss", LinkConfig{Delay: 20 * ms, Jitter: 5 * ms, Loss: 0.05}},
	{"burst", LinkConfig{Delay: 20 * ms, Loss: 0.05, BurstLen: 4}},
	{"all", LinkConfig{Delay: 20 * ms, Jitter: 5 * ms, Loss: 0.05, BurstLen: 2,
		Duplicate: 0.05, Bandwidth: 100 << 20, QueueLimit: 1 << 20}},
}

// BenchmarkRoundTrip measures one datagram's write, clock advance and read
// through a Network: ns/op and allocs/op are per datagram. Batches of 1 and
// of socket.IdealBatchSize (64) datagrams of 1200 bytes; the clock moves
// 1 ms per batch. On the clean link every datagram must arrive.
func BenchmarkRoundTrip(b *testing.B) {
	const size = 1200
	for _, l := range benchLinks {
		for _, batch := range []int{1, socket.IdealBatchSize} {
			b.Run(fmt.Sprintf("%s/batch=%d", l.name, batch), func(b *testing.B) {
				n, src, dst := pair(b, 1, l.cfg)
				out := make([]socket.Message, batch)
				for i := range out {
					out[i] = socket.Message{Buf: make([]byte, size), N: size, Addr: dst.LocalAddr()}
				}
				in := make([]socket.Message, socket.IdealBatchSize)
				for i := range in {
					in[i].Buf = make([]byte, 1500)
				}
				got := 0
				round := func() {
					if _, err := src.WriteBatch(out); err != nil {
						b.Fatal(err)
					}
					n.Advance(time.Millisecond)
					for {
						k, err := dst.TryReadBatch(in)
						if err != nil {
							b.Fatal(err)
						}
						got += k
						if k < len(in) {
							break
						}
					}
				}
				for range 100 { // reach steady state: pools, rings, heap
					round()
				}
				b.SetBytes(size)
				b.ReportAllocs()
				sent, got := 0, 0
				for b.Loop() {
					if sent%batch == 0 {
						round()
					}
					sent++
				}
				if l.name == "clean" && got < sent-batch {
					b.Fatalf("clean link: sent %d, read %d", sent, got)
				}
			})
		}
	}
}

// BenchmarkDecide measures one impairment decision of a standalone Model:
// the per-datagram cost a UDP relay pays.
func BenchmarkDecide(b *testing.B) {
	for _, l := range benchLinks {
		b.Run(l.name, func(b *testing.B) {
			m, err := NewModel(l.cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			now := time.Duration(0)
			for b.Loop() {
				now += 10 * time.Microsecond
				if v := m.Decide(now, 1200); v.Drop == DropTooLarge {
					b.Fatal("1200 bytes refused")
				}
			}
		})
	}
}
