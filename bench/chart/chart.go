// Package chart draws a bench run's results as SVG charts with gonum
// plot: for each profile with latency (echo, actions, load), a latency CDF per
// link condition and a bar chart of p99 latency against loss; for each
// throughput profile (pps, bulk), a bar chart of its throughput.
//
// It is a package of its own so that only the tickwire command, not
// every importer of bench, links gonum plot.
//
// # Output
//
// Charts are 6 × 4 inch SVG documents. Text is laid out with the
// Liberation Sans metrics compiled into gonum plot (no font file is read
// at run time); the SVG names the font family with the generic fallbacks
// Arial, Helvetica, sans-serif, so a viewer without Liberation Sans draws
// a metric-compatible or similar face. The output is a pure function of
// the results: the same results give byte-identical files.
//
// Each transport keeps one colour and line dash in every chart (tickwire
// blue and solid, kcp orange and dashed, kcp-default green, raw grey).
package chart

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/tickwire/tickwire/bench"
)

// Chart size.
const (
	Width  = 6 * vg.Inch
	Height = 4 * vg.Inch
)

// ErrConflict is returned by WriteCharts for results that would need two
// charts under one name: two link conditions of one profile with the same
// loss rate (rows of separate runs merged).
var ErrConflict = errors.New("chart: two link conditions with the same loss rate")

// WriteCharts draws rs into SVG files in dir, which must exist, and
// returns their paths (dir joined with bench.CDFChartName,
// bench.P99ChartName or bench.ThroughputChartName) in a fixed order:
// profile by profile in the order of bench.Group, a latency profile's p99
// chart then its CDFs by ascending loss, a throughput profile's one
// chart. A latency profile is one with a row whose latency kind is set
// and not bench.NoLatency; its CDF at a link condition is drawn when a row
// there has a LatencyCDF. No results, no files. On an error, the files
// already written stay, and are returned with it.
func WriteCharts(dir string, rs []bench.Result) ([]string, error) {
	ps := profiles(rs)
	if err := conflicts(ps); err != nil {
		return nil, err
	}
	var written []string
	write := func(name string, p *plot.Plot) error {
		path := filepath.Join(dir, name)
		b, err := render(p)
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("chart: %s: %w", name, err)
		}
		written = append(written, path)
		return nil
	}
	for _, g := range ps {
		if !g.latency {
			if err := write(bench.ThroughputChartName(g.name), throughputChart(g)); err != nil {
				return written, err
			}
			continue
		}
		if err := write(bench.P99ChartName(g.name), p99Chart(g)); err != nil {
			return written, err
		}
		for _, c := range g.conds {
			if !slices.ContainsFunc(c.rows, func(r bench.Result) bool { return len(r.LatencyCDF) > 0 }) {
				continue
			}
			if err := write(bench.CDFChartName(g.name, c.link.Loss), cdfChart(g, c)); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// profile is one profile's rows, by link condition.
type profile struct {
	name       string
	latency    bool     // some row has a latency
	kind       string   // the latency kind of the first such row
	transports []string // in bench.Group order
	conds      []cond   // by ascending loss
}

// cond is the rows of one profile at one link condition.
type cond struct {
	link bench.LinkResult
	rows []bench.Result // in bench.Group order
}

// profiles groups rs by profile (in bench.Group order) and link condition
// (by ascending loss); conflicts checks that no two conditions of a
// profile share a loss.
func profiles(rs []bench.Result) []profile {
	var out []profile
	for _, r := range bench.Group(rs) {
		i := slices.IndexFunc(out, func(p profile) bool { return p.name == r.Profile })
		if i < 0 {
			out = append(out, profile{name: r.Profile})
			i = len(out) - 1
		}
		p := &out[i]
		if r.LatencyKind != bench.NoLatency && r.LatencyKind != "" && !p.latency {
			p.latency, p.kind = true, r.LatencyKind
		}
		if !slices.Contains(p.transports, r.Transport) {
			p.transports = append(p.transports, r.Transport)
		}
		j := slices.IndexFunc(p.conds, func(c cond) bool { return c.link == r.Link })
		if j < 0 {
			p.conds = append(p.conds, cond{link: r.Link})
			j = len(p.conds) - 1
		}
		p.conds[j].rows = append(p.conds[j].rows, r)
	}
	for i := range out {
		slices.SortStableFunc(out[i].conds, func(a, b cond) int { return cmp.Compare(a.link.Loss, b.link.Loss) })
	}
	return out
}

// conflicts returns ErrConflict if two of ps's conditions share a
// profile and a loss rate, and an error for a profile name that cannot be
// part of a file name.
func conflicts(ps []profile) error {
	for _, p := range ps {
		if p.name == "" || strings.ContainsAny(p.name, `/\`) || strings.Contains(p.name, "..") {
			return fmt.Errorf("chart: profile %q cannot name a file", p.name)
		}
		for i := 1; i < len(p.conds); i++ {
			if p.conds[i].link.Loss == p.conds[i-1].link.Loss {
				return fmt.Errorf("%w: profile %s, %s %% loss", ErrConflict, p.name, num(p.conds[i].link.Loss))
			}
		}
	}
	return nil
}

// Transport styles: colour and dash per bench.Transports index; others
// take the extra colours in order of appearance.
var (
	transportColors = []color.Color{
		rgb(0x1f77b4), // tickwire: blue
		rgb(0xff7f0e), // kcp-fast: orange
		rgb(0xd62728), // kcp-bulk: red
		rgb(0x2ca02c), // kcp-default: green
		rgb(0x9467bd), // quic: purple
		rgb(0x8c564b), // quic-streams: brown
		rgb(0xe377c2), // quic-dgram: pink
		rgb(0x7f7f7f), // raw: grey
	}
	extraColors = []color.Color{rgb(0x17becf), rgb(0xbcbd22), rgb(0x393b79), rgb(0x637939)}
	dashes      = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(6), vg.Points(2), vg.Points(2), vg.Points(2)}}
)

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// style returns the colour and dash of transport t, the i-th of ts.
func style(t string, ts []string) (color.Color, []vg.Length) {
	if i := slices.Index(bench.Transports, t); i >= 0 {
		return transportColors[i%len(transportColors)], dashes[i%len(dashes)]
	}
	var n int
	for _, o := range ts {
		if o == t {
			break
		}
		if !slices.Contains(bench.Transports, o) {
			n++
		}
	}
	return extraColors[n%len(extraColors)], dashes[n%len(dashes)]
}

// sans is the face of every text: Liberation Sans, compiled into gonum
// plot.
func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// newPlot returns a plot with the title and axis labels set, all text in
// Liberation Sans, and a light grid (vertical lines only if vgrid).
func newPlot(title, x, y string, vgrid bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(11)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = x, y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(10)
		a.Tick.Label.Font = sans(9)
	}
	p.Legend.TextStyle.Font = sans(9)
	p.Legend.Padding = vg.Points(2)
	grid := &plotter.Grid{Horizontal: draw.LineStyle{Color: color.Gray{Y: 0xdd}, Width: vg.Points(0.5)}}
	if vgrid {
		grid.Vertical = grid.Horizontal
	}
	p.Add(grid)
	return p
}

// kindText names a latency kind in a label.
func kindText(kind string) string {
	if kind == bench.OneWay {
		return "one-way"
	}
	return "round-trip"
}

// linkText describes a link condition in a title.
func linkText(l bench.LinkResult) string {
	s := num(l.Loss) + " % loss"
	if l.DelayMS != 0 || l.JitterMS != 0 {
		s += ", " + num(l.DelayMS) + " ms ± " + num(l.JitterMS) + " ms one way"
	}
	if l.Dup != 0 {
		s += ", " + num(l.Dup) + " % dup"
	}
	if l.Burst > 1 {
		s += ", bursts of " + num(l.Burst)
	}
	return s
}

// failedText returns ", FAILED d/s" for a failed row, else "".
func failedText(r bench.Result) string {
	if !r.Failed() {
		return ""
	}
	return fmt.Sprintf(", FAILED %d/%d", r.Delivered, r.Sent)
}

// cdfChart draws the latency CDF of profile g at condition c: x the
// latency on a log scale, y the fraction of messages at most x, one line
// per transport.
func cdfChart(g profile, c cond) *plot.Plot {
	p := newPlot(
		fmt.Sprintf("%s: %s latency CDF, %s", g.name, kindText(g.kind), linkText(c.link)),
		kindText(g.kind)+" latency (ms, log scale)",
		"fraction of messages ≤ x",
		true,
	)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range c.rows {
		if len(r.LatencyCDF) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(r.LatencyCDF))
		for i, pt := range r.LatencyCDF {
			// A latency is at least 1 µs (the histogram's floor): > 0
			// for the log scale.
			pts[i] = plotter.XY{X: max(pt.MS, 0.001), Y: pt.Percentile / 100}
			lo, hi = min(lo, pts[i].X), max(hi, pts[i].X)
		}
		line, _ := plotter.NewLine(pts) // finite points: cannot fail
		line.Color, line.Dashes = style(r.Transport, g.transports)
		line.Width = vg.Points(1.75)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s (p50 %s, p99 %s ms%s)", r.Transport,
			ms(r.LatencyMS.P50), ms(r.LatencyMS.P99), failedText(r)), line)
	}
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = niceFloor(lo/1.05), niceCeil(hi*1.05)
	p.X.Tick.Marker = plot.TickerFunc(logTicks)
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.TickerFunc(func(float64, float64) []plot.Tick {
		var ts []plot.Tick
		for i := 0; i <= 10; i++ {
			t := plot.Tick{Value: float64(i) / 10}
			if i%2 == 0 {
				t.Label = strconv.FormatFloat(t.Value, 'f', 1, 64)
			}
			ts = append(ts, t)
		}
		return ts
	})
	p.Legend.Top, p.Legend.Left = false, false // bottom right: below the curves
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(6), vg.Points(6)
	return p
}

// logTicks marks a log axis from lo to hi at 1 … 9 times the powers of
// ten. It labels 1, 2 and 5 times them; every one when that would label
// fewer than four (an axis of less than a decade); only the powers when
// the axis spans more than three decades.
func logTicks(lo, hi float64) []plot.Tick {
	kLo, kHi := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	var ts []plot.Tick
	for k := kLo; k <= kHi; k++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow10(k)
			if k < 0 {
				v = float64(m) / math.Pow10(-k) // exact decimals: 0.2, not 0.2000…1
			}
			if v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
			}
		}
	}
	keep := func(m int) bool { return m == 1 || m == 2 || m == 5 }
	switch labelled := 0; {
	case kHi-kLo > 3:
		keep = func(m int) bool { return m == 1 }
	default:
		for _, t := range ts {
			if keep(leading(t.Value)) {
				labelled++
			}
		}
		if labelled < 4 {
			keep = func(int) bool { return true }
		}
	}
	for i := range ts {
		if !keep(leading(ts[i].Value)) {
			ts[i].Label = ""
		}
	}
	return ts
}

// niceFloor returns the largest m × 10^k (m in 1 … 9) at most v > 0.
func niceFloor(v float64) float64 {
	e := math.Pow10(int(math.Floor(math.Log10(v))))
	return math.Floor(v/e) * e
}

// niceCeil returns the smallest m × 10^k (m in 1 … 10) at least v > 0.
func niceCeil(v float64) float64 {
	e := math.Pow10(int(math.Floor(math.Log10(v))))
	return math.Ceil(v/e) * e
}

// leading returns the leading decimal digit of v > 0.
func leading(v float64) int {
	return int(math.Round(v / math.Pow10(int(math.Floor(math.Log10(v)+1e-9)))))
}

// bars adds to p one bar chart per transport of ts over the groups
// 0 … n-1, value(t, i) giving the bar's height and label (ok false: no
// bar, label "n/a"), and a legend entry each; the y axis starts at 0,
// plainly labelled.
func bars(p *plot.Plot, ts []string, n int, value func(t string, i int) (v float64, label string, ok bool)) {
	width := vg.Points(min(22, 64/float64(len(ts))))
	var top float64
	for j, t := range ts {
		vals := make(plotter.Values, n)
		labels := plotter.XYLabels{XYs: make(plotter.XYs, n), Labels: make([]string, n)}
		for i := range n {
			v, label, ok := value(t, i)
			if !ok {
				label = "n/a"
			}
			vals[i] = v
			labels.XYs[i] = plotter.XY{X: float64(i), Y: v}
			labels.Labels[i] = label
			top = max(top, v)
		}
		b, _ := plotter.NewBarChart(vals, width) // finite values, width > 0: cannot fail
		b.Color, _ = style(t, ts)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(j)-float64(len(ts)-1)/2) * width
		p.Add(b)
		p.Legend.Add(t, b)
		l, _ := plotter.NewLabels(labels) // as many labels as points: cannot fail
		for i := range l.TextStyle {
			l.TextStyle[i].Font = sans(7)
			l.TextStyle[i].XAlign = draw.XCenter
			l.TextStyle[i].YAlign = draw.YBottom
			l.TextStyle[i].Handler = plot.DefaultTextHandler
		}
		l.Offset = vg.Point{X: b.Offset, Y: vg.Points(2)}
		p.Add(l)
	}
	p.Y.Min = 0
	if top > 0 {
		p.Y.Max = top * 1.12 // room for the labels
	} else {
		p.Y.Max = 1
	}
	p.Y.Tick.Marker = ticks(func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) })
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(4)
}

// ticks returns gonum plot's default ticks, labelled by format (the
// default labels carry trailing zeros: "250.00").
func ticks(format func(float64) string) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ts := plot.DefaultTicks{}.Ticks(lo, hi)
		for i := range ts {
			if !ts[i].IsMinor() {
				ts[i].Label = format(ts[i].Value)
			}
		}
		return ts
	})
}

// p99Chart draws profile g's p99 latency against loss: one group of bars
// per loss rate, one bar per transport, labelled with its value (FAILED
// for a failed row).
func p99Chart(g profile) *plot.Plot {
	p := newPlot(
		fmt.Sprintf("%s: p99 %s latency vs loss%s", g.name, kindText(g.kind), delayText(g)),
		"loss rate, each direction",
		"p99 "+kindText(g.kind)+" latency (ms)",
		false,
	)
	names := make([]string, len(g.conds))
	for i, c := range g.conds {
		names[i] = num(c.link.Loss) + " %"
	}
	bars(p, g.transports, len(g.conds), func(t string, i int) (float64, string, bool) {
		j := slices.IndexFunc(g.conds[i].rows, func(r bench.Result) bool { return r.Transport == t })
		if j < 0 {
			return 0, "", false
		}
		r := g.conds[i].rows[j]
		if r.Failed() {
			return r.LatencyMS.P99, "FAILED", true
		}
		return r.LatencyMS.P99, ms(r.LatencyMS.P99), true
	})
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	return p
}

// delayText is ", D ms ± J ms one way" when every condition of g has the
// same non-zero delay and jitter, else "".
func delayText(g profile) string {
	l := g.conds[0].link
	for _, c := range g.conds {
		if c.link.DelayMS != l.DelayMS || c.link.JitterMS != l.JitterMS {
			return ""
		}
	}
	if l.DelayMS == 0 && l.JitterMS == 0 {
		return ""
	}
	return ", " + num(l.DelayMS) + " ms ± " + num(l.JitterMS) + " ms one way"
}

// throughputChart draws a throughput profile's rows: MB/s for bulk,
// messages per second for the others (pps), one bar per transport and
// link condition.
func throughputChart(g profile) *plot.Plot {
	unit, value := "messages/s", func(r bench.Result) (float64, string) {
		return r.ThroughputMsgsPerS, si(r.ThroughputMsgsPerS)
	}
	if g.name == bench.ProfileBulk {
		unit, value = "MB/s", func(r bench.Result) (float64, string) {
			return r.ThroughputMBPerS, strconv.FormatFloat(r.ThroughputMBPerS, 'f', 1, 64)
		}
	}
	p := newPlot(g.name+": throughput ("+unit+", higher is better)", "", unit, false)
	names := make([]string, len(g.conds))
	for i, c := range g.conds {
		names[i] = "direct, " + linkText(c.link) // the throughput profiles bypass the relay
	}
	bars(p, g.transports, len(g.conds), func(t string, i int) (float64, string, bool) {
		j := slices.IndexFunc(g.conds[i].rows, func(r bench.Result) bool { return r.Transport == t })
		if j < 0 {
			return 0, "", false
		}
		r := g.conds[i].rows[j]
		v, label := value(r)
		if r.Failed() {
			label = "FAILED"
		}
		return v, label, true
	})
	p.Y.Tick.Marker = ticks(siTick) // after bars: "8M", not "8000000"
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	return p
}

// render draws p as an SVG document whose font families have generic
// fallbacks.
func render(p *plot.Plot) ([]byte, error) {
	c := vgsvg.New(Width, Height)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")), nil
}

// ms formats a latency in ms: one decimal, none from 100 ms.
func ms(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// si formats a rate with a k or M suffix.
func si(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// siTick formats an axis value with a k or M suffix.
func siTick(v float64) string {
	switch {
	case math.Abs(v) >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case math.Abs(v) >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// num formats a setting without trailing zeros.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
