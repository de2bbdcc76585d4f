package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Headline metrics.
const (
	// MetricP99 is a latency profile's p99 at one loss rate, tickwire
	// against the best other reliable peer of the same rep.
	MetricP99 = "p99"
	// MetricBytes is an echo row's wire bytes per message sent
	// (WireBytes / Sent: both directions, headers, acks and
	// retransmissions), tickwire against kcp.
	MetricBytes = "bytes/msg"
	// MetricMsgs is a pps row's delivered messages per second, tickwire
	// (unreliable and reliable) against kcp.
	MetricMsgs = "msg/s"
	// MetricMB is the bulk row's MB/s, tickwire against kcp.
	MetricMB = "MB/s"
)

// Headline is one ratio of the summary: a tickwire row against a peer's
// row of the same profile and link, computed per rep.
type Headline struct {
	Profile string
	Metric  string // MetricP99, MetricBytes, MetricMsgs or MetricMB
	// Link is the rows' link; Delivery is the tickwire row's (pps has
	// both).
	Link     LinkResult
	Delivery string
	// Peer is the transport tickwire is compared with: for MetricP99 the
	// one that was the best other reliable peer in most reps (the first
	// in report order on a tie), else kcp (kcp-fast, kcp-default or
	// kcp-bulk for echo; kcp-bulk, kcp-fast or kcp-default for pps and
	// bulk: the first that ran).
	Peer string
	// Tickwire and Other are the metric over the reps: tickwire's, and
	// the peer's (for MetricP99 each rep's best other peer's).
	Tickwire, Other Stat
	// Ratio is tickwire ÷ the peer, one value per rep.
	Ratio Stat
}

// LowerIsBetter reports whether a ratio below 1 favours tickwire.
func (h Headline) LowerIsBetter() bool { return h.Metric == MetricP99 || h.Metric == MetricBytes }

// Headlines computes the summary ratios of rs, in this order: for echo
// then actions, p99 at each loss rate (tickwire's reliable row against
// the lowest p99 among the other reliable rows of the same rep that ran
// and delivered everything) and, echo only, wire bytes per message
// against kcp at each loss; then pps msg/s (tickwire's unreliable, then
// reliable row) and bulk MB/s against kcp. A ratio is computed in each
// rep where both rows ran and the peer's value is not zero; a headline
// with no such rep is left out. Rows of an unknown link (RunClient's)
// are left out.
func Headlines(rs []Result) []Headline {
	type at struct {
		k   rowKey
		rep int
	}
	idx := map[at]Result{}
	for _, r := range rs {
		idx[at{keyOf(r), r.Rep}] = r
	}
	reps := RepCount(rs)
	rows := Rows(rs)
	var out []Headline
	// against returns the headline of tickwire's row tw against the
	// row of transport name in the same group.
	against := func(tw Row, metric, name string, f func(Result) float64) (Headline, bool) {
		f0 := tw.First()
		h := Headline{Profile: f0.Profile, Metric: metric, Link: f0.Link, Delivery: keyOf(f0).delivery, Peer: name}
		var t, o, q []float64
		for rep := range reps {
			a, ok1 := idx[at{keyOf(f0), rep}]
			k := keyOf(f0)
			k.transport, k.delivery = name, DeliveryOf(name, f0.Profile)
			b, ok2 := idx[at{k, rep}]
			if !ok1 || !ok2 || a.NotSupported != "" || b.NotSupported != "" || f(b) == 0 {
				continue
			}
			t, o, q = append(t, f(a)), append(o, f(b)), append(q, f(a)/f(b))
		}
		h.Tickwire, h.Other, h.Ratio = StatOf(t), StatOf(o), StatOf(q)
		return h, len(q) > 0
	}
	kcpFor := func(tw Row, prefer []string) string {
		for _, name := range prefer {
			if slices.ContainsFunc(rows, func(r Row) bool {
				f := r.First()
				return f.Transport == name && f.Profile == tw.First().Profile && f.Link == tw.First().Link
			}) {
				return name
			}
		}
		return ""
	}
	for _, profile := range []string{ProfileEcho, ProfileActions} {
		for _, tw := range rows {
			f0 := tw.First()
			if f0.Profile != profile || f0.Transport != Tickwire || !f0.Link.Known() || !f0.Reliable() {
				continue
			}
			if h, ok := bestOther(tw, rs, reps); ok {
				out = append(out, h)
			}
		}
		if profile != ProfileEcho {
			continue
		}
		for _, tw := range rows {
			f0 := tw.First()
			if f0.Profile != profile || f0.Transport != Tickwire || !f0.Link.Known() {
				continue
			}
			if name := kcpFor(tw, []string{KCPFast, KCPDefault, KCPBulk}); name != "" {
				if h, ok := against(tw, MetricBytes, name, bytesPerMsg); ok {
					out = append(out, h)
				}
			}
		}
	}
	for _, tput := range []struct {
		profile, metric string
		f               func(Result) float64
	}{
		{ProfilePPS, MetricMsgs, func(r Result) float64 { return r.ThroughputMsgsPerS }},
		{ProfileBulk, MetricMB, func(r Result) float64 { return r.ThroughputMBPerS }},
	} {
		for _, tw := range rows {
			f0 := tw.First()
			if f0.Profile != tput.profile || f0.Transport != Tickwire || !f0.Link.Known() {
				continue
			}
			if name := kcpFor(tw, []string{KCPBulk, KCPFast, KCPDefault}); name != "" {
				if h, ok := against(tw, tput.metric, name, tput.f); ok {
					out = append(out, h)
				}
			}
		}
	}
	return out
}

// bytesPerMsg is r's wire bytes per message sent, 0 for none sent.
func bytesPerMsg(r Result) float64 {
	if r.Sent == 0 {
		return 0
	}
	return float64(r.WireBytes) / float64(r.Sent)
}

// bestOther returns tickwire's row tw's p99 headline: in each rep,
// against the lowest p99 among the other reliable rows of the same
// profile, link and rep that ran, delivered something and did not fail.
func bestOther(tw Row, rs []Result, reps int) (Headline, bool) {
	f0 := tw.First()
	h := Headline{Profile: f0.Profile, Metric: MetricP99, Link: f0.Link, Delivery: keyOf(f0).delivery}
	wins := map[string]int{}
	var t, o, q []float64
	for rep := range reps {
		var me, best *Result
		for i := range rs {
			r := &rs[i]
			if r.Rep != rep || r.Profile != f0.Profile || r.Link != f0.Link || r.NotSupported != "" {
				continue
			}
			switch {
			case r.Transport == Tickwire && keyOf(*r).delivery == h.Delivery:
				me = r
			case r.Transport != Tickwire && r.Reliable() && !r.Failed() && r.Delivered > 0 && r.LatencyMS.P99 > 0:
				if best == nil || r.LatencyMS.P99 < best.LatencyMS.P99 ||
					r.LatencyMS.P99 == best.LatencyMS.P99 && transportRank(r.Transport) < transportRank(best.Transport) {
					best = r
				}
			}
		}
		if me == nil || best == nil {
			continue
		}
		wins[best.Transport]++
		t, o, q = append(t, me.LatencyMS.P99), append(o, best.LatencyMS.P99), append(q, me.LatencyMS.P99/best.LatencyMS.P99)
	}
	for _, name := range Transports {
		if wins[name] > wins[h.Peer] {
			h.Peer = name
		}
	}
	for name := range wins { // a peer not in Transports: only when it won alone
		if h.Peer == "" {
			h.Peer = name
		}
	}
	h.Tickwire, h.Other, h.Ratio = StatOf(t), StatOf(o), StatOf(q)
	return h, len(q) > 0
}

// WriteSummary writes the summary block of rs: how many reps ran, one
// line per Headline (what is compared, tickwire's value, the peer's, the
// ratio; with more than one rep the values are medians over the reps and
// the ratio, computed per rep, is followed by its [min–max]), and a line
// counting the failed and n/a rows. Nothing when rs is empty.
func WriteSummary(w io.Writer, rs []Result) error {
	if len(rs) == 0 {
		return nil
	}
	reps := RepCount(rs)
	var b strings.Builder
	if reps == 1 {
		b.WriteString("Summary: 1 rep of each row (--reps N runs each N times, interleaved, for a median and its spread)\n")
	} else {
		fmt.Fprintf(&b, "Summary: %d reps of each row, interleaved; medians over the reps, ratios per rep [min–max]\n", reps)
	}
	hs := Headlines(rs)
	if len(hs) > 0 {
		b.WriteString("ratio = tickwire ÷ peer: below 1x tickwire is lower (p99, bytes), above 1x it is higher (msg/s, MB/s)\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, h := range hs {
		what, peer := headlineWhat(h), h.Peer
		if h.Metric == MetricP99 {
			peer = "best other: " + peer
		}
		fmt.Fprintf(tw, "  %s\ttickwire %s\t%s %s\t%s\n", what, headlineValue(h.Metric, h.Tickwire.Median), peer,
			headlineValue(h.Metric, h.Other.Median), ratioText(h.Ratio, reps > 1))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rows := Rows(rs)
	var failed, na int
	for _, r := range rows {
		if r.Failed() > 0 {
			failed++
		}
		if r.NotSupported() != "" {
			na++
		}
	}
	switch {
	case failed > 0:
		fmt.Fprintf(&b, "  FAILED: %d of %d rows (a reliable row that delivered a different number than it sent)", failed, len(rows))
	default:
		fmt.Fprintf(&b, "  every reliable row delivered every message (%d rows)", len(rows))
	}
	if na > 0 {
		fmt.Fprintf(&b, "; %d could not run at their settings (n/a, below)", na)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// headlineWhat names what h compares, in a few words.
func headlineWhat(h Headline) string {
	switch h.Metric {
	case MetricP99:
		return fmt.Sprintf("%s p99 at %s %% loss", h.Profile, num(h.Link.Loss))
	case MetricBytes:
		return fmt.Sprintf("%s wire bytes/msg at %s %%", h.Profile, num(h.Link.Loss))
	case MetricMsgs:
		return fmt.Sprintf("%s %s msg/s", h.Profile, deliveryShort(h.Delivery))
	}
	return h.Profile + " MB/s"
}

// deliveryShort is "rel" or "unrel".
func deliveryShort(d string) string {
	if d == Unreliable {
		return "unrel"
	}
	return "rel"
}

// headlineValue formats v of metric with its unit.
func headlineValue(metric string, v float64) string {
	switch metric {
	case MetricP99:
		return strconv.FormatFloat(v, 'f', 2, 64) + " ms"
	case MetricBytes:
		return strconv.FormatFloat(v, 'f', 0, 64) + " B"
	case MetricMsgs:
		return si(v)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// ratioText formats a ratio's median, and with spread its [min–max].
func ratioText(s Stat, spread bool) string {
	x := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	if !spread || s.N < 2 {
		return x(s.Median) + "x"
	}
	return x(s.Median) + "x [" + x(s.Min) + "–" + x(s.Max) + "]"
}
