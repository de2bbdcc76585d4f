package gnetudp_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/gnetudp"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// waitStats polls e's Stats until ok accepts them, failing after timeout.
func waitStats(t *testing.T, e *gnetudp.Engine, timeout time.Duration, what string, ok func(gnetudp.Stats) bool) gnetudp.Stats {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := e.Stats()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; stats %+v", what, timeout, s)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestStats checks the counters after a known exchange: an oversize
// message refused, a datagram cut to the engine's limit on arrival, one
// cut to the reader's buffer, and one whole.
func TestStats(t *testing.T) {
	for _, drain := range []bool{true, false} {
		t.Run(fmt.Sprintf("drain=%v", drain), func(t *testing.T) {
			const limit = 100
			e := openEngine(t, gnetudp.Config{MaxDatagramSize: limit, EventLoops: 2, DisableDrain: !drain})
			c := openUDP(t, udp.Config{})
			if f := e.Features(); f.DrainRecv != drain || !f.BatchSend {
				t.Fatalf("Features() = %+v", f)
			}

			// Engine → client: 2 sent, the third refused.
			out := messages(3, 0, c.LocalAddr())
			out[0].Buf, out[0].N = make([]byte, 100), 100
			out[1].Buf, out[1].N = make([]byte, 30), 30
			out[2].Buf, out[2].N = make([]byte, limit+1), limit+1
			if n, err := e.WriteBatch(out); n != 2 || !errors.Is(err, socket.ErrTooLarge) {
				t.Fatalf("WriteBatch = %d, %v; want 2, ErrTooLarge", n, err)
			}
			readN(t, c, buffers(4, 2048), 2, 5*time.Second)

			// Client → engine: 150 B (cut to 100 on arrival), 80 B (cut to
			// the reader's 50), 20 B.
			in := messages(3, 0, e.LocalAddr())
			for i, size := range []int{150, 80, 20} {
				in[i].Buf, in[i].N = bytes.Repeat([]byte{byte(i + 1)}, size), size
			}
			if n, err := c.WriteBatch(in); n != 3 || err != nil {
				t.Fatalf("client WriteBatch = %d, %v", n, err)
			}
			waitStats(t, e, 5*time.Second, "3 datagrams queued", func(s gnetudp.Stats) bool { return s.Received == 3 })
			rd := []socket.Message{{Buf: make([]byte, 200)}, {Buf: make([]byte, 50)}, {Buf: make([]byte, 50)}}
			if n, err := e.TryReadBatch(rd); n != 3 || err != nil {
				t.Fatalf("TryReadBatch = %d, %v; want 3", n, err)
			}
			for i, want := range []int{100, 50, 20} {
				if rd[i].N != want || rd[i].Addr != c.LocalAddr() || rd[i].Buf[0] != byte(i+1) {
					t.Fatalf("datagram %d: %d bytes from %v; want %d from %v", i, rd[i].N, rd[i].Addr, want, c.LocalAddr())
				}
			}

			s := e.Stats()
			if s.DatagramsOut != 2 || s.BytesOut != 130 || s.OversizeRejected != 1 || s.SendSyscalls == 0 {
				t.Errorf("send stats %+v: want 2 out, 130 bytes, 1 oversize, ≥1 syscall", s)
			}
			if s.DatagramsIn != 3 || s.BytesIn != 170 || s.Truncated != 2 {
				t.Errorf("read stats %+v: want 3 in, 170 bytes, 2 truncated", s)
			}
			if s.Received != 3 || s.ReceivedBytes != 200 || s.QueueDrops != 0 || s.Queued != 0 {
				t.Errorf("queue stats %+v: want 3 received, 200 bytes, no drops, none queued", s)
			}
			if s.Wakeups < 1 || s.Wakeups > 3 || s.RecvSyscalls < 2*s.Wakeups {
				t.Errorf("wake-up stats %+v: want 1–3 wake-ups, 2 syscalls each at least", s)
			}
			if !drain && (s.Wakeups != 3 || s.RecvSyscalls != 6 || s.DatagramsPerWakeup() != 1) {
				t.Errorf("gnet path %+v: want one wake-up and 2 syscalls per datagram", s)
			}
			if s.EventLoops != 2 || s.QueueLen != gnetudp.DefaultQueueLen || s.RecvBufferBytes <= 0 || s.SendBufferBytes <= 0 {
				t.Errorf("fixed stats %+v", s)
			}
		})
	}
}

// TestQueueDrops fills a small queue with nobody reading: the event loop
// drops what does not fit, counts it and keeps going; the reader then gets
// the oldest datagrams, and the engine goes on delivering (the ring wraps
// several times).
func TestQueueDrops(t *testing.T) {
	for _, drain := range []bool{true, false} {
		t.Run(fmt.Sprintf("drain=%v", drain), func(t *testing.T) {
			const qlen, burst = 8, 64
			e := openEngine(t, gnetudp.Config{EventLoops: 1, QueueLen: qlen, DisableDrain: !drain})
			c := openUDP(t, udp.Config{})
			out := messages(burst, 32, e.LocalAddr())
			if n, err := c.WriteBatch(out); n != burst || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			s := waitStats(t, e, 5*time.Second, "the burst taken from the socket", func(s gnetudp.Stats) bool {
				return s.Received+s.QueueDrops == burst
			})
			if s.Received != qlen || s.QueueDrops != burst-qlen || s.Queued != qlen {
				t.Fatalf("stats %+v: want %d queued, %d dropped", s, qlen, burst-qlen)
			}
			in := buffers(burst, 64)
			if n, err := e.TryReadBatch(in); n != qlen || err != nil {
				t.Fatalf("TryReadBatch = %d, %v; want %d", n, err, qlen)
			}
			for i := range qlen {
				if !bytes.Equal(in[i].Buf[:in[i].N], out[i].Buf) {
					t.Fatalf("datagram %d is not the %dth sent", i, i)
				}
			}
			for round := range 5 {
				if n, err := c.WriteBatch(out[:qlen]); n != qlen || err != nil {
					t.Fatalf("round %d: WriteBatch = %d, %v", round, n, err)
				}
				got := readN(t, e, in, qlen, 5*time.Second)
				for i := range got {
					if !bytes.Equal(got[i], out[i].Buf) {
						t.Fatalf("round %d: datagram %d differs", round, i)
					}
				}
			}
			if d := e.Stats().QueueDrops; d != burst-qlen {
				t.Fatalf("QueueDrops = %d after reading in time, want %d", d, burst-qlen)
			}
		})
	}
}

// TestManyPeers sends from several client sockets at once to an engine
// with several event loops: everything arrives, each peer's datagrams in
// the order sent, with the right source.
func TestManyPeers(t *testing.T) {
	const peers, each = 8, 32
	e := openEngine(t, gnetudp.Config{EventLoops: 3})
	clients := make([]*udp.Conn, peers)
	for i := range clients {
		clients[i] = openUDP(t, udp.Config{})
	}
	for _, c := range clients {
		if n, err := c.WriteBatch(messages(each, 40, e.LocalAddr())); n != each || err != nil {
			t.Fatalf("WriteBatch = %d, %v", n, err)
		}
	}
	next := make(map[netip.AddrPort]int)
	in := buffers(socket.IdealBatchSize, 64)
	deadline := time.Now().Add(5 * time.Second)
	for got := 0; got < peers*each; {
		n, err := e.TryReadBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in[:n] {
			idx := int(m.Buf[0])<<8 | int(m.Buf[1])
			if idx != next[m.Addr] {
				t.Fatalf("from %v: datagram %d, want %d", m.Addr, idx, next[m.Addr])
			}
			next[m.Addr]++
		}
		got += n
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d datagrams arrived; stats %+v", got, peers*each, e.Stats())
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, c := range clients {
		if next[c.LocalAddr()] != each {
			t.Fatalf("%v: %d datagrams, want %d", c.LocalAddr(), next[c.LocalAddr()], each)
		}
	}
}

// TestPortZero opens engines on port 0 side by side: each gets its own
// port, shared by all of its event loops' sockets, and receives only what
// is sent to it.
func TestPortZero(t *testing.T) {
	engines := make([]*gnetudp.Engine, 4)
	seen := make(map[uint16]bool)
	for i := range engines {
		engines[i] = openEngine(t, gnetudp.Config{EventLoops: 3})
		p := engines[i].LocalAddr().Port()
		if p == 0 || seen[p] || engines[i].LocalAddr().Addr() != lo4.Addr() {
			t.Fatalf("engine %d bound to %v (ports so far %v)", i, engines[i].LocalAddr(), seen)
		}
		seen[p] = true
	}
	// Many source ports, so that every socket of each engine is likely hit.
	for range 8 {
		c := openUDP(t, udp.Config{})
		for i, e := range engines {
			out := messages(1, 8, e.LocalAddr())
			out[0].Buf[0] = byte(i)
			if n, err := c.WriteBatch(out); n != 1 || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
		}
	}
	for i, e := range engines {
		for _, d := range readN(t, e, buffers(8, 64), 8, 5*time.Second) {
			if d[0] != byte(i) {
				t.Fatalf("engine %d received a datagram for engine %d", i, d[0])
			}
		}
		if s := e.Stats(); s.Received != 8 {
			t.Fatalf("engine %d: %d received, want 8", i, s.Received)
		}
	}
}

// TestFixedPort opens an engine on a given port, and checks that Open
// fails cleanly (no goroutine left behind) when a socket without
// SO_REUSEPORT already holds it.
func TestFixedPort(t *testing.T) {
	holder := openUDP(t, udp.Config{})
	before := stableGoroutines()
	if _, err := gnetudp.Open(holder.LocalAddr(), gnetudp.Config{EventLoops: 2}); err == nil {
		t.Fatalf("Open on %v, held by another socket, succeeded", holder.LocalAddr())
	} else {
		t.Logf("Open on a held port: %v", err)
	}
	if n := settleGoroutines(before, 5*time.Second); n > before {
		t.Fatalf("%d goroutines after a failed Open, %d before", n, before)
	}

	addr := holder.LocalAddr()
	holder.Close()
	e, err := gnetudp.Open(addr, gnetudp.Config{EventLoops: 2})
	if err != nil {
		t.Fatalf("Open(%v) after its holder closed: %v", addr, err)
	}
	defer e.Close()
	if e.LocalAddr() != addr {
		t.Fatalf("LocalAddr() = %v, want %v", e.LocalAddr(), addr)
	}
	c := openUDP(t, udp.Config{})
	if n, err := c.WriteBatch(messages(4, 10, addr)); n != 4 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	readN(t, e, buffers(4, 64), 4, 5*time.Second)
}

func TestOpenInvalidAddr(t *testing.T) {
	if _, err := gnetudp.Open(netip.AddrPort{}, gnetudp.Config{}); !errors.Is(err, socket.ErrInvalidAddr) {
		t.Fatalf("Open(zero AddrPort) = %v, want ErrInvalidAddr", err)
	}
	e := openEngine(t, gnetudp.Config{EventLoops: 1})
	msgs := messages(1, 4, netip.MustParseAddrPort("[::1]:9"))
	if n, err := e.WriteBatch(msgs); n != 0 || !errors.Is(err, socket.ErrInvalidAddr) {
		t.Fatalf("WriteBatch to IPv6 from an IPv4 engine = %d, %v; want 0, ErrInvalidAddr", n, err)
	}
}

// TestCloseNoLeak opens engines, moves traffic both ways with a reader
// parked in ReadBatch, closes them, and checks that every goroutine they
// started (gnet's event loops and ticker, the one in gnet.Run) is gone.
func TestCloseNoLeak(t *testing.T) {
	const loops = 3
	before := stableGoroutines()
	for round := range 3 {
		base := stableGoroutines()
		e, err := gnetudp.Open(lo4, gnetudp.Config{EventLoops: loops})
		if err != nil {
			t.Fatal(err)
		}
		// EventLoops + 2 goroutines while open, as documented.
		if n := runtime.NumGoroutine(); n != base+loops+2 {
			t.Errorf("round %d: %d goroutines while open, want %d + %d", round, n, base, loops+2)
		}
		c, err := udp.Open(lo4, udp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := c.WriteBatch(messages(16, 100, e.LocalAddr())); n != 16 || err != nil {
			t.Fatalf("WriteBatch = %d, %v", n, err)
		}
		readN(t, e, buffers(16, 128), 16, 5*time.Second)
		if n, err := e.WriteBatch(messages(16, 100, c.LocalAddr())); n != 16 || err != nil {
			t.Fatalf("engine WriteBatch = %d, %v", n, err)
		}
		readN(t, c, buffers(16, 128), 16, 5*time.Second)

		readErr := make(chan error, 1)
		go func() {
			_, err := e.ReadBatch(buffers(1, 64))
			readErr <- err
		}()
		if err := parked("gnetudp.(*Engine).ReadBatch", "select", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case err := <-readErr:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("parked ReadBatch returned %v, want net.ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("parked ReadBatch still blocked 5s after Close")
		}
		if err := e.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		c.Close()
	}
	if n := settleGoroutines(before, 5*time.Second); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestLogger checks that gnet's log output reaches Config.Logger.
func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := openEngine(t, gnetudp.Config{EventLoops: 1, Logger: logger})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if out := buf.String(); !strings.Contains(out, "component=gnet") || !strings.Contains(out, "Launching gnet") {
		t.Fatalf("gnet's start-up not logged; log:\n%s", out)
	}
}

// lockedWriter serializes writes from gnet's goroutines.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
