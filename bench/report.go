package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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

// WriteText writes what `tickwire bench` prints: the summary block
// (WriteSummary), then the tables (WriteTable).
func WriteText(w io.Writer, rs []Result) error {
	if err := WriteSummary(w, rs); err != nil {
		return err
	}
	if len(rs) > 0 {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return WriteTable(w, rs)
}

// WriteTable writes rs as aligned text tables, each under a title line,
// indented two spaces, a blank line between them, every line at most
// TextWidth columns for the default suite (tabwriter's right alignment
// indents each at least two spaces). The rows are gathered into
// Rows (one per scenario, over its reps) in Group's order:
//
//   - one latency table per latency profile (echo, actions, load): link,
//     transport, delivery, delivered/sent, p50, p90, p99, p99.9, max, and
//     with more than one rep the p99's min–max;
//   - one throughput table of the pps and bulk rows, without latency
//     columns: the rate (pps: messages/s; bulk: MB/s, 10^6 bytes), with
//     more than one rep its min–max, the receiver's datagrams/s where
//     measured, and CPU per unit delivered (pps: CPU seconds per million
//     messages; bulk: per GB, 10^9 bytes);
//   - one cost table of every row: wire bytes over payload bytes, wire
//     bytes per message sent, CPU seconds, allocations per message, and
//     notes (actions: peers and inputs refused);
//   - for load rows, a table of the server's cost: peers, heap per peer,
//     the server goroutine's µs per peer-tick.
//
// Latencies carry two decimals below 100 ms, one below 1000 ms, none
// above. With more than one rep a number is the median over the reps
// that ran.
// Status is ok, n/a (the row could not run at its settings; the reason is
// listed after the tables) or FAILED (a reliable row that delivered a
// different number than it sent; with reps, "FAILED k/n" for k failed
// reps of n). Cells without a value show "-"; a row whose link is unknown
// (RunClient's) shows "-" for loss and delay.
func WriteTable(w io.Writer, rs []Result) error {
	var b strings.Builder
	for i, t := range tables(rs) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(t.title + "\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		line := func(cells []string) {
			for i, c := range cells {
				if i > 0 {
					io.WriteString(tw, "\t")
				}
				io.WriteString(tw, c)
			}
			io.WriteString(tw, "\t\n")
		}
		line(t.header)
		for _, r := range t.rows {
			line(r)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range notSupportedNotes(Rows(rs)) {
		b.WriteString(n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TextWidth is the widest line WriteText writes for the default suite
// and --quick, at any number of reps: the tables fit a 120-column
// terminal.
const TextWidth = 120

// table is one titled table of WriteTable and WriteMarkdown.
type table struct {
	title   string
	section string // "latency", "throughput" or "cost"
	profile string // a latency table's profile
	header  []string
	rows    [][]string
	failed  []bool // per row: some rep failed
}

// statusCol is the index of a table's status column, or -1.
func (t table) statusCol() int { return slices.Index(t.header, "status") }

// tables returns the tables of rs: latency per latency profile, then
// throughput, then cost (see WriteTable).
func tables(rs []Result) []table {
	rows := Rows(rs)
	spread := RepCount(rs) > 1
	var out []table
	var order []string
	for _, r := range rows {
		if p := r.First().Profile; hasLatency(r) && !slices.Contains(order, p) {
			order = append(order, p)
		}
	}
	for _, prof := range order {
		t := table{section: "latency", profile: prof,
			header: []string{"loss%", "delay", "transport", "delivery", "delivered", "p50", "p90", "p99"}}
		if spread {
			t.header = append(t.header, "p99 min–max")
		}
		t.header = append(t.header, "p99.9", "max", "status")
		for _, r := range rows {
			f := r.First()
			if f.Profile != prof || !hasLatency(r) {
				continue
			}
			if t.title == "" {
				t.title = prof + ": " + kindName(f.LatencyKind) + " latency in ms, link delay ± jitter in ms one way"
			}
			loss, delay := linkCells(f)
			cells := []string{loss, delay, f.Transport, deliveryCell(f), deliveredCell(r)}
			lat := func(g func(Latency) float64) Stat { return r.Stat(func(x Result) float64 { return g(x.LatencyMS) }) }
			p99 := lat(func(l Latency) float64 { return l.P99 })
			noLat := r.NotSupported() != "" || p99.N == 0
			f2 := func(s Stat) string {
				if noLat {
					return "-"
				}
				return latencyText(s.Median)
			}
			cells = append(cells, f2(lat(func(l Latency) float64 { return l.P50 })), f2(lat(func(l Latency) float64 { return l.P90 })), f2(p99))
			if spread {
				rng := "-"
				if !noLat {
					rng = rangeText(p99, latencyText)
				}
				cells = append(cells, rng)
			}
			cells = append(cells, f2(lat(func(l Latency) float64 { return l.P999 })), f2(lat(func(l Latency) float64 { return l.Max })), statusCell(r))
			t.rows, t.failed = append(t.rows, cells), append(t.failed, r.Failed() > 0)
		}
		out = append(out, t)
	}

	tp := table{section: "throughput", title: "pps and bulk: throughput, direct (no relay)",
		header: []string{"profile", "transport", "delivery", "delivered", "throughput"}}
	if spread {
		tp.header = append(tp.header, "min–max")
	}
	tp.header = append(tp.header, "datagrams/s", "cpu per", "status")
	for _, r := range rows {
		f := r.First()
		if f.Profile != ProfilePPS && f.Profile != ProfileBulk {
			continue
		}
		rate, rng, per := throughputCells(r)
		cells := []string{f.Profile, f.Transport, deliveryCell(f), deliveredCell(r), rate}
		if spread {
			cells = append(cells, rng)
		}
		dg := "-"
		if s := r.Stat(func(x Result) float64 { return x.ThroughputDatagramsPerS }); s.Median > 0 {
			dg = si(s.Median)
		}
		cells = append(cells, dg, per, statusCell(r))
		tp.rows, tp.failed = append(tp.rows, cells), append(tp.failed, r.Failed() > 0)
	}
	if len(tp.rows) > 0 {
		out = append(out, tp)
	}

	ct := table{section: "cost", title: "cost: wire bytes (UDP payload, both ends; redund B: tickwire's redundant copies per msg), CPU and allocations",
		header: []string{"profile", "loss%", "transport", "delivery", "wire/payload", "wire B/msg", "redund B", "cpu s", "allocs/msg", "notes"}}
	for _, r := range rows {
		f := r.First()
		loss, _ := linkCells(f)
		na := r.NotSupported() != ""
		stat := func(g func(Result) float64, prec int) string {
			s := r.Stat(g)
			if na || s.N == 0 {
				return "-"
			}
			return strconv.FormatFloat(s.Median, 'f', prec, 64)
		}
		overhead := stat(func(x Result) float64 {
			if x.PayloadBytes == 0 {
				return 0
			}
			return float64(x.WireBytes) / float64(x.PayloadBytes)
		}, 2)
		if f.PayloadBytes == 0 {
			overhead = "-"
		}
		perMsg := stat(bytesPerMsg, 0)
		redund := stat(func(x Result) float64 { return float64(x.RedundantBytes) / float64(max(x.Sent, 1)) }, 0)
		if f.Sent == 0 {
			perMsg = "-"
		}
		if f.Sent == 0 || f.Transport != Tickwire || f.Profile != ProfileEcho {
			redund = "-"
		}
		ct.rows = append(ct.rows, []string{f.Profile, loss, f.Transport, deliveryCell(f), overhead, perMsg, redund,
			stat(func(x Result) float64 { return x.CPUSeconds }, 2), stat(func(x Result) float64 { return x.AllocsPerMsg }, 1), notesCell(r)})
		ct.failed = append(ct.failed, r.Failed() > 0)
	}
	if len(ct.rows) > 0 {
		out = append(out, ct)
	}

	ld := table{section: "cost", title: "load: the server's cost per peer (µs per peer-tick: its thread's user and system CPU; wall time in Poll+Flush)",
		header: []string{"transport", "peers", "heap KiB/peer", "user µs", "sys µs", "wall µs", "status"}}
	for _, r := range rows {
		f := r.First()
		if f.Profile != ProfileLoad {
			continue
		}
		mem, user, sys, wall := "-", "-", "-", "-"
		if r.NotSupported() == "" {
			us := func(get func(Result) float64) string {
				return strconv.FormatFloat(r.Stat(get).Median, 'f', 2, 64)
			}
			mem = strconv.FormatFloat(r.Stat(func(x Result) float64 { return float64(x.MemoryPerPeerBytes) }).Median/1024, 'f', 1, 64)
			wall = us(func(x Result) float64 { return x.ServerWallUsPerPeerTick })
			if f.ServerCPUUsPerPeerTick > 0 { // per-thread CPU measured (Linux)
				user = us(func(x Result) float64 { return x.ServerUserUsPerPeerTick })
				sys = us(func(x Result) float64 { return x.ServerSysUsPerPeerTick })
			}
		}
		ld.rows = append(ld.rows, []string{f.Transport, strconv.Itoa(f.Peers), mem, user, sys, wall, statusCell(r)})
		ld.failed = append(ld.failed, r.Failed() > 0)
	}
	if len(ld.rows) > 0 {
		out = append(out, ld)
	}
	return out
}

// hasLatency reports whether r's rows measure a latency (echo, actions,
// load; not pps or bulk).
func hasLatency(r Row) bool {
	k := r.First().LatencyKind
	p := r.First().Profile
	return k != NoLatency && p != ProfilePPS && p != ProfileBulk
}

// kindName names a latency kind.
func kindName(kind string) string {
	if kind == OneWay {
		return "one-way"
	}
	return "round-trip"
}

// linkCells returns r's loss and delay±jitter cells, "-" for an unknown
// link.
func linkCells(r Result) (loss, delay string) {
	if !r.Link.Known() {
		return "-", "-"
	}
	return num(r.Link.Loss), num(r.Link.DelayMS) + "±" + num(r.Link.JitterMS)
}

// deliveryCell is "rel" or "unrel".
func deliveryCell(r Result) string {
	if !r.Reliable() {
		return "unrel"
	}
	return "rel"
}

// deliveredCell is "delivered/sent" (medians over the reps that ran), "-"
// for a row that could not run.
func deliveredCell(r Row) string {
	if r.NotSupported() != "" {
		return "-"
	}
	d := r.Stat(func(x Result) float64 { return float64(x.Delivered) })
	s := r.Stat(func(x Result) float64 { return float64(x.Sent) })
	return strconv.FormatFloat(d.Median, 'f', 0, 64) + "/" + strconv.FormatFloat(s.Median, 'f', 0, 64)
}

// statusCell is ok, n/a, FAILED, or with reps FAILED k/n.
func statusCell(r Row) string {
	switch n := r.Failed(); {
	case r.NotSupported() != "":
		return "n/a"
	case n > 0 && len(r.Reps) > 1:
		return fmt.Sprintf("FAILED %d/%d", n, len(r.Reps))
	case n > 0:
		return "FAILED"
	}
	return "ok"
}

// latencyText formats a latency in ms in at most five digits: two
// decimals below 100 ms, one below 1000, none from there.
func latencyText(v float64) string {
	switch {
	case v < 99.995:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 999.95:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// rangeText formats a Stat's min–max.
func rangeText(s Stat, f func(float64) string) string {
	return f(s.Min) + "–" + f(s.Max)
}

// notSupportedNotes returns one line per row of rows that could not run
// at its settings, saying why.
func notSupportedNotes(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if why := r.NotSupported(); why != "" {
			f := r.First()
			out = append(out, fmt.Sprintf("n/a: %s %s (%s): %s", f.Profile, f.Transport, linkCell(f), why))
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

// throughputCells returns the throughput, its min–max and the
// cpu-per cells of a pps or bulk row.
func throughputCells(r Row) (rate, rng, per string) {
	f := r.First()
	if r.NotSupported() != "" || r.Stat(func(x Result) float64 { return float64(x.Delivered) }).Median == 0 {
		return "-", "-", "-"
	}
	cpu := r.Stat(func(x Result) float64 { return x.CPUSeconds }).Median
	if f.Profile == ProfilePPS {
		s := r.Stat(func(x Result) float64 { return x.ThroughputMsgsPerS })
		d := r.Stat(func(x Result) float64 { return float64(x.Delivered) }).Median
		return si(s.Median) + " msg/s", rangeText(s, si), strconv.FormatFloat(cpu/(d/1e6), 'f', 2, 64) + " s/M msg"
	}
	s := r.Stat(func(x Result) float64 { return x.ThroughputMBPerS })
	p := r.Stat(func(x Result) float64 { return float64(x.PayloadBytes) }).Median
	if p == 0 {
		return "-", "-", "-"
	}
	mb := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	return mb(s.Median) + " MB/s", rangeText(s, mb), strconv.FormatFloat(cpu/(p/1e9), 'f', 2, 64) + " s/GB"
}

// notesCell returns the cost table's notes of r: actions' peers and
// refused inputs.
func notesCell(r Row) string {
	f := r.First()
	switch {
	case r.NotSupported() != "":
		return "-"
	case f.Profile == ProfileActions:
		ref := r.Stat(func(x Result) float64 { return float64(x.Refused) }).Median
		return fmt.Sprintf("%d peers, %.0f refused", f.Peers, ref)
	}
	return "-"
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
