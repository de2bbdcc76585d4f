package transport

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/wire"
)

// TestSpanEvictionReachesItsMessages: a datagram evicted because the span
// of seqs is full shares its manifest slot with the datagram whose send
// evicts it (the log has SpanLimit slots); the eviction's loss must still
// reach the messages it carried. The channel acks a chatty peer with
// standalone acks (skipped seqs widen the span, not the in-flight count)
// while its first datagram, carrying a large reliable message, goes
// unanswered; the standalone ack that evicts it takes its manifest slot.
// The large message must be sent again. An unreliable message queued at
// the full span waits for room (ChannelStats.SpanWaits) rather than
// evict anything itself. (Before it waited, the evicting send could carry
// a manifest of its own and overwrite the evicted one's slot; finish still
// dispatches the eviction before it puts the new manifest, though no path
// evicts with a manifest now.)
func TestSpanEvictionReachesItsMessages(t *testing.T) {
	var h nopHandler
	var sink loopSink
	ch, err := NewChannel(Config{}, &h, 1000, 7)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Duration(0)
	flush := func() { sink.out = sink.out[:0]; ch.Flush(now, &sink) }
	if _, err := ch.SendReliable(1, make([]byte, 1000)); err != nil { // above RedundancyBytes: no copies
		t.Fatal(err)
	}
	flush()
	if _, err := ch.SendReliable(2, make([]byte, 100)); err != nil { // small: rides redundantly
		t.Fatal(err)
	}
	flush()
	var peer wire.Seq = 5000
	for ch.tracker.Span() < ch.tracker.SpanLimit() {
		now += 100 * time.Microsecond
		d := wire.AppendChannelHeader(nil, wire.ChannelHeader{Seq: peer, NoAck: true})
		d = wire.AppendKeepAliveFrame(d, wire.KeepAliveFrame{})
		peer++
		if err := ch.Receive(now, d); err != nil {
			t.Fatal(err)
		}
		flush()
		if now > 500*time.Millisecond {
			t.Fatalf("span %d never reached %d", ch.tracker.Span(), ch.tracker.SpanLimit())
		}
	}
	now += DefaultRedundancyInterval
	if err := ch.SendUnreliable(make([]byte, 50)); err != nil {
		t.Fatal(err)
	}
	flush()
	if st := ch.Stats(); st.Ack.LostBy(ackmap.CauseEvicted) != 0 || st.SpanWaits == 0 {
		t.Fatalf("an unreliable message at a full span: lost by %v, span waits %d; want it held, nothing evicted", lossCauses(st.Ack), st.SpanWaits)
	}
	// One more datagram from the peer: its standalone ack evicts.
	d := wire.AppendChannelHeader(nil, wire.ChannelHeader{Seq: peer, NoAck: true})
	d = wire.AppendKeepAliveFrame(d, wire.KeepAliveFrame{})
	if err := ch.Receive(now, d); err != nil {
		t.Fatal(err)
	}
	flush()
	st := ch.Stats()
	if st.Ack.LostBy(ackmap.CauseEvicted) == 0 {
		t.Fatalf("no eviction: the scenario did not fill the span (lost by %v, redundant %d)", lossCauses(st.Ack), st.RedundantCopies)
	}
	// The span stays full until the datagrams behind the evicted one time
	// out (RTO); from then on the large message must go out again.
	resent := 0
	for range 300 {
		now += 10 * time.Millisecond
		flush()
		for _, d := range sink.out {
			resent += countReliableID(t, d, 1, 0)
		}
	}
	if resent == 0 {
		st := ch.Stats()
		t.Fatalf("the evicted datagram's 1000 B message was never sent again in 3 s: resent %d, lost by %v, redundant copies %d, held %d",
			st.ReliableResent, lossCauses(st.Ack), st.RedundantCopies, st.ReliableHeld)
	}
}

// countReliableID counts the Reliable frames of message id on stream s in
// datagram d (session header included).
func countReliableID(t *testing.T, d []byte, s uint8, id wire.Seq) int {
	t.Helper()
	_, k, err := wire.ParseSessionHeader(d)
	if err != nil {
		t.Fatal(err)
	}
	_, n, err := wire.ParseChannelHeader(d[k:])
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for rest := d[k+n:]; len(rest) > 0; {
		if wire.FrameType(rest[0]) == wire.FrameReliable {
			if f, _, err := wire.ParseReliableFrame(rest); err == nil && f.Stream == s && f.MessageID == id {
				count++
			}
		}
		_, m, err := wire.SkipFrame(rest)
		if err != nil {
			t.Fatal(err)
		}
		rest = rest[m:]
	}
	return count
}

// TestFragmentIDsFollowMessages: a large unreliable message that waits for
// in-flight room takes its fragment id when its first piece leaves, not at
// every Flush that finds no room: ids advance by one per fragmented message
// however often the loop Flushes, so the receiver's 256-id window is never
// overtaken by ids the sender burnt.
func TestFragmentIDsFollowMessages(t *testing.T) {
	var h nopHandler
	var sink loopSink
	ch, err := NewChannel(Config{}, &h, 1000, 7)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Duration(0)
	var ids []wire.Seq
	flush := func() {
		sink.out = sink.out[:0]
		ch.Flush(now, &sink)
		for _, d := range sink.out {
			ids = appendFragmentIDs(t, ids, d)
		}
	}
	large := make([]byte, 4*ch.MaxSinglePayload(Unreliable))
	if err := ch.SendUnreliable(large); err != nil {
		t.Fatal(err)
	}
	flush()
	if len(ids) == 0 {
		t.Fatal("the first large message sent no piece")
	}
	first := ids[0]
	// Fill the in-flight window (nobody acks) until pieces must wait.
	for ch.inFlightRoom() > ch.inFlightMargin()/2 { // the room large unreliable pieces may use
		now += time.Millisecond
		if err := ch.SendSequenced(0, make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
		flush()
	}
	if err := ch.SendUnreliable(large); err != nil {
		t.Fatal(err)
	}
	n := len(ids)
	for range 500 { // an event loop: a Flush every 0.5 ms, none with room
		now += 500 * time.Microsecond
		flush()
	}
	if len(ids) != n {
		t.Fatalf("pieces went out with no in-flight room (%d ids)", len(ids)-n)
	}
	for range 300 { // the window's datagrams time out; the message goes
		now += 10 * time.Millisecond
		flush()
	}
	if len(ids) == n {
		t.Fatal("the second large message never left")
	}
	if got := ids[n]; got != first+1 {
		t.Fatalf("second fragmented message has id %d, the first %d: %d ids burnt while it waited", got, first, got-first-1)
	}
}

// appendFragmentIDs appends the message id of every Fragment frame in
// datagram d (session header included).
func appendFragmentIDs(t *testing.T, ids []wire.Seq, d []byte) []wire.Seq {
	t.Helper()
	_, k, err := wire.ParseSessionHeader(d)
	if err != nil {
		t.Fatal(err)
	}
	_, n, err := wire.ParseChannelHeader(d[k:])
	if err != nil {
		t.Fatal(err)
	}
	for rest := d[k+n:]; len(rest) > 0; {
		if wire.FrameType(rest[0]) == wire.FrameFragment {
			if f, _, err := wire.ParseFragmentFrame(rest); err == nil {
				ids = append(ids, f.MessageID)
			}
		}
		_, m, err := wire.SkipFrame(rest)
		if err != nil {
			t.Fatal(err)
		}
		rest = rest[m:]
	}
	return ids
}
