package pconn_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket/pconn"
)

// TestAge: a datagram's Age is how long it sat in the adapter's ring, from
// the ReadFrom that received it to the read, bounded by what the test saw
// pass between handing it over and the read's return (one monotonic
// clock).
func TestAge(t *testing.T) {
	f := fakeConn()
	c := adapt(t, f, pconn.Config{})
	from := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:9"))
	buf := make([]byte, 64)

	t0 := time.Now()
	f.deliver(fakeRead{data: []byte("late"), from: from})
	if err := c.Wait(5 * time.Second); err != nil { // returns once it is queued
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	m, err := readOne(t, c, buf)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); m.Age < 30*time.Millisecond || m.Age > el {
		t.Errorf("queued 30 ms: Age %v, want in [30ms, %v]", m.Age, el)
	}

	t0 = time.Now()
	f.deliver(fakeRead{data: []byte("now"), from: from})
	m, err = readOne(t, c, buf)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); m.Age < 0 || m.Age > el {
		t.Errorf("read at once: Age %v, want in [0, %v]", m.Age, el)
	}
}
