package socket_test

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/tickwire/tickwire/transport/socket"
)

// TestCheck: each kind of bad message gets its sentinel and a message
// with the numbers; a good one passes without allocating.
func TestCheck(t *testing.T) {
	dst := netip.MustParseAddrPort("127.0.0.1:9")
	for _, c := range []struct {
		name string
		m    socket.Message
		want error
		says []string
	}{
		{"too large", socket.Message{Buf: make([]byte, 1300), N: 1201, Addr: dst}, socket.ErrTooLarge, []string{"1201", "1200"}},
		{"N beyond Buf", socket.Message{Buf: make([]byte, 10), N: 11, Addr: dst}, socket.ErrInvalidMessage, []string{"11", "10"}},
		{"negative N", socket.Message{Buf: make([]byte, 10), N: -2, Addr: dst}, socket.ErrInvalidMessage, []string{"-2", "10"}},
		{"zero Addr", socket.Message{Buf: make([]byte, 10), N: 10}, socket.ErrInvalidAddr, []string{"invalid AddrPort"}},
		{"good", socket.Message{Buf: make([]byte, 10), N: 10, Addr: dst}, nil, nil},
		{"good, empty", socket.Message{N: 0, Addr: dst}, nil, nil},
	} {
		err := c.m.Check(1200)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: Check = %v, want nil", c.name, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Check = %v, want an error wrapping %v", c.name, err, c.want)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %s", c.name, err, s)
			}
		}
	}
	good := socket.Message{Buf: make([]byte, 10), N: 10, Addr: dst}
	if n := testing.AllocsPerRun(100, func() { _ = good.Check(1200) }); n != 0 {
		t.Errorf("Check of a good message: %v allocations, want 0", n)
	}
}

// TestClosed: the closed error is a *net.OpError naming the operation and
// the address, and satisfies both sentinels.
func TestClosed(t *testing.T) {
	local := netip.MustParseAddrPort("127.0.0.1:4000")
	err := socket.Closed("read", local)
	if !errors.Is(err, socket.ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Closed = %v: want errors.Is for socket.ErrClosed and net.ErrClosed", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "read" || op.Source.String() != local.String() {
		t.Fatalf("Closed = %#v, want a *net.OpError for read on %v", err, local)
	}
	if op.Timeout() {
		t.Fatal("Closed reports Timeout() true: a closed socket is not a passed deadline")
	}
	if got := err.Error(); got != "read udp 127.0.0.1:4000: socket: use of closed network connection" {
		t.Fatalf("Closed message %q", got)
	}
}
