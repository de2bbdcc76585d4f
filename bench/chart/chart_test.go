package chart

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
		"p99-vs-loss-echo.svg", "p99-bytes-vs-loss-echo.svg", "latency-cdf-echo-loss-0.svg", "latency-cdf-echo-loss-5.svg", "latency-cdf-echo-loss-20.svg",
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
		"throughput-pps.svg":          {">9.50M<", ">6k<", ">230k<", ">raw (unrel)<", "messages/s (log scale)"},
		"p99-bytes-vs-loss-echo.svg":  {"wire bytes per message sent", ">tickwire<", ">kcp-fast, FAILED at 5 %<", ">20 %<"},
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

// svgText is one text element of an SVG chart: its box in the chart's
// coordinates (points, y up).
type svgText struct {
	text string
	box  vg.Rectangle
}

var (
	svgTextRE = regexp.MustCompile(`(<g transform="rotate\(90\)">\s*)?<text x="([-0-9.e]+)" y="([-0-9.e]+)"[^>]*font-size:([0-9.]+)px(?:;fill:#[0-9A-F]{6})?">([^<]*)</text>`)
	svgPathRE = regexp.MustCompile(`<path d="([^"]+)" style="([^"]+)"`)
	svgSizeRE = regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`)
)

// svgTexts returns the text elements of svg with their boxes, measured
// with the chart's own font metrics.
func svgTexts(t *testing.T, svg string) []svgText {
	t.Helper()
	var out []svgText
	for _, m := range svgTextRE.FindAllStringSubmatch(strings.ReplaceAll(svg, "\n", " "), -1) {
		x, _ := strconv.ParseFloat(m[2], 64)
		y, _ := strconv.ParseFloat(m[3], 64)
		size, _ := strconv.ParseFloat(m[4], 64)
		txt := html.UnescapeString(m[5])
		sty := draw.TextStyle{Font: sans(vg.Length(size)), Handler: plot.DefaultTextHandler}
		w := sty.Rectangle(txt).Size().X
		base := vg.Length(-y) // the text is flipped: y is minus the baseline
		box := vg.Rectangle{
			Min: vg.Point{X: vg.Length(x), Y: base - vg.Length(size)*0.25},
			Max: vg.Point{X: vg.Length(x) + w, Y: base + vg.Length(size)*0.8}}
		if m[1] != "" { // rotated a quarter turn: (x, y) → (-y, x)
			box = vg.Rectangle{Min: vg.Point{X: -box.Max.Y, Y: box.Min.X}, Max: vg.Point{X: -box.Min.Y, Y: box.Max.X}}
		}
		out = append(out, svgText{txt, box})
	}
	if len(out) == 0 {
		t.Fatal("no text in the SVG")
	}
	return out
}

// svgData returns the polylines of svg's data: lines of width 1.5 or
// 1.75 and filled shapes in a transport's colour (bars and points).
func svgData(svg string) [][]vg.Point {
	var out [][]vg.Point
	for _, m := range svgPathRE.FindAllStringSubmatch(strings.ReplaceAll(svg, "\n", " "), -1) {
		style := m[2]
		line := strings.Contains(style, "stroke-width:1.75") || strings.Contains(style, "stroke-width:1.5;") || strings.HasSuffix(style, "stroke-width:1.5")
		fill := false
		for _, c := range transportColors {
			r, g, b, _ := c.RGBA()
			if strings.Contains(style, fmt.Sprintf("fill:#%02X%02X%02X", r>>8, g>>8, b>>8)) {
				fill = true
			}
		}
		if !line && !fill {
			continue
		}
		var pts []vg.Point
		for _, seg := range regexp.MustCompile(`[ML]([-0-9.e]+),([-0-9.e]+)`).FindAllStringSubmatch(m[1], -1) {
			x, _ := strconv.ParseFloat(seg[1], 64)
			y, _ := strconv.ParseFloat(seg[2], 64)
			pts = append(pts, vg.Point{X: vg.Length(x), Y: vg.Length(y)})
		}
		if fill && len(pts) > 0 {
			pts = append(pts, pts[0]) // closed
		}
		out = append(out, pts)
	}
	return out
}

// inside reports whether p lies in r.
func inside(p vg.Point, r vg.Rectangle) bool {
	return p.X >= r.Min.X && p.X <= r.Max.X && p.Y >= r.Min.Y && p.Y <= r.Max.Y
}

// Every chart's legend is clear of its data: no point of a line, bar or
// marker, sampled along every segment, falls on a legend entry's text.
// And no text comes within 2 points of the document's edge (the last
// x tick label used to end at it exactly).
func TestChartLayout(t *testing.T) {
	dir := t.TempDir()
	rs := append(results(),
		echoRow(bench.QUIC, 0, 49, 54, 57, 360), echoRow(bench.QUIC, 5, 50, 120, 300, 360), echoRow(bench.QUIC, 20, 300, 420, 900, 360)) // rising where a corner legend sat
	files, err := WriteCharts(dir, rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		svg := readSVG(t, f)
		name := filepath.Base(f)
		size := svgSizeRE.FindStringSubmatch(svg)
		w, _ := strconv.ParseFloat(size[1], 64)
		h, _ := strconv.ParseFloat(size[2], 64)
		texts := svgTexts(t, svg)
		var legend []svgText
		for _, tx := range texts {
			if tx.box.Min.X < 2 || tx.box.Max.X > vg.Length(w-2) || tx.box.Min.Y < 2 || tx.box.Max.Y > vg.Length(h-2) {
				t.Errorf("%s: text %q at %v reaches the edge of %v × %v", name, tx.text, tx.box, w, h)
			}
			if slices.ContainsFunc(bench.Transports, func(tr string) bool {
				return tx.text == tr || strings.HasPrefix(tx.text, tr+" (") || strings.HasPrefix(tx.text, tr+",")
			}) {
				legend = append(legend, tx)
			}
		}
		if len(legend) == 0 {
			t.Errorf("%s: %d legend entries", name, len(legend))
		}
		data := svgData(svg)
		if len(data) == 0 {
			t.Errorf("%s: no data drawn", name)
		}
		for _, pl := range data {
			for i := 1; i < len(pl); i++ {
				for k := 0; k <= 50; k++ {
					f := vg.Length(k) / 50
					p := vg.Point{X: pl[i-1].X + (pl[i].X-pl[i-1].X)*f, Y: pl[i-1].Y + (pl[i].Y-pl[i-1].Y)*f}
					for _, l := range legend {
						if inside(p, l.box) {
							t.Errorf("%s: legend %q at %v covers the data at %v", name, l.text, l.box, p)
							goto next
						}
					}
				}
			}
		next:
		}
	}
}

// A bar chart whose values span more than LogSpan has a log axis on which
// the smallest bar is visible: pps at 9.5 M and 6 k msg/s.
func TestLogBars(t *testing.T) {
	dir := t.TempDir()
	files, err := WriteCharts(dir, results())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(files, func(f string) bool { return filepath.Base(f) == "throughput-pps.svg" })
	svg := readSVG(t, files[i])
	heights := map[string]vg.Length{}
	for _, pl := range svgData(svg) {
		if len(pl) == 5 {
			heights[fmt.Sprint(pl)] = pl[2].Y - pl[0].Y
		}
	}
	var tw, kcp vg.Length
	for _, m := range svgPathRE.FindAllStringSubmatch(strings.ReplaceAll(svg, "\n", " "), -1) {
		pts := regexp.MustCompile(`[ML]([-0-9.e]+),([-0-9.e]+)`).FindAllStringSubmatch(m[1], -1)
		if len(pts) != 4 {
			continue
		}
		y0, _ := strconv.ParseFloat(pts[0][2], 64)
		y2, _ := strconv.ParseFloat(pts[2][2], 64)
		switch {
		case strings.Contains(m[2], "fill:#1F77B4"):
			tw = max(tw, vg.Length(y2-y0))
		case strings.Contains(m[2], "fill:#FF7F0E"):
			kcp = max(kcp, vg.Length(y2-y0))
		}
	}
	if tw <= 0 || kcp < tw/10 {
		t.Errorf("bars: tickwire %v pt, kcp %v pt (on a linear axis kcp would be %v pt)", tw, kcp, tw*6e3/9.5e6)
	}
	if !strings.Contains(svg, "(log scale)") {
		t.Error("no log scale on the pps chart")
	}
	b := readSVG(t, files[slices.IndexFunc(files, func(f string) bool { return filepath.Base(f) == "throughput-bulk.svg" })])
	if strings.Contains(b, "log scale") {
		t.Error("bulk (985 and 18.5 MB/s, 53×) drawn on a log scale")
	}
}

// Rows of several reps draw their median rep, and the bar charts a
// whisker over each row's min–max with the label above it.
func TestWriteChartsReps(t *testing.T) {
	var rs []bench.Result
	for rep, scale := range []float64{1, 2, 1.5} {
		for _, r := range results() {
			r.Rep = rep
			r.LatencyMS.P99 *= scale
			r.ThroughputMBPerS *= scale
			rs = append(rs, r)
		}
	}
	dir := t.TempDir()
	files, err := WriteCharts(dir, rs)
	if err != nil {
		t.Fatal(err)
	}
	svg := map[string]string{}
	for _, f := range files {
		svg[filepath.Base(f)] = readSVG(t, f)
	}
	if len(svg) != 9 {
		t.Errorf("%d charts: %v", len(svg), files)
	}
	// Echo at 5 %: tickwire's p99 81.6 ms × 1, 2, 1.5: the median rep is
	// the 1.5 one, 122 ms; its whisker spans 81.6 to 163 ms.
	p99 := svg["p99-vs-loss-echo.svg"]
	for _, s := range []string{">median of 3 reps, whiskers min–max<", ">122<"} {
		if !strings.Contains(p99, s) {
			t.Errorf("p99 chart lacks %q", s)
		}
	}
	whiskers := strings.Count(p99, "stroke:#000000;stroke-width:0.75")
	if whiskers != 3*3*2 { // three strokes per bar, tickwire and kcp at three losses
		t.Errorf("%d whisker strokes, want %d", whiskers, 3*3*2)
	}
	if !strings.Contains(html.UnescapeString(svg["latency-cdf-echo-loss-5.svg"]), ">each row's median rep of 3<") {
		t.Error("CDF title does not say it draws the median rep")
	}
	if !strings.Contains(svg["throughput-bulk.svg"], ">1477.5<") { // 985 × 1.5
		t.Error("bulk chart does not draw the median rep")
	}
}
