package gnetudp_test

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/gnetudp"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// gnetAllocsPerWakeup is what gnet v2.9.7's readUDP allocates for each
// datagram it reads: its *conn (two objects), x/sys's raw sockaddr and
// unix.Sockaddr, and the *net.UDPAddr of the source.
const gnetAllocsPerWakeup = 5

// allocAttempts bounds the retries of an allocation measurement. The
// allocation counter is process-wide, and importing gnet starts, at package
// init, the ticker goroutine of a worker pool (ants) that now and then
// allocates while waking; a real allocation in the code under test shows in
// every attempt.
const allocAttempts = 3

// TestNoAllocs proves the engine's own steady state allocates nothing: a
// WriteBatch of 64 datagrams, the ReadBatch calls that take 64 queued
// datagrams, and a TryReadBatch that finds nothing. It also measures gnet's
// share on the event loops, where gnet allocates gnetAllocsPerWakeup
// objects per wake-up: per datagram on gnet's path, a fraction of that when
// draining. It logs that share, and fails if OnTraffic adds to it.
func TestNoAllocs(t *testing.T) {
	for _, drain := range []bool{true, false} {
		for _, size := range []int{64, 1200} {
			t.Run(fmt.Sprintf("drain=%v/%dB", drain, size), func(t *testing.T) {
				testNoAllocs(t, gnetudp.Config{DisableDrain: !drain, RecvBuffer: 1 << 20, SendBuffer: 1 << 20}, size)
			})
		}
	}
}

func testNoAllocs(t *testing.T, cfg gnetudp.Config, size int) {
	const batch, runs = socket.IdealBatchSize, 50
	e := openEngine(t, cfg)
	c := openUDP(t, udp.Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20})
	// A lost datagram would block ReadBatch: bound the test.
	watchdog := time.AfterFunc(20*time.Second, func() { e.Close(); c.Close() })
	defer watchdog.Stop()
	// Finalizers of sockets earlier tests closed run after a GC and may
	// allocate: run them now, and keep the GC off while measuring.
	runFinalizers(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	toClient := messages(batch, size, c.LocalAddr())
	toEngine := messages(batch, size, e.LocalAddr())
	in := buffers(batch, 2048)

	// Write path: the client's batched socket allocates nothing on read,
	// and the engine's event loops are idle.
	var allocs float64
	for range allocAttempts {
		allocs = testing.AllocsPerRun(runs, func() {
			if n, err := e.WriteBatch(toClient); n != batch || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			for got := 0; got < batch; {
				n, err := c.ReadBatch(in[got:])
				if err != nil {
					t.Fatalf("client ReadBatch: %v", err)
				}
				got += n
			}
		})
		if allocs == 0 {
			break
		}
	}
	if allocs != 0 {
		t.Errorf("%v allocations per WriteBatch of %d, want 0", allocs, batch)
	}

	// Read path: queue a batch, then count the reads alone.
	var m readMeasure
	for range allocAttempts {
		m = measureReads(t, e, c, toEngine, in, runs)
		if m.reads == 0 {
			break
		}
	}
	if m.reads != 0 {
		t.Errorf("%v allocations per ReadBatch of %d queued datagrams, want 0", float64(m.reads)/runs, batch)
	}
	t.Logf("event loops (gnet): %.2f allocations per datagram, %.1f datagrams per wake-up",
		float64(m.loops)/(runs*batch), float64(runs*batch)/float64(m.wakeups))
	// A few allocations not of the engine's (see allocAttempts) may fall
	// in the window; one per OnTraffic call would add m.wakeups (≥ 50).
	const slack = 10
	if m.loops > gnetAllocsPerWakeup*m.wakeups+slack {
		t.Errorf("event loops: %d allocations in %d wake-ups, more than gnet's %d per wake-up: OnTraffic allocates",
			m.loops, m.wakeups, gnetAllocsPerWakeup)
	}

	for range allocAttempts {
		allocs = testing.AllocsPerRun(runs, func() {
			if n, err := e.TryReadBatch(in); n != 0 || err != nil {
				t.Fatalf("idle TryReadBatch = %d, %v", n, err)
			}
		})
		if allocs == 0 {
			break
		}
	}
	if allocs != 0 {
		t.Errorf("%v allocations per idle TryReadBatch, want 0", allocs)
	}
}

// readMeasure is what measureReads counted over its runs.
type readMeasure struct {
	reads   uint64 // allocations while reading queued datagrams
	loops   uint64 // allocations while the datagrams arrived (the event loops)
	wakeups uint64
}

// measureReads sends runs+1 batches from c to e (the first as warm-up, as
// testing.AllocsPerRun does), and counts allocations while each batch
// arrives and while it is read.
func measureReads(t *testing.T, e *gnetudp.Engine, c *udp.Conn, out, in []socket.Message, runs int) readMeasure {
	t.Helper()
	var m readMeasure
	var ms runtime.MemStats
	dump := make([]byte, 1<<20) // for waitLoopsIdle, which must not allocate
	for i := range runs + 1 {
		w0 := e.Stats().Wakeups
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		if n, err := c.WriteBatch(out); n != len(out) || err != nil {
			t.Fatalf("client WriteBatch = %d, %v", n, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for e.Stats().Queued < len(out) {
			if time.Now().After(deadline) {
				t.Fatalf("%d datagrams not queued within 5s: %+v", len(out), e.Stats())
			}
			time.Sleep(100 * time.Microsecond)
		}
		// The loop publishes the last datagram before it returns to gnet,
		// which may still allocate (it resizes its event list): wait until
		// every loop is back in epoll_wait, so that nothing of theirs falls
		// in the read window.
		waitLoopsIdle(t, dump, 5*time.Second)
		runtime.ReadMemStats(&ms)
		m1 := ms.Mallocs
		for got := 0; got < len(out); {
			n, err := e.ReadBatch(in[got:])
			if err != nil {
				t.Fatalf("ReadBatch: %v", err)
			}
			got += n
		}
		runtime.ReadMemStats(&ms)
		if i == 0 {
			continue
		}
		m.reads += ms.Mallocs - m1
		m.loops += m1 - m0
		m.wakeups += e.Stats().Wakeups - w0
	}
	return m
}
