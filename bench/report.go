package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
)

// Group orders rs for reporting: rows of the same profile and link stay
// together, in the order the first of each appears, and within a group
// transports follow Transports (tickwire first, then kcp). It returns a
// new slice.
func Group(rs []Result) []Result {
	type key struct {
		profile string
		link    LinkResult
	}
	first := map[key]int{}
	for i, r := range rs {
		k := key{r.Profile, r.Link}
		if _, ok := first[k]; !ok {
			first[k] = i
		}
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b Result) int {
		return cmp.Or(
			cmp.Compare(first[key{a.Profile, a.Link}], first[key{b.Profile, b.Link}]),
			cmp.Compare(transportRank(a.Transport), transportRank(b.Transport)),
		)
	})
	return out
}

// P99Ratio returns tickwire's p99 divided by the p99 of the baseline
// transport (kcp-fast, else kcp-default) among rows of the same profile and
// link as r, and whether both exist with a non-zero baseline.
func P99Ratio(r Result, rs []Result) (float64, bool) {
	var tw, base *Result
	for _, name := range []string{KCPDefault, KCPFast} { // KCPFast wins when both ran
		for i := range rs {
			o := &rs[i]
			if o.Profile == r.Profile && o.Link == r.Link {
				switch o.Transport {
				case Tickwire:
					tw = o
				case name:
					base = o
				}
			}
		}
	}
	if tw == nil || base == nil || base.LatencyMS.P99 == 0 || tw.Delivered == 0 {
		return 0, false
	}
	return tw.LatencyMS.P99 / base.LatencyMS.P99, true
}

// WriteTable writes rs as an aligned text table, one row per result,
// grouped by Group. The p99 ratio column (tickwire/kcp) is filled on
// tickwire's row; a reliable row that lost messages is marked FAILED.
// Pps and bulk rows fill the throughput column (pps: messages/s, and the
// receiver's datagrams/s where measured; bulk: MB/s, 10^6 bytes) and the
// cpu-per column (pps: CPU seconds per million messages delivered; bulk:
// CPU seconds per GB, 10^9 bytes, delivered); load rows fill them with
// the peers and the heap per peer, and the server goroutine's µs per
// peer-tick; actions rows show the peers and the inputs the server
// refused; echo rows show "-". Rows without latency (pps, bulk, and rows
// that could not run: status n/a, their reason listed below the table)
// show "-" in the latency columns. A row whose link is unknown (RunClient's)
// shows "-" for loss and delay.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) {
		for _, c := range cells {
			io.WriteString(tw, c)
			io.WriteString(tw, "\t")
		}
		io.WriteString(tw, "\n")
	}
	line(tableHeader)
	rows := Group(rs)
	for _, r := range rows {
		line(tableRow(r, rows))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notSupportedNotes(rows) {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// notSupportedNotes returns one line per row of rows that could not run
// at its settings, saying why.
func notSupportedNotes(rows []Result) []string {
	var out []string
	for _, r := range rows {
		if r.NotSupported != "" {
			out = append(out, fmt.Sprintf("n/a: %s %s (%s): %s", r.Profile, r.Transport, linkCell(r), r.NotSupported))
		}
	}
	return out
}

// linkCell describes r's link in a few characters.
func linkCell(r Result) string {
	if !r.Link.Known() {
		return "link unknown"
	}
	return num(r.Link.Loss) + " % loss"
}

// tableHeader names the columns of WriteTable and WriteMarkdown; status
// is the last.
var tableHeader = []string{
	"profile", "loss%", "delay±jit ms", "transport", "delivery", "sent", "delivered",
	"p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "p99 tw/kcp", "wire/payload",
	"cpu s", "allocs/msg", "throughput", "cpu per", "status",
}

// tableRow returns r's cells under tableHeader; rows are the rows r's
// p99 ratio is taken among.
func tableRow(r Result, rows []Result) []string {
	ratio := "-"
	if r.Transport == Tickwire {
		if v, ok := P99Ratio(r, rows); ok {
			ratio = strconv.FormatFloat(v, 'f', 2, 64) + "x"
		}
	}
	overhead := "-"
	if r.PayloadBytes > 0 {
		overhead = strconv.FormatFloat(float64(r.WireBytes)/float64(r.PayloadBytes), 'f', 2, 64)
	}
	status := "ok"
	switch {
	case r.NotSupported != "":
		status = "n/a"
	case r.Failed():
		status = "FAILED"
	}
	delivery := "rel"
	if !r.Reliable() {
		delivery = "unrel"
	}
	l := r.LatencyMS
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	lat := []string{f2(l.P50), f2(l.P90), f2(l.P99), f2(l.P999), f2(l.Max)}
	if r.LatencyKind == NoLatency || r.NotSupported != "" {
		lat = []string{"-", "-", "-", "-", "-"} // no latency measured, not 0
	}
	tput, per := throughputCells(r)
	loss, delay := "-", "-" // unknown link (RunClient)
	if r.Link.Known() {
		loss, delay = num(r.Link.Loss), num(r.Link.DelayMS)+"±"+num(r.Link.JitterMS)
	}
	return []string{
		r.Profile, loss, delay, r.Transport, delivery,
		strconv.FormatInt(r.Sent, 10), strconv.FormatInt(r.Delivered, 10),
		lat[0], lat[1], lat[2], lat[3], lat[4], ratio, overhead,
		f2(r.CPUSeconds), strconv.FormatFloat(r.AllocsPerMsg, 'f', 1, 64), tput, per, status,
	}
}

// throughputCells returns the throughput and cpu-per cells of r.
func throughputCells(r Result) (tput, per string) {
	switch {
	case r.Profile == ProfileActions:
		return fmt.Sprintf("%d peers, %d refused", r.Peers, r.Refused), "-"
	case r.Delivered == 0:
		return "-", "-"
	case r.Profile == ProfileLoad:
		return fmt.Sprintf("%d peers, %.1f KiB/peer", r.Peers, float64(r.MemoryPerPeerBytes)/1024),
			strconv.FormatFloat(r.ServerCPUUsPerPeerTick, 'f', 2, 64) + " µs/peer-tick"
	case r.Profile == ProfilePPS:
		tput = si(r.ThroughputMsgsPerS) + " msg/s"
		if r.ThroughputDatagramsPerS > 0 {
			tput += " (" + si(r.ThroughputDatagramsPerS) + " dg/s)"
		}
		return tput, strconv.FormatFloat(r.CPUSeconds/(float64(r.Delivered)/1e6), 'f', 2, 64) + " s/M msg"
	case r.Profile == ProfileBulk && r.PayloadBytes > 0:
		return strconv.FormatFloat(r.ThroughputMBPerS, 'f', 1, 64) + " MB/s",
			strconv.FormatFloat(r.CPUSeconds/(float64(r.PayloadBytes)/1e9), 'f', 2, 64) + " s/GB"
	}
	return "-", "-"
}

// si formats a rate with a k or M suffix, three significant digits.
func si(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// num formats a setting without trailing zeros.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
