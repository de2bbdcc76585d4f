package transport

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
)

// loopStyle is how a side's loop wakes: the loop styles users write.
type loopStyle uint8

const (
	loopTick60 loopStyle = iota // a fixed 60 Hz tick: read, then Flush
	loopEvent                   // event-driven: every millisecond, Flush when due or a datagram arrived
	loopRandom                  // random gaps of 1–50 ms: read, then Flush
	numLoopStyles
)

func (s loopStyle) String() string {
	return [...]string{"tick60", "event", "random"}[s]
}

// eachLoopPair runs f as a subtest "<tx>-to-<rx>" (under group when it is
// not empty) for every pair of loop styles, tx the sender's and rx the
// receiver's, with the budget seed and the command that reruns just it.
func eachLoopPair(t *testing.T, group string, f func(t *testing.T, tx, rx loopStyle, seed uint64, repro string)) {
	for tx := range numLoopStyles {
		for rx := range numLoopStyles {
			name := fmt.Sprintf("%v-to-%v", tx, rx)
			if group != "" {
				name = group + "/" + name
			}
			t.Run(name, func(t *testing.T) {
				seed := *budgetSeed
				f(t, tx, rx, seed, fmt.Sprintf("reproduce: go test ./transport -run '^%s$' -budget.seed=%d -v", t.Name(), seed))
			})
		}
	}
}

// loopPair returns the two ends' loops in the styles tx (sender a) and rx
// (receiver b), sharing rng, their first wake-ups 3 ms and 11 ms in.
func loopPair(a, b *end, tx, rx loopStyle, rng *rand.Rand) [2]*styledLoop {
	return [2]*styledLoop{
		{e: a, style: tx, r: rng, next: 3 * time.Millisecond},
		{e: b, style: rx, r: rng, next: 11 * time.Millisecond},
	}
}

// styledLoop wakes one end at its loop style's times.
type styledLoop struct {
	e     *end
	style loopStyle
	next  time.Duration
	r     *rand.Rand
}

func (l *styledLoop) due(now time.Duration) bool { return now >= l.next }

// wake runs the loop at now (a millisecond step) if it is due.
func (l *styledLoop) wake(now time.Duration) bool {
	switch l.style {
	case loopEvent:
		l.e.eventStep(now)
		return true
	case loopTick60:
		if now < l.next {
			return false
		}
		for l.next <= now {
			l.next += tick60
		}
	case loopRandom:
		if now < l.next {
			return false
		}
		l.next = now + time.Duration(1+l.r.IntN(50))*time.Millisecond
	}
	l.e.receive(now, 0)
	l.e.flush(now, 0)
	return true
}

// TestBudgetCleanPathLoopStyles offers the bottleneck tests' game (about
// 400 KB/s) on clean paths — no bandwidth cap, no loss — with every pair
// of loop styles: a loop that reads its socket only at its wake-ups adds
// up to a gap of waiting to every RTT sample, at either end (an ack that
// waits in the sender's socket, a datagram that waits in the receiver's),
// and that is no queue on the path. The budget must carry the offered
// load, not read the wake-up gaps as queuing delay.
func TestBudgetCleanPathLoopStyles(t *testing.T) {
	for _, delay := range []time.Duration{time.Millisecond, 20 * time.Millisecond} {
		eachLoopPair(t, fmt.Sprintf("delay=%v", delay), func(t *testing.T, tx, rx loopStyle, seed uint64, repro string) {
			link := simlink.LinkConfig{MTU: MaxMTU, Delay: delay, Jitter: delay / 20}
			r := newRig(t, seed, Config{}, link)
			o := newOffer()
			loops := loopPair(r.a, r.b, tx, rx, rand.New(rand.NewPCG(seed, 0x100F)))
			sender, receiver := loops[0], loops[1]
			var game time.Duration
			var sent0 uint64
			var off0 int64
			var rates []string
			for r.now = 0; r.now < 10*time.Second; r.now += time.Millisecond {
				r.net.AdvanceTo(r.now)
				if r.now == 3*time.Second {
					sent0, off0 = r.a.ch.Stats().BytesSent, o.offeredBytes
				}
				if sender.due(r.now) || tx == loopEvent {
					for game <= r.now {
						o.tick(r.a.ch)
						game += tick60
					}
				}
				sender.wake(r.now)
				receiver.wake(r.now)
				if r.now%(500*time.Millisecond) == 0 {
					b := r.a.ch.Stats().Budget
					rates = append(rates, fmt.Sprintf("%v: %d KB/s q %v thr %v", r.now, b.Rate/1000, b.QueueDelay.Round(time.Millisecond), b.Threshold.Round(time.Millisecond)))
				}
			}
			st := r.a.ch.Stats()
			sent, offered := int64(st.BytesSent-sent0), o.offeredBytes-off0
			t.Logf("3–10 s: sent %d B for %d B offered; budget rate %d B/s, backoffs %d, increases %d, SRTT %v, jitter %v; queue-full %d",
				sent, offered, st.Budget.Rate, st.Budget.Backoffs, st.Budget.Increases, st.SRTT, st.Jitter, o.queueFull)
			if sent < offered*9/10 || st.Budget.Rate < o.offeredRate() {
				t.Errorf("on a clean %v path the budget held %v-to-%v traffic back: sent %d B for %d B offered (want ≥ 90 %%), rate %d B/s for %d B/s offered, %d back-offs; rate over time %v; %s",
					delay, tx, rx, sent, offered, st.Budget.Rate, o.offeredRate(), st.Budget.Backoffs, rates, repro)
			}
		})
	}
}

// TestBudgetBottleneckLoopStyles is TestBudgetBottleneck's capped phase
// (twice a 200 KB/s bottleneck's rate offered for 10 s, a 64 KB queue:
// 320 ms when full) with every pair of loop styles. Whatever the loops add
// to the RTT samples, a queue in the bottleneck reads as one: the budget
// keeps it far from full and the link busy.
//
// The p99 queuing delay after the estimator settles (from 3 s) stays
// within two ticks where the receiver acks from an event loop and the
// sender Flushes at its NextDeadline or on a 60 Hz tick (seeds 1–8:
// 18–26 ms, the 60 Hz sender's bursts included). Where the receiver acks
// only on its own tick or at random wake-ups, its acks come a tick's worth
// at a time, the estimator sees the queue later and coarser, and the p99
// is 37–45 ms (event sender, 60 Hz receiver) and up to 101 ms (random
// wake-ups at the receiver); a sender that wakes at random 1–50 ms gaps
// sends up to 50 ms of its rate at once (35–94 ms). Those are a known gap
// (docs/TUNING.md), held here below half the full queue. Such a sender
// also leaves the link idle between its bursts, and is held to a lower
// share of it (seeds 1–8: 0.68–0.96).
func TestBudgetBottleneckLoopStyles(t *testing.T) {
	const bw = 200_000
	eachLoopPair(t, "", func(t *testing.T, tx, rx loopStyle, seed uint64, repro string) {
		maxP99, minWire := 2*tick60, int64(bw*3/4)
		if rx != loopEvent || tx == loopRandom {
			maxP99 = 160 * time.Millisecond
		}
		if tx == loopRandom {
			minWire = bw / 2
		}
		link := simlink.LinkConfig{MTU: MaxMTU, Delay: 20 * time.Millisecond, Jitter: time.Millisecond, Bandwidth: bw, QueueLimit: 64 << 10}
		br := newBudgetRun(t, seed, link)
		br.loops = loopPair(br.r.a, br.r.b, tx, rx, rand.New(rand.NewPCG(seed, 0xB077)))
		after, na, wire := br.cappedPhase()
		st := br.r.a.ch.Stats()
		t.Logf("p99 queuing delay %v over %d datagrams from 3 s; wire rate %d B/s; budget rate %d B/s, backoffs %d; rate over time %v", after, na, wire, st.Budget.Rate, st.Budget.Backoffs, br.rates)
		if after > maxP99 || na == 0 {
			t.Errorf("p99 queuing delay %v over %d datagrams after settling, want ≤ %v; %s", after, na, maxP99, repro)
		}
		if wire < minWire {
			t.Errorf("wire rate %d B/s from 3 s, want ≥ %d of the %d B/s bottleneck; %s", wire, minWire, bw, repro)
		}
		br.drainReliable(t, repro)
	})
}
