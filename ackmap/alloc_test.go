package ackmap

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// TestNoAllocs: the per-datagram paths — receive history, send (with and
// without records, with eviction), skipped seqs, ack, loss by ack bits, by
// the time threshold and by time-out, a spurious loss revealed, multi-seq
// records — allocate nothing once warm.
func TestNoAllocs(t *testing.T) {
	tr := newTracker(t, Config{}, 0)
	evs := make([]Event, 0, 256)
	var h RecvHistory
	var now time.Duration
	var seq wire.Seq

	// Warm the record slab past its peak use below.
	for i := 0; i < 128; i++ {
		tr.Open(uint64(i))
	}
	// Release them: they are empty records.
	tr = newTracker(t, Config{}, 0)
	for i := 0; i < 200; i++ {
		_, _, evs = tr.SendOne(evs[:0], now, 1)
	}
	evs = tr.Expire(evs[:0], 10*time.Second)

	cases := []struct {
		name string
		f    func()
	}{
		{"RecvHistory.Record+Ack", func() {
			seq++
			h.Record(seq)
			h.Record(seq - 3)
			h.Ack()
		}},
		{"SendOne+OnAck", func() {
			now += time.Millisecond
			var s wire.Seq
			s, _, evs = tr.SendOne(evs[:0], now, 9)
			evs, _ = tr.OnAck(evs[:0], now+time.Millisecond, s, 0xFFFFFFFF)
		}},
		{"Send/NoRecord+loss by ack bits", func() {
			now += time.Millisecond
			var a, b wire.Seq
			a, evs = tr.Send(evs[:0], now, NoRecord)
			for range 3 {
				b, evs = tr.Send(evs, now, NoRecord)
			}
			evs, _ = tr.OnAck(evs[:0], now, b, 0b011) // a lost by reorder
			_ = a
		}},
		{"fragment record of 8", func() {
			now += time.Millisecond
			id := tr.Open(3)
			var s wire.Seq
			for range 8 {
				s, evs = tr.Send(evs[:0], now, id)
			}
			evs = tr.Seal(evs[:0], id)
			evs, _ = tr.OnAck(evs[:0], now, s, 0x7F)
		}},
		{"eviction", func() {
			now += time.Millisecond
			for range 70 {
				_, evs = tr.Send(evs[:0], now, NoRecord)
			}
			evs = tr.Expire(evs[:0], now+10*time.Second)
		}},
		{"Expire", func() {
			now += time.Millisecond
			_, _, evs = tr.SendOne(evs[:0], now, 4)
			evs = tr.Expire(evs[:0], now+10*time.Second)
		}},
		{"Skip between sends", func() {
			now += time.Millisecond
			var s wire.Seq
			_, evs = tr.Send(evs[:0], now, NoRecord)
			for range 5 {
				s, evs = tr.Skip(evs)
			}
			evs, _ = tr.OnAck(evs[:0], now+time.Millisecond, s, 0xFFFFFFFF)
		}},
		{"spurious loss revealed", func() {
			now += time.Millisecond
			var a, b wire.Seq
			a, evs = tr.Send(evs[:0], now, NoRecord)
			for range 3 {
				b, evs = tr.Send(evs, now, NoRecord)
			}
			evs, _ = tr.OnAck(evs[:0], now, b, 0b011) // a lost by reorder
			evs, _ = tr.OnAck(evs[:0], now, b, 0b111) // a arrived after all
			_ = a
		}},
		{"time threshold by Expire", func() {
			now += time.Millisecond
			var b wire.Seq
			_, evs = tr.Send(evs[:0], now, NoRecord)
			b, evs = tr.Send(evs, now, NoRecord)
			evs, _ = tr.OnAck(evs[:0], now+time.Millisecond, b, 0)
			evs = tr.Expire(evs[:0], now+time.Second) // the first is lost by the time threshold
		}},
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(1000, c.f); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", c.name, n)
		}
	}
	if tr.PendingCount() != 0 {
		t.Fatalf("pending %d after the cases", tr.PendingCount())
	}
	if st := tr.Stats(); st.SpuriousLosses == 0 || st.LostBy[CauseReorderTime] == 0 || st.LostBy[CauseEvicted] == 0 || st.Skipped == 0 {
		t.Fatalf("a case missed its path: %+v", st)
	}
}
