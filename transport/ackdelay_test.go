package transport

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// TestAckDelayKnownAgreesWithTheEncoder: whatever header the encoder
// writes, ackDelayKnown on what the decoder reads says "known" only when
// the decoded ack delay is the one the sender stated (a dropped delay
// would read as 0 and make the wait look like round trip), and "unknown"
// only for a header of the longest form.
func TestAckDelayKnownAgreesWithTheEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	dropped := 0
	for i := range 200_000 {
		h := wire.ChannelHeader{Seq: wire.Seq(rng.Uint32()), Ack: wire.Seq(rng.Uint32()), AckBits: ^uint32(0)}
		if rng.IntN(2) == 0 {
			h.Ack = h.Seq - wire.Seq(rng.IntN(256)) // the one-byte ack distance
		}
		for b := range 32 { // holes in some ack-bits bytes, as loss makes
			if rng.IntN(8) == 0 {
				h.AckBits &^= 1 << b
			}
		}
		if rng.IntN(4) != 0 {
			h.AckDelay = uint8(rng.IntN(256))
		}
		enc := wire.AppendChannelHeader(nil, h)
		got, n, err := wire.ParseChannelHeader(enc)
		if err != nil || n != len(enc) {
			t.Fatalf("case %d: %+v encoded as % x: parsed %d of %d bytes, %v", i, h, enc, n, len(enc), err)
		}
		known := ackDelayKnown(got, n)
		if known && got.AckDelay != h.AckDelay {
			t.Fatalf("case %d: %+v: decoded ack delay %d taken as known, sender stated %d", i, h, got.AckDelay, h.AckDelay)
		}
		if !known && n != wire.ChannelHeaderMaxLen {
			t.Fatalf("case %d: %+v: a %d-byte header taken as having no room for its ack delay", i, h, n)
		}
		if got.AckDelay != h.AckDelay {
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatal("no header dropped its ack delay: the test never reached the case it guards")
	}
}

// TestAckDelayStatedInEveryHeader: every header a channel sends states how
// long its newest received datagram has waited since it arrived at the
// socket, not only the first after it arrived: when that first one is
// lost, the next is the one the peer samples, and a 0 there would read the
// whole wait as round trip.
func TestAckDelayStatedInEveryHeader(t *testing.T) {
	const ms = time.Millisecond
	p := newPair(t, Config{})
	a, b, sa, sb := p.a, p.b, &p.sa, &p.sb
	now := 10 * ms
	if _, err := a.SendReliable(1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	a.Flush(now, sa)
	if len(sa.out) != 1 {
		t.Fatalf("a sent %d datagrams, want 1", len(sa.out))
	}
	// b's loop reads it 3 ms after it arrived, then sends twice, 1 ms and
	// 4 ms after the read, with nothing new from a in between.
	now += 20 * ms
	if err := b.ReceiveAged(now, 3*ms, sa.out[0][wire.SessionHeaderLen:]); err != nil {
		t.Fatal(err)
	}
	want := []uint8{40, 70} // 4 ms and 7 ms since the arrival, in 100 µs units
	for i, after := range []time.Duration{1 * ms, 4 * ms} {
		if err := b.SendUnreliable([]byte("state")); err != nil {
			t.Fatal(err)
		}
		sb.out = sb.out[:0]
		b.Flush(now+after, sb)
		if len(sb.out) != 1 {
			t.Fatalf("send %d: b sent %d datagrams, want 1", i, len(sb.out))
		}
		h, _, err := wire.ParseChannelHeader(sb.out[0][wire.SessionHeaderLen:])
		if err != nil {
			t.Fatal(err)
		}
		if h.NoAck || h.AckDelay != want[i] {
			t.Errorf("header %d, %v after the read: ack delay %d (NoAck %v), want %d", i, after, h.AckDelay, h.NoAck, want[i])
		}
	}
}

// TestArrivalOffTheClockNotBelieved: an age that would date a datagram
// before the one read ahead of it (by more than arrivalSlack) is off the
// loop's clock — a receive timestamp from another clock, a step — and the
// datagram counts as arrived when it was read. Believed, a consistently
// wrong age would pin every arrival at the last good one: no RTT sample
// again (every ack "arrived" before its seq left) and a saturated ack
// delay on every header sent.
func TestArrivalOffTheClockNotBelieved(t *testing.T) {
	const ms = time.Millisecond
	p := newPair(t, Config{})
	a, b, sa, sb := p.a, p.b, &p.sa, &p.sb
	now := time.Second
	for i := range 20 {
		if _, err := a.SendReliable(1, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		sa.out = sa.out[:0]
		a.Flush(now, sa)
		// 10 ms each way; every read claims the datagram waited 10 s.
		now += 10 * ms
		for _, d := range sa.out {
			if err := b.ReceiveAged(now, 10*time.Second, d[wire.SessionHeaderLen:]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.SendReliable(1, []byte("pong")); err != nil {
			t.Fatal(err)
		}
		sb.out = sb.out[:0]
		b.Flush(now+ms, sb)
		for _, d := range sb.out {
			h, _, err := wire.ParseChannelHeader(d[wire.SessionHeaderLen:])
			if err != nil {
				t.Fatal(err)
			}
			if h.AckDelay != 10 { // 1 ms since the read, as if it arrived then
				t.Fatalf("round %d: b states an ack delay of %d units, want 10 (1 ms): the 10 s age was believed", i, h.AckDelay)
			}
		}
		now += 11 * ms
		for _, d := range sb.out {
			if err := a.ReceiveAged(now, 10*time.Second, d[wire.SessionHeaderLen:]); err != nil {
				t.Fatal(err)
			}
		}
		now += 10 * ms
	}
	st := a.Stats()
	if st.SRTT < 20*ms || st.SRTT > 22*ms {
		t.Errorf("a's SRTT %v after 20 round trips of 21 ms with a bogus 10 s age on every read, want the round trip less b's 1 ms ack delay (20–22 ms)", st.SRTT)
	}
}
