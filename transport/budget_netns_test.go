package transport_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

var (
	netnsOn   = flag.Bool("budget.netns", false, "run TestBudgetNetnsTBF (root, unshare, tc; ~10 s of wall time)")
	netnsLong = flag.Bool("budget.netns.long", false, "TestBudgetNetnsTBF: 10 s at the bottleneck instead of 6 s")
)

// stampLog matches the datagrams one conn writes to the ones another reads
// (by a hash of their bytes: every datagram carries its own seq) and keeps
// each one's time in flight: with both ends in one process on one clock,
// that is the one-way delay, and above its minimum the queuing delay.
//
// A datagram read after the reading loop did not look for
// stampStall or longer (the test process was descheduled: on a loaded
// 2-core machine for up to 280 ms) arrived at an unknown time in that gap;
// its time in flight measures the test's own stall, not the network's
// queue, so it is counted in untimed and left out of delays.
type stampLog struct {
	mu       sync.Mutex
	start    time.Time
	sent     map[uint64]time.Duration
	delays   []qstamp
	lastRead time.Duration // the reading conn's last read call
	untimed  []time.Duration
}

// stampStall is the gap between read calls of the test loop (normally
// ≤ 1 ms apart) that makes the datagrams the next call reads untimed.
const stampStall = 5 * time.Millisecond

type qstamp struct{ at, d time.Duration }

func datagramKey(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// stampConn is a socket.Conn that logs what it writes (send) or reads
// (!send) in log. It passes Wait through, so the Endpoint still sleeps on
// the UDP socket.
type stampConn struct {
	socket.Conn
	log  *stampLog
	send bool
}

func (c *stampConn) WriteBatch(msgs []socket.Message) (int, error) {
	if c.send {
		now := time.Since(c.log.start)
		c.log.mu.Lock()
		for _, m := range msgs {
			c.log.sent[datagramKey(m.Buf[:m.N])] = now
		}
		c.log.mu.Unlock()
	}
	return c.Conn.WriteBatch(msgs)
}

func (c *stampConn) read(n int, msgs []socket.Message) {
	if c.send {
		return
	}
	now := time.Since(c.log.start)
	c.log.mu.Lock()
	stalled := now-c.log.lastRead >= stampStall
	c.log.lastRead = now
	for _, m := range msgs[:n] {
		k := datagramKey(m.Buf[:m.N])
		if at, ok := c.log.sent[k]; ok {
			if stalled {
				c.log.untimed = append(c.log.untimed, at)
			} else {
				c.log.delays = append(c.log.delays, qstamp{at: at, d: now - at})
			}
			delete(c.log.sent, k)
		}
	}
	c.log.mu.Unlock()
}

func (c *stampConn) ReadBatch(msgs []socket.Message) (int, error) {
	n, err := c.Conn.ReadBatch(msgs)
	c.read(n, msgs)
	return n, err
}

func (c *stampConn) TryReadBatch(msgs []socket.Message) (int, error) {
	n, err := c.Conn.TryReadBatch(msgs)
	c.read(n, msgs)
	return n, err
}

func (c *stampConn) Wait(d time.Duration) error {
	if w, ok := c.Conn.(socket.Waiter); ok {
		return w.Wait(d)
	}
	time.Sleep(d)
	return nil
}

// tbfReceiver counts what the server receives: reliable messages on
// stream 1 must arrive in order, once.
type tbfReceiver struct {
	transport.NopHandler
	t        *testing.T
	next     uint32
	got      [4]int // by Delivery
	connects []*transport.Peer
}

func (h *tbfReceiver) OnConnect(p *transport.Peer) { h.connects = append(h.connects, p) }
func (h *tbfReceiver) OnMessage(_ *transport.Peer, m transport.Message) {
	h.got[m.Delivery]++
	if m.Delivery == transport.Reliable {
		if id := binary.LittleEndian.Uint32(m.Payload); id != h.next {
			h.t.Errorf("reliable message %d arrived, want %d", id, h.next)
		}
		h.next++
	}
}

// TestBudgetNetnsTBF is TestBudgetBottleneck on real UDP: two Endpoints on
// 127.0.0.1 in a network namespace of their own whose loopback a tbf qdisc
// caps at 200 KB/s (a 300 ms queue), the client offering twice that for
// 6 s (-budget.netns.long: 10 s), then the qdisc removed for 2 s. After the
// estimator settles (from 3 s), the p99 queuing delay of the client's
// datagrams stays within two ticks; every reliable message arrives; what
// was shed is counted; after the lift the send rate recovers within 2 s.
// Skips where it cannot create the namespace (no root, no unshare or tc),
// and unless -budget.netns is given:
//
//	go test ./transport -run TestBudgetNetnsTBF -budget.netns -v
func TestBudgetNetnsTBF(t *testing.T) {
	if !inNetns() {
		if !*netnsOn {
			// Opt-in: it takes ~10 s of wall time and real timing. On
			// 2026-12-02 it held p99 ≤ 33 ms in 5 runs of 5 on a 2-core
			// machine at load average 4–5 (19.0–28.7 ms, recovery
			// 0.82–1.49 s; docs/TUNING.md has the history), where it
			// read 40.6–41.0 ms before.
			t.Skip("real-network bottleneck test: run with -budget.netns (as root, with unshare and tc; ~10 s of wall time)")
		}
		var args []string
		if *netnsLong {
			args = append(args, "-budget.netns.long")
		}
		runInNetns(t, "TestBudgetNetnsTBF", append(args, "-budget.netns")...)
		return
	}
	const rate = 200_000
	tbfLoopback(t, rate, 4096, "300ms")
	capped := 6 * time.Second
	if *netnsLong {
		capped = 10 * time.Second
	}

	log := &stampLog{start: time.Now(), sent: map[uint64]time.Duration{}}
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	ss, err := udp.Open(loop, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := udp.Open(loop, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recv := &tbfReceiver{t: t}
	srv, err := transport.Listen(&stampConn{Conn: ss, log: log}, transport.EndpointConfig{}, recv)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sendLog := &tbfReceiver{t: t}
	cl, err := transport.Dial(&stampConn{Conn: cs, log: log, send: true}, ss.LocalAddr(), transport.EndpointConfig{ServerKey: srv.PublicKey()}, sendLog, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	now := func() time.Duration { return time.Since(log.start) }
	step := func() {
		n := now()
		srv.Poll(n)
		cl.Poll(n)
		srv.Flush(n)
		cl.Flush(n)
		at, _ := cl.NextDeadline()
		if a2, _ := srv.NextDeadline(); a2 < at {
			at = a2
		}
		if d := at - now(); d > 0 {
			time.Sleep(min(d, time.Millisecond))
		}
	}
	for len(sendLog.connects) == 0 {
		if now() > 3*time.Second {
			t.Fatal("no connection within 3 s")
		}
		step()
	}
	ch := sendLog.connects[0].Channel()

	// The game: per 60 Hz tick, one 500 B reliable message (ordered
	// stream 1), four 800 B sequenced updates, three 1000 B unreliable
	// events — 402 KB/s of frames, twice the bottleneck.
	buf := make([]byte, 1000)
	var nextID uint32
	backlog, offered := 0, int64(0)
	offeredRate := int64(500+4*800+3*1000) * 60
	retry := func() {
		for backlog > 0 {
			binary.LittleEndian.PutUint32(buf, nextID)
			if _, err := ch.SendReliable(1, buf[:500]); err != nil {
				if !errors.Is(err, transport.ErrQueueFull) {
					t.Fatal(err)
				}
				return
			}
			nextID++
			backlog--
		}
	}
	tick := func() {
		backlog++
		offered += 500
		retry()
		for s := range 4 {
			if ch.SendSequenced(uint8(s), buf[:800]) == nil {
				offered += 800
			}
		}
		for range 3 {
			if ch.SendUnreliable(buf) == nil {
				offered += 1000
			}
		}
	}
	start := now()
	var rates []string
	nextTick, nextLog := start, start
	run := func(until time.Duration, offering bool) {
		for now() < until {
			if n := now(); n >= nextTick {
				if offering {
					tick()
				} else {
					retry()
				}
				nextTick += time.Second / 60
			}
			if n := now(); n >= nextLog {
				b := ch.Stats().Budget
				rates = append(rates, fmt.Sprintf("%.1fs: %d KB/s q %v/%v", (n-start).Seconds(), b.Rate/1000, b.QueueDelay.Round(time.Millisecond), b.Threshold.Round(time.Millisecond)))
				nextLog += 250 * time.Millisecond
			}
			step()
		}
	}
	run(start+capped, true)

	log.mu.Lock()
	var before, after []time.Duration
	for _, s := range log.delays {
		switch {
		case s.at < start:
		case s.at < start+3*time.Second:
			before = append(before, s.d)
		default:
			after = append(after, s.d)
		}
	}
	untimed := 0
	for _, at := range log.untimed {
		if at >= start+3*time.Second {
			untimed++
		}
	}
	log.mu.Unlock()
	base := slices.Min(append(slices.Clone(before), after...))
	p99 := func(ds []time.Duration) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)*99/100] - base
	}
	st := ch.Stats()
	t.Logf("tbf 200 KB/s, offered %d B/s: p99 queuing delay %v over %d datagrams before 3 s, %v over %d after (base one-way %v; %d after 3 s untimed: read after the test process stalled ≥ %v); budget %+v",
		offeredRate, p99(before), len(before), p99(after), len(after), base, untimed, stampStall, st.Budget)
	if q := p99(after); q > 2*time.Second/60 || len(after) == 0 {
		t.Errorf("p99 queuing delay %v over %d datagrams after settling, want ≤ 33 ms", q, len(after))
	}
	// The untimed datagrams are left out of the p99, so they must be few:
	// a machine that stalls the test that often cannot measure 33 ms.
	if untimed*20 > len(after) {
		t.Errorf("%d of %d datagrams after settling untimed (read after the test process stalled ≥ %v): the machine is too loaded to measure the queue", untimed, untimed+len(after), stampStall)
	}
	shed := st.Budget.Shed[transport.ShedSuperseded] + st.Budget.Shed[transport.ShedExpired]
	if shed == 0 || st.Budget.PacedWaits == 0 {
		t.Errorf("shed %v, paced %d: at twice the bottleneck the budget must shed and pace", st.Budget.Shed, st.Budget.PacedWaits)
	}

	liftTBF(t)
	type point struct {
		at      time.Duration
		sent    uint64
		offered int64
	}
	liftAt := now()
	hist := []point{{liftAt, st.BytesSent, offered}}
	recovered := time.Duration(-1)
	for now() < liftAt+2*time.Second {
		run(now()+50*time.Millisecond, true)
		st = ch.Stats()
		hist = append(hist, point{now(), st.BytesSent, offered})
		if k := len(hist); k > 5 && recovered < 0 {
			p0, p1 := hist[k-6], hist[k-1]
			if int64(p1.sent-p0.sent) >= p1.offered-p0.offered && st.Budget.Rate >= offeredRate {
				recovered = now() - liftAt
			}
		}
	}
	t.Logf("rate over time: %v", rates)
	t.Logf("after the lift: recovered in %v (-1: not within 2 s); budget rate %d B/s", recovered, st.Budget.Rate)
	if recovered < 0 {
		t.Errorf("2 s after the tbf was removed the send rate had not recovered: rate %d B/s for %d B/s offered", st.Budget.Rate, offeredRate)
	}

	// Every reliable message arrives, in order, once.
	drain := now() + 5*time.Second
	for (backlog > 0 || int(recv.next) < int(nextID)) && now() < drain {
		run(now()+50*time.Millisecond, false)
	}
	if backlog > 0 || recv.next != nextID {
		t.Errorf("%d reliable messages delivered of %d accepted (%d never accepted)", recv.next, nextID, backlog)
	}
	t.Logf("delivered: %d reliable, %d sequenced, %d unreliable; shed %v (%v B)", recv.got[transport.Reliable],
		recv.got[transport.Sequenced], recv.got[transport.Unreliable], st.Budget.Shed, st.Budget.ShedBytes)
}
