// Package chart draws a bench run's results as SVG charts with gonum
// plot: for each profile with latency (echo, actions, load), a latency CDF per
// link condition, a bar chart of p99 latency against loss and, with more
// than one loss rate, a chart of p99 latency and wire bytes per message
// against loss, every peer a line; for each throughput profile (pps,
// bulk), a bar chart of its throughput.
//
// It is a package of its own so that only the tickwire command, not
// every importer of bench, links gonum plot.
//
// # Output
//
// Charts are 6 × 4 inch SVG documents (the p99-and-bytes chart, two
// panels, 6 × 6). The legend sits in a strip below the plot, in as many
// columns as fit, so that it never covers a line or a bar; a margin
// keeps every label inside the document. A bar chart whose values span
// more than 100× (LogSpan) has a log value axis, so that the
// smallest bar stays visible. With more than one rep, every chart draws
// each row's median rep (bench.Row.Median), a bar chart with a whisker
// over the row's min–max, and the title says so. Text is laid out with the
// Liberation Sans metrics compiled into gonum plot (no font file is read
// at run time); the SVG names the font family with the generic fallbacks
// Arial, Helvetica, sans-serif, so a viewer without Liberation Sans draws
// a metric-compatible or similar face. The output is a pure function of
// the results: the same results give byte-identical files.
//
// Each transport keeps one colour and line dash in every chart (tickwire
// blue and solid, kcp-fast orange and dashed, kcp-bulk red, kcp-default
// green, quic purple, raw grey); a transport with both a reliable and an
// unreliable row in a profile (tickwire's pps) draws its reliable one in
// a lighter tint, and the legend marks unreliable rows "(unrel)".
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
// bench.P99ChartName, bench.CostChartName or bench.ThroughputChartName)
// in a fixed order: profile by profile in the order of bench.Group, a
// latency profile's p99 chart, its p99-and-bytes chart (when it has more
// than one loss rate), then its CDFs by ascending loss; a throughput
// profile's one chart. Rows of several reps are drawn by their median
// rep. A latency profile is one with a row whose latency kind is set
// and not bench.NoLatency; its CDF at a link condition is drawn when a row
// there has a LatencyCDF. No results, no files. On an error, the files
// already written stay, and are returned with it.
func WriteCharts(dir string, rs []bench.Result) ([]string, error) {
	ps := profiles(medians(rs))
	for _, r := range bench.Rows(rs) {
		for i := range ps {
			if ps[i].name == r.First().Profile {
				if ps[i].reps == nil {
					ps[i].reps = map[repKey]bench.Row{}
				}
				ps[i].reps[keyOf(r.First())] = r
				ps[i].nreps = max(ps[i].nreps, len(r.Reps))
			}
		}
	}
	if err := conflicts(ps); err != nil {
		return nil, err
	}
	var written []string
	write := func(name string, f figure) error {
		path := filepath.Join(dir, name)
		b, err := render(f)
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
		if len(g.conds) > 1 {
			if err := write(bench.CostChartName(g.name), costChart(g)); err != nil {
				return written, err
			}
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
	series     []series // in bench.Group order
	conds      []cond   // by ascending loss
	// reps holds every row's reps, for the bars' min–max whiskers.
	reps  map[repKey]bench.Row
	nreps int // the most reps of a row
}

// repsNote is a second title line saying what a chart of several reps
// draws (bars: whiskers too), or "".
func (g profile) repsNote(whiskers bool) string {
	switch {
	case g.nreps < 2:
		return ""
	case whiskers:
		return fmt.Sprintf("\nmedian of %d reps, whiskers min–max", g.nreps)
	}
	return fmt.Sprintf("\neach row's median rep of %d", g.nreps)
}

// repKey identifies a row of a profile.
type repKey struct {
	transport, delivery string
	link                bench.LinkResult
}

func keyOf(r bench.Result) repKey { return repKey{r.Transport, deliveryOf(r), r.Link} }

// spread returns f's min–max over the reps of r's row in g, and whether
// it has more than one rep that ran.
func (g profile) spread(r bench.Result, f func(bench.Result) float64) (lo, hi float64, ok bool) {
	row, found := g.reps[keyOf(r)]
	if !found {
		return 0, 0, false
	}
	st := row.Stat(f)
	return st.Min, st.Max, st.N > 1
}

// series is one line or set of bars: a transport's rows of one delivery.
type series struct {
	transport, delivery string
	label               string // the transport, "(unrel)" or "(rel)" added where needed
	tint                bool   // the reliable row of a transport that has both
}

// medians returns one result per bench.Row of rs: its median rep.
func medians(rs []bench.Result) []bench.Result {
	rows := bench.Rows(rs)
	out := make([]bench.Result, len(rows))
	for i, r := range rows {
		out[i] = r.Median()
	}
	return out
}

// deliveryOf is r's delivery, its profile's default when not set.
func deliveryOf(r bench.Result) string {
	if r.Delivery != "" {
		return r.Delivery
	}
	if r.Reliable() {
		return bench.Reliable
	}
	return bench.Unreliable
}

// find returns the row of series s among rows.
func find(rows []bench.Result, s series) (bench.Result, bool) {
	for _, r := range rows {
		if r.Transport == s.transport && deliveryOf(r) == s.delivery {
			return r, true
		}
	}
	return bench.Result{}, false
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
		if se := (series{transport: r.Transport, delivery: deliveryOf(r)}); !slices.ContainsFunc(p.series, func(o series) bool {
			return o.transport == se.transport && o.delivery == se.delivery
		}) {
			p.series = append(p.series, se)
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
		ss := out[i].series
		for j := range ss {
			both := slices.ContainsFunc(ss, func(o series) bool { return o.transport == ss[j].transport && o.delivery != ss[j].delivery })
			ss[j].label = ss[j].transport
			switch {
			case ss[j].delivery == bench.Unreliable:
				ss[j].label += " (unrel)"
			case both:
				ss[j].label += " (rel)"
				ss[j].tint = true
			}
		}
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

// seriesStyle returns the colour and dash of s among the transports ts:
// its transport's, tinted for a tint series.
func seriesStyle(s series, ts []string) (color.Color, []vg.Length) {
	c, d := style(s.transport, ts)
	if s.tint {
		r, g, b, _ := c.RGBA()
		mix := func(v uint32) uint8 { return uint8((v>>8)*11/20 + 255*9/20) }
		c = color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 0xff}
	}
	return c, d
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

// cdfChart draws the latency CDF of profile g at condition c: x the
// latency on a log scale, y the fraction of messages at most x, one line
// per series.
func cdfChart(g profile, c cond) figure {
	p := newPlot(
		fmt.Sprintf("%s: %s latency CDF, %s%s", g.name, kindText(g.kind), linkText(c.link), g.repsNote(false)),
		kindText(g.kind)+" latency (ms, log scale)",
		"fraction of messages ≤ x",
		true,
	)
	f := figure{panels: []*plot.Plot{p}, height: Height}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range g.series {
		r, ok := find(c.rows, s)
		if !ok || len(r.LatencyCDF) == 0 {
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
		line.Color, line.Dashes = seriesStyle(s, g.transports)
		line.Width = vg.Points(1.75)
		p.Add(line)
		f.legend = append(f.legend, legendItem{fmt.Sprintf("%s (p50 %s, p99 %s ms%s)", s.label,
			ms(r.LatencyMS.P50), ms(r.LatencyMS.P99), failedText(r)), []plot.Thumbnailer{line}})
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
	return f
}

// LogSpan is the ratio of the largest to the smallest positive value of
// a bar chart above which its value axis is logarithmic.
const LogSpan = 100

// bars adds to f's one panel one set of bars per series over the groups
// 0 … n-1, value(s, i) giving the bar's height and label (ok false: no
// bar, label "n/a"), and a legend entry each; where the row ran more
// than one rep, spread(s, i) gives the min–max a whisker spans (the bar
// is the median rep) and the label sits above it. The value axis starts at 0,
// plainly labelled by format, unless the positive values span more than
// LogSpan: then it is logarithmic, from below the smallest.
func bars(f *figure, g profile, n int, format func(float64) string, value func(s series, i int) (v float64, label string, ok bool),
	spread func(s series, i int) (lo, hi float64, ok bool)) {
	p := f.panels[0]
	ss := g.series
	// About three quarters of a 6-inch plot's width shared by the bars:
	// wide enough for their labels, at most 36 points.
	width := vg.Points(min(36, 285/float64(n*len(ss))))
	lo, top := math.Inf(1), 0.0
	for _, s := range ss {
		for i := range n {
			if v, _, ok := value(s, i); ok && v > 0 {
				lo, top = min(lo, v), max(top, v)
			}
			if l, h, ok := spread(s, i); ok && l > 0 {
				lo, top = min(lo, l), max(top, h)
			}
		}
	}
	logAxis := top > 0 && top/lo > LogSpan
	floor := 0.0
	if logAxis {
		floor = niceFloor(lo / 10) // the smallest bar a decade tall
	}
	for j, s := range ss {
		b := &barSet{vals: make([]float64, n), ok: make([]bool, n), lo: make([]float64, n), hi: make([]float64, n), width: width,
			offset: vg.Length(float64(j)-float64(len(ss)-1)/2) * width}
		b.color, _ = seriesStyle(s, g.transports)
		labels := plotter.XYLabels{XYs: make(plotter.XYs, n), Labels: make([]string, n)}
		for i := range n {
			v, label, ok := value(s, i)
			if !ok {
				label = "n/a"
			}
			b.vals[i], b.ok[i] = v, ok
			at := v
			if l, h, ok := spread(s, i); ok {
				b.lo[i], b.hi[i], at = l, h, max(v, h)
			}
			labels.XYs[i] = plotter.XY{X: float64(i), Y: max(at, floor)}
			labels.Labels[i] = label
		}
		p.Add(b)
		f.legend = append(f.legend, legendItem{s.label, []plot.Thumbnailer{b}})
		l, _ := plotter.NewLabels(labels) // as many labels as points: cannot fail
		for i := range l.TextStyle {
			l.TextStyle[i].Font = sans(7)
			l.TextStyle[i].XAlign = draw.XCenter
			l.TextStyle[i].YAlign = draw.YBottom
			l.TextStyle[i].Handler = plot.DefaultTextHandler
		}
		l.Offset = vg.Point{X: b.offset, Y: vg.Points(2)}
		p.Add(l)
	}
	switch {
	case logAxis:
		p.Y.Scale = plot.LogScale{}
		p.Y.Min, p.Y.Max = floor, niceCeil(top*2) // room for the labels
		p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
			ts := logTicks(lo, hi)
			for i := range ts {
				if ts[i].Label != "" {
					ts[i].Label = format(ts[i].Value)
				}
			}
			return ts
		})
		p.Y.Label.Text += " (log scale)"
	default:
		p.Y.Min, p.Y.Max = 0, 1
		if top > 0 {
			p.Y.Max = top * 1.12 // room for the labels
		}
		p.Y.Tick.Marker = ticks(format)
	}
}

// barSet is one series' bars: a bar per group i at x = i + offset, from
// the value axis' minimum to vals[i] (where ok[i]), and a whisker from
// lo[i] to hi[i] where hi[i] > 0. Unlike gonum's BarChart it draws from
// the axis' minimum, not from 0, so that it draws on a log axis.
type barSet struct {
	vals, lo, hi  []float64
	ok            []bool
	offset, width vg.Length
	color         color.Color
}

// Plot implements plot.Plotter.
func (b *barSet) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range b.vals {
		if !b.ok[i] || v <= p.Y.Min {
			continue
		}
		x := trX(float64(i)) + b.offset
		y0, y1 := trY(p.Y.Min), trY(min(v, p.Y.Max))
		pts := []vg.Point{{X: x - b.width/2, Y: y0}, {X: x + b.width/2, Y: y0}, {X: x + b.width/2, Y: y1}, {X: x - b.width/2, Y: y1}}
		c.FillPolygon(b.color, c.ClipPolygonY(pts))
		if b.hi[i] > 0 {
			lo, hi := trY(max(b.lo[i], p.Y.Min)), trY(min(b.hi[i], p.Y.Max))
			sty := draw.LineStyle{Color: color.Black, Width: vg.Points(0.75)}
			c.StrokeLine2(sty, x, lo, x, hi)
			c.StrokeLine2(sty, x-b.width/4, lo, x+b.width/4, lo)
			c.StrokeLine2(sty, x-b.width/4, hi, x+b.width/4, hi)
		}
	}
}

// Thumbnail implements plot.Thumbnailer: a filled square.
func (b *barSet) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.color, pts)
}

// p99Chart draws profile g's p99 latency against loss: one group of bars
// per loss rate, one bar per series, labelled with its value (FAILED
// for a failed row).
func p99Chart(g profile) figure {
	p := newPlot(
		fmt.Sprintf("%s: p99 %s latency vs loss%s%s", g.name, kindText(g.kind), delayText(g), g.repsNote(true)),
		"loss rate, each direction",
		"p99 "+kindText(g.kind)+" latency (ms)",
		false,
	)
	f := figure{panels: []*plot.Plot{p}, height: Height}
	bars(&f, g, len(g.conds), plain, func(s series, i int) (float64, string, bool) {
		r, ok := find(g.conds[i].rows, s)
		if !ok || r.NotSupported != "" {
			return 0, "", false
		}
		if r.Failed() {
			return r.LatencyMS.P99, "FAILED", true
		}
		return r.LatencyMS.P99, ms(r.LatencyMS.P99), true
	}, func(s series, i int) (float64, float64, bool) {
		r, ok := find(g.conds[i].rows, s)
		if !ok {
			return 0, 0, false
		}
		return g.spread(r, func(x bench.Result) float64 { return x.LatencyMS.P99 })
	})
	p.NominalX(lossNames(g)...)
	p.X.Min, p.X.Max = -0.5, float64(len(g.conds))-0.5
	return f
}

// lossNames labels g's conditions by their loss rate.
func lossNames(g profile) []string {
	names := make([]string, len(g.conds))
	for i, c := range g.conds {
		names[i] = num(c.link.Loss) + " %"
	}
	return names
}

// plain formats an axis value without trailing zeros.
func plain(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// costChart draws profile g's p99 latency (top) and wire bytes per
// message sent (bottom) against loss, one line with points per series,
// the loss rates evenly spaced. A row that could not run has no point; a
// series with a failed row says so in the legend.
func costChart(g profile) figure {
	top := newPlot(
		fmt.Sprintf("%s: p99 latency and wire bytes per message vs loss%s%s", g.name, delayText(g), g.repsNote(false)),
		"", "p99 "+kindText(g.kind)+" latency (ms)", false)
	bottom := newPlot("", "loss rate, each direction", "wire bytes per message sent", false)
	f := figure{panels: []*plot.Plot{top, bottom}, height: Height * 3 / 2}
	var hiLat, loLat, hiBytes float64 = 0, math.Inf(1), 0
	for _, s := range g.series {
		var lat, wire plotter.XYs
		var failed []string
		for i, c := range g.conds {
			r, ok := find(c.rows, s)
			if !ok || r.NotSupported != "" || r.Sent == 0 {
				continue
			}
			if r.Failed() {
				failed = append(failed, num(c.link.Loss)+" %")
			}
			if r.Delivered > 0 && r.LatencyMS.P99 > 0 {
				lat = append(lat, plotter.XY{X: float64(i), Y: r.LatencyMS.P99})
				hiLat, loLat = max(hiLat, r.LatencyMS.P99), min(loLat, r.LatencyMS.P99)
			}
			b := float64(r.WireBytes) / float64(r.Sent)
			wire = append(wire, plotter.XY{X: float64(i), Y: b})
			hiBytes = max(hiBytes, b)
		}
		if len(lat) == 0 && len(wire) == 0 {
			continue
		}
		col, dash := seriesStyle(s, g.transports)
		var thumbs []plot.Thumbnailer
		for _, d := range []struct {
			p   *plot.Plot
			pts plotter.XYs
		}{{top, lat}, {bottom, wire}} {
			if len(d.pts) == 0 {
				continue
			}
			l, sc, _ := plotter.NewLinePoints(d.pts) // finite points: cannot fail
			l.Color, l.Dashes, l.Width = col, dash, vg.Points(1.5)
			sc.Color, sc.Shape, sc.Radius = col, draw.CircleGlyph{}, vg.Points(2.5)
			d.p.Add(l, sc)
			if thumbs == nil {
				thumbs = []plot.Thumbnailer{l, sc}
			}
		}
		label := s.label
		if len(failed) > 0 {
			label += ", FAILED at " + strings.Join(failed, ", ")
		}
		f.legend = append(f.legend, legendItem{label, thumbs})
	}
	names := lossNames(g)
	for _, p := range f.panels {
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.25, float64(len(names))-0.75
	}
	top.X.Tick.Label.Color = color.Transparent // the bottom panel names the losses
	if hiLat > 0 && hiLat/loLat > LogSpan {
		top.Y.Scale = plot.LogScale{}
		top.Y.Min, top.Y.Max = niceFloor(loLat/1.2), niceCeil(hiLat*1.2)
		top.Y.Tick.Marker = plot.TickerFunc(logTicks)
		top.Y.Label.Text += ", log scale"
	} else {
		top.Y.Min, top.Y.Max = 0, max(hiLat*1.1, 1)
		top.Y.Tick.Marker = ticks(plain)
	}
	bottom.Y.Min, bottom.Y.Max = 0, max(hiBytes*1.1, 1)
	bottom.Y.Tick.Marker = ticks(plain)
	return f
}

// throughputChart draws a throughput profile's rows: MB/s for bulk,
// messages per second for the others (pps), one bar per series and
// link condition.
func throughputChart(g profile) figure {
	unit, format, value := "messages/s", siTick, func(r bench.Result) (float64, string) {
		return r.ThroughputMsgsPerS, si(r.ThroughputMsgsPerS)
	}
	if g.name == bench.ProfileBulk {
		unit, format, value = "MB/s", plain, func(r bench.Result) (float64, string) {
			return r.ThroughputMBPerS, strconv.FormatFloat(r.ThroughputMBPerS, 'f', 1, 64)
		}
	}
	p := newPlot(g.name+": throughput ("+unit+", higher is better)"+g.repsNote(true), "", unit, false)
	f := figure{panels: []*plot.Plot{p}, height: Height}
	names := make([]string, len(g.conds))
	for i, c := range g.conds {
		names[i] = "direct, " + linkText(c.link) // the throughput profiles bypass the relay
	}
	bars(&f, g, len(g.conds), format, func(s series, i int) (float64, string, bool) {
		r, ok := find(g.conds[i].rows, s)
		if !ok || r.NotSupported != "" {
			return 0, "", false
		}
		v, label := value(r)
		if r.Failed() {
			label = "FAILED"
		}
		return v, label, true
	}, func(s series, i int) (float64, float64, bool) {
		r, ok := find(g.conds[i].rows, s)
		if !ok {
			return 0, 0, false
		}
		return g.spread(r, func(x bench.Result) float64 { v, _ := value(x); return v })
	})
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	return f
}

// figure is one chart: its panels, stacked top to bottom on one x axis,
// and its legend, drawn below them (see drawFigure).
type figure struct {
	panels []*plot.Plot
	legend []legendItem
	height vg.Length
}

// legendItem is one legend entry.
type legendItem struct {
	text   string
	thumbs []plot.Thumbnailer
}

// Layout of a figure.
const (
	margin       = 10 // points around the figure: room for a label's overhang and a wider fallback font
	thumbWidth   = 20 // points
	legendGap    = 4  // points between a thumbnail and its text
	legendColGap = 16 // points between legend columns
	legendRowPad = 3  // points between legend rows
)

// legendStyle is the legend's text style.
func legendStyle() draw.TextStyle {
	return draw.TextStyle{Color: color.Black, Font: sans(9), XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
}

// drawFigure draws f on c: inside a margin, the panels above a legend
// strip, the strip holding the entries in as many columns as fit the
// width (filled top to bottom, then left to right), centred.
func drawFigure(c draw.Canvas, f figure) {
	c = draw.Crop(c, vg.Points(margin), -vg.Points(margin), vg.Points(margin), -vg.Points(margin))
	rects, strip := legendLayout(c.Rectangle, f.legend)
	area := draw.Crop(c, 0, 0, strip, 0)
	if len(f.panels) == 1 {
		f.panels[0].Draw(area)
	} else {
		col := make([][]*plot.Plot, len(f.panels))
		for i, p := range f.panels {
			col[i] = []*plot.Plot{p}
		}
		cs := plot.Align(col, draw.Tiles{Rows: len(f.panels), Cols: 1, PadY: vg.Points(8)}, area)
		for i, p := range f.panels {
			p.Draw(cs[i][0])
		}
	}
	sty := legendStyle()
	for i, it := range f.legend {
		r := rects[i]
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: r.Min.X, Y: r.Min.Y + 1}, Max: vg.Point{X: r.Min.X + vg.Points(thumbWidth), Y: r.Max.Y - 1}}}
		for _, t := range it.thumbs {
			t.Thumbnail(&icon)
		}
		c.FillText(sty, vg.Point{X: r.Min.X + vg.Points(thumbWidth+legendGap), Y: (r.Min.Y + r.Max.Y) / 2}, it.text)
	}
}

// legendLayout returns the rectangle of each legend entry (thumbnail and
// text) inside box, and the height of the strip at box's bottom that
// holds them (0 for none).
func legendLayout(box vg.Rectangle, items []legendItem) ([]vg.Rectangle, vg.Length) {
	if len(items) == 0 {
		return nil, 0
	}
	sty := legendStyle()
	var w, h vg.Length
	for _, it := range items {
		r := sty.Rectangle(it.text)
		w, h = max(w, r.Size().X), max(h, r.Size().Y)
	}
	w += vg.Points(thumbWidth + legendGap)
	h += vg.Points(legendRowPad)
	cols := max(1, min(len(items), int((box.Size().X+vg.Points(legendColGap))/(w+vg.Points(legendColGap)))))
	rows := (len(items) + cols - 1) / cols
	cols = (len(items) + rows - 1) / rows // as few columns as that many rows need
	total := vg.Length(cols)*w + vg.Length(cols-1)*vg.Points(legendColGap)
	x0 := box.Min.X + (box.Size().X-total)/2
	strip := vg.Length(rows)*h + vg.Points(6)
	out := make([]vg.Rectangle, len(items))
	for i := range items {
		col, row := i/rows, i%rows
		x := x0 + vg.Length(col)*(w+vg.Points(legendColGap))
		y := box.Min.Y + strip - vg.Length(row+1)*h
		out[i] = vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + w, Y: y + h - vg.Points(legendRowPad)}}
	}
	return out, strip
}

// render draws f as an SVG document whose font families have generic
// fallbacks.
func render(f figure) ([]byte, error) {
	c := vgsvg.New(Width, f.height)
	drawFigure(draw.New(c), f)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")), nil
}
