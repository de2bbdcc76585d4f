package pconn_test

import (
	"net/netip"
	"testing"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/pconn"
	"github.com/tickwire/tickwire/transport/socket/sockettest"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// TestConformance: the adapter passes the suite every socket.Conn
// passes, over real loopback UDP, on both of its paths (a *net.UDPConn's
// AddrPort methods, and plain net.PacketConn), including the Wait checks,
// and facing the batched UDP socket (a client on the adapter, a server on
// udp.Open: the datagram limits set equal).
func TestConformance(t *testing.T) {
	for _, k := range kinds {
		for _, laddr := range []netip.AddrPort{lo4, netip.MustParseAddrPort("[::1]:0")} {
			name := k.name + "/ipv4"
			if laddr.Addr().Is6() {
				name = k.name + "/ipv6"
			}
			t.Run(name, func(t *testing.T) {
				if laddr.Addr().Is6() {
					requireIPv6(t)
				}
				sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
					a := adapt(t, k.wrap(listen(t, laddr, 0)), pconn.Config{})
					b := adapt(t, k.wrap(listen(t, laddr, 0)), pconn.Config{})
					return a, b
				})
			})
		}
	}
	t.Run("small-queue", func(t *testing.T) {
		// Four slots: the 64- and 100-datagram checks pass only if a full
		// ring holds the goroutine back rather than dropping.
		sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
			a := adapt(t, listen(t, lo4, 1<<20), pconn.Config{QueueLen: 4})
			b := adapt(t, listen(t, lo4, 1<<20), pconn.Config{QueueLen: 4})
			return a, b
		})
	})
	t.Run("adapter-udp", func(t *testing.T) {
		sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
			a := adapt(t, generic{listen(t, lo4, 0)}, pconn.Config{})
			b, err := udp.Open(lo4, udp.Config{MaxDatagramSize: a.MaxDatagramSize()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return a, b
		})
	})
}

// requireIPv6 skips when the IPv6 loopback is not configured (some
// containers lack it); the IPv4 runs cover the same code.
func requireIPv6(t *testing.T) {
	t.Helper()
	c, err := udp.OpenPlain(netip.MustParseAddrPort("[::1]:0"), udp.Config{})
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	c.Close()
}
