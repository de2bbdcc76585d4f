package sockettest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// Pump is the loopback throughput benchmark every socket.Conn shares, so
// their figures compare: it moves b.N datagrams of size bytes from tx to rx,
// a sender goroutine writing batches of socket.IdealBatchSize while the
// benchmark goroutine reads with ReadBatch. One op is one datagram, so
// ns/op is the cost per datagram of both sides together and MB/s is
// payload; it also reports pkts/s. The sender keeps at most window
// datagrams in flight (size it from the receive buffer, so nothing is
// dropped); a datagram lost anyway stalls the pipeline, which a watchdog
// turns into a failure after a second without progress. Pump resets the
// timer before and stops it after; the caller reports its own metrics
// afterwards and closes the conns.
func Pump(b *testing.B, tx, rx socket.Conn, size, window int) {
	out := make([]socket.Message, socket.IdealBatchSize)
	for i := range out {
		out[i] = socket.Message{Buf: make([]byte, size), N: size, Addr: rx.LocalAddr()}
	}
	in := make([]socket.Message, socket.IdealBatchSize)
	for i := range in {
		in[i].Buf = make([]byte, max(2048, size))
	}
	var received atomic.Int64
	kick := make(chan struct{}, 1)
	stop := make(chan struct{})
	sendErr := make(chan error, 2)
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
				r := received.Load()
				if r == last {
					sendErr <- errors.New("no progress for 1s: datagrams lost")
					rx.Close()
					return
				}
				last = r
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
}
