package transport

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
)

var budgetSeed = flag.Uint64("budget.seed", 1, "send budget bottleneck tests: the simulated network's seed")

// offer is the bottleneck tests' game: every 60 Hz tick it queues one
// reliable message on ordered stream 1, a state update on each of four
// sequenced streams and three unreliable events — offeredPerTick frame
// bytes, about 400 KB/s. Reliable sends refused with ErrQueueFull wait in
// backlog and go first at the next tick (back-pressure, never a drop).
type offer struct {
	relSize, seqSize, unrelSize int
	nextID                      int // reliable messages accepted so far
	backlog                     int // reliable messages refused, to retry
	queueFull                   int
	offeredBytes                int64 // frame bytes offered, all kinds
	unrel, seq                  int   // messages offered
	buf                         []byte
}

func newOffer() *offer {
	o := &offer{relSize: 500, seqSize: 800, unrelSize: 1000}
	o.buf = make([]byte, 1000)
	return o
}

func (o *offer) tick(ch *Channel) {
	o.backlog++
	o.offeredBytes += int64(o.relSize)
	o.retry(ch)
	for s := range 4 {
		if err := ch.SendSequenced(uint8(s), o.buf[:o.seqSize]); err == nil {
			o.seq++
			o.offeredBytes += int64(o.seqSize)
		}
	}
	for range 3 {
		if err := ch.SendUnreliable(o.buf[:o.unrelSize]); err == nil {
			o.unrel++
			o.offeredBytes += int64(o.unrelSize)
		}
	}
}

// retry sends the reliable messages back-pressure held back, in order.
func (o *offer) retry(ch *Channel) {
	for o.backlog > 0 {
		if _, err := ch.SendReliable(1, o.buf[:o.relSize]); err != nil {
			if !errors.Is(err, ErrQueueFull) {
				panic(err)
			}
			o.queueFull++
			return
		}
		o.nextID++
		o.backlog--
	}
}

// play runs the game's 60 Hz ticks from *next up to now on ch, offering
// its load (or, unless offering, only retrying what back-pressure held
// back), and moves *next past now.
func (o *offer) play(ch *Channel, now time.Duration, next *time.Duration, offering bool) {
	for ; now >= *next; *next += tick60 {
		if offering {
			o.tick(ch)
		} else {
			o.retry(ch)
		}
	}
}

// offeredRate is the frame bytes per second the game offers.
func (o *offer) offeredRate() int64 {
	return int64(o.relSize+4*o.seqSize+3*o.unrelSize) * 60
}

// budgetRun drives a (the sender, with a game offering load) and b (the
// receiver) over the rig's network, event-loop style: every millisecond
// each end reads what arrived and Flushes when its NextDeadline is due
// (or a datagram arrived); a's game ticks at 60 Hz. It records the
// queuing delay of every a→b datagram from the network's trace.
type budgetRun struct {
	r        *rig
	o        *offer
	delay    time.Duration // the link's one-way delay
	sentAt   map[uint64]time.Duration
	qdelays  []qsample
	rates    []string // the budget over time, for the log
	nextTick time.Duration
	// stalled, when set, says whether the sender's process is stalled
	// (descheduled) at now: its loop and its game do nothing, and catch
	// up afterwards, one tick per millisecond.
	stalled func(now time.Duration) bool
	// loops, when set, wake the sender and the receiver in their loop
	// styles instead of the event loop; the sender's game ticks at its
	// wake-ups (every 60 Hz tick it slept through at once).
	loops [2]*styledLoop
	// back, when set, is a game at the receiver offering its own load to
	// the sender, ticking at 60 Hz at the receiver's wake-ups.
	back     *offer
	nextBack time.Duration
}

type qsample struct {
	at, q time.Duration
}

func newBudgetRun(t *testing.T, seed uint64, link simlink.LinkConfig) *budgetRun {
	r := newRig(t, seed, Config{}, simlink.LinkConfig{Delay: link.Delay})
	br := &budgetRun{r: r, o: newOffer(), delay: link.Delay, sentAt: map[uint64]time.Duration{}}
	if err := r.net.SetLink(r.a.conn.LocalAddr(), r.b.conn.LocalAddr(), link); err != nil {
		t.Fatal(err)
	}
	aAddr := r.a.conn.LocalAddr()
	r.net.SetTrace(func(e simlink.Event) {
		if e.Src != aAddr {
			return
		}
		switch e.Kind {
		case simlink.EventSend:
			br.sentAt[e.ID] = e.At
		case simlink.EventDeliver:
			if s, ok := br.sentAt[e.ID]; ok && e.Copy == 0 {
				br.qdelays = append(br.qdelays, qsample{at: s, q: e.At - s - br.delay})
				delete(br.sentAt, e.ID)
			}
		}
	})
	return br
}

// run advances to until, offering load while offering is set.
func (br *budgetRun) run(until time.Duration, offering bool) {
	r := br.r
	for r.now < until {
		if br.stalled != nil && br.stalled(r.now) {
			r.b.eventStep(r.now)
			r.now += time.Millisecond
			r.net.AdvanceTo(r.now)
			continue
		}
		if br.loops[0] == nil || br.loops[0].due(r.now) {
			br.o.play(r.a.ch, r.now, &br.nextTick, offering)
		}
		if br.back != nil && (br.loops[1] == nil || br.loops[1].due(r.now)) {
			br.back.play(r.b.ch, r.now, &br.nextBack, offering)
		}
		if br.loops[0] != nil {
			br.loops[0].wake(r.now)
			br.loops[1].wake(r.now)
		} else {
			r.a.eventStep(r.now)
			r.b.eventStep(r.now)
		}
		if r.now%(500*time.Millisecond) == 0 {
			b := r.a.ch.Stats().Budget
			br.rates = append(br.rates, fmt.Sprintf("%v: %d KB/s q %v thr %v", r.now, b.Rate/1000, b.QueueDelay.Round(time.Millisecond), b.Threshold.Round(time.Millisecond)))
		}
		r.now += time.Millisecond
		r.net.AdvanceTo(r.now)
	}
}

// eventStep is one millisecond of an event loop at e: read what arrived,
// and Flush when the channel's NextDeadline is due or a datagram arrived.
func (e *end) eventStep(now time.Duration) {
	rx := e.ch.Stats().DatagramsReceived
	e.receive(now, 0)
	if at, _ := e.ch.NextDeadline(); at <= now || e.ch.Stats().DatagramsReceived != rx {
		e.flush(now, 0)
	}
}

// drainReliable runs 5 s more without new load and checks that every
// reliable message the game offered was accepted and arrived, in order,
// once.
func (br *budgetRun) drainReliable(t *testing.T, repro string) {
	t.Helper()
	br.run(br.r.now+5*time.Second, false)
	var ids []int
	for _, g := range br.r.b.got {
		if g.Delivery == Reliable {
			ids = append(ids, int(g.ID))
		}
	}
	if len(ids) != br.o.nextID || br.o.backlog != 0 {
		t.Errorf("%d reliable messages delivered, %d accepted (backlog %d left); %s", len(ids), br.o.nextID, br.o.backlog, repro)
	}
	for i, id := range ids {
		if id != i {
			t.Fatalf("reliable message %d delivered as #%d: out of order or duplicated; %s", id, i, repro)
		}
	}
}

// p99 is the 99th percentile queuing delay of the a→b datagrams sent in
// cappedPhase runs the bottleneck tests' capped phase, offering all the
// while: to 3 s (the estimator settling), then to 10 s. It returns the p99
// queuing delay of the datagrams sent from 3 s, how many those are, and the
// sender's wire rate over that span in bytes a second.
func (br *budgetRun) cappedPhase() (p99 time.Duration, n int, wire int64) {
	br.run(3*time.Second, true)
	sent0 := br.r.a.ch.Stats().BytesSent
	br.run(10*time.Second, true)
	p99, n = br.p99(3*time.Second, 10*time.Second)
	return p99, n, int64(br.r.a.ch.Stats().BytesSent-sent0) / 7
}

// [from, to).
func (br *budgetRun) p99(from, to time.Duration) (time.Duration, int) {
	var qs []time.Duration
	for _, s := range br.qdelays {
		if s.at >= from && s.at < to {
			qs = append(qs, s.q)
		}
	}
	if len(qs) == 0 {
		return 0, 0
	}
	slices.Sort(qs)
	return qs[len(qs)*99/100], len(qs)
}

// TestBudgetBottleneck offers twice a 200 KB/s bottleneck's rate (a deep
// 64 KB queue: 320 ms if filled) for 10 s of simulated time, then lifts
// the cap for 2 s: after the estimator settles (from 3 s on) the p99
// queuing delay stays within two ticks, every reliable message arrives,
// what was shed is counted, and once the cap lifts the send rate is back
// to the offered load within 2 s.
func TestBudgetBottleneck(t *testing.T) {
	seed := *budgetSeed
	repro := fmt.Sprintf("reproduce: go test ./transport -run 'TestBudgetBottleneck$' -budget.seed=%d -v", seed)
	const bw = 200_000
	link := simlink.LinkConfig{MTU: MaxMTU, Delay: 20 * time.Millisecond, Jitter: time.Millisecond, Bandwidth: bw, QueueLimit: 64 << 10}
	br := newBudgetRun(t, seed, link)
	r := br.r
	if br.o.offeredRate() < 2*bw {
		t.Fatalf("offered %d B/s, want at least 2× the %d B/s bottleneck", br.o.offeredRate(), bw)
	}
	br.run(10*time.Second, true)
	before, nb := br.p99(0, 3*time.Second)
	after, na := br.p99(3*time.Second, 10*time.Second)
	st := r.a.ch.Stats()
	linkSt := r.net.LinkStats(r.a.conn.LocalAddr(), r.b.conn.LocalAddr())
	t.Logf("p99 queuing delay: %v over %d datagrams before 3 s, %v over %d after; budget %+v; link %+v; reliable queue-full %d",
		before, nb, after, na, st.Budget, linkSt, br.o.queueFull)
	if after > 2*tick60 {
		t.Errorf("p99 queuing delay %v after settling, want ≤ %v; %s", after, 2*tick60, repro)
	}
	shed := st.Budget.Shed[ShedSuperseded] + st.Budget.Shed[ShedExpired]
	if shed == 0 || st.Budget.Shed[ShedRedundant] == 0 || st.Budget.PacedWaits == 0 {
		t.Errorf("shed %v, paced %d: at twice the bottleneck the budget must shed and pace; %s", st.Budget.Shed, st.Budget.PacedWaits, repro)
	}
	// The cap lifts: within 2 s the budget carries the offered load again.
	lifted := link
	lifted.Bandwidth, lifted.QueueLimit = 0, 0
	if err := r.net.SetLink(r.a.conn.LocalAddr(), r.b.conn.LocalAddr(), lifted); err != nil {
		t.Fatal(err)
	}
	// Recovered: the bytes sent over the last 250 ms cover the bytes the
	// game offered in them, and the budget's rate covers the offered rate.
	type point struct {
		at      time.Duration
		sent    uint64
		offered int64
	}
	hist := []point{{r.now, r.a.ch.Stats().BytesSent, br.o.offeredBytes}}
	liftAt, recovered := r.now, time.Duration(-1)
	for r.now < liftAt+2*time.Second {
		br.run(r.now+50*time.Millisecond, true)
		st = r.a.ch.Stats()
		hist = append(hist, point{r.now, st.BytesSent, br.o.offeredBytes})
		if len(hist) > 5 {
			p0, p1 := hist[len(hist)-6], hist[len(hist)-1]
			if recovered < 0 && int64(p1.sent-p0.sent) >= p1.offered-p0.offered && st.Budget.Rate >= br.o.offeredRate() {
				recovered = r.now - liftAt
			}
		}
	}
	t.Logf("rate over time: %v", br.rates)
	t.Logf("after the lift: recovered in %v (-1: not within 2 s); budget rate %d B/s (offered %d B/s)", recovered, st.Budget.Rate, br.o.offeredRate())
	if recovered < 0 {
		t.Errorf("2 s after the cap lifted the send rate had not recovered: rate %d B/s for %d B/s offered; %s",
			st.Budget.Rate, br.o.offeredRate(), repro)
	}

	br.drainReliable(t, repro)

	// Every unreliable or sequenced message offered was delivered, shed
	// (counted), refused by the receiver as stale, or lost in the
	// bottleneck queue (at most two per datagram it dropped).
	st = r.a.ch.Stats()
	shed = st.Budget.Shed[ShedSuperseded] + st.Budget.Shed[ShedExpired]
	linkSt = r.net.LinkStats(r.a.conn.LocalAddr(), r.b.conn.LocalAddr())
	gotU, gotS := 0, 0
	for _, g := range r.b.got {
		switch g.Delivery {
		case Unreliable:
			gotU++
		case Sequenced:
			gotS++
		}
	}
	unaccounted := br.o.unrel + br.o.seq - gotU - gotS - int(shed) - int(r.b.ch.Stats().SequencedStale) - len(r.a.ch.outMsgs)
	if maxLost := int(linkSt.QueueDrops) * 2; unaccounted < 0 || unaccounted > maxLost {
		t.Errorf("%d unreliable/sequenced messages unaccounted for (offered %d+%d, delivered %d+%d, shed %d, stale %d), link queue drops %d; %s",
			unaccounted, br.o.unrel, br.o.seq, gotU, gotS, shed, r.b.ch.Stats().SequencedStale, linkSt.QueueDrops, repro)
	}

}

// TestBudgetBottleneckStalls is TestBudgetBottleneck's capped phase with a
// sender whose process the scheduler stalls: 60 ms of nothing — no Flush,
// no tick — every 700 ms, the way a loaded machine deschedules one (on a
// loaded 2-core machine TestBudgetNetnsTBF saw stalls of 40–94 ms). Its
// loop must not come back with a burst of what it did not send meanwhile,
// nor read the acks that waited out the stall in its socket as queuing:
// the p99 queuing delay from 3 s on stays within two ticks (21.1–28.6 ms
// over seeds 1–40; 103 ms on seed 1 before the budget capped the
// carry-over), and the wire rate stays near what the stalls leave
// (178–188 KB/s over seeds 1–40; 113 KB/s on seed 1 with the carry-over
// capped but the late samples read).
func TestBudgetBottleneckStalls(t *testing.T) {
	seed := *budgetSeed
	repro := fmt.Sprintf("reproduce: go test ./transport -run 'TestBudgetBottleneckStalls$' -budget.seed=%d -v", seed)
	link := simlink.LinkConfig{MTU: MaxMTU, Delay: 20 * time.Millisecond, Jitter: time.Millisecond, Bandwidth: 200_000, QueueLimit: 64 << 10}
	br := newBudgetRun(t, seed, link)
	stalls := 0
	br.stalled = func(now time.Duration) bool {
		in := now > time.Second && now%(700*time.Millisecond) < 60*time.Millisecond
		if in && now%(700*time.Millisecond) == 0 {
			stalls++
		}
		return in
	}
	after, na, wire := br.cappedPhase()
	st := br.r.a.ch.Stats()
	t.Logf("%d stalls of 60 ms; p99 queuing delay %v over %d datagrams from 3 s; wire rate %d B/s; budget %+v; rate over time %v", stalls, after, na, wire, st.Budget, br.rates)
	if after > 2*tick60 || na == 0 {
		t.Errorf("p99 queuing delay %v over %d datagrams after settling, with the sender stalled 60 ms every 700 ms, want ≤ %v; %s", after, na, 2*tick60, repro)
	}
	// Nor are the stalls read as queuing: the acks a stalled loop reads
	// late do not cut its rate. (It sends nothing for 9 % of the time.)
	if wire < 3*link.Bandwidth/4 {
		t.Errorf("wire rate %d B/s from 3 s with the sender stalled 60 ms every 700 ms, want ≥ 3/4 of the %d B/s bottleneck; %s", wire, link.Bandwidth, repro)
	}
}

// TestBudgetRandomLoss offers the same load on a link without a bottleneck
// that drops 10 % or 20 % at random, with every pair of loop styles at the
// two ends: loss is not congestion, and the budget keeps carrying the
// offered load. (Run with two event loops only, it missed that at 20 %
// loss half the ack headers have no room for an ack delay, that a repeat
// header stated none when the first was lost, and that the mean of four
// samples tripped the growing-queue rule: with random wake-ups at one end
// the budget backed off for nothing and shed 20–50 % of the offer.)
//
// A known gap remains where both ends wake at random 1–50 ms gaps at 20 %
// loss: about four samples an interval, and a random peer's ack delays
// spread over 0–25 ms, so the mean of an interval now and then sits above
// the threshold twice. Over -budget.seed=1..30 one run of 540 backs off
// once (seed 21, loss=0.2/random-to-random, shedding 4.4 % of the offer);
// docs/TUNING.md says so.
func TestBudgetRandomLoss(t *testing.T) {
	for _, loss := range []float64{0.10, 0.20} {
		eachLoopPair(t, fmt.Sprintf("loss=%v", loss), func(t *testing.T, tx, rx loopStyle, seed uint64, repro string) {
			link := simlink.LinkConfig{MTU: MaxMTU, Delay: 25 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: loss}
			br := newBudgetRun(t, seed, link)
			r := br.r
			if err := r.net.SetLink(r.b.conn.LocalAddr(), r.a.conn.LocalAddr(), link); err != nil {
				t.Fatal(err)
			}
			br.loops = loopPair(r.a, r.b, tx, rx, rand.New(rand.NewPCG(seed, 0x1055)))
			br.run(3*time.Second, true)
			sent0, off0, shed0 := r.a.ch.Stats().BytesSent, br.o.offeredBytes, r.a.ch.Stats().Budget.ShedBytes
			br.run(10*time.Second, true)
			st := r.a.ch.Stats()
			sent, offered := int64(st.BytesSent-sent0), br.o.offeredBytes-off0
			shedFresh := int64(st.Budget.ShedBytes[ShedSuperseded]-shed0[ShedSuperseded]) + int64(st.Budget.ShedBytes[ShedExpired]-shed0[ShedExpired])
			t.Logf("3–10 s: sent %d B for %d B offered, shed %d B; budget %+v", sent, offered, shedFresh, st.Budget)
			if sent < offered*8/10 || shedFresh > offered/5 || st.Budget.Rate < br.o.offeredRate()*8/10 {
				t.Errorf("at %v%% random loss the budget collapsed: sent %d B for %d B offered (want ≥ 80 %%), shed %d B, rate %d B/s for %d B/s offered; %s",
					loss*100, sent, offered, shedFresh, st.Budget.Rate, br.o.offeredRate(), repro)
			}
		})
	}
}

// TestBudgetNoAllocs: a channel whose budget binds — pacing, shedding
// superseded, expired and redundant traffic, back-pressure on the reliable
// stream — allocates nothing in steady state.
func TestBudgetNoAllocs(t *testing.T) {
	p := newPair(t, Config{MaxSendRate: 2 * MinSendRate})
	msg := make([]byte, 200)
	offer := func() {
		p.a.SendReliable(1, msg[:64]) // ErrQueueFull once the window is full: no allocation either
		for s := range 4 {
			p.a.SendSequenced(uint8(s), msg)
		}
		for range 3 {
			p.a.SendUnreliable(msg)
		}
	}
	for range 600 {
		offer()
		p.step()
	}
	before, st0 := p.hb.messages, p.a.Stats().Budget
	if n := testing.AllocsPerRun(300, func() { offer(); p.step() }); n != 0 {
		t.Errorf("%v allocations per tick with the budget binding, want 0", n)
	}
	st := p.a.Stats().Budget
	if p.hb.messages == before || st.PacedWaits == st0.PacedWaits || st.Shed == st0.Shed {
		t.Errorf("the budget did not bind while measuring: delivered %d, paced %d → %d, shed %v → %v",
			p.hb.messages-before, st0.PacedWaits, st.PacedWaits, st0.Shed, st.Shed)
	}
}

// TestBudgetStallNoBurst: the bucket carries unused budget over only as
// long as the loop's usual gap between Flushes allows. An event loop that
// Flushes every millisecond and then stalls for 100 ms (a descheduled
// process) may send 5 ms of its rate at once, not 100 ms — the link sat
// idle meanwhile, and a burst after it only queues — while a loop that
// Flushes at 10 Hz still gets each tenth of a second's worth.
func TestBudgetStallNoBurst(t *testing.T) {
	const rate = 200_000
	var b budget
	b.init(Config{MaxSendRate: rate, MTU: MaxMTU}.WithDefaults())
	now := time.Duration(0)
	for range 500 {
		b.refill(now)
		b.spend(int(b.tokens), true) // the game offers more than the rate
		now += time.Millisecond
	}
	now += 100 * time.Millisecond
	b.refill(now)
	if limit := int64(rate/200 + MaxMTU); b.tokens > limit {
		t.Errorf("after a 100 ms stall of a 1 kHz loop: %d B may leave at once, want ≤ %d (5 ms at %d B/s and a datagram)", b.tokens, limit, rate)
	}
	var slow budget
	slow.init(Config{MaxSendRate: rate, MTU: MaxMTU}.WithDefaults())
	now = 0
	for range 50 {
		slow.refill(now)
		slow.spend(int(slow.tokens), true)
		now += 100 * time.Millisecond
	}
	slow.refill(now)
	if want := int64(rate / 10); slow.tokens < want {
		t.Errorf("a 10 Hz loop may send %d B a Flush, want ≥ %d (a tenth of a second at %d B/s)", slow.tokens, want, rate)
	}
}

// TestBudgetTwoWayRandomLoss is TestBudgetRandomLoss with a game at both
// ends: the receiver offers a lighter load of its own (a 100 B reliable
// message, four sequenced and three unreliable 100 B updates a tick,
// 48 KB/s) back to the sender, which sends many datagrams for each one it
// receives, so most of the headers it sends repeat an ack it already sent.
// Neither end's budget may count the 20 % loss as congestion: each carries
// its offer, and over the 54 budgets of a run (every pair of loop styles,
// both ends, three seeds from -budget.seed) at most one backs off at all.
// (Over seeds 1–60, 4 of 1,080 budgets backed off once; with the ack
// delay stated only in the first header after the newest seq, about one
// a seed did, and 8 of seeds 1–20 failed the carry check.)
func TestBudgetTwoWayRandomLoss(t *testing.T) {
	var backedOff []string
	for k := range uint64(3) {
		eachLoopPair(t, fmt.Sprintf("loss=0.2/seed+%d", k), func(t *testing.T, tx, rx loopStyle, seed uint64, repro string) {
			seed += k
			link := simlink.LinkConfig{MTU: MaxMTU, Delay: 25 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.2}
			br := newBudgetRun(t, seed, link)
			r := br.r
			if err := r.net.SetLink(r.b.conn.LocalAddr(), r.a.conn.LocalAddr(), link); err != nil {
				t.Fatal(err)
			}
			br.loops = loopPair(r.a, r.b, tx, rx, rand.New(rand.NewPCG(seed, 0x2A7)))
			br.back = &offer{relSize: 100, seqSize: 100, unrelSize: 100, buf: make([]byte, 100)}
			br.run(3*time.Second, true)
			type mark struct{ sent, offered, shed int64 }
			at := func(ch *Channel, o *offer) mark {
				st := ch.Stats()
				return mark{int64(st.BytesSent), o.offeredBytes, int64(st.Budget.ShedBytes[ShedSuperseded] + st.Budget.ShedBytes[ShedExpired])}
			}
			a0, b0 := at(r.a.ch, br.o), at(r.b.ch, br.back)
			br.run(10*time.Second, true)
			for _, side := range []struct {
				name string
				ch   *Channel
				o    *offer
				m0   mark
			}{{"sender", r.a.ch, br.o, a0}, {"receiver", r.b.ch, br.back, b0}} {
				m := at(side.ch, side.o)
				sent, offered, shed := m.sent-side.m0.sent, m.offered-side.m0.offered, m.shed-side.m0.shed
				b := side.ch.Stats().Budget
				t.Logf("%s 3–10 s: sent %d B for %d B offered, shed %d B; budget rate %d B/s, backoffs %d", side.name, sent, offered, shed, b.Rate, b.Backoffs)
				if sent < offered*8/10 || shed > offered/5 {
					t.Errorf("at 20%% random loss the %s's budget collapsed: sent %d B for %d B offered (want ≥ 80 %%), shed %d B, rate %d B/s, %d back-offs; %s",
						side.name, sent, offered, shed, b.Rate, b.Backoffs, repro)
				}
				if b.Backoffs > 0 {
					backedOff = append(backedOff, fmt.Sprintf("%s's %d (%s)", side.name, b.Backoffs, repro))
				}
			}
			br.drainReliable(t, repro)
		})
	}
	if len(backedOff) > 1 {
		t.Errorf("%d of 54 budgets backed off at random loss, want at most 1: %v", len(backedOff), backedOff)
	}
}

// TestBudgetRisesNeedSamples: the rule that backs off on a delay growing
// three intervals in a row (a queue building up) takes only intervals of
// at least 2·budgetSamples RTT samples: the mean of four samples moves by
// itself more than the noise the estimator has learned (a peer that acks
// at random wake-ups gives about four an interval), and three such steps
// cut senders on a clean, 20 % lossy path to 54–85 % of their offer. With
// enough samples the same growth is a queue, and it backs off.
func TestBudgetRisesNeedSamples(t *testing.T) {
	const base = 40 * time.Millisecond
	for _, tc := range []struct {
		perInterval int
		wantCut     bool
	}{{budgetSamples, false}, {2 * budgetSamples, true}} {
		var b budget
		b.init(Config{MaxSendRate: 1 << 20, MTU: MaxMTU}.WithDefaults())
		now, acked := time.Duration(0), uint64(0)
		// 10 intervals at the base RTT, then the delay grows 1.5 ms an
		// interval to 6 ms (under the 8 ms threshold), then holds.
		q := time.Duration(0)
		for i := range 20 {
			if i >= 10 {
				q = min(q+1500*time.Microsecond, 6*time.Millisecond)
			}
			for k := range tc.perInterval {
				now += budgetInterval / time.Duration(tc.perInterval)
				acked++
				b.spend(MaxMTU, true)
				if b.sample(now, base+q+time.Duration(k%2)*100*time.Microsecond) {
					b.update(now, base, 0, acked)
				}
			}
		}
		if cut := b.stats.Backoffs > 0; cut != tc.wantCut {
			t.Errorf("%d samples an interval, delay growing 1.5 ms an interval to 6 ms: %d back-offs, want a cut %v; budget %+v",
				tc.perInterval, b.stats.Backoffs, tc.wantCut, b.stats)
		}
	}
}
