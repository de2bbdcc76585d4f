package ackmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

const ms = time.Millisecond

func newTracker(t testing.TB, cfg Config, first wire.Seq) *SendTracker {
	t.Helper()
	tr, err := NewSendTracker(cfg, first)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// bitsFor returns the ack bits that ack the given seqs relative to ack.
func bitsFor(ack wire.Seq, seqs ...wire.Seq) uint32 {
	var b uint32
	for _, s := range seqs {
		b |= 1 << uint(ack.Sub(s)-1)
	}
	return b
}

func kinds(evs []Event) string {
	s := ""
	for _, e := range evs {
		s += fmt.Sprintf("%s:%d/%s ", e.Kind, e.Seq, e.Cause)
	}
	return s
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	bad := []Config{
		{MaxInFlight: -1},
		{MaxInFlight: MaxInFlightLimit + 1},
		{ReorderThreshold: 34},
		{ReorderThreshold: -2},
		{MinRTO: time.Microsecond},
		{MinRTO: 3 * time.Second}, // above default MaxRTO
		{InitialRTO: 10 * time.Millisecond},
		{MaxRTO: 100 * time.Millisecond}, // below default InitialRTO
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: Validate = %v, want ErrInvalidConfig", c, err)
		}
		if _, err := NewSendTracker(c, 0); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: NewSendTracker err = %v", c, err)
		}
	}
}

func TestAckBeforeAnySendIsRefused(t *testing.T) {
	tr := newTracker(t, Config{}, 10)
	if _, err := tr.OnAck(nil, 0, 9, 0); !errors.Is(err, ErrAckUnsent) {
		t.Fatalf("OnAck with nothing sent: err = %v", err)
	}
	tr.Send(nil, 0, NoRecord)
	if _, err := tr.OnAck(nil, 0, 11, 0); !errors.Is(err, ErrAckUnsent) {
		t.Fatalf("OnAck of unsent seq 11: err = %v", err)
	}
	if tr.Stats().AcksUnsent != 2 || tr.PendingCount() != 1 {
		t.Fatalf("stats %+v pending %d", tr.Stats(), tr.PendingCount())
	}
}

func TestAckBitsAndReorderThreshold(t *testing.T) {
	tr := newTracker(t, Config{}, 65533) // crosses the wrap
	for i := 0; i < 6; i++ {
		_, evs := tr.Send(nil, time.Duration(i)*ms, NoRecord)
		if len(evs) != 0 {
			t.Fatalf("send produced events %v", kinds(evs))
		}
	}
	// seqs: 65533 65534 65535 0 1 2. Peer got 65533, 65535, 1 — ack=1.
	evs, err := tr.OnAck(nil, 50*ms, 1, bitsFor(1, 65533, 65535))
	if err != nil {
		t.Fatal(err)
	}
	// 65534 is 3 behind 1 with its bit clear → lost (reorder threshold 3);
	// 0 is 1 behind → still pending; 2 not covered.
	want := "acked:65533/none lost:65534/reorder acked:65535/none acked:1/none "
	if got := kinds(evs); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if tr.PendingCount() != 2 {
		t.Fatalf("pending = %d, want 2", tr.PendingCount())
	}
	if !tr.RTT().HasSample() || tr.RTT().Latest() != 46*ms {
		t.Fatalf("RTT sample = %v, want 46ms (seq 1 sent at 4ms)", tr.RTT().Latest())
	}
	// A stale duplicate header changes nothing (seq 0, sent at 3 ms, is not
	// yet older than the time threshold 9/8 × 46 ms).
	if evs, _ := tr.OnAck(nil, 51*ms, 1, bitsFor(1, 65533, 65535)); len(evs) != 0 {
		t.Fatalf("duplicate header gave %v", kinds(evs))
	}
	// Later the peer reports 65534 after all: the verdict stands, the loss
	// counts as spurious, and the packet threshold rises past the distance
	// (3) it was declared at.
	evs, _ = tr.OnAck(nil, 52*ms, 2, bitsFor(2, 65533, 65534, 65535, 0, 1))
	if got := kinds(evs); got != "acked:0/none acked:2/none " {
		t.Fatalf("events %q", got)
	}
	if tr.PendingCount() != 0 {
		t.Fatalf("pending = %d", tr.PendingCount())
	}
	st := tr.Stats()
	if st.SpuriousLosses != 1 || st.SpuriousBy(CauseReorder) != 1 || st.ReorderThreshold != 4 || st.TimeThreshold != 9.0/8 {
		t.Fatalf("after a spurious reorder loss: %+v", st)
	}
	// The same header again counts nothing twice.
	tr.OnAck(nil, 53*ms, 2, bitsFor(2, 65533, 65534, 65535, 0, 1))
	if st := tr.Stats(); st.SpuriousLosses != 1 {
		t.Fatalf("duplicate header counted again: %+v", st)
	}
}

// S-B2: with the reorder threshold disabled, a seq is lost only once it
// falls more than 32 behind an ack — exactly once, and never after an ack.
func TestWindowAgeOut(t *testing.T) {
	tr := newTracker(t, Config{ReorderThreshold: AckWindow}, 0)
	for i := 0; i < 40; i++ {
		tr.Send(nil, 0, NoRecord)
	}
	// Ack 32 with nothing else: seq 0 is exactly 32 behind — still covered.
	evs, _ := tr.OnAck(nil, ms, 32, 0)
	if got := kinds(evs); got != "acked:32/none " {
		t.Fatalf("ack 32: %q", got)
	}
	// Ack 33: seq 0 falls out of the window → lost; 1..31 still covered.
	evs, _ = tr.OnAck(nil, ms, 33, 0)
	if got := kinds(evs); got != "lost:0/window acked:33/none " {
		t.Fatalf("ack 33: %q", got)
	}
	evs, _ = tr.OnAck(nil, ms, 39, 0)
	if len(evs) != 7 || evs[0].Seq != 1 || evs[5].Seq != 6 || evs[6].Seq != 39 || evs[6].Kind != SeqAcked {
		t.Fatalf("ack 39: %q", kinds(evs))
	}
	for _, e := range evs[:6] {
		if e.Kind != SeqLost || e.Cause != CauseWindow {
			t.Fatalf("ack 39: %q", kinds(evs))
		}
	}
	if got := tr.Stats().LostBy(CauseWindow); got != 7 {
		t.Fatalf("window losses = %d", got)
	}
}

// S-B6: more than MaxInFlight unresolved seqs evicts the oldest as lost,
// each exactly once.
func TestMaxInFlightEviction(t *testing.T) {
	tr := newTracker(t, Config{MaxInFlight: 16}, 65530)
	var lost []wire.Seq
	for i := 0; i < 40; i++ {
		_, evs := tr.Send(nil, 0, NoRecord)
		for _, e := range evs {
			if e.Kind != SeqLost || e.Cause != CauseEvicted {
				t.Fatalf("unexpected event %v", kinds(evs))
			}
			lost = append(lost, e.Seq)
		}
		if tr.PendingCount() > 16 {
			t.Fatalf("pending %d > MaxInFlight", tr.PendingCount())
		}
	}
	if len(lost) != 24 {
		t.Fatalf("%d evictions, want 24", len(lost))
	}
	for i, s := range lost {
		if s != wire.Seq(65530).Add(i) {
			t.Fatalf("eviction %d was seq %d, want %d", i, s, wire.Seq(65530).Add(i))
		}
	}
	// Acking an evicted seq does nothing; the survivors ack normally.
	evs, _ := tr.OnAck(nil, 0, wire.Seq(65530).Add(39), 0xFFFF)
	if len(evs) != 16 {
		t.Fatalf("final ack resolved %d, want 16: %v", len(evs), kinds(evs))
	}
	if tr.PendingCount() != 0 {
		t.Fatal("pending not 0")
	}
}

// S-B5: a quiet link resolves every outstanding seq by time-out, and the
// back-off doubles the next time-out until an RTT sample resets it.
func TestQuietLinkTimesOut(t *testing.T) {
	tr := newTracker(t, Config{}, 0)
	for i := 0; i < 10; i++ {
		tr.Send(nil, time.Duration(i)*ms, NoRecord)
	}
	if evs := tr.Expire(nil, 999*ms); len(evs) != 0 {
		t.Fatalf("expired before the initial RTO: %v", kinds(evs))
	}
	evs := tr.Expire(nil, 1004*ms) // seqs 0..4 are ≥ 1s old
	if got := kinds(evs); got != "lost:0/timeout lost:1/timeout lost:2/timeout lost:3/timeout lost:4/timeout " {
		t.Fatalf("expire: %q", got)
	}
	if tr.RTO() != 2*time.Second {
		t.Fatalf("RTO after time-out = %v, want backed off to 2s (clamped)", tr.RTO())
	}
	evs = tr.Expire(nil, 3100*ms)
	if len(evs) != 5 || tr.PendingCount() != 0 {
		t.Fatalf("second expire: %q pending %d", kinds(evs), tr.PendingCount())
	}
	// A fresh sample resets the back-off.
	s, _ := tr.Send(nil, 4*time.Second, NoRecord)
	tr.OnAck(nil, 4*time.Second+80*ms, s, 0)
	if rto := tr.RTO(); rto != 80*ms+40*ms*4 {
		t.Fatalf("RTO after sample = %v, want 240ms", rto)
	}
}

// S-C4 (accounting half): a record of N seqs is abandoned when any one of
// them is lost, in any verdict order — before its siblings' acks, among
// them, or after every sibling was acked — and is never confirmed.
func TestFragmentRecordAbandonedInAnyOrder(t *testing.T) {
	const n = 4
	type order int
	const (
		lossFirst order = iota // the loss is decided before any sibling ack
		lossAmid               // one header acks the siblings and decides the loss
		lossLast               // every sibling acked, then the loss
	)
	for lostIdx := 0; lostIdx < n; lostIdx++ {
		orders := []order{lossAmid, lossLast}
		if lostIdx == 0 {
			// Send times never decrease, so only the first fragment can
			// reach its time-out while its siblings have not.
			orders = append(orders, lossFirst)
		}
		for _, ord := range orders {
			t.Run(fmt.Sprintf("lost%d/%s", lostIdx, [...]string{"lossFirst", "lossAmid", "lossLast"}[ord]), func(t *testing.T) {
				cfg := Config{ReorderThreshold: AckWindow}
				if ord == lossAmid {
					cfg.ReorderThreshold = 3
				}
				tr := newTracker(t, cfg, 65534)
				id := tr.Open(777)
				var seqs, siblings []wire.Seq
				var evs []Event
				for i := 0; i < n; i++ {
					at := time.Duration(0)
					if ord == lossFirst && i > 0 {
						at = 600 * ms // younger than fragment 0 by more than the time-out margin
					}
					var s wire.Seq
					s, evs = tr.Send(evs, at, id)
					seqs = append(seqs, s)
					if i != lostIdx {
						siblings = append(siblings, s)
					}
				}
				evs = tr.Seal(evs, id)
				switch ord {
				case lossFirst:
					evs = tr.Expire(evs, time.Second)
					for _, s := range siblings {
						evs, _ = tr.OnAck(evs, time.Second, s, 0)
					}
				case lossAmid:
					var filler wire.Seq
					for i := 0; i < 3; i++ {
						filler, evs = tr.Send(evs, 0, NoRecord)
					}
					evs, _ = tr.OnAck(evs, ms, filler, bitsFor(filler, siblings...))
				case lossLast:
					for _, s := range siblings {
						evs, _ = tr.OnAck(evs, ms, s, 0)
					}
					newest := seqs[n-1]
					for i := 0; i < AckWindow; i++ {
						newest, evs = tr.Send(evs, ms, NoRecord)
					}
					evs, _ = tr.OnAck(evs, 2*ms, newest, 0)
				}
				var confirmed, abandoned, acked, lost int
				for _, e := range evs {
					switch {
					case e.Kind == RecordConfirmed:
						confirmed++
					case e.Kind == RecordAbandoned:
						abandoned++
						if e.Tag != 777 || e.Record != id || e.Seq != seqs[lostIdx] {
							t.Fatalf("abandon event %+v", e)
						}
					case e.Record == id && e.Kind == SeqAcked:
						acked++
					case e.Record == id && e.Kind == SeqLost:
						lost++
					}
				}
				if confirmed != 0 || abandoned != 1 || acked != n-1 || lost != 1 {
					t.Fatalf("confirmed=%d abandoned=%d acked=%d lost=%d: %v", confirmed, abandoned, acked, lost, kinds(evs))
				}
				if tr.PendingRecords() != 0 {
					t.Fatalf("record not released: %d pending", tr.PendingRecords())
				}
			})
		}
	}
}

func TestRecordConfirmedOnlyWhenEverySeqAcked(t *testing.T) {
	tr := newTracker(t, Config{}, 0)
	id := tr.Open(5)
	a, _ := tr.Send(nil, 0, id)
	b, _ := tr.Send(nil, 0, id)
	// Both acked before Seal: the verdict waits for Seal.
	evs, _ := tr.OnAck(nil, ms, b, bitsFor(b, a))
	if got := kinds(evs); got != "acked:0/none acked:1/none " {
		t.Fatalf("%q", got)
	}
	evs = tr.Seal(nil, id)
	if len(evs) != 1 || evs[0].Kind != RecordConfirmed || evs[0].Tag != 5 || evs[0].Seq != b {
		t.Fatalf("seal: %+v", evs)
	}
	// Sealed first, acked later: confirmed with the last ack.
	id = tr.Open(6)
	c, _ := tr.Send(nil, 0, id)
	d, _ := tr.Send(nil, 0, id)
	tr.Seal(nil, id)
	evs, _ = tr.OnAck(nil, ms, c, 0)
	if got := kinds(evs); got != "acked:2/none " {
		t.Fatalf("%q", got)
	}
	evs, _ = tr.OnAck(nil, ms, d, bitsFor(d, c))
	if got := kinds(evs); got != "acked:3/none confirmed:3/none " {
		t.Fatalf("%q", got)
	}
	// An empty record is abandoned at Seal.
	evs = tr.Seal(nil, tr.Open(7))
	if len(evs) != 1 || evs[0].Kind != RecordAbandoned || evs[0].Tag != 7 {
		t.Fatalf("empty seal: %+v", evs)
	}
	if tr.PendingRecords() != 0 {
		t.Fatalf("pending records %d", tr.PendingRecords())
	}
	st := tr.Stats()
	if st.RecordsConfirmed != 2 || st.RecordsAbandoned != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A record whose own earlier seq is evicted while it is still being sent
// stays open until Seal, and is abandoned exactly once.
func TestRecordSurvivesEvictionOfItsOwnSeq(t *testing.T) {
	tr := newTracker(t, Config{MaxInFlight: 2}, 0)
	id := tr.Open(1)
	var evs []Event
	for i := 0; i < 5; i++ {
		_, evs = tr.Send(evs, 0, id)
	}
	evs = tr.Seal(evs, id)
	evs, _ = tr.OnAck(evs, ms, 4, bitsFor(4, 3))
	if got := kinds(evs); got != "lost:0/evicted abandoned:0/evicted lost:1/evicted lost:2/evicted acked:3/none acked:4/none " {
		t.Fatalf("%q", got)
	}
	if tr.PendingRecords() != 0 || tr.PendingCount() != 0 {
		t.Fatal("record or seqs left pending")
	}
}

func TestStaleRecordIDPanics(t *testing.T) {
	tr := newTracker(t, Config{}, 0)
	_, id, _ := tr.SendOne(nil, 0, 1)
	tr.OnAck(nil, ms, 0, 0) // confirms and releases id
	for name, f := range map[string]func(){
		"send":  func() { tr.Send(nil, 0, id) },
		"seal":  func() { tr.Seal(nil, id) },
		"bogus": func() { tr.Seal(nil, RecordID(12345)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with a released RecordID did not panic", name)
				}
			}()
			f()
		}()
	}
}

// Skipped seqs (ack-only datagrams) get no verdict, are ignored when acked,
// do not count toward MaxInFlight, and count toward the span only.
func TestSkip(t *testing.T) {
	tr := newTracker(t, Config{MaxInFlight: 4}, 0)
	if tr.SpanLimit() != 16 {
		t.Fatalf("SpanLimit %d, want 16 (4 × MaxInFlight)", tr.SpanLimit())
	}
	a, _ := tr.Send(nil, 0, NoRecord)
	s1, _ := tr.Skip(nil)
	s2, _ := tr.Skip(nil)
	if tr.PendingCount() != 1 || tr.Span() != 3 || tr.InFlightRoom() != 3 {
		t.Fatalf("pending %d span %d room %d", tr.PendingCount(), tr.Span(), tr.InFlightRoom())
	}
	// An ack of the skipped seqs resolves nothing: they expect no verdict,
	// a is only 2 behind the ack (under the reorder threshold of 3), and
	// not older than the time threshold.
	if evs, _ := tr.OnAck(nil, 0, s2, bitsFor(s2, s1)); len(evs) != 0 {
		t.Fatalf("ack of skipped seqs: %q", kinds(evs))
	}
	var evs []Event
	for range 12 {
		if _, evs = tr.Skip(nil); len(evs) != 0 {
			t.Fatalf("skip inside the span evicted: %q", kinds(evs))
		}
	}
	if tr.Span() != 15 || tr.InFlightRoom() != 1 {
		t.Fatalf("span %d room %d", tr.Span(), tr.InFlightRoom())
	}
	tr.Skip(nil) // span 16: full
	if _, evs = tr.Skip(nil); kinds(evs) != fmt.Sprintf("lost:%d/evicted ", a) {
		t.Fatalf("skip past the span: %q", kinds(evs))
	}
	if tr.PendingCount() != 0 || tr.Span() != 0 || tr.Stats().Skipped != 16 {
		t.Fatalf("pending %d span %d stats %+v", tr.PendingCount(), tr.Span(), tr.Stats())
	}
	// Skips between sends never evict while fewer than MaxInFlight are
	// pending and the span has room; the fifth pending send does.
	for i := range 4 {
		_, evs = tr.Send(nil, 0, NoRecord)
		_, evs2 := tr.Skip(nil)
		_, evs3 := tr.Skip(nil)
		if len(evs)+len(evs2)+len(evs3) != 0 {
			t.Fatalf("send %d evicted: %q %q %q", i, kinds(evs), kinds(evs2), kinds(evs3))
		}
	}
	if tr.PendingCount() != 4 || tr.Span() != 12 || tr.InFlightRoom() != 0 {
		t.Fatalf("pending %d span %d room %d", tr.PendingCount(), tr.Span(), tr.InFlightRoom())
	}
	if _, evs = tr.Send(nil, 0, NoRecord); len(evs) != 1 || evs[0].Cause != CauseEvicted {
		t.Fatalf("send with MaxInFlight pending: %q", kinds(evs))
	}
}

// SpanLimit is 4 × MaxInFlight rounded up to a power of two, capped at half
// the seq space, and a ring of that size holds the whole span.
func TestSpanLimit(t *testing.T) {
	for _, c := range []struct{ inFlight, span int }{
		{1, 4}, {3, 16}, {64, 256}, {100, 512}, {8192, 32768}, {MaxInFlightLimit, MaxSpanLimit},
	} {
		tr := newTracker(t, Config{MaxInFlight: c.inFlight}, 0)
		if tr.SpanLimit() != c.span {
			t.Errorf("MaxInFlight %d: SpanLimit %d, want %d", c.inFlight, tr.SpanLimit(), c.span)
		}
	}
	// At the largest span every seq in it still compares unambiguously:
	// the oldest pending seq is acked by the header that names it.
	tr := newTracker(t, Config{MaxInFlight: MaxInFlightLimit}, 65000)
	first, _ := tr.Send(nil, 0, NoRecord)
	var evs []Event
	for tr.Span() < tr.SpanLimit() {
		if _, evs = tr.Skip(nil); len(evs) != 0 {
			t.Fatalf("skip at span %d evicted: %q", tr.Span(), kinds(evs))
		}
	}
	if evs, err := tr.OnAck(nil, ms, first, 0); err != nil || kinds(evs) != fmt.Sprintf("acked:%d/none ", first) {
		t.Fatalf("ack of the oldest at full span: %q, %v", kinds(evs), err)
	}
}

// The time threshold: a seq behind an acked one is lost once it was sent
// more than 9/8 × max(SRTT, latest RTT) ago — by the next ack header or by
// Expire, whichever comes first — and a seq newer than every ack waits for
// the RTO.
func TestTimeThreshold(t *testing.T) {
	tr := newTracker(t, Config{}, 100)
	a, _ := tr.Send(nil, 5*ms, NoRecord)  // will be lost
	b, _ := tr.Send(nil, 10*ms, NoRecord) // acked at 90 ms: RTT 80 ms
	c, _ := tr.Send(nil, 20*ms, NoRecord) // newer than every ack
	evs, _ := tr.OnAck(nil, 90*ms, b, 0)  // a is 1 behind: under the packet threshold
	if kinds(evs) != fmt.Sprintf("acked:%d/none ", b) {
		t.Fatalf("ack b: %q", kinds(evs))
	}
	if d := tr.Stats().LossDelay; d != 90*ms {
		t.Fatalf("LossDelay %v, want 9/8 × 80ms", d)
	}
	if evs := tr.Expire(nil, 94*ms+999*time.Microsecond); len(evs) != 0 {
		t.Fatalf("lost before the time threshold: %q", kinds(evs))
	}
	evs = tr.Expire(nil, 95*ms)
	if kinds(evs) != fmt.Sprintf("lost:%d/reorder-time ", a) {
		t.Fatalf("expire at the time threshold: %q", kinds(evs))
	}
	if tr.Stats().Timeouts != 0 || tr.RTO() != 80*ms+160*ms {
		t.Fatalf("a time-threshold loss backed off the RTO: %v, %+v", tr.RTO(), tr.Stats())
	}
	// c is newer than the largest ack: only the RTO (240 ms) resolves it.
	if evs := tr.Expire(nil, 259*ms); len(evs) != 0 {
		t.Fatalf("c lost before its RTO: %q", kinds(evs))
	}
	if evs := tr.Expire(nil, 260*ms); kinds(evs) != fmt.Sprintf("lost:%d/timeout ", c) {
		t.Fatalf("c at its RTO: %q", kinds(evs))
	}
	// The same rule applies when the next header arrives first.
	d, _ := tr.Send(nil, 300*ms, NoRecord)
	e, _ := tr.Send(nil, 310*ms, NoRecord)
	if evs, _ := tr.OnAck(nil, 390*ms, e, 0); kinds(evs) != fmt.Sprintf("lost:%d/reorder-time acked:%d/none ", d, e) {
		t.Fatalf("header past d's time threshold: %q", kinds(evs))
	}
}

// A loss declared by the time threshold that an ack later shows arrived
// raises the time threshold to what its round trip needed (plus an eighth),
// at most 2×; after a quiet spell the thresholds step back down one at a
// time.
func TestAdaptiveThresholdsRaiseAndDecay(t *testing.T) {
	tr := newTracker(t, Config{}, 0)
	a, _ := tr.Send(nil, 5*ms, NoRecord)
	b, _ := tr.Send(nil, 10*ms, NoRecord)
	tr.OnAck(nil, 90*ms, b, 0) // RTT 80 ms, time threshold 90 ms
	if evs := tr.Expire(nil, 95*ms); kinds(evs) != "lost:0/reorder-time " {
		t.Fatalf("expire: %q", kinds(evs))
	}
	// a arrives late after all: the header that shows it comes 115 ms after
	// its send.
	c, _ := tr.Send(nil, 100*ms, NoRecord)
	tr.OnAck(nil, 120*ms, c, bitsFor(c, a, b))
	st := tr.Stats()
	if st.SpuriousLosses != 1 || st.SpuriousBy(CauseReorderTime) != 1 || st.ReorderThreshold != 3 {
		t.Fatalf("spurious: %+v", st)
	}
	// Under the estimate that declared it (80 ms), a's 115 ms round trip
	// needed ceil(8 × 115/80) = 12 eighths; plus one: 13/8.
	const want = 13.0 / 8
	if st.TimeThreshold != want {
		t.Fatalf("TimeThreshold %v, want %v", st.TimeThreshold, want)
	}
	// Quiet spell: max(16 × SRTT, 1 s) later, one step down per spell.
	spell := max(16*tr.RTT().Smoothed(), time.Second)
	tr.Expire(nil, 120*ms+spell-ms)
	if got := tr.Stats().TimeThreshold; got != want {
		t.Fatalf("decayed early: %v", got)
	}
	tr.Expire(nil, 120*ms+spell)
	if got := tr.Stats().TimeThreshold; got != want-1.0/8 {
		t.Fatalf("after one spell: %v, want %v", got, want-1.0/8)
	}
	now := 120*ms + spell
	for range 20 {
		now += spell
		tr.Expire(nil, now)
	}
	if st := tr.Stats(); st.TimeThreshold != 9.0/8 || st.ReorderThreshold != 3 {
		t.Fatalf("not back to base: %+v", st)
	}
}

// LostBy and SpuriousBy are accessors, and JSON names the causes.
func TestSendStatsByCause(t *testing.T) {
	var s SendStats
	s.lostBy[CauseTimeout] = 4
	s.spuriousBy[CauseReorder] = 1
	s.Lost = 4
	if s.LostBy(CauseTimeout) != 4 || s.SpuriousBy(CauseReorder) != 1 || s.LostBy(Cause(99)) != 0 {
		t.Fatalf("accessors: %d %d %d", s.LostBy(CauseTimeout), s.SpuriousBy(CauseReorder), s.LostBy(Cause(99)))
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Lost":4`, `"LostBy":{"` + CauseTimeout.String() + `":4}`, `"SpuriousBy":{"` + CauseReorder.String() + `":1}`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("json %s lacks %s", b, want)
		}
	}
}
