package gnetudp_test

import (
	"fmt"
	"testing"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/gnetudp"
	"github.com/tickwire/tickwire/transport/socket/sockettest"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// benchVariant is a sender/receiver pairing for BenchmarkLoopback.
type benchVariant struct {
	name   string
	rx     gnetudp.Config
	sendto bool // the sender uses gnet's write path: one sendto per datagram
}

// The variants separate the read path (gnet's one recvfrom per wake-up, or
// draining with recvmmsg) from the write path (sendmmsg, or gnet's
// sendto per datagram). "gnet-sendto" is gnet as it ships; "gnet" swaps in
// the batched write path; "gnet-drain" (the default engine) also drains on
// read; "gnet-drain-sendto" isolates the write path behind a fast reader.
var benchVariants = []benchVariant{
	{"gnet-sendto", gnetudp.Config{DisableDrain: true}, true},
	{"gnet", gnetudp.Config{DisableDrain: true}, false},
	{"gnet-drain", gnetudp.Config{}, false},
	{"gnet-drain-sendto", gnetudp.Config{}, true},
}

// BenchmarkLoopback moves b.N datagrams from one engine to another over
// 127.0.0.1: a sender goroutine writes batches of 64, the benchmark
// goroutine reads them with ReadBatch. One op is one datagram, so ns/op is
// the cost per datagram of both sides together, kernel and event loop
// included, and allocs/op counts gnet's event-loop allocations too (the
// counter is process-wide). The sender keeps at most a window of
// datagrams in flight, so nothing is dropped; a drop fails the benchmark.
// It has the name and shape of BenchmarkLoopback in package
// transport/socket/udp, so that one `go test -bench` run over
// ./transport/socket/... puts gnet, batched and plain side by side.
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
	tx := openEngine(b, gnetudp.Config{SendBuffer: bufSize})
	if v.sendto {
		gnetudp.UseSendto(tx)
	}
	rxCfg := v.rx
	rxCfg.RecvBuffer = bufSize
	rx := openEngine(b, rxCfg)

	// Datagrams in flight: what the kernel buffer holds, with a generous
	// guess at its per-datagram overhead, within the engine's queue.
	rs := rx.Stats()
	window := rs.RecvBufferBytes / (2 * (size + 1024))
	window = min(max(window/64*64, 64), 256, rs.QueueLen)

	sockettest.Pump(b, tx, rx, size, window)
	rs = rx.Stats()
	if rs.QueueDrops != 0 {
		b.Fatalf("%d datagrams dropped on a full queue", rs.QueueDrops)
	}
	b.ReportMetric(rs.DatagramsPerWakeup(), "dgrams/wakeup")
	b.ReportMetric(float64(rs.Received)/float64(max(rs.RecvSyscalls, 1)), "dgrams/rsyscall")
	ts := tx.Stats()
	b.ReportMetric(float64(ts.DatagramsOut)/float64(max(ts.SendSyscalls, 1)), "dgrams/ssyscall")
}

// BenchmarkTryReadIdle is a tick loop polling a socket with nothing to
// read: the engine looks at its queues in memory; the batched UDP socket
// issues a recvmmsg that finds the socket empty.
func BenchmarkTryReadIdle(b *testing.B) {
	in := buffers(socket.IdealBatchSize, 2048)
	for _, c := range []struct {
		name string
		open func(b *testing.B) socket.Conn
	}{
		{"gnet", func(b *testing.B) socket.Conn { return openEngine(b, gnetudp.Config{}) }},
		{"udp-batched", func(b *testing.B) socket.Conn { return openUDP(b, udp.Config{}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			conn := c.open(b)
			b.ReportAllocs()
			for b.Loop() {
				if n, err := conn.TryReadBatch(in); n != 0 || err != nil {
					b.Fatalf("TryReadBatch = %d, %v", n, err)
				}
			}
		})
	}
}
