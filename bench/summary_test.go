package bench

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var spaces = regexp.MustCompile(` {2,}`)

// summaryRuns returns three reps of echo at 0 % loss (tickwire, kcp-fast,
// quic), pps (tickwire unreliable and reliable, kcp-bulk) and bulk
// (tickwire, kcp-bulk), with the values the summary test computes its
// expectations from.
func summaryRuns() []Result {
	var rs []Result
	tw := []float64{30, 40, 50}
	kcp := []float64{60, 60, 60}
	quic := []float64{50, 100, 40}
	for rep := range 3 {
		add := func(r Result) {
			r.Rep = rep
			rs = append(rs, r)
		}
		a, b, c := sample(Tickwire, 0, tw[rep], 10, 10), sample(KCPFast, 0, kcp[rep], 10, 10), sample(QUIC, 0, quic[rep], 10, 10)
		a.WireBytes, b.WireBytes, c.WireBytes = 5000+int64(rep)*100, 2000, 9000
		add(a)
		add(b)
		add(c)
		d := sample(QUICDatagram, 0, 1, 10, 9) // unreliable: never the best other reliable peer
		d.Delivery = Unreliable
		add(d)
		for _, tp := range []struct {
			t, delivery string
			msgs        float64
		}{{Tickwire, Unreliable, 4e6 + float64(rep)*1e6}, {Tickwire, Reliable, 2e6}, {KCPBulk, Reliable, 1e6}} {
			add(Result{Transport: tp.t, Profile: ProfilePPS, Delivery: tp.delivery, LatencyKind: NoLatency, Link: LinkResult{Burst: 1},
				Sent: 100, Delivered: 100, ThroughputMsgsPerS: tp.msgs})
		}
		add(Result{Transport: Tickwire, Profile: ProfileBulk, Delivery: Reliable, LatencyKind: NoLatency, Link: LinkResult{Burst: 1},
			Sent: 8, Delivered: 8, ThroughputMBPerS: 400})
		add(Result{Transport: KCPBulk, Profile: ProfileBulk, Delivery: Reliable, LatencyKind: NoLatency, Link: LinkResult{Burst: 1},
			Sent: 8, Delivered: 8, ThroughputMBPerS: 100 * float64(rep+1)})
	}
	return rs
}

// The summary's ratios are computed per rep from the rows: tickwire's p99
// against each rep's best other reliable peer, bytes per message against
// kcp-fast, pps and bulk against kcp-bulk; the median and min–max of
// those.
func TestHeadlines(t *testing.T) {
	hs := Headlines(summaryRuns())
	type want struct {
		metric, delivery, peer string
		tw, other              float64
		ratio, lo, hi          float64
	}
	// Per rep, the best other p99 is min(kcp, quic) = 50, 60, 40: ratios
	// 30/50, 40/60, 50/40; quic is best in two reps of three.
	wants := []want{
		{MetricP99, Reliable, QUIC, 40, 50, 40.0 / 60, 30.0 / 50, 50.0 / 40},
		{MetricBytes, Reliable, KCPFast, 510, 200, 5100.0 / 2000, 5000.0 / 2000, 5200.0 / 2000},
		{MetricMsgs, Unreliable, KCPBulk, 5e6, 1e6, 5, 4, 6},
		{MetricMsgs, Reliable, KCPBulk, 2e6, 1e6, 2, 2, 2},
		{MetricMB, Reliable, KCPBulk, 400, 200, 2, 400.0 / 300, 4},
	}
	if len(hs) != len(wants) {
		t.Fatalf("%d headlines, want %d: %+v", len(hs), len(wants), hs)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i, w := range wants {
		h := hs[i]
		if h.Metric != w.metric || h.Delivery != w.delivery || h.Peer != w.peer || h.Ratio.N != 3 ||
			!near(h.Tickwire.Median, w.tw) || !near(h.Other.Median, w.other) ||
			!near(h.Ratio.Median, w.ratio) || !near(h.Ratio.Min, w.lo) || !near(h.Ratio.Max, w.hi) {
			t.Errorf("headline %d: %+v, want %+v", i, h, w)
		}
	}

	var buf bytes.Buffer
	if err := WriteSummary(&buf, summaryRuns()); err != nil {
		t.Fatal(err)
	}
	out := spaces.ReplaceAllString(buf.String(), " ")
	for _, s := range []string{
		"Summary: 3 reps of each row, interleaved",
		fmt.Sprintf("echo p99 at 0 %% loss tickwire 40.00 ms best other: quic 50.00 ms %.2fx [%.2f–%.2f]\n", 40.0/60, 30.0/50, 50.0/40),
		"echo wire bytes/msg at 0 % tickwire 510 B kcp-fast 200 B 2.55x [2.50–2.60]\n",
		"pps unrel msg/s", "5.00x [4.00–6.00]",
		"pps rel msg/s", "2.00x [2.00–2.00]",
		"bulk MB/s", "2.00x [1.33–4.00]",
		"every reliable row delivered every message (9 rows)",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("summary lacks %q:\n%s", s, out)
		}
	}

	// One rep: no spread, and a failed row is counted.
	rs := []Result{sample(Tickwire, 5, 30, 10, 10), sample(KCPFast, 5, 60, 10, 9)}
	buf.Reset()
	if err := WriteSummary(&buf, rs); err != nil {
		t.Fatal(err)
	}
	out = spaces.ReplaceAllString(buf.String(), " ")
	// kcp-fast failed: no best other reliable peer, no p99 headline; the
	// bytes headline still compares the wire.
	for _, s := range []string{"Summary: 1 rep of each row", "FAILED: 1 of 2 rows", "wire bytes/msg at 5 % tickwire 250 B kcp-fast 250 B 1.00x\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("one-rep summary lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "p99 at") || strings.Contains(out, "[") {
		t.Errorf("one-rep summary:\n%s", out)
	}
}

// Every line of the text output fits TextWidth columns for the default
// suite and --quick, at 1 and 3 reps, with every row failed (the widest
// status) and the widest plausible numbers (latencies to 9999 ms,
// 10000 echo messages, 10 M pps messages, 10 M msg/s, 10 GB/s); with every
// transport and profile too.
func TestTextWidth(t *testing.T) {
	s := DefaultSuite()
	all := s
	all.Transports = Transports
	all.Profiles = []string{ProfileEcho, ProfilePPS, ProfileBulk, ProfileLoad, ProfileActions}
	for _, c := range []struct {
		name  string
		suite Suite
	}{{"default", s}, {"all transports and profiles", all}} {
		for _, reps := range []int{1, 3} {
			var rs []Result
			for rep := range reps {
				for i, sc := range c.suite.Scenarios() {
					v := 1 + float64((i+rep)%7)*1666.66 // 1 … 9999.96 ms
					sent := int64(10000)
					if sc.Profile == ProfilePPS {
						sent = 1e7 - 1
					}
					r := Result{Transport: sc.Transport, Profile: sc.Profile, Delivery: sc.Delivery, Rep: rep, Link: sc.Link.result(),
						LatencyKind: RTT, Sent: sent, Delivered: sent - 1, Refused: 12345, Peers: sc.Peers,
						LatencyMS:    Latency{P50: v, P90: v, P99: v, P999: v, Max: v},
						PayloadBytes: 1e9, WireBytes: 99e9, CPUSeconds: 999.99, AllocsPerMsg: 9999.9,
						ThroughputMsgsPerS: 9.99e6 - float64(rep), ThroughputDatagramsPerS: 9.99e6, ThroughputMBPerS: 9999.9 - float64(rep),
						ServerCPUUsPerPeerTick: 99.99, ServerUserUsPerPeerTick: 99.99, ServerSysUsPerPeerTick: 99.99,
						ServerWallUsPerPeerTick: 99.99, MemoryPerPeerBytes: 99 << 10}
					if sc.Profile == ProfilePPS || sc.Profile == ProfileBulk {
						r.LatencyKind = NoLatency
					}
					rs = append(rs, r)
				}
			}
			var buf bytes.Buffer
			if err := WriteText(&buf, rs); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(buf.String(), "\n") {
				if n := utf8.RuneCountInString(line); n > TextWidth {
					t.Errorf("%s, %d reps: a line of %d columns:\n%s", c.name, reps, n, line)
				}
			}
			if c.name == "default" && reps == 3 {
				t.Logf("widest output:\n%s", buf.String())
			}
		}
	}
}
