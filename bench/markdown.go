package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CDFChartName is the file name of the latency CDF chart of a profile at
// a loss rate (percent). The chart package (bench/chart) writes its
// charts under the names CDFChartName, P99ChartName and
// ThroughputChartName return, and WriteMarkdown links those a RunInfo
// lists.
func CDFChartName(profile string, loss float64) string {
	return "latency-cdf-" + profile + "-loss-" + num(loss) + ".svg"
}

// P99ChartName is the file name of a latency profile's p99-vs-loss chart.
func P99ChartName(profile string) string { return "p99-vs-loss-" + profile + ".svg" }

// CostChartName is the file name of a latency profile's chart of p99
// latency and wire bytes per message against loss, every peer a line.
func CostChartName(profile string) string { return "p99-bytes-vs-loss-" + profile + ".svg" }

// ThroughputChartName is the file name of a throughput profile's chart.
func ThroughputChartName(profile string) string { return "throughput-" + profile + ".svg" }

// Machine describes the computer a run was measured on.
type Machine struct {
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	NumCPU int    `json:"num_cpu"` // runtime.NumCPU: the CPUs the process may use
	CPU    string `json:"cpu"`     // model name from /proc/cpuinfo; "" where unknown
	// GoVersion is runtime.Version.
	GoVersion string `json:"go_version"`
	// LoadAvg is the 1, 5 and 15 minute load averages when the run
	// started (/proc/loadavg); empty where unknown. Above NumCPU, rows
	// shared the CPUs with other work.
	LoadAvg []float64 `json:"load_avg"`
}

// ThisMachine returns the Machine the process runs on; it reads
// /proc/cpuinfo and /proc/loadavg where there are.
func ThisMachine() Machine {
	m := Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), LoadAvg: loadAvg()}
	if fh, err := os.Open("/proc/cpuinfo"); err == nil {
		m.CPU = cpuModel(fh)
		fh.Close()
	}
	return m
}

// cpuModel returns the first "model name" of a /proc/cpuinfo, or "".
func cpuModel(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// RunInfo is what WriteMarkdown says about a run besides its results.
type RunInfo struct {
	// Command is the command line that ran, printed so that the report
	// can be reproduced; omitted when empty.
	Command string
	// Suite holds the settings the run used; Reps how many times each
	// row ran (0 counts as 1).
	Suite   Suite
	Reps    int
	Machine Machine
	// Charts are the chart files, as the chart package's WriteCharts
	// returns them, relative to the report (base names when the report
	// is written beside them). Charts named by CDFChartName,
	// P99ChartName or ThroughputChartName follow their profile's table;
	// any other goes last.
	Charts []string
}

// WriteMarkdown writes rs as a Markdown report: the command, the
// settings and the machine, the summary block (WriteSummary) as a code
// block, then WriteTable's tables, each under a heading of its title
// (FAILED in bold, the n/a reasons of its rows listed under it); each
// latency table is followed by image links to its profile's charts among
// info.Charts (p99 vs loss, p99 and bytes vs loss, then the CDFs by
// loss), the throughput table by the throughput charts. Then the peer
// settings, and any chart not linked yet.
func WriteMarkdown(w io.Writer, rs []Result, info RunInfo) error {
	var bw bytes.Buffer // every block ends in a blank line; the last one's is trimmed
	p := func(format string, args ...any) { fmt.Fprintf(&bw, format, args...) }
	p("# tickwire bench\n\n")
	if info.Command != "" {
		p("```\n%s\n```\n\n", info.Command)
	}
	reps := "1 rep of each row"
	if info.Reps > 1 {
		reps = fmt.Sprintf("%d reps of each row, interleaved", info.Reps)
	}
	p("**Settings:** %s · %s\n\n", settingsLine(info.Suite), reps)
	p("**Machine:** %s\n\n", machineLine(info.Machine))
	if len(rs) > 0 {
		p("## Summary\n\n```\n")
		if err := WriteSummary(&bw, rs); err != nil {
			return err
		}
		p("```\n\n")
	}
	p("Latencies in ms; FAILED marks a reliable row that delivered a different number of messages than it sent; n/a a row that could not run at its settings.\n\n")

	rows := Rows(rs)
	linked := map[string]bool{}
	link := func(name, alt string) {
		if slices.Contains(info.Charts, name) && !linked[name] {
			linked[name] = true
			p("![%s](%s)\n\n", alt, name)
		}
	}
	for _, t := range tables(rs) {
		p("## %s\n\n", t.title)
		writeMarkdownRow(&bw, t.header)
		align := make([]string, len(t.header))
		for i, h := range t.header {
			align[i] = "---:"
			if h == "profile" || h == "transport" || h == "delivery" || h == "status" || h == "notes" {
				align[i] = ":---"
			}
		}
		writeMarkdownRow(&bw, align)
		var failed int
		for i, cells := range t.rows {
			if t.failed[i] {
				failed++
				if c := t.statusCol(); c >= 0 {
					cells = slices.Clone(cells)
					cells[c] = "**" + cells[c] + "**"
				}
			}
			writeMarkdownRow(&bw, cells)
		}
		p("\n")
		if t.section == "cost" {
			continue // the n/a reasons and failures are under the first tables
		}
		var mine []Row
		var losses []float64
		for _, r := range rows {
			f := r.First()
			if t.section == "latency" && f.Profile == t.profile && hasLatency(r) ||
				t.section == "throughput" && (f.Profile == ProfilePPS || f.Profile == ProfileBulk) {
				mine = append(mine, r)
				if !slices.Contains(losses, f.Link.Loss) {
					losses = append(losses, f.Link.Loss)
				}
			}
		}
		notes := notSupportedNotes(mine)
		for _, n := range notes {
			p("- %s\n", n)
		}
		if len(notes) > 0 {
			p("\n")
		}
		if failed > 0 {
			p("**FAILED:** %d row(s) delivered a different number of messages than they sent.\n\n", failed)
		}
		if t.section == "latency" {
			link(P99ChartName(t.profile), "p99 latency vs loss, "+t.profile)
			link(CostChartName(t.profile), "p99 and wire bytes per message vs loss, "+t.profile)
			for _, loss := range losses {
				link(CDFChartName(t.profile, loss), fmt.Sprintf("latency CDF, %s, %s %% loss", t.profile, num(loss)))
			}
		} else {
			link(ThroughputChartName(ProfilePPS), "throughput, pps")
			link(ThroughputChartName(ProfileBulk), "throughput, bulk")
		}
	}
	writePeerSettings(&bw, Group(rs))
	var rest []string
	for _, c := range info.Charts {
		if !linked[c] {
			rest = append(rest, c)
		}
	}
	if len(rest) > 0 {
		p("## Other charts\n\n")
		for _, c := range rest {
			link(c, strings.TrimSuffix(c, ".svg"))
		}
	}
	_, err := w.Write(append(bytes.TrimRight(bw.Bytes(), "\n"), '\n'))
	return err
}

// writePeerSettings writes a "Peer settings" section: every distinct
// configuration among rows (transport, profile, settings), one list item
// each, its settings sorted by name.
func writePeerSettings(w *bytes.Buffer, rows []Result) {
	seen := map[string]bool{}
	var items []string
	for _, r := range rows {
		keys := slices.Sorted(maps.Keys(r.Config.Settings))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + " = " + r.Config.Settings[k]
		}
		item := fmt.Sprintf("- **%s**, %s: %s", r.Transport, r.Profile, strings.Join(parts, "; "))
		if !seen[item] {
			seen[item] = true
			items = append(items, item)
		}
	}
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "## Peer settings\n\n")
	for _, it := range items {
		fmt.Fprintln(w, it)
	}
	fmt.Fprintln(w)
}

// writeMarkdownRow writes one table row, escaping the cells' pipes.
func writeMarkdownRow(w io.Writer, cells []string) {
	io.WriteString(w, "|")
	for _, c := range cells {
		io.WriteString(w, " "+strings.ReplaceAll(c, "|", `\|`)+" |")
	}
	io.WriteString(w, "\n")
}

// settingsLine describes s in one line: profiles, transports, link, and
// each profile's traffic.
func settingsLine(s Suite) string {
	losses := make([]string, len(s.Losses))
	for i, l := range s.Losses {
		losses[i] = num(l * 100)
	}
	mtu := s.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	parts := []string{
		"profiles " + strings.Join(s.Profiles, ", "),
		"transports " + strings.Join(s.Transports, ", "),
		fmt.Sprintf("MTU %d", mtu),
	}
	l := s.Link
	ms := func(d time.Duration) string { return num(float64(d) / float64(time.Millisecond)) }
	for _, prof := range s.Profiles {
		switch prof {
		case ProfileEcho:
			parts = append(parts,
				fmt.Sprintf("echo: %d messages × %d B at %s Hz, link %s ms ± %s ms one way, loss %s %%, dup %s %%, burst %s, seed %d",
					s.Count, s.Size, num(s.Rate), ms(l.Delay), ms(l.Jitter),
					strings.Join(losses, "/"), num(l.Dup*100), num(max(l.Burst, 1)), l.Seed))
		case ProfileActions:
			peers := s.ActionPeers
			if peers == 0 {
				peers = DefaultActionPeers
			}
			fc := "default"
			if s.FrameCapacity != 0 {
				fc = strconv.Itoa(s.FrameCapacity)
			}
			parts = append(parts,
				fmt.Sprintf("actions: %d peers × %d inputs at %s Hz, frame capacity %s, link %s ms ± %s ms one way, loss %s %%, dup %s %%, burst %s, seed %d",
					peers, s.Count, num(s.Rate), fc, ms(l.Delay), ms(l.Jitter),
					strings.Join(losses, "/"), num(l.Dup*100), num(max(l.Burst, 1)), l.Seed))
		case ProfilePPS:
			parts = append(parts, fmt.Sprintf("pps: %d B for %v, direct", s.Size, s.Duration))
		case ProfileBulk:
			parts = append(parts, fmt.Sprintf("bulk: %s MiB within %v, direct", num(float64(s.Bytes)/(1<<20)), s.Duration))
		case ProfileLoad:
			d := s.LoadDuration
			if d == 0 {
				d = DefaultLoadDuration
			}
			parts = append(parts, fmt.Sprintf("load: %d peers × %d B at %d Hz for %v, direct", s.Peers, s.Size, LoadRate, d))
		default:
			parts = append(parts, prof)
		}
	}
	return strings.Join(parts, " · ")
}

// machineLine describes m in one line.
func machineLine(m Machine) string {
	s := m.GOOS + "/" + m.GOARCH + ", " + strconv.Itoa(m.NumCPU) + " CPUs"
	if m.CPU != "" {
		s += " (" + m.CPU + ")"
	}
	s += ", " + m.GoVersion
	if len(m.LoadAvg) == 3 {
		s += fmt.Sprintf(", load %.2f %.2f %.2f at the start", m.LoadAvg[0], m.LoadAvg[1], m.LoadAvg[2])
	}
	return s
}
