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

// ThroughputChartName is the file name of a throughput profile's chart.
func ThroughputChartName(profile string) string { return "throughput-" + profile + ".svg" }

// Machine describes the computer a run was measured on.
type Machine struct {
	GOOS, GOARCH string
	NumCPU       int    // runtime.NumCPU: the CPUs the process may use
	CPU          string // model name from /proc/cpuinfo; "" where unknown
	GoVersion    string // runtime.Version
}

// ThisMachine returns the Machine the process runs on; it reads
// /proc/cpuinfo where there is one.
func ThisMachine() Machine {
	m := Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version()}
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
	// Suite holds the settings the run used.
	Suite   Suite
	Machine Machine
	// Charts are the chart files, as the chart package's WriteCharts
	// returns them, relative to the report (base names when the report
	// is written beside them). Charts named by CDFChartName,
	// P99ChartName or ThroughputChartName follow their profile's table;
	// any other goes last.
	Charts []string
}

// WriteMarkdown writes rs as a Markdown report: the command, the
// settings and the machine, then for each profile (in the order of its
// first row) a table with WriteTable's columns and rows (grouped by
// Group, FAILED in bold), followed by image links to the profile's
// charts among info.Charts.
func WriteMarkdown(w io.Writer, rs []Result, info RunInfo) error {
	var bw bytes.Buffer // every block ends in a blank line; the last one's is trimmed
	p := func(format string, args ...any) { fmt.Fprintf(&bw, format, args...) }
	p("# tickwire bench\n\n")
	if info.Command != "" {
		p("```\n%s\n```\n\n", info.Command)
	}
	p("**Settings:** %s\n\n", settingsLine(info.Suite))
	p("**Machine:** %s\n\n", machineLine(info.Machine))
	p("Latencies in ms; p99 tw/kcp is tickwire's p99 over kcp's on the same link; FAILED marks a reliable row that delivered a different number of messages than it sent.\n\n")

	rows := Group(rs)
	var profiles []string
	for _, r := range rows {
		if !slices.Contains(profiles, r.Profile) {
			profiles = append(profiles, r.Profile)
		}
	}
	linked := map[string]bool{}
	link := func(name, alt string) {
		if slices.Contains(info.Charts, name) && !linked[name] {
			linked[name] = true
			p("![%s](%s)\n\n", alt, name)
		}
	}
	for _, prof := range profiles {
		p("## %s\n\n", prof)
		var failed int
		writeMarkdownRow(&bw, tableHeader)
		align := make([]string, len(tableHeader))
		for i, h := range tableHeader {
			align[i] = "---:"
			if h == "profile" || h == "transport" || h == "delivery" || h == "status" {
				align[i] = ":---"
			}
		}
		writeMarkdownRow(&bw, align)
		var losses []float64
		for _, r := range rows {
			if r.Profile != prof {
				continue
			}
			cells := tableRow(r, rows)
			if r.Failed() {
				failed++
				cells[len(cells)-1] = "**FAILED**"
			}
			writeMarkdownRow(&bw, cells)
			if !slices.Contains(losses, r.Link.Loss) {
				losses = append(losses, r.Link.Loss)
			}
		}
		p("\n")
		var notes []string
		for _, r := range rows {
			if r.Profile == prof {
				notes = append(notes, notSupportedNotes([]Result{r})...)
			}
		}
		for _, n := range notes {
			p("- %s\n", n)
		}
		if len(notes) > 0 {
			p("\n")
		}
		if failed > 0 {
			p("**FAILED:** %d row(s) delivered a different number of messages than they sent.\n\n", failed)
		}
		link(P99ChartName(prof), "p99 latency vs loss, "+prof)
		for _, loss := range losses {
			link(CDFChartName(prof, loss), fmt.Sprintf("latency CDF, %s, %s %% loss", prof, num(loss)))
		}
		link(ThroughputChartName(prof), "throughput, "+prof)
	}
	writePeerSettings(&bw, rows)
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
	return s + ", " + m.GoVersion
}
