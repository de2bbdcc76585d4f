package transport

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var dueSeed = flag.Uint64("due.seed", 0, "run TestReliableDueCounts with this seed only")

// checkDue recounts what the reliable streams count incrementally and
// returns a description of the first difference, or "": each stream's due
// (the held messages isDue says flushReliable may send), firstDue at or
// after oldest and at or before the oldest due message, and the channel's
// sums of due and held. flushReliable passes over a stream whose due is 0
// and starts its walk at firstDue, so a count that drifts would send
// differently from the walk over every held message it replaces.
func checkDue(c *Channel) string {
	due, held := 0, 0
	for s, rs := range c.reliable {
		n := 0
		first := true
		for id := rs.oldest; id != rs.next; id++ {
			sl := rs.slot(id)
			if sl == nil || !sl.isDue() {
				continue
			}
			if first && (id.Sub(rs.firstDue) < 0 || rs.firstDue.Sub(rs.oldest) < 0) {
				return fmt.Sprintf("stream %d: firstDue %d, oldest %d, oldest due message %d", s, rs.firstDue, rs.oldest, id)
			}
			first = false
			n++
		}
		if n != rs.due {
			return fmt.Sprintf("stream %d: due %d, recount %d", s, rs.due, n)
		}
		due += n
		held += rs.unacked
	}
	if due != c.reliableTot.due || held != c.reliableTot.held {
		return fmt.Sprintf("totals due %d held %d, recount %d and %d", c.reliableTot.due, c.reliableTot.held, due, held)
	}
	return ""
}

// TestReliableDueCounts: under loss, duplication, reordering and a small
// window, with small and large messages on several streams and the
// in-flight window small enough to evict, the streams' due counts and
// firstDue match a recount after every Flush and every Receive.
func TestReliableDueCounts(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if *dueSeed != 0 {
		seeds = []uint64{*dueSeed}
	}
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 5))
		link := sim(20+int(seed)*10, 15, 0.05*float64(seed))
		link.Duplicate = 0.05
		cfg := Config{OrderedStreams: 3, ReliableWindow: 32, Redundancy: RedundancyAlways}
		cfg.Ack.MaxInFlight = 8 * int(seed)
		r := newRig(t, seed, cfg, link)
		check := func(where string, e *end) {
			t.Helper()
			if d := checkDue(e.ch); d != "" {
				t.Fatalf("tick %d, after %s: %s; reproduce with go test ./transport -run TestReliableDueCounts -due.seed=%d", r.tick, where, d, seed)
			}
		}
		big := make([]byte, 6000)
		for tick := 0; tick < 1500; tick++ {
			for _, e := range []*end{r.a, r.b} {
				for range rng.IntN(4) {
					n := 1 + rng.IntN(200)
					if rng.IntN(10) == 0 {
						n = 1200 + rng.IntN(len(big)-1200)
					}
					if tick < 1200 {
						e.ch.SendReliable(uint8(rng.IntN(4)), big[:n]) // ErrQueueFull is fine
					}
				}
			}
			r.tick++
			for _, e := range []*end{r.a, r.b} {
				e.receive(r.now, r.tick)
				check("Receive", e)
				if rng.IntN(4) != 0 {
					e.flush(r.now, r.tick)
					check("Flush", e)
				}
			}
			r.now += time.Duration(1+rng.IntN(20)) * time.Millisecond
			r.net.AdvanceTo(r.now)
		}
		st := r.a.ch.Stats()
		t.Logf("seed %d: resent %d, pieces %d, lost %d, sent %d", seed, st.ReliableResent, st.FragmentsSent, st.Ack.Lost, st.DatagramsSent)
		if st.ReliableResent == 0 || st.FragmentsSent == 0 || st.Ack.Lost == 0 {
			t.Fatalf("seed %d exercised too little: resent %d, pieces %d, lost %d", seed, st.ReliableResent, st.FragmentsSent, st.Ack.Lost)
		}
	}
}

// stallSender records stall warnings and, on a warning for stream from,
// sends a message on stream to.
type stallSender struct {
	nopHandler
	ch       *Channel
	from, to uint8
	stalls   []string
}

func (h *stallSender) OnStall(stream uint8, held int, d time.Duration) {
	h.stalls = append(h.stalls, fmt.Sprintf("%d:%d:%v", stream, held, d))
	if stream == h.from {
		h.ch.SendReliable(h.to, []byte("sent from OnStall"))
	}
}

// TestStallCheckSendFromOnStall: a stall check passes over streams that
// hold nothing, yet a message an OnStall handler sends on such a stream
// meets the same clock as when every stream was checked in turn: on a
// stream after the stalled one it is judged in the same check, from the
// previous check (so it warns at once here, the checks being further
// apart than StallWarning); on a stream before it, its clock starts at
// this check.
func TestStallCheckSendFromOnStall(t *testing.T) {
	for _, c := range []struct {
		from, to uint8
		want     []string
	}{
		{1, 3, []string{"1:1:150ms", "3:1:150ms"}},
		{3, 1, []string{"3:1:150ms"}},
	} {
		h := &stallSender{from: c.from, to: c.to}
		ch, err := NewChannel(Config{StallWarning: 100 * time.Millisecond, StallTimeout: 10 * time.Second}, h, 1, 7)
		if err != nil {
			t.Fatal(err)
		}
		h.ch = ch
		var sink loopSink // nothing is delivered: the message stays unacked
		if _, err := ch.SendReliable(c.from, []byte("never acked")); err != nil {
			t.Fatal(err)
		}
		ch.Flush(time.Second, &sink)
		ch.Flush(time.Second+150*time.Millisecond, &sink)
		if fmt.Sprint(h.stalls) != fmt.Sprint(c.want) {
			t.Fatalf("stall %d sends on %d: warnings %v, want %v", c.from, c.to, h.stalls, c.want)
		}
		ch.Flush(time.Second+200*time.Millisecond, &sink)
		ch.Flush(time.Second+260*time.Millisecond, &sink)
		if c.from == 3 && fmt.Sprint(h.stalls) != "[3:1:150ms 1:1:110ms]" {
			t.Fatalf("stream 1's clock after its message from OnStall: warnings %v, want it at 110 ms", h.stalls)
		}
	}
}
