package udp_test

import (
	"fmt"
	"testing"

	"github.com/tickwire/tickwire/transport/socket/sockettest"
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
	// The same sockets bound by the caller and handed over: FromConn
	// keeps the batched path, so it costs what Open's does.
	{"fromconn+GSO+GRO", fromConn, udp.Config{}, udp.Config{}},
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

	sockettest.Pump(b, tx, rx, size, window)
	rs := rx.Stats()
	b.ReportMetric(float64(rs.DatagramsIn)/float64(max(rs.RecvSyscalls, 1)), "dgrams/rsyscall")
	ts := tx.Stats()
	b.ReportMetric(float64(ts.DatagramsOut)/float64(max(ts.SendSyscalls, 1)), "dgrams/ssyscall")
}
