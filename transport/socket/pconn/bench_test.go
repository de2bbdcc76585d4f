package pconn_test

import (
	"fmt"
	"testing"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/pconn"
	"github.com/tickwire/tickwire/transport/socket/sockettest"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// BenchmarkLoopback moves b.N datagrams between two conns over 127.0.0.1
// with sockettest.Pump (a sender goroutine writing batches of 64, the
// benchmark goroutine reading with ReadBatch; one op is one datagram, both
// sides together): the adapter over a *net.UDPConn, over the same conn seen
// only as a net.PacketConn, and, for reference, the UDP socket's plain
// path, which makes the same one system call per datagram without the
// adapter's goroutine hand-off.
func BenchmarkLoopback(b *testing.B) {
	const bufSize = 4 << 20
	for _, size := range []int{64, 1200} {
		for _, k := range kinds {
			b.Run(fmt.Sprintf("pconn-%s/%dB", k.name, size), func(b *testing.B) {
				tx := adapt(b, k.wrap(listen(b, lo4, bufSize)), pconn.Config{})
				rx := adapt(b, k.wrap(listen(b, lo4, bufSize)), pconn.Config{})
				pump(b, tx, rx, size)
			})
		}
		b.Run(fmt.Sprintf("udp-plain/%dB", size), func(b *testing.B) {
			cfg := udp.Config{RecvBuffer: bufSize, SendBuffer: bufSize}
			tx, err := udp.OpenPlain(lo4, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer tx.Close()
			rx, err := udp.OpenPlain(lo4, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer rx.Close()
			pump(b, tx, rx, size)
		})
	}
}

// pump runs sockettest.Pump with a window the 4 MiB receive buffer holds
// many times over.
func pump(b *testing.B, tx, rx socket.Conn, size int) {
	sockettest.Pump(b, tx, rx, size, 256)
}
