package ackmap

import (
	"math"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// TestLinkLossTakesBackSpurious: seqs timed out on a quiet link and then
// acked by a late header leave LinkLoss where all-acks would have left it
// (0), while LossRate keeps them; a real loss lifts it by the gain.
func TestLinkLossTakesBackSpurious(t *testing.T) {
	const ms = time.Millisecond
	tr, err := NewSendTracker(Config{InitialRTO: 100 * ms}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	now := time.Duration(0)
	for i := 0; i < 4; i++ {
		_, evs = tr.Send(evs[:0], now, NoRecord)
	}
	now = 150 * ms
	evs = tr.Expire(evs[:0], now) // all four time out: the acks are late
	if st := tr.Stats(); st.Lost != 4 || tr.LinkLoss() < 3.9*linkLossGain {
		t.Fatalf("lost %d, link loss %.4f after 4 time-outs", st.Lost, tr.LinkLoss())
	}
	evs, err = tr.OnAck(evs[:0], now+ms, 103, 0b111) // the late header names all four
	if err != nil {
		t.Fatal(err)
	}
	st := tr.Stats()
	if st.SpuriousLosses != 4 || st.LinkLoss > 1e-12 || st.LossRate == 0 {
		t.Fatalf("spurious %d, link loss %g (want 0), loss rate %g (want > 0)", st.SpuriousLosses, st.LinkLoss, st.LossRate)
	}
	// Now a real loss among acks: about one gain's worth, decayed.
	now += 10 * ms
	var seqs []wire.Seq
	for i := 0; i < 5; i++ {
		var s wire.Seq
		s, evs = tr.Send(evs[:0], now, NoRecord)
		seqs = append(seqs, s)
	}
	_, _ = tr.OnAck(evs[:0], now+50*ms, seqs[4], 0b0111) // seqs[0] missing: lost by the packet threshold
	want := linkLossGain * math.Pow(1-linkLossGain, 4)
	if got := tr.LinkLoss(); math.Abs(got-want) > 1e-9 {
		t.Fatalf("one real loss then 4 acks: link loss %g, want %g", got, want)
	}
}

// TestOnAckDelayedSubtractsDelay: a header whose sender held the ack for
// ackDelay gives an RTT sample ackDelay shorter, never below the smallest
// sample, and the delay widens the time-out.
func TestOnAckDelayedSubtractsDelay(t *testing.T) {
	const ms = time.Millisecond
	tr, _ := NewSendTracker(Config{}, 0)
	twin, _ := NewSendTracker(Config{}, 0) // the same samples, acked at once
	var evs []Event
	s0, evs := tr.Send(evs[:0], 0, NoRecord)
	evs, _ = tr.OnAck(evs[:0], 50*ms, s0, 0)
	for _, at := range []time.Duration{0, 100 * ms} {
		s, _ := twin.Send(nil, at, NoRecord)
		_, _ = twin.OnAck(nil, at+50*ms, s, 0)
	}
	rto0 := twin.RTO()
	s1, evs := tr.Send(evs[:0], 100*ms, NoRecord)
	evs, _ = tr.OnAckDelayed(evs[:0], 158*ms, s1, 0, 8*ms) // 58 ms, 8 of them at the peer
	if got := tr.RTT().Latest(); got != 50*ms {
		t.Fatalf("sample %v, want 50ms (58 less the 8 ms ack delay)", got)
	}
	if st := tr.Stats(); st.PeerAckDelay != 8*ms || tr.RTO() != rto0+8*ms {
		t.Fatalf("peer ack delay %v, RTO %v (was %v)", st.PeerAckDelay, tr.RTO(), rto0)
	}
	s2, evs := tr.Send(evs[:0], 200*ms, NoRecord)
	_, _ = tr.OnAckDelayed(evs[:0], 252*ms, s2, 0, 20*ms) // 52 less 20 would be 32: below the minimum
	if got := tr.RTT().Latest(); got != 50*ms {
		t.Fatalf("sample %v, want the 50 ms floor (min RTT)", got)
	}
}

// TestPeerAckDelayDecaysOnSamplesOnly: the peer's stated ack delay stays
// in the time-out through any number of headers that repeat an ack already
// seen (a 60 Hz peer sends several a tick, and a per-header decay forgot
// its wait within a few), whatever delay they state, and decays by an
// eighth per header that gives RTT samples.
func TestPeerAckDelayDecaysOnSamplesOnly(t *testing.T) {
	const ms = time.Millisecond
	tr, _ := NewSendTracker(Config{}, 0)
	var evs []Event
	s, evs := tr.Send(evs[:0], 0, NoRecord)
	evs, _ = tr.OnAckDelayed(evs[:0], 60*ms, s, 0, 16*ms)
	for i := 1; i <= 200; i++ {
		evs, _ = tr.OnAckDelayed(evs[:0], 60*ms+time.Duration(i)*ms, s, 0, time.Duration(i%3)*ms)
		if got := tr.PeerAckDelay(); got != 16*ms {
			t.Fatalf("repeat header %d: peer ack delay %v, want the 16 ms stated with the sample", i, got)
		}
	}
	want := 16 * ms
	now := 300 * ms
	for i := range 20 {
		s, evs = tr.Send(evs[:0], now, NoRecord)
		evs, _ = tr.OnAckDelayed(evs[:0], now+50*ms, s, 0, 0)
		want -= want / 8
		if got := tr.PeerAckDelay(); got != want {
			t.Fatalf("sampling header %d with no delay: peer ack delay %v, want %v", i, got, want)
		}
		now += 60 * ms
	}
}

// TestOnAckDelayedNeverZeroSample: a stated ack delay as long as the whole
// round trip, on the first sample, does not make a 0 sample (it would pin
// RTT.Min at 0 and the floor of every later adjusted sample with it); an
// ack read "before" its seq left (a receive timestamp from another clock)
// is no sample at all.
func TestOnAckDelayedNeverZeroSample(t *testing.T) {
	const ms = time.Millisecond
	tr, _ := NewSendTracker(Config{}, 0)
	s, _ := tr.Send(nil, 100*ms, NoRecord)
	_, _ = tr.OnAckDelayed(nil, 130*ms, s, 0, 40*ms)
	if r := tr.RTT(); r.Samples() != 1 || r.Min() != 30*ms {
		t.Fatalf("%d samples, min %v: want the whole 30 ms taken when the 40 ms delay leaves nothing", r.Samples(), r.Min())
	}
	s, _ = tr.Send(nil, 200*ms, NoRecord)
	_, _ = tr.OnAck(nil, 199*ms, s, 0)
	if r := tr.RTT(); r.Samples() != 1 || r.Min() != 30*ms {
		t.Fatalf("%d samples, min %v after an ack dated before its send: want no sample", r.Samples(), r.Min())
	}
}

// TestPeerAckDelayIgnoresRepeats: a header that repeats an ack already
// seen, while an older seq is still pending within its reach, gives no
// RTT sample, and its ack delay — the peer states in every header how long
// its newest seq has waited, so a repeat's is longer — neither raises
// PeerAckDelay nor decays it.
func TestPeerAckDelayIgnoresRepeats(t *testing.T) {
	const ms = time.Millisecond
	tr, _ := NewSendTracker(Config{}, 0)
	s1, _ := tr.Send(nil, 0, NoRecord)
	s2, _ := tr.Send(nil, ms, NoRecord)
	_, _ = tr.OnAckDelayed(nil, 60*ms, s2, 0, 16*ms) // s2 arrived, s1 not yet
	if got := tr.PeerAckDelay(); got != 16*ms {
		t.Fatalf("peer ack delay %v after the first header, want 16ms", got)
	}
	samples := tr.RTT().Samples()
	for i, d := range []time.Duration{24 * ms, 0, 25 * ms} {
		_, _ = tr.OnAckDelayed(nil, 60*ms+time.Duration(i+1)*ms, s2, 0, d)
		if got := tr.PeerAckDelay(); got != 16*ms || tr.RTT().Samples() != samples {
			t.Fatalf("repeat %d of the ack of seq %d (stating %v, seq %d pending): peer ack delay %v, %d samples; want 16ms and %d",
				i, s2, d, s1, got, tr.RTT().Samples(), samples)
		}
	}
}
