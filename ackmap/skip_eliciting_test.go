package ackmap

import (
	"testing"
	"time"
)

// TestSkipAckElicitingGivesNoSample: a header whose newest seq came from
// SkipAckEliciting acks the older pending seq but takes no RTT sample from
// it (it waited at the peer longer than the header's ack delay says); one
// whose newest seq came from Skip (a standalone ack) still does, as does
// one whose newest seq is the pending seq itself.
func TestSkipAckElicitingGivesNoSample(t *testing.T) {
	for _, c := range []struct {
		name   string
		skip   func(*SendTracker) // hands out the header's newest seq, or nil: the pending seq is the newest
		sample bool
	}{
		{"eliciting", func(tr *SendTracker) { tr.SkipAckEliciting(nil) }, false},
		{"standalone-ack", func(tr *SendTracker) { tr.Skip(nil) }, true},
		{"pending", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := NewSendTracker(Config{}, 100)
			if err != nil {
				t.Fatal(err)
			}
			seq, _ := tr.Send(nil, 0, NoRecord)
			newest := seq
			if c.skip != nil {
				c.skip(tr)
				newest = tr.NextSeq() - 1
			}
			bits := uint32(0)
			if newest != seq {
				bits = 1 // seq is newest−1
			}
			evs, err := tr.OnAckDelayed(nil, 80*time.Millisecond, newest, bits, 30*time.Millisecond)
			if err != nil || len(evs) != 1 || evs[0].Seq != seq {
				t.Fatalf("ack of %d (newest %d): events %+v, err %v; want seq %d acked", seq, newest, evs, err, seq)
			}
			if got := tr.RTT().HasSample(); got != c.sample {
				t.Fatalf("%s: RTT sampled %v (latest %v), want %v", c.name, got, tr.RTT().Latest(), c.sample)
			}
		})
	}
}
