package transport

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

var deadlineSeed = flag.Uint64("deadline.seed", 0, "TestEndpointDeadlineLoop: run only this seed")

// dueLoop drives the nodes of an epNet the way Run's event-driven loop
// does, on virtual time: a node runs a round (Poll, the game's sends,
// Flush) only when a datagram waits in its socket, its game has a message
// due (a Send wakes the loop), or its NextDeadline has come; time then
// jumps to the next of those. No node has a timer of its own, so every
// protocol timer must be a deadline for the tests below to pass.
type dueLoop struct {
	n      *epNet
	nodes  []*node
	wake   []time.Duration
	rounds []int
	// game, if set, sends node gameNode's messages due at now and returns
	// when it next has one.
	game     func(now time.Duration) time.Duration
	gameNode int
	gameAt   time.Duration
	stuck    int // consecutive rounds at one instant
	// timer, if positive, makes it the loop it replaced: each node wakes
	// this long after its last round (a fixed Wait(timer)), for a datagram
	// or for its game, never for its NextDeadline.
	timer time.Duration
}

func newDueLoop(n *epNet, nodes ...*node) *dueLoop {
	l := &dueLoop{n: n, nodes: nodes, wake: make([]time.Duration, len(nodes)), rounds: make([]int, len(nodes))}
	for i := range l.wake {
		l.wake[i] = n.now
	}
	return l
}

// run drives the nodes until virtual time until, or until stop reports
// true after a round.
func (l *dueLoop) run(until time.Duration, stop func() bool) {
	t := l.n.t
	t.Helper()
	for {
		now := l.n.now
		ran := false
		for i, nd := range l.nodes {
			if nd.deaf && nd.silent {
				continue
			}
			gameDue := l.game != nil && i == l.gameNode && l.gameAt <= now
			if l.wake[i] > now && nd.conn.Stats().Queued == 0 && !gameDue {
				continue
			}
			ran = true
			l.rounds[i]++
			if !nd.deaf {
				if err := nd.ep.Poll(now); err != nil {
					nd.err = err
				}
			}
			if gameDue {
				l.gameAt = l.game(now)
			}
			if !nd.silent {
				if err := nd.ep.Flush(now); err != nil {
					nd.err = err
				}
			}
			at, ok := nd.ep.NextDeadline()
			if !ok {
				at = now + time.Hour
			}
			if l.timer > 0 {
				at = now + l.timer
			}
			l.wake[i] = max(at, now)
		}
		if stop != nil && stop() {
			return
		}
		if ran {
			if l.stuck++; l.stuck > 100 {
				t.Fatalf("seed %d: 100 rounds at %v without time moving: a deadline stuck in the past (wake-ups %v)",
					l.n.seed, now, l.wake)
			}
		}
		next := until
		for i, nd := range l.nodes {
			if !(nd.deaf && nd.silent) {
				next = min(next, l.wake[i])
			}
		}
		if d, ok := l.n.net.NextDue(); ok {
			next = min(next, d)
		}
		if l.game != nil {
			next = min(next, l.gameAt)
		}
		if next <= now {
			if ran {
				continue // due at once: run again at this instant
			}
			next = now + time.Microsecond // a datagram due now lands on the next advance
		}
		if next >= until && now >= until {
			return
		}
		l.stuck = 0
		l.n.now = min(next, until)
		l.n.net.AdvanceTo(l.n.now)
		if l.n.now >= until {
			return
		}
	}
}

// A pair of endpoints driven only by their deadlines (dueLoop) over a
// 25 ms, 10 %-loss link: the handshake completes; 10 s of 64-byte
// reliable messages at 60 Hz arrive exactly once and in order; an idle
// connected pair stays connected for 20 s on keep-alives alone, waking a
// few times a second; and a client gone silent is suspended by the server
// IdleTimeout after it was last heard — to the microsecond, since the
// loop woke for exactly that deadline. Deterministic per seed:
//
//	go test ./transport -run TestEndpointDeadlineLoop -deadline.seed=N
func TestEndpointDeadlineLoop(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if *deadlineSeed != 0 {
		seeds = []uint64{*deadlineSeed}
	}
	for _, seed := range seeds {
		ok := t.Run("", func(t *testing.T) { testDeadlineLoop(t, seed) })
		if !ok {
			t.Logf("reproduce: go test ./transport -run TestEndpointDeadlineLoop -deadline.seed=%d", seed)
		}
	}
}

func testDeadlineLoop(t *testing.T, seed uint64) {
	n := newEpNet(t, seed, epLink(25, 2, 0.10))
	srv := n.server("10.0.0.1:9000", EndpointConfig{})
	cli := n.client("10.0.0.2:5000", srv, EndpointConfig{})
	l := newDueLoop(n, srv, cli)
	connected := isConnected(cli)
	l.run(n.now+10*time.Second, connected)
	if !connected() {
		t.Fatalf("seed %d: no session after 10 s", seed)
	}

	// Traffic: 600 messages, one every 1/60 s, on ordered stream 1.
	next := map[uint8]uint32{}
	sent := 0
	l.gameNode, l.gameAt = 1, n.now
	l.game = func(now time.Duration) time.Duration {
		sendSome(t, cli.ep.Remote(), 1, next, []uint8{1}, 64)
		if sent++; sent == 600 {
			l.game = nil
		}
		return now + epTick
	}
	r0 := append([]int(nil), l.rounds...)
	l.run(n.now+10*time.Second, nil)
	if l.game != nil {
		t.Fatalf("seed %d: the game sent only %d messages in 10 s", seed, sent)
	}
	busy := []int{l.rounds[0] - r0[0], l.rounds[1] - r0[1]}

	// Idle: the messages drain, then keep-alives keep both sides alive.
	l.run(n.now+5*time.Second, nil)
	checkExactlyOnce(t, srv.rec, 1, next)
	r1 := append([]int(nil), l.rounds...)
	const idle = 20 * time.Second
	l.run(n.now+idle, nil)
	idleRounds := []int{l.rounds[0] - r1[0], l.rounds[1] - r1[1]}
	t.Logf("seed %d: 600 messages at 60 Hz: server %d rounds, client %d; idle %v: server %d rounds, client %d",
		seed, busy[0], busy[1], idle, idleRounds[0], idleRounds[1])
	if !connected() || len(srv.rec.suspends) != 0 || len(cli.rec.suspends) != 0 {
		t.Fatalf("seed %d: the idle pair lost its session: client connected %v, suspends server %v client %v",
			seed, connected(), srv.rec.suspends, cli.rec.suspends)
	}
	for i, r := range idleRounds {
		// Keep-alives every 250 ms one way and their acks: about 4 to 8
		// rounds a second per side; 200 a second would be a 5 ms timer.
		if per := float64(r) / idle.Seconds(); per > 12 {
			t.Errorf("seed %d: %s: %.1f rounds a second while idle", seed, l.nodes[i].name, per)
		}
	}
	for i, r := range busy {
		// 60 messages a second, their acks and copies: a few rounds per
		// message, never a busy loop.
		if per := float64(r) / 10; per > 8*60 {
			t.Errorf("seed %d: %s: %.1f rounds a second at 60 messages a second", seed, l.nodes[i].name, per)
		}
	}

	// Silence: the client stops; the server suspends it IdleTimeout after
	// it was last heard.
	cli.deaf, cli.silent = true, true
	p := srv.ep.Peer(cli.ep.Remote().ID())
	l.run(n.now+15*time.Second, func() bool { return len(srv.rec.suspends) > 0 })
	if len(srv.rec.suspAt) != 1 {
		t.Fatalf("seed %d: the server did not suspend the silent client in 15 s (suspends %v)", seed, srv.rec.suspends)
	}
	if want := p.lastRx + srv.ep.Config().IdleTimeout; srv.rec.suspAt[0] != want {
		t.Fatalf("seed %d: suspended at %v, want %v (last heard %v + IdleTimeout %v)",
			seed, srv.rec.suspAt[0], want, p.lastRx, srv.ep.Config().IdleTimeout)
	}
}

// A loop that sleeps until NextDeadline sends no more than the loop it
// replaces (a fixed 5 ms Wait that also wakes for datagrams and Sends):
// 600 64-byte reliable messages at 60 Hz, the game's sends jittered by
// ±1 ms as a real game's are, over 25 ms links at 0 % and 10 % loss. A
// redundant copy due exactly RedundancyInterval after the last
// transmission would leave alone microseconds before the game's next
// message, where the 5 ms timer let it ride in that message's datagram
// (20 % more bytes, 70 % more datagrams on this profile); its deadline
// waits a quarter interval longer for the ride.
func TestDeadlineLoopBytes(t *testing.T) {
	for _, loss := range []float64{0, 0.10} {
		var dgrams, bytes [2]uint64
		for k, timer := range []time.Duration{0, 5 * time.Millisecond} {
			n := newEpNet(t, 7, epLink(25, 2, loss))
			srv := n.server("10.0.0.1:9000", EndpointConfig{})
			cli := n.client("10.0.0.2:5000", srv, EndpointConfig{})
			l := newDueLoop(n, srv, cli)
			l.timer = timer
			l.run(n.now+10*time.Second, isConnected(cli))
			if !isConnected(cli)() {
				t.Fatalf("loss %v, timer %v: no session", loss, timer)
			}
			next := map[uint8]uint32{}
			sent := 0
			r := rand.New(rand.NewPCG(7, 1))
			l.gameNode, l.gameAt = 1, n.now
			l.game = func(now time.Duration) time.Duration {
				sendSome(t, cli.ep.Remote(), 1, next, []uint8{1}, 64)
				if sent++; sent == 600 {
					l.game = nil
				}
				return now + epTick - time.Millisecond + time.Duration(r.Int64N(int64(2*time.Millisecond)))
			}
			l.run(n.now+15*time.Second, nil)
			checkExactlyOnce(t, srv.rec, 1, next)
			st := cli.ep.Remote().Channel().Stats()
			dgrams[k], bytes[k] = st.DatagramsSent, st.BytesSent
			t.Logf("loss %v, %v: client %d datagrams, %d bytes, %d redundant copies, rounds %v",
				loss, map[bool]string{true: "until NextDeadline", false: "5 ms timer"}[timer == 0],
				st.DatagramsSent, st.BytesSent, st.RedundantCopies, l.rounds)
		}
		if float64(dgrams[0]) > 1.03*float64(dgrams[1]) || float64(bytes[0]) > 1.03*float64(bytes[1]) {
			t.Errorf("loss %v: the deadline loop sent %d datagrams, %d bytes; the 5 ms timer loop %d, %d",
				loss, dgrams[0], bytes[0], dgrams[1], bytes[1])
		}
	}
}

// A channel whose peer never answers keeps a deadline in the future
// through every timer — redundant copies, time-outs, the stall warning,
// StallTimeout (after which Stalled reports it and no timer is left for
// it) — so a loop sleeping until NextDeadline never spins.
func TestChannelDeadlineNeverStuck(t *testing.T) {
	var h nopHandler
	c, err := NewChannel(Config{StallWarning: time.Second, StallTimeout: 2 * time.Second}, &h, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	var sink loopSink
	now := time.Hour
	c.Flush(now, &sink)
	for i := range 20 {
		if _, err := c.SendReliable(1, []byte{byte(i), 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	flushes := 0
	for end := now + 10*time.Second; now < end; flushes++ {
		sink.out = sink.out[:0] // the peer hears nothing
		c.Flush(now, &sink)
		at, ok := c.NextDeadline()
		if !ok || at <= now {
			t.Fatalf("after a Flush at %v (%d flushes), NextDeadline %v, %v: due already with nothing to do (stalled: %v)",
				now, flushes, at, ok, c.Stalled())
		}
		now = at
	}
	if c.Stalled() == nil || c.Stats().Stalls != 1 {
		t.Fatalf("no stall after 10 s unanswered: Stalled %v, stats %+v", c.Stalled(), c.Stats())
	}
	t.Logf("10 s unanswered in %d flushes (redundant copies %d, time-outs %d)", flushes, c.Stats().RedundantCopies, c.tracker.Stats().Timeouts)
}

// Messages that Send queued past a full reliable window wait in the
// outbox for the acks that make room: a loop sleeping until NextDeadline
// sleeps meanwhile instead of spinning on the outbox, and every message
// arrives once the server answers.
func TestOutboxBackPressureNotDue(t *testing.T) {
	n := newEpNet(t, 3, epLink(25, 0, 0))
	ch := Config{ReliableWindow: 16}
	srv := n.server("10.0.0.1:9000", EndpointConfig{Channel: ch})
	cli := n.client("10.0.0.2:5000", srv, EndpointConfig{Channel: ch})
	l := newDueLoop(n, srv, cli)
	l.run(n.now+10*time.Second, isConnected(cli))
	if !isConnected(cli)() {
		t.Fatal("no session")
	}
	const msgs = 100
	l.gameNode, l.gameAt = 1, n.now
	l.game = func(now time.Duration) time.Duration {
		for i := range msgs {
			k := msgKey{from: 1, stream: 1, seq: uint32(i)}
			if err := cli.ep.Send(cli.ep.Remote(), Reliable, 1, testPayload(k, 64)); err != nil {
				t.Fatal(err)
			}
		}
		l.game = nil
		return now
	}
	srv.deaf = true // the window fills and stays full: the outbox holds the rest
	l.run(n.now+time.Second, nil)
	if left := cli.ep.outbox.n.Load(); left == 0 {
		t.Fatal("nothing was held back: the window did not fill")
	}
	srv.deaf = false
	l.run(n.now+30*time.Second, func() bool { return len(srv.rec.reliable) == msgs })
	checkExactlyOnce(t, srv.rec, 1, map[uint8]uint32{1: msgs})
}
