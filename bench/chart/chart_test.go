package chart

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tickwire/tickwire/bench"
)

// cdf returns a CDF rising from lo to hi ms, with a tail to tail ms.
func cdf(lo, hi, tail float64) []bench.CDFPoint {
	ps := []float64{0, 10, 50, 90, 99, 99.9, 100}
	out := make([]bench.CDFPoint, len(ps))
	for i, p := range ps {
		ms := lo + (hi-lo)*p/90
		if p > 90 {
			ms = hi + (tail-hi)*(p-90)/10
		}
		out[i] = bench.CDFPoint{Percentile: p, MS: ms}
	}
	return out
}

func echoRow(transport string, loss, lo, hi, tail float64, delivered int64) bench.Result {
	c := cdf(lo, hi, tail)
	return bench.Result{
		Transport: transport, Profile: bench.ProfileEcho, LatencyKind: bench.RTT,
		Link: bench.LinkResult{Loss: loss, DelayMS: 25, JitterMS: 2, Burst: 1, Seed: 1},
		Sent: 360, Delivered: delivered,
		LatencyMS:  bench.Latency{P50: c[2].MS, P90: c[3].MS, P99: c[4].MS, P999: c[5].MS, Max: c[6].MS},
		LatencyCDF: c,
	}
}

// results is a run of every kind of row: echo at three losses (one
// failed), load, and pps and bulk, which have no latency.
func results() []bench.Result {
	return []bench.Result{
		echoRow(bench.Tickwire, 0, 50, 55, 58, 360),
		echoRow(bench.KCP, 0, 49, 54, 57, 360),
		echoRow(bench.Tickwire, 5, 50, 60, 84, 360),
		echoRow(bench.KCP, 5, 50, 90, 220, 359), // FAILED
		echoRow(bench.Tickwire, 20, 51, 70, 105, 360),
		echoRow(bench.KCP, 20, 52, 200, 446, 360),
		{Transport: bench.Tickwire, Profile: bench.ProfileLoad, LatencyKind: bench.RTT, Sent: 10, Delivered: 10,
			LatencyMS: bench.Latency{P50: 17, P99: 35, Max: 40}, LatencyCDF: cdf(2, 30, 40), Peers: 4},
		{Transport: bench.Tickwire, Profile: bench.ProfilePPS, LatencyKind: bench.NoLatency, Sent: 9, Delivered: 9,
			ThroughputMsgsPerS: 9.5e6, LatencyCDF: []bench.CDFPoint{}},
		{Transport: bench.KCP, Profile: bench.ProfilePPS, LatencyKind: bench.NoLatency, Sent: 9, Delivered: 9,
			ThroughputMsgsPerS: 6e3, LatencyCDF: []bench.CDFPoint{}},
		{Transport: bench.Raw, Profile: bench.ProfilePPS, LatencyKind: bench.NoLatency, Sent: 9, Delivered: 9,
			ThroughputMsgsPerS: 2.3e5},
		{Transport: bench.Tickwire, Profile: bench.ProfileBulk, LatencyKind: bench.NoLatency, Sent: 9, Delivered: 9,
			ThroughputMBPerS: 985},
		{Transport: bench.KCP, Profile: bench.ProfileBulk, LatencyKind: bench.NoLatency, Sent: 9, Delivered: 9,
			ThroughputMBPerS: 18.5},
	}
}

// readSVG returns the file's contents after checking it is an SVG
// document.
func readSVG(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "<?xml") || !strings.Contains(s, "<svg ") || !strings.HasSuffix(strings.TrimSpace(s), "</svg>") {
		t.Errorf("%s is not an SVG document: %.200q", path, s)
	}
	return s
}

func TestWriteCharts(t *testing.T) {
	dir := t.TempDir()
	files, err := WriteCharts(dir, results())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		if filepath.Dir(f) != dir {
			t.Errorf("%s not in %s", f, dir)
		}
		names = append(names, filepath.Base(f))
	}
	want := []string{
		"p99-vs-loss-echo.svg", "latency-cdf-echo-loss-0.svg", "latency-cdf-echo-loss-5.svg", "latency-cdf-echo-loss-20.svg",
		"p99-vs-loss-load.svg", "latency-cdf-load-loss-0.svg",
		"throughput-pps.svg", "throughput-bulk.svg",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) {
		t.Errorf("%d files in the directory, %d returned", len(entries), len(want))
	}
	svg := map[string]string{}
	for _, f := range files {
		svg[filepath.Base(f)] = readSVG(t, f)
	}

	// Every transport keeps its colour; text names its fallbacks.
	tw, kcp := "#1F77B4", "#FF7F0E"
	for _, name := range []string{"latency-cdf-echo-loss-5.svg", "p99-vs-loss-echo.svg"} {
		if !strings.Contains(svg[name], tw) || !strings.Contains(svg[name], kcp) {
			t.Errorf("%s lacks the tickwire or kcp colour", name)
		}
	}
	for name, s := range svg {
		if !strings.Contains(s, "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;") || strings.Contains(s, "font-family:Liberation") {
			t.Errorf("%s: font families without fallbacks", name)
		}
	}
	for name, has := range map[string][]string{
		"latency-cdf-echo-loss-5.svg": {"5 % loss", ">tickwire (p50 55.6, p99 81.6 ms)<", ">kcp-fast (p50 72.2, p99 207 ms, FAILED 359/360)<", "log scale"},
		"p99-vs-loss-echo.svg":        {">0 %<", ">5 %<", ">20 %<", ">FAILED<", ">57.7<", ">81.6<", ">tickwire<"},
		"throughput-pps.svg":          {">9.50M<", ">6k<", ">230k<", ">raw<"},
		"throughput-bulk.svg":         {">985.0<", ">18.5<", "MB/s"},
	} {
		for _, h := range has {
			if !strings.Contains(svg[name], h) {
				t.Errorf("%s lacks %q", name, h)
			}
		}
	}
}

func TestWriteChartsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	fa, err := WriteCharts(a, results())
	if err != nil {
		t.Fatal(err)
	}
	fb, err := WriteCharts(b, results())
	if err != nil {
		t.Fatal(err)
	}
	if len(fa) != len(fb) || len(fa) == 0 {
		t.Fatalf("%d files, then %d", len(fa), len(fb))
	}
	for i := range fa {
		x, _ := os.ReadFile(fa[i])
		y, _ := os.ReadFile(fb[i])
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two writes of the same results", filepath.Base(fa[i]))
		}
	}
}

func TestWriteChartsNoLatency(t *testing.T) {
	var rs []bench.Result
	for _, r := range results() {
		if r.LatencyKind == bench.NoLatency {
			rs = append(rs, r)
		}
	}
	files, err := WriteCharts(t.TempDir(), rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.HasPrefix(filepath.Base(f), "throughput-") {
			t.Errorf("latency chart %s for rows without latency", f)
		}
	}
}

func TestWriteChartsEmpty(t *testing.T) {
	dir := t.TempDir()
	for _, rs := range [][]bench.Result{nil, {}} {
		files, err := WriteCharts(dir, rs)
		if err != nil || len(files) != 0 {
			t.Errorf("WriteCharts(%v) = %v, %v", rs, files, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("wrote %v", entries)
	}
	// A latency row that delivered nothing has a p99 bar (0) but no CDF.
	r := echoRow(bench.Tickwire, 0, 1, 1, 1, 0)
	r.LatencyMS, r.LatencyCDF = bench.Latency{}, []bench.CDFPoint{}
	files, err := WriteCharts(dir, []bench.Result{r})
	if err != nil || len(files) != 1 || filepath.Base(files[0]) != "p99-vs-loss-echo.svg" {
		t.Errorf("nothing delivered: %v, %v", files, err)
	}
}

func TestWriteChartsErrors(t *testing.T) {
	a, b := echoRow(bench.Tickwire, 5, 50, 60, 80, 360), echoRow(bench.Tickwire, 5, 50, 60, 80, 360)
	b.Link.DelayMS = 50
	dir := t.TempDir()
	if files, err := WriteCharts(dir, []bench.Result{a, b}); !errors.Is(err, ErrConflict) || len(files) != 0 {
		t.Errorf("two links at 5 %% loss: %v, %v", files, err)
	}
	bad := a
	bad.Profile = "../echo"
	if files, err := WriteCharts(dir, []bench.Result{bad}); err == nil || len(files) != 0 {
		t.Errorf("profile %q: %v, %v", bad.Profile, files, err)
	}
	if _, err := WriteCharts(filepath.Join(dir, "missing"), results()); err == nil || !strings.Contains(err.Error(), "p99-vs-loss-echo.svg") {
		t.Errorf("missing directory: %v", err)
	}
}

func TestLogTicks(t *testing.T) {
	labels := func(lo, hi float64) (ls []string, n int) {
		for _, tk := range logTicks(lo, hi) {
			if tk.Value < lo || tk.Value > hi {
				t.Errorf("tick %v outside [%v, %v]", tk.Value, lo, hi)
			}
			if tk.Label != "" {
				ls = append(ls, tk.Label)
			}
			n++
		}
		return ls, n
	}
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{40, 200, "40,50,60,70,80,90,100,200"}, // under a decade: every one
		{40, 600, "50,100,200,500"},
		{0.1, 60, "0.1,0.2,0.5,1,2,5,10,20,50"},
		{0.001, 600, "0.001,0.01,0.1,1,10,100"}, // over three decades: powers
	} {
		got, n := labels(c.lo, c.hi)
		if strings.Join(got, ",") != c.want {
			t.Errorf("logTicks(%v, %v) labels %v, want %s", c.lo, c.hi, got, c.want)
		}
		if n < len(got) {
			t.Errorf("%d ticks", n)
		}
	}
	for _, c := range [][3]float64{{44.7, 40, 50}, {174, 100, 200}, {0.0123, 0.01, 0.02}, {3, 3, 3}} {
		if lo, hi := niceFloor(c[0]), niceCeil(c[0]); lo != c[1] || hi != c[2] {
			t.Errorf("nice(%v) = %v, %v; want %v, %v", c[0], lo, hi, c[1], c[2])
		}
	}
}
