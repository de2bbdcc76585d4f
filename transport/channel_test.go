package transport

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/wire"
)

func sim(delayMs, jitterMs int, loss float64) simlink.LinkConfig {
	return simlink.LinkConfig{
		Delay:  time.Duration(delayMs) * time.Millisecond,
		Jitter: time.Duration(jitterMs) * time.Millisecond,
		Loss:   loss,
	}
}

func payload(i, n int) []byte {
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), uint64(n)))
	for k := range p {
		p[k] = byte(r.Uint32())
	}
	if n >= 4 {
		p[0], p[1], p[2], p[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
	}
	return p
}

func idOf(p string) int {
	return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 | int(p[3])<<24
}

// S-D1: under sim(40, 20, 10) with 10 % duplication, 10,000 reliable-ordered
// messages arrive exactly once and in order, and reliable-unordered ones
// exactly once — with every stream at once.
func TestReliableStreamsUnderLossAndDuplication(t *testing.T) {
	link := sim(40, 20, 0.10)
	link.Duplicate = 0.10
	r := newRig(t, 1, Config{}, link)
	r.b.keep = true
	const n = 10000
	sent := 0
	for sent < n || !r.a.ch.reliableIdle() {
		// 2 messages per stream per tick on streams 0 (unordered), 1 and 2.
		for k := 0; k < 2 && sent < n; k++ {
			for s := uint8(0); s < 3; s++ {
				if _, err := r.a.ch.SendReliable(s, payload(sent, 20+sent%50)); err != nil {
					t.Fatalf("send %d: %v", sent, err)
				}
			}
			sent++
		}
		r.run(1)
		if r.tick > 20000 {
			t.Fatal("did not finish")
		}
	}
	r.settle(600)
	count := [3]map[int]int{{}, {}, {}}
	next := [3]int{}
	for _, g := range r.b.got {
		if g.Delivery != Reliable {
			t.Fatalf("unexpected delivery %v", g.Delivery)
		}
		id := idOf(g.Payload)
		if !bytes.Equal([]byte(g.Payload), payload(id, 20+id%50)) {
			t.Fatalf("stream %d message %d corrupted", g.Stream, id)
		}
		count[g.Stream][id]++
		if g.Stream != 0 {
			if id != next[g.Stream] {
				t.Fatalf("stream %d: got message %d, want %d (out of order)", g.Stream, id, next[g.Stream])
			}
			next[g.Stream]++
		}
	}
	for s := range count {
		for i := 0; i < n; i++ {
			if count[s][i] != 1 {
				t.Fatalf("stream %d message %d delivered %d times", s, i, count[s][i])
			}
		}
	}
	st := r.a.ch.Stats()
	t.Logf("ticks %d, datagrams %d, resent %d, redundant %d, lost %d, srtt %v; receiver dup datagrams %d, dup reliable %d",
		r.tick, st.DatagramsSent, st.ReliableResent, st.RedundantCopies, st.Ack.Lost, st.SRTT,
		r.b.ch.Stats().Duplicates, r.b.ch.Stats().ReliableDuplicates)
}

// S-B4 and S-H5's transport half: one-way traffic still gets acked — the
// receiver sends standalone acks, the sender's pending count stays bounded
// and returns to 0 — and S-B8: those ack-only datagrams deliver nothing.
func TestOneWayTrafficIsAcked(t *testing.T) {
	r := newRig(t, 2, Config{}, sim(20, 5, 0.05))
	maxPending := 0
	for i := 0; i < 1200; i++ {
		if err := r.a.ch.SendUnreliable(payload(i, 40)); err != nil {
			t.Fatal(err)
		}
		r.run(1)
		maxPending = max(maxPending, r.a.ch.PendingCount())
	}
	sa, sb := r.a.ch.Stats(), r.b.ch.Stats()
	r.settle(300)
	if sb.AckOnlySent == 0 || sa.AckOnlyReceived != sb.AckOnlySent-uint64(sb.Ack.Lost) && sa.AckOnlyReceived == 0 {
		t.Fatalf("receiver sent %d standalone acks, sender got %d", sb.AckOnlySent, sa.AckOnlyReceived)
	}
	if sa.Ack.Acked == 0 || maxPending > 16 {
		t.Fatalf("sender acked %d, max pending %d", sa.Ack.Acked, maxPending)
	}
	for _, g := range r.a.got {
		t.Fatalf("ack-only datagrams delivered %+v to the sender", g)
	}
	if sb.DatagramsSent != sb.AckOnlySent {
		t.Fatalf("receiver sent %d datagrams, %d of them ack-only: it sent something else", sb.DatagramsSent, sb.AckOnlySent)
	}
}

// S-C1: a message of exactly one datagram's payload is not fragmented; one
// byte more gives 2 fragments.
func TestFragmentThreshold(t *testing.T) {
	for _, d := range []Delivery{Unreliable, Reliable, Record, Sequenced} {
		r := newRig(t, 3, Config{}, sim(0, 0, 0))
		r.b.keep = true
		max := r.a.ch.MaxSinglePayload(d)
		for i, size := range []int{max, max + 1} {
			before := r.a.ch.Stats().FragmentsSent
			p := payload(i, size)
			var err error
			switch d {
			case Unreliable:
				err = r.a.ch.SendUnreliable(p)
			case Sequenced:
				err = r.a.ch.SendSequenced(0, p)
			case Reliable:
				_, err = r.a.ch.SendReliable(1, p)
			case Record:
				err = r.a.ch.SendRecord(uint64(i), p)
			}
			if err != nil {
				t.Fatal(err)
			}
			r.run(1)
			want := uint64(0)
			if size > max {
				want = 2
			}
			if got := r.a.ch.Stats().FragmentsSent - before; got != want {
				t.Fatalf("%v: %d-byte message went out in %d fragments, want %d", d, size, got, want)
			}
		}
		r.run(5)
		if len(r.b.got) != 2 || r.b.got[0].Payload != string(payload(0, max)) || r.b.got[1].Payload != string(payload(1, max+1)) {
			t.Fatalf("%v: delivered %d messages", d, len(r.b.got))
		}
	}
}

// S-C2 and S-C3: the largest allowed message round-trips; one byte more is
// refused at send. The limit is derived from the MTU both sides share, so
// anything the sender accepts the receiver can reassemble — checked at the
// smallest, default and largest MTU.
func TestLargestMessage(t *testing.T) {
	for _, mtu := range []int{MinMTU, DefaultMTU, MaxMTU} {
		r := newRig(t, 4, Config{MTU: mtu}, sim(5, 0, 0))
		r.b.keep = true
		max := r.a.ch.Config().MaxMessageSize
		if max != MaxMessageSizeFor(mtu) {
			t.Fatalf("default MaxMessageSize %d, want %d", max, MaxMessageSizeFor(mtu))
		}
		if _, err := r.a.ch.SendReliable(1, make([]byte, max+1)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("MTU %d: reliable of %d bytes: %v", mtu, max+1, err)
		}
		if err := r.a.ch.SendUnreliable(make([]byte, max+1)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("MTU %d: unreliable of %d bytes: %v", mtu, max+1, err)
		}
		big := payload(7, max)
		if _, err := r.a.ch.SendReliable(1, big); err != nil {
			t.Fatal(err)
		}
		if err := r.a.ch.SendUnreliable(big); err != nil {
			t.Fatal(err)
		}
		if err := r.a.ch.SendRecord(9, big[:r.a.ch.MaxRecordSize()]); err != nil {
			t.Fatal(err)
		}
		if err := r.a.ch.SendRecord(10, big[:r.a.ch.MaxRecordSize()+1]); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("MTU %d: record one byte over MaxRecordSize: %v", mtu, err)
		}
		r.run(60)
		if len(r.b.got) != 3 {
			t.Fatalf("MTU %d: delivered %d of 3 largest messages", mtu, len(r.b.got))
		}
		for _, g := range r.b.got {
			want := big
			if g.Delivery == Record {
				want = big[:r.a.ch.MaxRecordSize()]
			}
			if g.Payload != string(want) {
				t.Fatalf("MTU %d: %v message corrupted", mtu, g.Delivery)
			}
		}
		if r.a.confirmed[9] != 1 {
			t.Fatalf("MTU %d: record not confirmed: %v %v", mtu, r.a.confirmed, r.a.abandoned)
		}
	}
}

// S-C6 and S-D2: under sim(30, 10, 10) a stream of 50 KB reliable messages
// goes through the fragmenter and arrives intact, in order and in full.
func TestLargeReliableMessagesUnderLoss(t *testing.T) {
	r := newRig(t, 5, Config{}, sim(30, 10, 0.10))
	r.b.keep = true
	const n = 40
	for i := 0; i < n; i++ {
		for {
			_, err := r.a.ch.SendReliable(1, payload(i, 50_000))
			if err == nil {
				break
			}
			if !errors.Is(err, ErrQueueFull) {
				t.Fatal(err)
			}
			r.run(1) // back-pressure: wait for acks to make room
		}
		r.run(3)
	}
	r.settle(3000)
	if len(r.b.got) != n {
		t.Fatalf("delivered %d of %d", len(r.b.got), n)
	}
	for i, g := range r.b.got {
		if g.Payload != string(payload(i, 50_000)) {
			t.Fatalf("message %d corrupted or out of order", i)
		}
	}
	st := r.a.ch.Stats()
	t.Logf("fragments %d, re-sent pieces %d, lost datagrams %d", st.FragmentsSent, st.ReliableResent, st.Ack.Lost)
	if st.ReliableResent == 0 {
		t.Fatal("no piece was repaired under 10% loss")
	}
}

// S-C4 at the channel: a record sent as fragments is delivered whole or not
// at all, and its verdict is abandoned when a fragment was lost — never
// confirmed — even though the other fragments were acked.
func TestRecordAllOrNothing(t *testing.T) {
	r := newRig(t, 6, Config{}, sim(10, 0, 0.2))
	r.b.keep = true
	const n = 200
	for i := 0; i < n; i++ {
		if err := r.a.ch.SendRecord(uint64(i), payload(i, 5000)); err != nil {
			t.Fatal(err)
		}
		r.run(1)
	}
	r.run(200)
	r.settle(300)
	delivered := map[int]bool{}
	for _, g := range r.b.got {
		id := idOf(g.Payload)
		if g.Payload != string(payload(id, 5000)) {
			t.Fatalf("record %d delivered corrupted or partial", id)
		}
		if delivered[id] {
			t.Fatalf("record %d delivered twice", id)
		}
		delivered[id] = true
	}
	var conf, aband int
	for i := 0; i < n; i++ {
		c, a := r.a.confirmed[uint64(i)], r.a.abandoned[uint64(i)]
		if c+a != 1 {
			t.Fatalf("record %d: %d confirmed + %d abandoned verdicts", i, c, a)
		}
		if c == 1 && !delivered[i] {
			t.Fatalf("record %d confirmed but never delivered", i)
		}
		conf += c
		aband += a
	}
	if aband == 0 || conf == 0 {
		t.Fatalf("degenerate: %d confirmed, %d abandoned", conf, aband)
	}
	t.Logf("%d confirmed, %d abandoned, %d delivered", conf, aband, len(delivered))
}

// S-D3: a full reliable window returns ErrQueueFull and accepts nothing;
// everything already accepted is still delivered.
func TestReliableBackPressure(t *testing.T) {
	r := newRig(t, 7, Config{ReliableWindow: 16}, sim(50, 0, 0))
	r.b.keep = true
	for i := 0; i < 16; i++ {
		if _, err := r.a.ch.SendReliable(2, payload(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.a.ch.SendReliable(2, payload(16, 10)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("17th message: %v", err)
	}
	if _, err := r.a.ch.SendReliable(9, nil); !errors.Is(err, ErrNoStream) {
		t.Fatalf("stream 9: %v", err)
	}
	r.settle(100)
	if len(r.b.got) != 16 {
		t.Fatalf("delivered %d of 16", len(r.b.got))
	}
	if _, err := r.a.ch.SendReliable(2, payload(16, 10)); err != nil {
		t.Fatalf("after the window drained: %v", err)
	}
}

// S-D4: unreliable-sequenced delivers only messages newer than the last
// delivered on the same stream, under jitter that reorders.
func TestSequencedNewestWins(t *testing.T) {
	r := newRig(t, 8, Config{}, sim(30, 25, 0.1))
	r.b.keep = true
	for i := 0; i < 2000; i++ {
		if err := r.a.ch.SendSequenced(uint8(i%2), payload(i, 8)); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			r.run(1)
		}
	}
	r.run(60)
	last := [2]int{-1, -1}
	for _, g := range r.b.got {
		id := idOf(g.Payload)
		if id <= last[g.Stream] {
			t.Fatalf("stream %d delivered %d after %d", g.Stream, id, last[g.Stream])
		}
		last[g.Stream] = id
	}
	if st := r.b.ch.Stats(); st.SequencedStale == 0 {
		t.Fatal("jitter never reordered a sequenced message: the test proves nothing")
	}
}

// S-A4 at the channel: overwriting the caller's buffer right after Send
// never changes what the peer receives.
func TestSendCopiesPayload(t *testing.T) {
	r := newRig(t, 9, Config{}, sim(5, 0, 0))
	r.b.keep = true
	buf := []byte("original-bytes")
	r.a.ch.SendUnreliable(buf)
	r.a.ch.SendReliable(0, buf)
	r.a.ch.SendRecord(1, buf)
	r.a.ch.SendSequenced(0, buf)
	copy(buf, "XXXXXXXXXXXXXX")
	r.run(10)
	if len(r.b.got) != 4 {
		t.Fatalf("delivered %d", len(r.b.got))
	}
	for _, g := range r.b.got {
		if g.Payload != "original-bytes" {
			t.Fatalf("%v delivered %q", g.Delivery, g.Payload)
		}
	}
}

// Disconnect reaches the peer's handler with its reason.
func TestDisconnectFrame(t *testing.T) {
	r := newRig(t, 10, Config{}, sim(5, 0, 0))
	r.a.ch.Disconnect(wire.DisconnectReason(2))
	r.run(5)
	if len(r.b.disconnect) != 1 || r.b.disconnect[0] != 2 {
		t.Fatalf("peer saw %v", r.b.disconnect)
	}
}

// Redundancy is the latency product: with it, a reliable message sent
// every tick on a lossy link arrives far sooner at the tail than with
// loss-verdict retransmission alone. This checks the mechanism works
// (fewer late deliveries), not a timing target.
func TestRedundancyCutsRecoveryLatency(t *testing.T) {
	p99 := func(redundancy int) time.Duration {
		r := newRig(t, 11, Config{RedundancyBytes: redundancy}, sim(25, 2, 0.2))
		sentAt := map[int]time.Duration{}
		var lat []time.Duration
		r.b.onMessage = func(m Message) {
			lat = append(lat, r.now-sentAt[idOf(string(m.Payload))])
		}
		for i := 0; i < 1200; i++ {
			sentAt[i] = r.now
			r.a.ch.SendReliable(1, payload(i, 64))
			r.run(1)
		}
		r.settle(600)
		if len(lat) != 1200 {
			t.Fatalf("delivered %d", len(lat))
		}
		slices := append([]time.Duration(nil), lat...)
		sortDurations(slices)
		return slices[len(slices)*99/100]
	}
	with, without := p99(DefaultRedundancyBytes), p99(NoRedundancy)
	t.Logf("one-way p99 at 20%% loss: %v with redundancy, %v without", with, without)
	if with >= without {
		t.Fatalf("redundancy did not cut the tail: %v vs %v", with, without)
	}
}

func sortDurations(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}

var _ = fmt.Sprintf

// Back-to-back large reliable messages on a lossless link: every datagram
// is acked (no spurious loss from bursts outrunning the 33-seq ack window)
// and no message has to restart. A burst longer than the ack window once
// made early pieces age out unacked, re-sent forever.
func TestLargeMessagesBackToBackNoSpuriousLoss(t *testing.T) {
	p := newPair(t, Config{})
	m := make([]byte, 50_000)
	for i := 0; i < 300; i++ {
		before := p.hb.messages
		for {
			if _, err := p.a.SendReliable(1, m); err == nil {
				break
			} else if !errors.Is(err, ErrQueueFull) {
				t.Fatal(err)
			}
			p.step()
		}
		for steps := 0; p.hb.messages == before; steps++ {
			if steps > 100 {
				t.Fatalf("message %d not delivered after 100 ticks: %+v", i, p.a.Stats())
			}
			p.step()
		}
	}
	st := p.a.Stats()
	if st.Ack.Lost != 0 || st.ReliableResent != 0 {
		t.Fatalf("lossless link: lost %d, resent %d", st.Ack.Lost, st.ReliableResent)
	}
}

// Queue depths are visible in Stats.
func TestStatsQueueDepths(t *testing.T) {
	p := newPair(t, Config{})
	p.a.SendReliable(1, make([]byte, 10))
	p.a.SendReliable(2, make([]byte, 10))
	p.a.SendUnreliable(make([]byte, 30))
	p.a.SendRecord(1, make([]byte, 5))
	st := p.a.Stats()
	if st.ReliableHeld != 2 || st.ReliableHeldBytes == 0 || st.QueuedBytes == 0 || st.QueuedRecords != 1 {
		t.Fatalf("before flush: %+v", st)
	}
	for range 5 {
		p.step()
	}
	st = p.a.Stats()
	if st.ReliableHeld != 0 || st.ReliableHeldBytes != 0 || st.QueuedBytes != 0 || st.QueuedRecords != 0 {
		t.Fatalf("after delivery: held %d/%d queued %d records %d", st.ReliableHeld, st.ReliableHeldBytes, st.QueuedBytes, st.QueuedRecords)
	}
}

// Flushing every millisecond does not multiply redundant copies: they are
// spaced by RedundancyInterval (one 60 Hz tick by default), so a message on
// a 50 ms round trip rides again about three times, not fifty. (On a
// lossless link only RedundancyAlways sends copies at all.)
func TestRedundancySpacedInTime(t *testing.T) {
	r := newRig(t, 12, Config{Redundancy: RedundancyAlways}, sim(25, 0, 0))
	const n = 200
	for i := 0; i < n*17; i++ { // one message every ~17 Flushes of 1 ms
		if i%17 == 0 {
			r.a.ch.SendReliable(1, payload(i, 64))
		}
		r.tick++
		r.a.step(r.now, r.tick)
		r.b.step(r.now, r.tick)
		r.now += time.Millisecond
		r.net.AdvanceTo(r.now)
	}
	copies := float64(r.a.ch.Stats().RedundantCopies) / n
	if copies < 1 || copies > 4 {
		t.Fatalf("%.1f redundant copies per message at a 1 ms Flush rate, want about 3", copies)
	}
}

// A sender that Flushes far more often than its peer: without urgent acks
// its bursts outrun the 33-seq ack window between two of the peer's
// Flushes, and datagrams that arrived are declared lost by window age-out
// and re-sent, forever under load. The receiver acks at once after
// AckUrgent datagrams (AckDue/SendAck), so on a lossless link nothing is
// declared lost.
func TestUrgentAckKeepsFastSenderExact(t *testing.T) {
	p := newPair(t, Config{})
	msg := make([]byte, 1000)
	for step := 0; step < 400; step++ {
		for p.a.Stats().ReliableHeld < 200 {
			if _, err := p.a.SendReliable(1, msg); err != nil {
				t.Fatal(err)
			}
		}
		p.tick++
		p.now += time.Millisecond
		p.a.Flush(p.now, &p.sa) // every step: up to 32 datagrams
		for _, d := range p.sa.out {
			p.b.Receive(p.now, d[wire.SessionHeaderLen:])
			if p.b.AckDue() {
				p.b.SendAck(p.now, &p.sb)
			}
		}
		p.sa.out = p.sa.out[:0]
		if step%20 == 0 { // the receiver's own tick: 20 sender Flushes per one of its own
			p.b.Flush(p.now, &p.sb)
		}
		for _, d := range p.sb.out {
			p.a.Receive(p.now, d[wire.SessionHeaderLen:])
		}
		p.sb.out = p.sb.out[:0]
	}
	sa, sb := p.a.Stats(), p.b.Stats()
	if sb.UrgentAcks == 0 || sa.Ack.Lost != 0 || sa.ReliableResent != 0 {
		t.Fatalf("urgent acks %d; sender lost %d, resent %d", sb.UrgentAcks, sa.Ack.Lost, sa.ReliableResent)
	}
	if p.hb.messages < 5000 {
		t.Fatalf("only %d messages delivered", p.hb.messages)
	}
}

// Many fragmented reliable messages at once over a lossy link: 200
// messages of 4 KiB (4 pieces each), sent as fast as the stream takes them
// over sim(25, 5, 10), arrive exactly once and in order. The receiver
// reassembles at most MaxPartial messages at once, and a reliable one it
// evicted was lost for good — its pieces were acked as they arrived —
// which stalled the ordered stream after 2 messages; the sender now keeps
// at most MaxPartial/2 of them open, and eviction takes unreliable ones
// first. (S-D1, S-C6.)
func TestManyLargeReliableMessagesUnderLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{}},
		{"window 16", Config{ReliableWindow: 16}},
	} {
		r := newRig(t, 3, tc.cfg, sim(25, 5, 0.10))
		r.b.keep = true
		const n, size = 200, 4096
		sendAllReliable(t, r, n, size, 5000)
		r.settle(300)
		if len(r.b.got) != n {
			t.Fatalf("%s: delivered %d of %d", tc.name, len(r.b.got), n)
		}
		for i, g := range r.b.got {
			if g.Payload != string(payload(i, size)) {
				t.Fatalf("%s: message %d corrupted or out of order", tc.name, i)
			}
		}
		st := r.b.ch.Stats()
		if st.ReliableOutside != 0 || st.ReliableOverflow != 0 {
			t.Fatalf("%s: receiver dropped acked messages: outside %d, overflow %d", tc.name, st.ReliableOutside, st.ReliableOverflow)
		}
		t.Logf("%s: %d ticks; receiver evicted %d partials", tc.name, r.tick, st.Fragments.Evicted)
	}
}

// The byte cap covers the send window, not only its unacked messages: a
// receiver buffers the acked messages behind a lost one, up to the same
// cap, and one it could not buffer was dropped although acked — lost for
// good. With ReliableBytes 4 KiB and 500-byte messages over sim(25, 5, 20)
// nothing overflows and everything arrives in order.
func TestReliableByteCapCoversTheWindow(t *testing.T) {
	cfg := Config{ReliableBytes: 4096, MaxMessageSize: 2048}
	r := newRig(t, 8, cfg, sim(25, 5, 0.20))
	r.b.keep = true
	const n, size = 1000, 500
	sendAllReliable(t, r, n, size, 20000)
	r.settle(300)
	st := r.b.ch.Stats()
	if len(r.b.got) != n || st.ReliableOverflow != 0 {
		t.Fatalf("delivered %d of %d, receiver overflow %d", len(r.b.got), n, st.ReliableOverflow)
	}
	for i, g := range r.b.got {
		if g.Payload != string(payload(i, size)) {
			t.Fatalf("message %d corrupted or out of order", i)
		}
	}
}

// sendAllReliable sends messages 0..n−1 of size bytes on ordered stream 1
// from a to b as fast as the stream takes them (back-pressure waits a
// tick), ticking until every one is acked; it fails after maxTicks.
func sendAllReliable(t *testing.T, r *rig, n, size int, maxTicks uint64) {
	t.Helper()
	sent := 0
	for sent < n || !r.a.ch.reliableIdle() {
		for sent < n {
			if _, err := r.a.ch.SendReliable(1, payload(sent, size)); errors.Is(err, ErrQueueFull) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			sent++
		}
		r.run(1)
		if r.tick > maxTicks {
			t.Fatalf("%d of %d delivered after %d ticks", len(r.b.got), n, r.tick)
		}
	}
}

// A stream's stall clock starts at the channel's first Flush, not at time
// 0: a channel made at a late now (a server up for an hour, on a clock
// that started with the process) with a reliable message queued before
// its first Flush neither warns nor stalls, and the message arrives.
func TestStallClockStartsAtFirstFlush(t *testing.T) {
	p := newPair(t, Config{})
	p.now = time.Hour
	if _, err := p.a.SendReliable(1, []byte("welcome")); err != nil {
		t.Fatal(err)
	}
	p.step()
	if err := p.a.Stalled(); err != nil {
		t.Fatalf("stalled at the first Flush: %v", err)
	}
	if s := p.a.Stats().Stalls; s != 0 {
		t.Fatalf("%d stall warnings at the first Flush", s)
	}
	p.step()
	if p.hb.messages != 1 {
		t.Fatalf("%d messages delivered", p.hb.messages)
	}
}
