package udp_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/sockettest"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// opener opens one socket of a variant under test.
type opener func(netip.AddrPort, udp.Config) (*udp.Conn, error)

// variant is one way of opening the sockets of a pair.
type variant struct {
	name string
	open opener
	cfg  udp.Config
	// want is the feature set the variant must end up with where the
	// kernel offers everything (GSO, GRO and Timestamps are masked by
	// what the kernel supports, see kernelFeatures).
	want udp.Features
}

var variants = []variant{
	{"batched", udp.Open, udp.Config{}, udp.Features{BatchRecv: true, BatchSend: true, GSO: true, GRO: true, Timestamps: true}},
	{"batched-noGSO-noGRO", udp.Open, udp.Config{DisableGSO: true, DisableGRO: true}, udp.Features{BatchRecv: true, BatchSend: true, Timestamps: true}},
	{"batched-GSO-noGRO", udp.Open, udp.Config{DisableGRO: true}, udp.Features{BatchRecv: true, BatchSend: true, GSO: true, Timestamps: true}},
	{"batched-noGSO-GRO", udp.Open, udp.Config{DisableGSO: true}, udp.Features{BatchRecv: true, BatchSend: true, GRO: true, Timestamps: true}},
	{"batched-batch7", udp.Open, udp.Config{BatchSize: 7}, udp.Features{BatchRecv: true, BatchSend: true, GSO: true, GRO: true, Timestamps: true}},
	{"plain", udp.OpenPlain, udp.Config{}, udp.Features{Timestamps: true}},
	{"fromconn", fromConn, udp.Config{}, udp.Features{BatchRecv: true, BatchSend: true, GSO: true, GRO: true, Timestamps: true}},
	{"fromconn-noGSO-noGRO", fromConn, udp.Config{DisableGSO: true, DisableGRO: true}, udp.Features{BatchRecv: true, BatchSend: true, Timestamps: true}},
	{"batched-noTimestamps", udp.Open, udp.Config{DisableTimestamps: true}, udp.Features{BatchRecv: true, BatchSend: true, GSO: true, GRO: true}},
	{"plain-noTimestamps", udp.OpenPlain, udp.Config{DisableTimestamps: true}, udp.Features{}},
}

// fromConn is an opener through FromConn: the caller binds the socket
// with the standard library and hands it over.
func fromConn(laddr netip.AddrPort, cfg udp.Config) (*udp.Conn, error) {
	network := "udp"
	if laddr.Addr().Is4() {
		network = "udp4"
	}
	uc, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(laddr))
	if err != nil {
		return nil, err
	}
	c, err := udp.FromConn(uc, cfg)
	if err != nil {
		uc.Close()
		return nil, err
	}
	return c, nil
}

// loopbacks are the addresses tests bind: nothing leaves the machine.
var loopbacks = []struct {
	name string
	addr netip.AddrPort
}{
	{"ipv4", netip.MustParseAddrPort("127.0.0.1:0")},
	{"ipv6", netip.MustParseAddrPort("[::1]:0")},
}

// openPair opens two sockets of variant v on laddr, closed at cleanup.
func openPair(t *testing.T, v variant, laddr netip.AddrPort) (a, b *udp.Conn) {
	t.Helper()
	var err error
	if a, err = v.open(laddr, v.cfg); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = v.open(laddr, v.cfg); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// S-A5: both socket paths, in each GSO/GRO configuration, pass the suite
// the simulated link and the gnet engine pass.
func TestConformance(t *testing.T) {
	for _, v := range variants {
		for _, lb := range loopbacks {
			t.Run(v.name+"/"+lb.name, func(t *testing.T) {
				requireLoopback(t, lb.addr)
				sockettest.Run(t, func(t *testing.T) (socket.Conn, socket.Conn) {
					a, b := openPair(t, v, lb.addr)
					return a, b
				})
			})
		}
	}
}
