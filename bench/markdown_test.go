package bench

import (
	"bytes"
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
		"**Settings:** profiles echo, bulk · transports tickwire, kcp-fast, kcp-bulk, quic · MTU 1200 · echo: 30 messages × 64 B at 60 Hz, link 25 ms ± 2 ms one way, loss 0/10 %, dup 0 %, burst 1, seed 1 · bulk: 32 MiB within 300ms, direct\n",
		"**Machine:** linux/amd64, 2 CPUs (Test CPU @ 1 GHz), go1.26.8\n",
		"\n\n## echo\n\n", "\n\n## bulk\n\n",
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
	// Charts follow their profile's table in a fixed order: p99, then
	// the CDFs by loss; none under bulk.
	if i, j, k := strings.Index(out, "p99-vs-loss-echo"), strings.Index(out, "loss-0.svg"), strings.Index(out, "## bulk"); !(i < j && j < k) {
		t.Errorf("chart order: p99 at %d, CDF 0 %% at %d, bulk section at %d", i, j, k)
	}

	// Tables: per profile a header, an alignment row and one row per
	// result, with WriteTable's columns and cells.
	var tables [][]string
	var cur []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") {
			cur = append(cur, line)
		} else if cur != nil {
			tables, cur = append(tables, cur), nil
		}
	}
	if len(tables) != 2 || len(tables[0]) != 2+4 || len(tables[1]) != 2+2 {
		t.Fatalf("tables %q", tables)
	}
	cells := func(line string) []string {
		f := strings.Split(strings.Trim(line, "|"), "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		return f
	}
	for _, tb := range tables {
		if h := cells(tb[0]); strings.Join(h, ",") != strings.Join(tableHeader, ",") {
			t.Errorf("header %q", h)
		}
		for _, line := range tb[1:] {
			if n := len(cells(line)); n != len(tableHeader) {
				t.Errorf("%d cells, want %d: %s", n, len(tableHeader), line)
			}
		}
	}
	echo := tables[0]
	checks := []struct {
		line int
		want map[int]string // column → cell
	}{
		{2, map[int]string{0: "echo", 1: "0", 3: "tickwire", 4: "rel", 9: "30.00", 12: "0.50x", 18: "ok"}},
		{3, map[int]string{3: "kcp-fast", 9: "60.00", 12: "-", 18: "ok"}},
		{4, map[int]string{1: "10", 3: "tickwire", 6: "9", 12: "0.40x", 18: "**FAILED**"}},
		{5, map[int]string{3: "kcp-fast", 9: "100.00", 18: "ok"}},
	}
	for _, c := range checks {
		got := cells(echo[c.line])
		for col, want := range c.want {
			if got[col] != want {
				t.Errorf("echo row %d, %s = %q, want %q", c.line-1, tableHeader[col], got[col], want)
			}
		}
	}
	if got := cells(tables[1][2]); got[3] != "tickwire" || got[16] != "12.5 MB/s" {
		t.Errorf("bulk row %q", got)
	}
	if a := cells(echo[1]); a[0] != ":---" || a[4] != ":---" || a[5] != "---:" {
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
