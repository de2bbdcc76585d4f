package link

import (
	"fmt"
	"testing"

	"github.com/tickwire/tickwire/rollback"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

// slicesRun replicates a server's log to one client over sim(25, 5, loss)
// with a ServerLink sending up to k slices per Flush, for ticks ticks;
// perFrame server-authored events of 12 payload bytes (17 bytes on the
// wire) make each frame. Between deadFrom and deadTo the link drops
// everything. It returns the mean and maximum replication lag (newest
// final frame − the client's baseline) over ticks after warm-up, how many
// ticks after the outage the lag took to fall back to steady (≤ 8 frames),
// frames aged out, and wire bytes sent per frame.
func slicesRun(tb testing.TB, k, perFrame int, loss float64, ticks, deadFrom, deadTo int) (meanLag float64, maxLag uint32, recover int, aged uint64, bytesPerFrame float64) {
	tb.Helper()
	net := newSimNet(tb, 11, sim(25, 5, loss))
	w := newWorld(tb, rollback.LogConfig{FrameCapacity: 64}, 64)
	srv, err := rollback.NewServer(w.x, nil, rollback.ServerConfig{FirstFrame: 1, MaxRewindFrames: 4, MaxQueuedActions: 4096})
	if err != nil {
		tb.Fatal(err)
	}
	repl, _ := rollback.NewReplicator(w.log, nil)
	link, err := NewServerLink(srv, repl, 0, 0, LinkConfig{SlicesPerFlush: k, ChecksumEvery: NoChecksums})
	if err != nil {
		tb.Fatal(err)
	}
	tg := &recTarget{tb: tb, peer: 0, ready: true, noCopy: true}
	rv, _ := rollback.NewReceiver(tg, w.x.Registry(), rollback.ReceiverConfig{})
	_ = rv.Reset(0)
	cli := &verdicts{msg: func(m transport.Message) {
		if m.Delivery == transport.Record {
			if err := rv.Unpack(m.Payload); err != nil {
				tb.Fatal(err)
			}
		}
	}}
	se, ce := net.pair(0, transport.Config{}, link, cli)
	pay := make([]byte, 12)
	var lagSum float64
	var samples int
	recover = -1
	for tick := 1; tick <= ticks; tick++ {
		switch tick {
		case deadFrom:
			net.setPair(se, ce, simlink.LinkConfig{Delay: 25e6, Loss: 1})
		case deadTo:
			net.setPair(se, ce, sim(25, 5, loss))
		}
		net.advance()
		se.receive(net.now, net.tick)
		for i := range perFrame {
			pay[0], pay[1] = byte(i), byte(tick)
			if err := srv.EnqueueAction(w.ids.ping, rollback.NoEntity, pay); err != nil {
				tb.Fatal(err)
			}
		}
		if err := srv.Tick(uint32(tick)); err != nil {
			tb.Fatal(err)
		}
		if err := link.Flush(se.ch); err != nil {
			tb.Fatal(err)
		}
		se.flush(net.now, net.tick)
		ce.receive(net.now, net.tick)
		ce.flush(net.now, net.tick)
		ft, _ := srv.FinalThrough()
		lag := ft - min(ft, repl.LastAcked(0))
		if tick > 120 && (tick < deadFrom || deadFrom == 0) {
			lagSum += float64(lag)
			samples++
			maxLag = max(maxLag, lag)
		}
		if deadTo > 0 && tick > deadTo && recover < 0 && lag <= 8 {
			recover = tick - deadTo
		}
	}
	if samples > 0 {
		meanLag = lagSum / float64(samples)
	}
	return meanLag, maxLag, recover, repl.Peer(0).AgedOut, float64(se.ch.Stats().BytesSent) / float64(ticks)
}

// One against several in-order slices per tick (LinkConfig.SlicesPerFlush)
// under loss: the steady replication lag when the stream needs more than
// a datagram per round trip, and the ticks to catch up after a 40-tick
// outage. Deterministic (fixed seed, virtual clock); run with
//
//	go test -run '^$' -bench SlicesPerFlush -benchtime 1x ./rollback
func BenchmarkSlicesPerFlush(b *testing.B) {
	for _, c := range []struct {
		name     string
		perFrame int
		loss     float64
	}{{"light", 4, 10}, {"heavy", 40, 10}, {"heavy-loss20", 40, 20}} {
		for _, k := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/k=%d", c.name, k), func(b *testing.B) {
				for b.Loop() {
					mean, mx, rec, aged, bpf := slicesRun(b, k, c.perFrame, c.loss, 1200, 600, 640)
					b.ReportMetric(mean, "lag-frames")
					b.ReportMetric(float64(mx), "max-lag")
					b.ReportMetric(float64(rec), "recover-ticks")
					b.ReportMetric(float64(aged), "aged-out")
					b.ReportMetric(bpf, "B/frame")
				}
			})
		}
	}
}
