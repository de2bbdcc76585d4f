package udp_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// benchVariant is a sender/receiver pairing for BenchmarkLoopback.
type benchVariant struct {
	name   string
	open   opener
	tx, rx udp.Config
}

var benchVariants = []benchVariant{
	{"plain", udp.OpenPlain, udp.Config{}, udp.Config{}},
	{"batched", udp.Open, udp.Config{DisableGSO: true, DisableGRO: true}, udp.Config{DisableGSO: true, DisableGRO: true}},
	{"batched+GRO", udp.Open, udp.Config{DisableGSO: true, DisableGRO: true}, udp.Config{DisableGSO: true}},
	{"batched+GSO", udp.Open, udp.Config{DisableGRO: true}, udp.Config{DisableGRO: true}},
	{"batched+GSO+GRO", udp.Open, udp.Config{}, udp.Config{}},
}

// BenchmarkLoopback moves b.N datagrams from one socket to another over
// 127.0.0.1: a sender goroutine writes batches of 64, the benchmark
// goroutine reads them with ReadBatch. One op is one datagram, so ns/op is
// the cost per datagram of both sides together, and MB/s is payload.
// The sender keeps at most a window of datagrams in flight, sized from the
// receive buffer the kernel granted, so nothing is dropped.
func BenchmarkLoopback(b *testing.B) {
	for _, v := range benchVariants {
		for _, size := range []int{64, 1200} {
			b.Run(fmt.Sprintf("%s/%dB", v.name, size), func(b *testing.B) {
				benchLoopback(b, v, size)
			})
		}
	}
}

func benchLoopback(b *testing.B, v benchVariant, size int) {
	const bufSize = 4 << 20
	v.tx.SendBuffer, v.rx.RecvBuffer = bufSize, bufSize
	tx, err := v.open(lo4, v.tx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	rx, err := v.open(lo4, v.rx)
	if err != nil {
		b.Fatal(err)
	}
	defer rx.Close()

	// Datagrams in flight, from the granted buffer and a generous guess at
	// the kernel's per-datagram overhead.
	window := rx.Stats().RecvBufferBytes / (2 * (size + 1024))
	window = min(max(window/64*64, 64), 256)

	out := make([]socket.Message, socket.IdealBatchSize)
	for i := range out {
		out[i] = socket.Message{Buf: make([]byte, size), N: size, Addr: rx.LocalAddr()}
	}
	in := make([]socket.Message, socket.IdealBatchSize)
	for i := range in {
		in[i].Buf = make([]byte, 2048)
	}
	var received atomic.Int64
	kick := make(chan struct{}, 1)
	stop := make(chan struct{})
	sendErr := make(chan error, 1)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()

	go func() { // sender
		for sent := 0; sent < b.N; {
			k := min(len(out), b.N-sent)
			for int64(sent+k)-received.Load() > int64(window) {
				select {
				case <-kick:
				case <-stop:
					return
				}
			}
			n, err := tx.WriteBatch(out[:k])
			if err != nil {
				sendErr <- err
				rx.Close()
				return
			}
			sent += n
		}
	}()
	go func() { // watchdog: a lost datagram would stall the pipeline
		var last int64 = -1
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if r := received.Load(); r == last {
					sendErr <- errors.New("no progress for 1s: datagrams lost")
					rx.Close()
					return
				} else {
					last = r
				}
			}
		}
	}()
	src := tx.LocalAddr()
	for got := 0; got < b.N; {
		n, err := rx.ReadBatch(in)
		if err != nil {
			close(stop)
			select {
			case serr := <-sendErr:
				b.Fatalf("after %d of %d: %v", got, b.N, serr)
			default:
			}
			b.Fatalf("after %d of %d: ReadBatch: %v", got, b.N, err)
		}
		if in[0].N != size || in[n-1].N != size || in[0].Addr != src {
			close(stop)
			b.Fatalf("received %d bytes from %v, want %d from %v", in[0].N, in[0].Addr, size, src)
		}
		got += n
		received.Store(int64(got))
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
	rs := rx.Stats()
	b.ReportMetric(float64(rs.DatagramsIn)/float64(max(rs.RecvSyscalls, 1)), "dgrams/rsyscall")
	ts := tx.Stats()
	b.ReportMetric(float64(ts.DatagramsOut)/float64(max(ts.SendSyscalls, 1)), "dgrams/ssyscall")
}
