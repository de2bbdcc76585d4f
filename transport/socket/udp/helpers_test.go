package udp_test

import (
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

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

// waitQueued polls until a datagram is in c's kernel receive queue, so a
// test can start from "a datagram is waiting" without sleeping on a guess.
func waitQueued(t *testing.T, c *udp.Conn) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := udp.Queued(c)
		if err != nil {
			t.Fatalf("SIOCINQ: %v", err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no datagram queued at %v within 5s", c.LocalAddr())
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// parked polls the goroutine dump until a goroutine whose stack holds
// frame is parked in state (as the dump's header says it, e.g. "IO
// wait"), so a test acts on a blocked call only once it is blocked, and
// returns an error if none is within 5 s. It is safe from any goroutine.
// The dump's format is the runtime's traceback, stable across releases.
func parked(frame, state string) error {
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, frame) && strings.Contains(header, "["+state) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no goroutine parked (%s) in %s within 5s:\n%s", state, frame, buf[:n])
		}
		time.Sleep(100 * time.Microsecond)
	}
}
