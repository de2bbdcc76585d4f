package gnetudp_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
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

// parked polls the goroutine dump until a goroutine whose stack holds
// frame is parked in state (as the dump's header says it, e.g. "select"),
// so a test acts on a blocked call only once it is blocked, and returns
// an error if none is within timeout. Safe from any goroutine.
func parked(frame, state string, timeout time.Duration) error {
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, frame) && strings.Contains(header, "["+state) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no goroutine parked (%s) in %s within %v:\n%s", state, frame, timeout, buf[:n])
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// loopsIdle reports whether every gnet event loop is back in epoll_wait:
// each goroutine running netpoll's Polling is in a system call whose
// innermost frames are EpollWait (not the drain's recvmmsg, also a system
// call under Polling). It parses the dump in place, allocating nothing,
// so it can run inside an allocation measurement; buf must hold the whole
// dump.
func loopsIdle(buf []byte) (idle bool, loops int) {
	n := runtime.Stack(buf, true)
	dump := buf[:n]
	for len(dump) > 0 {
		var g []byte
		if i := bytes.Index(dump, sep); i >= 0 {
			g, dump = dump[:i], dump[i+len(sep):]
		} else {
			g, dump = dump, nil
		}
		if !bytes.Contains(g, polling) {
			continue
		}
		loops++
		header := g
		if i := bytes.IndexByte(g, '\n'); i >= 0 {
			header = g[:i]
		}
		// The innermost frames come first: EpollWait must precede Polling
		// with no callback (readUDP) in between.
		top := g[:bytes.Index(g, polling)]
		if !bytes.Contains(header, inSyscall) || !bytes.Contains(top, epollWait) || bytes.Contains(top, readUDP) {
			return false, loops
		}
	}
	return loops > 0, loops
}

var (
	sep       = []byte("\n\n")
	polling   = []byte("netpoll.(*Poller).Polling")
	epollWait = []byte("EpollWait")
	readUDP   = []byte("readUDP")
	inSyscall = []byte("[syscall")
)

// waitLoopsIdle polls loopsIdle until it holds, failing after timeout.
// It allocates nothing while polling (buf is the caller's).
func waitLoopsIdle(t *testing.T, buf []byte, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		idle, loops := loopsIdle(buf)
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gnet's %d event loops not all back in epoll_wait within %v:\n%s", loops, timeout, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// runFinalizers returns once every finalizer queued by a collection now
// has run (finalizers of sockets closed by earlier tests allocate, and
// must not fall in an allocation measurement). The runtime runs queued
// finalizers one batch at a time on one goroutine: a sentinel's finalizer
// queued after a first sentinel's has run comes in a later batch than
// anything queued before it, so when it runs, they all have.
func runFinalizers(t *testing.T) {
	t.Helper()
	for range 2 {
		done := make(chan struct{})
		sentinel(done)
		runtime.GC()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a finalizer did not run within 5s of a collection")
		}
	}
}

// sentinel allocates an object, unreachable once it returns, whose
// finalizer closes done. (64 bytes: the tiny allocator, whose blocks
// delay finalizers, takes only objects under 16.)
func sentinel(done chan struct{}) {
	runtime.SetFinalizer(new([64]byte), func(*[64]byte) { close(done) })
}
