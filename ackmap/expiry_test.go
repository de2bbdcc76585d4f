package ackmap

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// NextExpiry is exact enough for a loop that sleeps until it: an Expire
// before it changes nothing (no verdict, no threshold step), and right
// after an Expire it is never due already (a loop would spin). Random
// sends, acks (with gaps, so thresholds and spurious losses adapt) and
// time steps, deterministic per seed.
func TestNextExpiry(t *testing.T) {
	seed := testSeed(13)
	r := rand.New(rand.NewPCG(seed, 1))
	tr, err := NewSendTracker(Config{}, wire.Seq(r.Uint32()))
	if err != nil {
		t.Fatal(err)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s (%s)", fmt.Sprintf(format, args...), repro(t.Name(), seed))
	}
	var ev []Event
	now := time.Hour
	type sentAt struct {
		seq wire.Seq
		at  time.Duration
	}
	var sent []sentAt
	rtt := 30 * time.Millisecond
	for step := range 50000 {
		switch x := r.IntN(10); {
		case x < 4:
			var seq wire.Seq
			seq, ev = tr.Send(ev[:0], now, NoRecord)
			sent = append(sent, sentAt{seq, now})
		case x < 7:
			// Ack the newest seq a round trip old, each older one with a
			// 10 % chance of a gap: losses by count and by time, and
			// spurious ones when a later header names the gap.
			k := len(sent) - 1
			for k >= 0 && now-sent[k].at < rtt {
				k--
			}
			if k < 0 {
				break
			}
			var bits uint32
			for i := range 32 {
				if r.IntN(10) != 0 {
					bits |= 1 << i
				}
			}
			ev, _ = tr.OnAck(ev[:0], now, sent[k].seq, bits)
			rtt = time.Duration(20+r.IntN(40)) * time.Millisecond
		default:
			at, ok := tr.NextExpiry()
			d := time.Duration(r.Int64N(int64(25 * time.Millisecond)))
			if r.IntN(50) == 0 {
				d = time.Duration(r.Int64N(int64(3 * tr.RTO()))) // a quiet spell: time-outs
			}
			to := now + d
			lost, pkt, tim := tr.stats.Lost, tr.pktThresh, tr.timeEighths
			ev = tr.Expire(ev[:0], to)
			if (!ok || to < at) && (len(ev) != 0 || tr.stats.Lost != lost || tr.pktThresh != pkt || tr.timeEighths != tim) {
				fail("step %d: Expire at %v, before NextExpiry %v (ok %v), gave %d events, lost %d→%d, thresholds %d/%d→%d/%d",
					step, to, at, ok, len(ev), lost, tr.stats.Lost, pkt, tim, tr.pktThresh, tr.timeEighths)
			}
			if at, ok := tr.NextExpiry(); ok && at <= to {
				fail("step %d: right after Expire at %v, NextExpiry is %v: already due", step, to, at)
			}
			now = to
		}
		if len(sent) > 256 {
			sent = sent[128:]
		}
	}
	if tr.stats.LostBy(CauseReorderTime) == 0 || tr.stats.Timeouts == 0 || tr.stats.SpuriousLosses == 0 {
		t.Fatalf("the walk did not exercise every rule: %+v (%s)", tr.stats, repro(t.Name(), seed))
	}
}
