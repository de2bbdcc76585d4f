package udp_test

import (
	"net/netip"
	"testing"

	"github.com/tickwire/tickwire/transport/socket/udp"
)

// requireLoopback skips when laddr's loopback is not configured (an IPv6
// loopback is missing in some containers); IPv4 loopback must exist.
func requireLoopback(t *testing.T, laddr netip.AddrPort) {
	t.Helper()
	c, err := udp.OpenPlain(laddr, udp.Config{})
	if err != nil {
		if laddr.Addr().Is6() {
			t.Skipf("no IPv6 loopback here (%v); the IPv4 runs cover the same code", err)
		}
		t.Fatalf("cannot bind %v: %v", laddr, err)
	}
	c.Close()
}

var lo4 = netip.MustParseAddrPort("127.0.0.1:0")

// open opens a socket on laddr, closed at cleanup.
func open(t *testing.T, laddr netip.AddrPort, cfg udp.Config) *udp.Conn {
	t.Helper()
	c, err := udp.Open(laddr, cfg)
	if err != nil {
		t.Fatalf("Open(%v): %v", laddr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
