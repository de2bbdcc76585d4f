package gnetudp_test

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/gnetudp"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// openEngine opens an engine on 127.0.0.1, closed at cleanup.
func openEngine(tb testing.TB, cfg gnetudp.Config) *gnetudp.Engine {
	tb.Helper()
	e, err := gnetudp.Open(lo4, cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// openUDP opens a batched UDP socket on 127.0.0.1, closed at cleanup.
func openUDP(tb testing.TB, cfg udp.Config) *udp.Conn {
	tb.Helper()
	c, err := udp.Open(lo4, cfg)
	if err != nil {
		tb.Fatalf("udp.Open: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// messages returns n messages of size bytes to dst, each datagram's first
// two bytes its index.
func messages(n, size int, dst netip.AddrPort) []socket.Message {
	msgs := make([]socket.Message, n)
	for i := range msgs {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i*7 + j)
		}
		if size >= 2 {
			b[0], b[1] = byte(i>>8), byte(i)
		}
		msgs[i] = socket.Message{Buf: b, N: size, Addr: dst}
	}
	return msgs
}

// buffers returns n read messages of size bytes each.
func buffers(n, size int) []socket.Message {
	msgs := make([]socket.Message, n)
	for i := range msgs {
		msgs[i].Buf = make([]byte, size)
	}
	return msgs
}

// readN reads exactly n datagrams from c into in, failing (after closing c
// to unblock the reader) if they do not arrive within timeout.
func readN(tb testing.TB, c socket.Conn, in []socket.Message, n int, timeout time.Duration) [][]byte {
	tb.Helper()
	type result struct {
		got [][]byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		var got [][]byte
		for len(got) < n {
			k, err := c.ReadBatch(in[:min(len(in), n-len(got))])
			if err != nil {
				done <- result{got, err}
				return
			}
			for _, m := range in[:k] {
				got = append(got, append([]byte(nil), m.Buf[:m.N]...))
			}
		}
		done <- result{got, nil}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			tb.Fatalf("after %d of %d datagrams: %v", len(r.got), n, r.err)
		}
		return r.got
	case <-time.After(timeout):
		c.Close()
		<-done
		tb.Fatalf("%d datagrams did not arrive within %v", n, timeout)
		return nil
	}
}

// stableGoroutines returns the goroutine count once it has held still for
// 20 ms (goroutines of earlier tests may still be exiting), waiting at most
// a second.
func stableGoroutines() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			break
		}
		n = m
	}
	return n
}

// settleGoroutines waits, boundedly, for the goroutine count to fall to at
// most want and returns the last count seen.
func settleGoroutines(want int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}
