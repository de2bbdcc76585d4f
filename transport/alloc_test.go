package transport

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// loopSink hands datagrams straight to another channel: no socket, no
// simulated link, so the measurement is the protocol's own cost.
type loopSink struct {
	bufs [][]byte
	out  [][]byte
}

func (s *loopSink) Buffer() []byte {
	if len(s.out) == len(s.bufs) {
		s.bufs = append(s.bufs, make([]byte, 0, MaxMTU))
	}
	return s.bufs[len(s.out)][:0]
}

func (s *loopSink) Commit(d []byte) { s.out = append(s.out, d) }

// nopHandler counts deliveries and verdicts without keeping anything.
type nopHandler struct{ messages, records int }

func (h *nopHandler) OnMessage(Message)                  { h.messages++ }
func (h *nopHandler) OnRecord(uint64, bool)              { h.records++ }
func (h *nopHandler) OnDisconnect(wire.DisconnectReason) {}

// pair is two channels wired back to back through loopSinks.
type pair struct {
	a, b   *Channel
	ha, hb nopHandler
	sa, sb loopSink
	now    time.Duration
	tick   uint64
}

func newPair(tb testing.TB, cfg Config) *pair {
	p := &pair{}
	var err error
	if p.a, err = NewChannel(cfg, &p.ha, 100, 7); err != nil {
		tb.Fatal(err)
	}
	if p.b, err = NewChannel(cfg, &p.hb, 200, 7); err != nil {
		tb.Fatal(err)
	}
	return p
}

// step flushes both channels and delivers what each sent to the other.
func (p *pair) step() {
	p.tick++
	p.now += tick60
	p.a.Flush(p.now, &p.sa)
	p.b.Flush(p.now, &p.sb)
	for _, d := range p.sa.out {
		p.b.Receive(p.now, d[wire.SessionHeaderLen:])
	}
	for _, d := range p.sb.out {
		p.a.Receive(p.now, d[wire.SessionHeaderLen:])
	}
	p.sa.out, p.sb.out = p.sa.out[:0], p.sb.out[:0]
}

// TestNoAllocs: steady-state send and receive of unreliable, sequenced,
// reliable and record messages, and reassembly of a fragmented message,
// allocate nothing once buffers are warm. (S-F7's transport counterpart.)
func TestNoAllocs(t *testing.T) {
	small := make([]byte, 64)
	large := make([]byte, 20_000)
	cases := []struct {
		name string
		f    func(p *pair)
	}{
		{"unreliable", func(p *pair) { p.a.SendUnreliable(small) }},
		{"sequenced", func(p *pair) { p.a.SendSequenced(1, small) }},
		{"reliable", func(p *pair) { p.a.SendReliable(1, small) }},
		{"record", func(p *pair) { p.a.SendRecord(3, small) }},
		{"echo", func(p *pair) { p.a.SendReliable(1, small); p.b.SendReliable(1, small) }},
		{"fragmented-unreliable", func(p *pair) { p.a.SendUnreliable(large) }},
		{"fragmented-reliable", func(p *pair) { p.a.SendReliable(2, large) }},
	}
	for _, c := range cases {
		p := newPair(t, Config{})
		for range 300 { // warm every buffer to its steady size
			c.f(p)
			p.step()
		}
		before := p.hb.messages
		if n := testing.AllocsPerRun(200, func() { c.f(p); p.step() }); n != 0 {
			t.Errorf("%s: %v allocations per tick, want 0", c.name, n)
		}
		if p.hb.messages == before {
			t.Errorf("%s: nothing was delivered while measuring", c.name)
		}
	}
}

// BenchmarkChannelSendReceive is the protocol's cost per datagram: one
// 64-byte reliable message each way per tick between two channels joined
// back to back (no socket), so each op is two datagrams built, parsed,
// acked and delivered. Target ≤ 120 ns per datagram (issue 13; see
// docs/BENCHMARKS.md for the figures and the instruction count).
func BenchmarkChannelSendReceive(b *testing.B) {
	for _, tc := range []struct {
		name string
		size int
		send func(p *pair, m []byte)
	}{
		{"unreliable/64B", 64, func(p *pair, m []byte) { p.a.SendUnreliable(m); p.b.SendUnreliable(m) }},
		{"reliable/64B", 64, func(p *pair, m []byte) { p.a.SendReliable(1, m); p.b.SendReliable(1, m) }},
		{"reliable/1000B", 1000, func(p *pair, m []byte) { p.a.SendReliable(1, m); p.b.SendReliable(1, m) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := newPair(b, Config{})
			m := make([]byte, tc.size)
			for range 100 {
				tc.send(p, m)
				p.step()
			}
			b.SetBytes(int64(2 * tc.size))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				tc.send(p, m)
				p.step()
			}
			b.StopTimer()
			dgrams := p.a.Stats().DatagramsSent + p.b.Stats().DatagramsSent
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(dgrams), "ns/datagram")
			if p.hb.messages == 0 || p.ha.messages == 0 {
				b.Fatal("nothing delivered")
			}
		})
	}
}

// BenchmarkReassembly sends and reassembles one 50 KB reliable message per
// op (43 pieces at the default MTU).
func BenchmarkReassembly(b *testing.B) {
	p := newPair(b, Config{})
	m := make([]byte, 50_000)
	b.SetBytes(int64(len(m)))
	b.ReportAllocs()
	for b.Loop() {
		before := p.hb.messages
		p.a.SendReliable(1, m)
		for p.hb.messages == before {
			p.step()
		}
	}
}

// BenchmarkChannelFootprint reports the heap a channel takes (B/op is per
// pair, so two channels): fresh, and after one reliable message each way
// on one stream — the load profile's shape, where each session uses a
// single ordered stream.
func BenchmarkChannelFootprint(b *testing.B) {
	m := make([]byte, 64)
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			newPair(b, Config{})
		}
	})
	b.Run("one-stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := newPair(b, Config{})
			p.a.SendReliable(1, m)
			p.b.SendReliable(1, m)
			p.step()
			p.step()
		}
	})
}
