package transport

import (
	"errors"
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

var adaptiveSeed = flag.Uint64("adaptive.seed", 0, "run the adaptive-redundancy cadence tests with this seed only")

// cadence drives the rig's two ends on cadences of their own, as loops
// do: each end steps (receive everything due, then Flush) at its own
// times, given by next (the gap after each step). Both clocks are the
// rig's virtual clock. before, if set, runs before each step of an end
// (a=true for end a): the game's sends.
func (r *rig) cadence(d time.Duration, nextA, nextB func() time.Duration, before func(a bool)) {
	end := r.now + d
	ta, tb := r.now, r.now
	for {
		now := min(ta, tb)
		if now >= end {
			r.now = end
			r.net.AdvanceTo(end)
			return
		}
		r.now = now
		r.net.AdvanceTo(now)
		r.tick++
		if ta == now {
			if before != nil {
				before(true)
			}
			r.a.step(now, r.tick)
			ta = now + nextA()
		}
		if tb == now {
			if before != nil {
				before(false)
			}
			r.b.step(now, r.tick)
			tb = now + nextB()
		}
	}
}

// seeds returns the seeds a randomized test runs: the -adaptive.seed
// flag's alone, or n from 1.
func seeds(n int) []uint64 {
	if *adaptiveSeed != 0 {
		return []uint64{*adaptiveSeed}
	}
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i + 1)
	}
	return s
}

// TestAdaptiveLosslessNoCopies: on a lossless link, with one end at a
// fixed 60 Hz tick and the other Flushing on every wake-up of an
// irregular loop (1–20 ms), messages of 1 byte to the largest
// single-datagram size and a few fragmented ones, and bursts above the
// reliable window: after the warm-up (the estimate's first 32 verdicts)
// next to no redundant copy leaves either end, the loss estimate stays ~0,
// and everything is delivered.
func TestAdaptiveLosslessNoCopies(t *testing.T) {
	for _, seed := range seeds(3) {
		rng := rand.New(rand.NewPCG(seed, 13))
		r := newRig(t, seed, Config{}, sim(25, 2, 0))
		single := r.a.ch.MaxSinglePayload(Reliable)
		sent := map[bool]int{}
		pending := map[bool][]int{} // sizes refused with ErrQueueFull, sent again later
		send := func(a bool) {
			e := r.b
			if a {
				e = r.a
			}
			sizes := pending[a]
			switch k := rng.IntN(100); {
			case k < 60:
				sizes = append(sizes, 1+rng.IntN(64))
			case k < 70:
				sizes = append(sizes, 1+rng.IntN(single))
			case k < 72:
				sizes = append(sizes, single+1+rng.IntN(3*single))
			case k < 74: // a burst above the window
				for range DefaultReliableWindow + 20 {
					sizes = append(sizes, 1+rng.IntN(32))
				}
			}
			pending[a] = sizes[:0]
			for i, n := range sizes {
				if _, err := e.ch.SendReliable(uint8(rng.IntN(3)), make([]byte, n)); errors.Is(err, ErrQueueFull) {
					pending[a] = append(pending[a], sizes[i:]...)
					break
				} else if err != nil {
					t.Fatal(err)
				}
				sent[a]++
			}
		}
		nextA := func() time.Duration { return tick60 }
		nextB := func() time.Duration { return time.Duration(1+rng.IntN(20)) * time.Millisecond }
		// The first 32 verdicts carry copies (the estimate knows nothing
		// yet): at most one per message, since it says ~0.
		r.cadence(2*time.Second, nextA, nextB, send)
		warm := [2]ChannelStats{r.a.ch.Stats(), r.b.ch.Stats()}
		warmSent := [2]int{sent[true], sent[false]}
		for i := range warm {
			if warm[i].RedundantCopies > uint64(warmSent[i]) {
				t.Fatalf("end %d: %d copies in the warm-up for %d messages; reproduce with -adaptive.seed=%d", i, warm[i].RedundantCopies, warmSent[i], seed)
			}
		}
		r.cadence(18*time.Second, nextA, nextB, send)
		r.settle(3000)
		// Reordering (2 ms of jitter against datagrams 1 ms apart) makes
		// a few spurious loss verdicts before the packet threshold adapts;
		// each switches copies on until an ack shows it spurious, about a
		// round trip. That is the bound: copies of at most 2 % of the
		// messages, at most 1 % of the bytes, and the switch off and the
		// estimate ~0 at the end.
		for i, e := range []*end{r.a, r.b} {
			st := e.ch.Stats()
			msgs := uint64(sent[i == 0] - warmSent[i])
			st.RedundantCopies -= warm[i].RedundantCopies
			st.RedundantBytes -= warm[i].RedundantBytes
			st.BytesSent -= warm[i].BytesSent
			if st.RedundantCopies*50 > msgs || st.RedundantBytes*100 > st.BytesSent || st.LossEstimate > 0.001 || st.RedundancyOn {
				t.Fatalf("lossless link, end %d: %d copies (%d B of %d) for %d messages, loss estimate %.4f (lost %v, spurious %d), on %v; reproduce: go test ./transport -run TestAdaptiveLosslessNoCopies -adaptive.seed=%d",
					i, st.RedundantCopies, st.RedundantBytes, st.BytesSent, msgs, st.LossEstimate, lossCauses(st.Ack), st.Ack.SpuriousLosses, st.RedundancyOn, seed)
			}
			t.Logf("seed %d end %d: %d copies (%d B of %d sent) for %d messages; lost %v, spurious %d", seed, i, st.RedundantCopies, st.RedundantBytes, st.BytesSent, msgs, lossCauses(st.Ack), st.Ack.SpuriousLosses)
		}
		if len(r.b.got) != sent[true] || len(r.a.got) != sent[false] {
			t.Fatalf("delivered %d of %d and %d of %d; reproduce with -adaptive.seed=%d", len(r.b.got), sent[true], len(r.a.got), sent[false], seed)
		}
	}
}

// echoRun sends one 64-byte reliable message per 60 Hz tick from a, b
// echoes each back, for n ticks over sim(25, 2, loss) with cfg on both
// ends, and returns the echo round trips. onStep, if set, runs after each
// tick.
func echoRun(t *testing.T, seed uint64, cfg Config, loss float64, n int, onStep func(r *rig)) []time.Duration {
	t.Helper()
	r := newRig(t, seed, cfg, sim(25, 2, loss))
	sentAt := make([]time.Duration, n)
	var rtt []time.Duration
	r.b.onMessage = func(m Message) {
		if _, err := r.b.ch.SendReliable(1, m.Payload); err != nil {
			t.Fatal(err)
		}
	}
	r.a.onMessage = func(m Message) { rtt = append(rtt, r.now-sentAt[idOf(string(m.Payload))]) }
	for i := 0; i < n; i++ {
		sentAt[i] = r.now
		if _, err := r.a.ch.SendReliable(1, payload(i, 64)); err != nil {
			t.Fatal(err)
		}
		r.run(1)
		if onStep != nil {
			onStep(r)
		}
	}
	r.settle(3000)
	if len(rtt) != n {
		t.Fatalf("echoed %d of %d", len(rtt), n)
	}
	return rtt
}

// TestAdaptiveOnWithinOneTick: at 10 % loss, the first loss verdict turns
// copies on in the Flush that learns of it or the next tick's. With
// RedundancyAlways the echo p99 stays within the lossless round trip (on
// the rig's 60 Hz lock-step clock) plus two ticks, and with
// RedundancyEager (three copies at 10 %) within three: the tick that
// Always spends on a copy at the very tick the ack is due (sent when the
// ack did not come), Eager leaves to the loss verdict a tick later. The default, RedundancyAdaptive, sends one copy at 10 % — a
// message and its copy are both lost once in a hundred, then wait for a
// loss verdict — and stays within the lossless round trip plus six ticks
// for at most 3/4 of RedundancyAlways's bytes.
func TestAdaptiveOnWithinOneTick(t *testing.T) {
	var lossless []time.Duration
	for _, seed := range seeds(3) {
		lossless = append(lossless, echoRun(t, seed, Config{}, 0, 300, nil)...)
	}
	base := percentile(lossless, 0.5)
	var alwaysBytes uint64
	for _, c := range []struct {
		mode  RedundancyMode
		ticks time.Duration
	}{{RedundancyAlways, 2}, {RedundancyEager, 3}, {RedundancyAdaptive, 6}} {
		var lossy []time.Duration
		var bytes uint64
		for _, seed := range seeds(3) {
			firstLoss, firstCopy := -1, -1
			step := 0
			lossy = append(lossy, echoRun(t, seed, Config{Redundancy: c.mode}, 0.10, 1500, func(r *rig) {
				step++
				st := r.a.ch.Stats()
				if firstLoss < 0 && st.Ack.Lost > 0 {
					firstLoss = step
				}
				if firstCopy < 0 && st.RedundantCopies > 0 {
					firstCopy = step
				}
				bytes = st.BytesSent + r.b.ch.Stats().BytesSent // the last step's: the run's total so far
			})...)
			if firstLoss < 0 || firstCopy < 0 || firstCopy > firstLoss+1 {
				t.Fatalf("%v: first loss at tick %d, first copy at tick %d: want the copy within one tick; reproduce: go test ./transport -run TestAdaptiveOnWithinOneTick -adaptive.seed=%d", c.mode, firstLoss, firstCopy, seed)
			}
		}
		// Pooled over the seeds: one seed's p99 of an ordered stream is a
		// handful of head-of-line stalls, which the loss pattern decides.
		p99 := percentile(lossy, 0.99)
		if limit := base + c.ticks*tick60 + 4*time.Millisecond; p99 > limit {
			t.Fatalf("%v at 10%% loss: echo p99 %v, over the lossless %v + %d ticks (+4 ms jitter) = %v", c.mode, p99, base, c.ticks, limit)
		}
		if c.mode == RedundancyAlways {
			alwaysBytes = bytes
		} else if c.mode == RedundancyAdaptive && bytes*4 > alwaysBytes*3 {
			t.Fatalf("adaptive at 10%% loss: %d bytes (last seed), over 3/4 of always's %d", bytes, alwaysBytes)
		}
		t.Logf("%v: lossless echo p50 %v, 10%% loss p99 %v (%d echoes), last seed's bytes %d", c.mode, base, p99, len(lossy), bytes)
	}
}

// TestDelayedAckKeepsRTTTrue: the receiver holds its acks (nothing to
// piggy-back them on) for AckDelay and says so in the header; the
// sender's RTT samples do not grow by the delay.
func TestDelayedAckKeepsRTTTrue(t *testing.T) {
	cfg := Config{AckDelay: 20 * time.Millisecond}
	r := newRig(t, 5, cfg, sim(50, 0, 0)) // 100 ms round trip: SRTT/4 = 25 ms > 20 ms
	sends := 0
	r.cadence(10*time.Second, func() time.Duration { return time.Millisecond }, func() time.Duration { return time.Millisecond },
		func(a bool) {
			if a && r.tick%200 == 1 { // every ~100 ms: nothing for b to piggy-back on
				if _, err := r.a.ch.SendReliable(1, payload(sends, 32)); err != nil {
					t.Fatal(err)
				}
				sends++
			}
			if !a && r.tick%4000 == 2 { // b sends now and then, so it has an RTT sample of its own
				if _, err := r.b.ch.SendReliable(1, payload(sends, 8)); err != nil {
					t.Fatal(err)
				}
			}
		})
	st := r.a.ch.Stats()
	if st.Ack.PeerAckDelay < 19*time.Millisecond {
		t.Fatalf("peer ack delay %v: the acks were not delayed (b's SRTT %v)", st.Ack.PeerAckDelay, r.b.ch.Stats().SRTT)
	}
	if st.SRTT > 101*time.Millisecond || st.RTTVar > 2*time.Millisecond {
		t.Fatalf("SRTT %v ± %v on a 100 ms path with 20 ms delayed acks: the ack delay was not subtracted", st.SRTT, st.RTTVar)
	}
	if st.Ack.Lost != 0 {
		t.Fatalf("%d datagrams declared lost on a lossless path (RTO %v)", st.Ack.Lost, st.RTO)
	}
	t.Logf("SRTT %v, RTTVar %v, peer ack delay %v, RTO %v; b sent %d standalone acks for %d messages", st.SRTT, st.RTTVar, st.Ack.PeerAckDelay, st.RTO, r.b.ch.Stats().AckOnlySent, sends)
}

// TestDuplicateOnlyNoImmediateAck: a datagram that holds only copies of
// messages already delivered is not answered by a standalone ack at the
// next Flush; its ack waits (SRTT/4 here) and then goes, so the sender
// still gets its verdict.
func TestDuplicateOnlyNoImmediateAck(t *testing.T) {
	r := newRig(t, 9, Config{Redundancy: RedundancyAlways, AckDelay: NoAckDelay}, sim(25, 0, 0))
	// Warm up both ways so b has an RTT sample.
	for i := 0; i < 30; i++ {
		r.a.ch.SendReliable(1, payload(i, 16))
		r.b.ch.SendReliable(1, payload(i, 16))
		r.run(1)
	}
	r.settle(200)
	checked := 0
	r.a.ch.SendReliable(1, payload(99, 16))
	r.cadence(300*time.Millisecond, func() time.Duration { return time.Millisecond }, func() time.Duration { return time.Millisecond },
		func(a bool) {
			if a {
				return
			}
			// b's step: receive, then Flush. Watch what the Flush sends
			// after a duplicate-only datagram arrives.
			before := r.b.ch.Stats()
			r.b.receive(r.now, r.tick)
			after := r.b.ch.Stats()
			r.b.flush(r.now, r.tick)
			flushed := r.b.ch.Stats()
			if after.DuplicateOnly > before.DuplicateOnly && after.DatagramsReceived-before.DatagramsReceived == 1 {
				checked++
				if flushed.AckOnlySent != after.AckOnlySent {
					t.Fatalf("a datagram of duplicates drew an immediate standalone ack")
				}
			}
		})
	if checked == 0 {
		t.Fatal("no duplicate-only datagram arrived: the scenario did not test anything")
	}
	r.cadence(50*time.Millisecond, func() time.Duration { return time.Millisecond }, func() time.Duration { return time.Millisecond }, nil)
	if p := r.a.ch.PendingCount(); p != 0 || r.a.ch.Stats().Ack.Lost != 0 {
		t.Fatalf("a: %d pending, %d lost: the duplicate-only datagrams were never acked", p, r.a.ch.Stats().Ack.Lost)
	}
}
