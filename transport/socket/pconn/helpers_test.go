package pconn_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/tickwire/tickwire/transport/socket/pconn"
)

var lo4 = netip.MustParseAddrPort("127.0.0.1:0")

// generic hides every method of a *net.UDPConn but net.PacketConn's, so
// the adapter takes its ReadFrom/WriteTo path, as for a tunnel or any
// other conn.
type generic struct{ net.PacketConn }

// listen binds a *net.UDPConn on laddr with the given socket buffer size
// (0: the system's), closed at cleanup.
func listen(t testing.TB, laddr netip.AddrPort, buffer int) *net.UDPConn {
	t.Helper()
	network := "udp"
	if laddr.Addr().Is4() {
		network = "udp4"
	}
	uc, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(laddr))
	if err != nil {
		t.Fatalf("listen %v: %v", laddr, err)
	}
	t.Cleanup(func() { uc.Close() })
	if buffer > 0 {
		if err := uc.SetReadBuffer(buffer); err != nil {
			t.Fatal(err)
		}
		if err := uc.SetWriteBuffer(buffer); err != nil {
			t.Fatal(err)
		}
	}
	return uc
}

// adapt wraps pc, closed at cleanup.
func adapt(t testing.TB, pc net.PacketConn, cfg pconn.Config) *pconn.Conn {
	t.Helper()
	c, err := pconn.New(pc, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// kinds are the two ways the adapter drives a conn.
var kinds = []struct {
	name string
	wrap func(*net.UDPConn) net.PacketConn
}{
	{"udpconn", func(uc *net.UDPConn) net.PacketConn { return uc }},
	{"generic", func(uc *net.UDPConn) net.PacketConn { return generic{uc} }},
}
