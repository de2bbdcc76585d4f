package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWriteMarkdown(t *testing.T) {
	in := []Result{
		sample(KCP, 0, 60, 10, 10),
		sample(Tickwire, 0, 30, 10, 10),
		sample(KCP, 10, 100, 10, 10),
		sample(Tickwire, 10, 40, 10, 9), // lost one: FAILED
		{Transport: Tickwire, Profile: ProfileBulk, LatencyKind: NoLatency, Sent: 8, Delivered: 8,
			PayloadBytes: 8192, ThroughputMBPerS: 12.5, CPUSeconds: 0.1},
		{Transport: KCP, Profile: ProfileBulk, LatencyKind: NoLatency, Sent: 8, Delivered: 8,
			PayloadBytes: 8192, ThroughputMBPerS: 2.5, CPUSeconds: 0.2},
	}
	suite := DefaultSuite()
	suite.Profiles = []string{ProfileEcho, ProfileBulk}
	suite.Losses = []float64{0, 0.10}
	suite.Count, suite.Duration = 30, 300*time.Millisecond
	info := RunInfo{
		Command: "tickwire bench --quick --out x",
		Suite:   suite,
		Machine: Machine{GOOS: "linux", GOARCH: "amd64", NumCPU: 2, CPU: "Test CPU @ 1 GHz", GoVersion: "go1.26.8"},
		Charts:  []string{CDFChartName(ProfileEcho, 10), P99ChartName(ProfileEcho), CDFChartName(ProfileEcho, 0), "extra.svg"},
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, in, info); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{
		"# tickwire bench\n",
		"```\ntickwire bench --quick --out x\n```",
		"**Settings:** profiles echo, bulk · transports tickwire, kcp-fast, kcp-bulk, quic · MTU 1200 · echo: 30 messages × 64 B at 60 Hz, link 25 ms ± 2 ms one way, loss 0/10 %, dup 0 %, burst 1, seed 1 · bulk: 32 MiB within 300ms, direct · 1 rep of each row\n",
		"**Machine:** linux/amd64, 2 CPUs (Test CPU @ 1 GHz), go1.26.8\n",
		"\n\n## echo: round-trip latency in ms, link delay ± jitter in ms one way\n\n", "\n\n## pps and bulk: throughput, direct (no relay)\n\n",
		"**FAILED:** 1 row(s)",
		"![p99 latency vs loss, echo](p99-vs-loss-echo.svg)",
		"![latency CDF, echo, 0 % loss](latency-cdf-echo-loss-0.svg)",
		"![latency CDF, echo, 10 % loss](latency-cdf-echo-loss-10.svg)",
		"\n\n## Other charts\n\n![extra](extra.svg)\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q", s)
		}
	}
	if strings.Contains(out, "\n\n\n") || !strings.HasSuffix(out, ")\n") {
		t.Error("report has a double blank line or does not end in one newline")
	}
	// Charts follow their table in a fixed order: p99, then the CDFs by
	// loss; none under the throughput table.
	if i, j, k := strings.Index(out, "p99-vs-loss-echo"), strings.Index(out, "loss-0.svg"), strings.Index(out, "## pps and bulk"); !(i < j && j < k) {
		t.Errorf("chart order: p99 at %d, CDF 0 %% at %d, throughput section at %d", i, j, k)
	}
	if i, j := strings.Index(out, "## Summary\n\n```\nSummary: 1 rep"), strings.Index(out, "## echo"); i < 0 || i > j {
		t.Errorf("summary block at %d, echo table at %d", i, j)
	}

	// Tables: WriteTable's, a header, an alignment row and one row per
	// result, with the same cells.
	var tables [][]string
	var cur []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") {
			cur = append(cur, line)
		} else if cur != nil {
			tables, cur = append(tables, cur), nil
		}
	}
	want := tables0(in)
	if len(tables) != len(want) || len(tables) != 3 {
		t.Fatalf("%d tables, want %d: %q", len(tables), len(want), tables)
	}
	cells := func(line string) []string {
		f := strings.Split(strings.Trim(line, "|"), "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		return f
	}
	for k, tb := range tables {
		if !strings.Contains(out, "## "+want[k].title+"\n\n") {
			t.Errorf("no heading %q", want[k].title)
		}
		if h := cells(tb[0]); !slices.Equal(h, want[k].header) {
			t.Errorf("table %d header %q, want %q", k, h, want[k].header)
		}
		if len(tb) != 2+len(want[k].rows) {
			t.Errorf("table %d: %d lines, want %d", k, len(tb), 2+len(want[k].rows))
			continue
		}
		for i, line := range tb[2:] {
			w := slices.Clone(want[k].rows[i])
			if want[k].failed[i] && want[k].statusCol() >= 0 {
				w[want[k].statusCol()] = "**" + w[want[k].statusCol()] + "**"
			}
			if got := cells(line); !slices.Equal(got, w) {
				t.Errorf("table %d row %d: %q, want %q", k, i, got, w)
			}
		}
	}
	if got := cells(tables[0][4]); got[2] != "tickwire" || got[4] != "9/10" || got[len(got)-1] != "**FAILED**" {
		t.Errorf("failed echo row %q", got)
	}
	if got := cells(tables[1][2]); got[1] != "tickwire" || got[4] != "12.5 MB/s" {
		t.Errorf("bulk row %q", got)
	}
	if a := cells(tables[0][1]); a[0] != "---:" || a[2] != ":---" || a[3] != ":---" || a[5] != "---:" {
		t.Errorf("alignment row %q", a)
	}

	// No results: the header lines, no table.
	buf.Reset()
	if err := WriteMarkdown(&buf, nil, RunInfo{Suite: DefaultSuite(), Machine: ThisMachine()}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "|") || strings.Contains(buf.String(), "```") || !strings.Contains(buf.String(), "**Machine:**") {
		t.Errorf("empty report:\n%s", buf.String())
	}
}

func TestCPUModel(t *testing.T) {
	const cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: Oxide Virtual Turin-like Processor\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: Other\n"
	if got := cpuModel(strings.NewReader(cpuinfo)); got != "Oxide Virtual Turin-like Processor" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := cpuModel(strings.NewReader("processor : 0\nHardware : x\n")); got != "" {
		t.Errorf("no model name: %q", got)
	}
	if m := ThisMachine(); m.NumCPU < 1 || m.GoVersion == "" || m.GOOS == "" {
		t.Errorf("ThisMachine %+v", m)
	}
}

// tables0 is tables, for the test to compare WriteMarkdown's with.
func tables0(rs []Result) []table { return tables(rs) }
