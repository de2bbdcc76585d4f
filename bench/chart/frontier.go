package chart

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tickwire/tickwire/bench"
)

// FrontierChartName is the file name of the frontier chart at loss
// (percent): "frontier-loss-10.svg".
func FrontierChartName(loss float64) string {
	return "frontier-loss-" + num(loss) + ".svg"
}

// WriteFrontier draws f into one SVG file per loss rate in dir, which must
// exist (FrontierChartName), and returns their paths in the order of f's
// points. Each chart puts every point that ran at (wire bytes per message,
// p99 round trip), its median over the reps with whiskers over the
// min–max, labelled with its setting; horizontal reference lines mark
// base RTT + 1 tick (the goal) and + 2 ticks (bench.Frontier.Refs). Both axes are linear unless their
// values span more than LogSpan. The output is a pure function of f.
func WriteFrontier(dir string, f bench.Frontier) ([]string, error) {
	var out []string
	for _, loss := range frontierLosses(f) {
		name := FrontierChartName(loss)
		b, err := render(frontierChart(f, loss))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			return out, fmt.Errorf("chart: %s: %w", name, err)
		}
		out = append(out, filepath.Join(dir, name))
	}
	return out, nil
}

// frontierLosses returns f's loss rates in order of first appearance.
func frontierLosses(f bench.Frontier) []float64 {
	var ls []float64
	for _, p := range f.Points {
		if !slices.Contains(ls, p.Loss) {
			ls = append(ls, p.Loss)
		}
	}
	return ls
}

// frontierChart draws f's points at loss.
func frontierChart(f bench.Frontier, loss float64) figure {
	reps := ""
	if f.Reps > 1 {
		reps = fmt.Sprintf("\nmedian of %d reps, whiskers min–max", f.Reps)
	}
	p := newPlot(
		fmt.Sprintf("echo at %s %% loss, %s ms ± %s ms one way: p99 vs wire bytes%s", num(loss), num(f.DelayMS), num(f.JitterMS), reps),
		"wire bytes per message (both ends, UDP payload)", "p99 round-trip latency (ms)", true)
	fig := figure{panels: []*plot.Plot{p}, height: Height * 5 / 4}

	var ts []string // the transports, for their styles
	for _, pt := range f.Points {
		if !slices.Contains(ts, pt.Transport) {
			ts = append(ts, pt.Transport)
		}
	}
	lp := &labelledPoints{}
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	legendDone := map[string]bool{}
	for _, pt := range f.Points {
		if pt.Loss != loss || pt.NotSupported != "" || pt.P99MS.Median <= 0 {
			continue
		}
		col, _ := style(pt.Transport, ts)
		var glyph draw.GlyphDrawer = draw.CircleGlyph{}
		if pt.Delivery == bench.Unreliable {
			glyph = draw.BoxGlyph{}
		}
		label := pt.Label
		if pt.Failed > 0 {
			label += fmt.Sprintf(" (FAILED %d/%d)", pt.Failed, pt.Reps)
		}
		lp.pts = append(lp.pts, labelledPoint{
			x: pt.BytesPerMsg.Median, y: pt.P99MS.Median,
			xlo: pt.BytesPerMsg.Min, xhi: pt.BytesPerMsg.Max, ylo: pt.P99MS.Min, yhi: pt.P99MS.Max,
			label: label, color: col, glyph: glyph,
		})
		xlo, xhi = min(xlo, pt.BytesPerMsg.Min), max(xhi, pt.BytesPerMsg.Max)
		ylo, yhi = min(ylo, pt.P99MS.Min), max(yhi, pt.P99MS.Max)
		key := pt.Transport + "/" + pt.Delivery
		if !legendDone[key] {
			legendDone[key] = true
			text := pt.Transport
			switch {
			case pt.Transport == bench.Tickwire:
				text = "tickwire (labels: redundancy setting)"
			case pt.Delivery == bench.Unreliable:
				text += " (unreliable: lost echoes not counted)"
			}
			sc := &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: col, Shape: glyph, Radius: vg.Points(3)}}
			fig.legend = append(fig.legend, legendItem{text, []plot.Thumbnailer{sc}})
		}
	}
	if goal, two, ok := f.Refs(loss); ok && len(lp.pts) > 0 {
		for _, ref := range []struct {
			v    float64
			text string
			dash []vg.Length
		}{
			{goal, "base RTT + 1 tick = " + ms(goal) + " ms (goal)", []vg.Length{vg.Points(5), vg.Points(3)}},
			{two, "base RTT + 2 ticks = " + ms(two) + " ms", []vg.Length{vg.Points(1.5), vg.Points(2.5)}},
		} {
			l := hline(ref.v, color.Gray{Y: 0x55}, ref.dash)
			p.Add(l)
			lp.hlines = append(lp.hlines, ref.v)
			ylo, yhi = min(ylo, ref.v), max(yhi, ref.v)
			fig.legend = append(fig.legend, legendItem{ref.text, []plot.Thumbnailer{l}})
		}
	}
	p.Add(lp)
	if len(lp.pts) == 0 {
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		return fig
	}
	axis(&p.X, xlo, xhi, 0.12)
	axis(&p.Y, ylo, yhi, 0.1)
	return fig
}

// axis sets a's range to [lo, hi] padded by pad of the span on each
// side (a log scale, padded by a factor, when hi/lo > LogSpan), with plain
// tick labels.
func axis(a *plot.Axis, lo, hi, pad float64) {
	if lo > 0 && hi/lo > LogSpan {
		a.Scale = plot.LogScale{}
		a.Min, a.Max = niceFloor(lo/1.3), niceCeil(hi*1.3)
		a.Tick.Marker = plot.TickerFunc(logTicks)
		a.Label.Text += " (log scale)"
		return
	}
	span := hi - lo
	if span <= 0 {
		span = math.Max(math.Abs(hi), 1)
	}
	a.Min, a.Max = math.Max(0, lo-pad*span), hi+pad*span
	a.Tick.Marker = ticks(plain)
}

// refLine is a horizontal line at y across the plot, with a legend
// thumbnail.
type refLine struct {
	y     float64
	style draw.LineStyle
}

// hline returns a reference line at y.
func hline(y float64, c color.Color, dash []vg.Length) *refLine {
	return &refLine{y: y, style: draw.LineStyle{Color: c, Width: vg.Points(1), Dashes: dash}}
}

// Plot implements plot.Plotter.
func (l *refLine) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(l.y)
	c.StrokeLines(l.style, c.ClipLinesY([]vg.Point{{X: c.Min.X, Y: y}, {X: c.Max.X, Y: y}})...)
}

// Thumbnail implements plot.Thumbnailer.
func (l *refLine) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

// labelledPoint is one point of a labelledPoints.
type labelledPoint struct {
	x, y, xlo, xhi, ylo, yhi float64
	label                    string
	color                    color.Color
	glyph                    draw.GlyphDrawer
}

// labelledPoints draws points with min–max whiskers and a text label
// each, placing every label where it fits: inside the plot area, clear of
// every point, every other label and the horizontal lines at hlines (see
// placeLabels).
type labelledPoints struct {
	pts    []labelledPoint
	hlines []float64
}

// Label layout.
const (
	pointRadius = 3   // points
	labelSize   = 8   // points
	labelGap    = 3.5 // points between a point's glyph and its label
)

// Plot implements plot.Plotter.
func (lp *labelledPoints) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	at := make([]vg.Point, len(lp.pts))
	whisker := draw.LineStyle{Width: vg.Points(0.75)}
	for i, pt := range lp.pts {
		at[i] = vg.Point{X: trX(pt.x), Y: trY(pt.y)}
		whisker.Color = pt.color
		if pt.xhi > pt.xlo {
			c.StrokeLines(whisker, c.ClipLinesXY([]vg.Point{{X: trX(pt.xlo), Y: at[i].Y}, {X: trX(pt.xhi), Y: at[i].Y}})...)
		}
		if pt.yhi > pt.ylo {
			c.StrokeLines(whisker, c.ClipLinesXY([]vg.Point{{X: at[i].X, Y: trY(pt.ylo)}, {X: at[i].X, Y: trY(pt.yhi)}})...)
		}
	}
	for i, pt := range lp.pts {
		c.DrawGlyph(draw.GlyphStyle{Color: pt.color, Shape: pt.glyph, Radius: vg.Points(pointRadius)}, at[i])
	}
	var lines []vg.Length
	for _, y := range lp.hlines {
		lines = append(lines, trY(y))
	}
	sty := labelStyle()
	for i, r := range placeLabels(c.Rectangle, at, lp.labels(), lines) {
		s := sty
		s.Color = darken(lp.pts[i].color)
		if end := nearest(r, at[i]); dist(at[i], end) > vg.Points(labelGap+pointRadius+2) {
			// Moved out from its point: a leader line to it.
			c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 0x99}, Width: vg.Points(0.5)}, at[i].X, at[i].Y, end.X, end.Y)
		}
		c.FillText(s, vg.Point{X: r.Min.X, Y: r.Min.Y + labelDescent()}, lp.pts[i].label)
	}
}

func (lp *labelledPoints) labels() []string {
	out := make([]string, len(lp.pts))
	for i, p := range lp.pts {
		out[i] = p.label
	}
	return out
}

// labelStyle is a point label's text style, drawn from its baseline.
func labelStyle() draw.TextStyle {
	return draw.TextStyle{Color: color.Black, Font: sans(labelSize), XAlign: draw.XLeft, YAlign: draw.YBottom, Handler: plot.DefaultTextHandler}
}

// labelDescent is how far below the baseline a label's box reaches.
func labelDescent() vg.Length { return vg.Points(labelSize) * 0.25 }

// labelBox is the size of label's box: its width, and its height from
// descent to cap.
func labelBox(label string) vg.Point {
	w := labelStyle().Rectangle(label).Size().X
	return vg.Point{X: w, Y: vg.Points(labelSize) * 1.05}
}

// placeLabels returns a box for each label, near its point at[i]: the first
// of the candidate spots, ring by ring outward (right, left, above, below,
// the diagonals), that lies inside area and overlaps neither a point's
// glyph, an earlier label, nor a line at one of the heights ys; failing
// that, the candidate with the least overlap.
func placeLabels(area vg.Rectangle, at []vg.Point, labels []string, ys []vg.Length) []vg.Rectangle {
	rad := vg.Points(pointRadius + 1)
	var obstacles []vg.Rectangle
	for _, p := range at {
		obstacles = append(obstacles, vg.Rectangle{Min: vg.Point{X: p.X - rad, Y: p.Y - rad}, Max: vg.Point{X: p.X + rad, Y: p.Y + rad}})
	}
	for _, y := range ys {
		obstacles = append(obstacles, vg.Rectangle{Min: vg.Point{X: area.Min.X, Y: y - 0.5}, Max: vg.Point{X: area.Max.X, Y: y + 0.5}})
	}
	// Place the most crowded points first: they have the fewest spots.
	order := make([]int, len(at))
	for i := range order {
		order[i] = i
	}
	crowd := func(i int) int {
		var n int
		for j := range at {
			if j != i && dist(at[i], at[j]) < vg.Points(60) {
				n++
			}
		}
		return n
	}
	slices.SortStableFunc(order, func(a, b int) int { return crowd(b) - crowd(a) })
	out := make([]vg.Rectangle, len(at))
	var placed []vg.Rectangle
	for _, i := range order {
		sz := labelBox(labels[i])
		best, bestCost := vg.Rectangle{}, math.Inf(1)
		for ring := range 6 {
			d := vg.Points(pointRadius+labelGap) + vg.Points(float64(ring)*7)
			for _, r := range candidates(at[i], sz, d) {
				cost := 0.0
				if !contains(area, r) {
					cost += 1e6
				}
				for _, o := range obstacles {
					cost += float64(overlap(r, o))
				}
				for _, o := range placed {
					cost += 10 * float64(overlap(r, o))
				}
				cost += float64(ring) * 0.01 // nearer is better among clear spots
				if cost < bestCost {
					best, bestCost = r, cost
				}
			}
			if bestCost < 1 {
				break
			}
		}
		out[i] = best
		placed = append(placed, best)
	}
	return out
}

// candidates returns the boxes of size sz at distance d from p: right,
// left, above, below, then the four diagonals.
func candidates(p, sz vg.Point, d vg.Length) []vg.Rectangle {
	box := func(x, y vg.Length) vg.Rectangle { // lower-left corner
		return vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + sz.X, Y: y + sz.Y}}
	}
	mid := p.Y - sz.Y/2
	return []vg.Rectangle{
		box(p.X+d, mid),
		box(p.X-d-sz.X, mid),
		box(p.X-sz.X/2, p.Y+d),
		box(p.X-sz.X/2, p.Y-d-sz.Y),
		box(p.X+d*0.7, p.Y+d*0.7),
		box(p.X-d*0.7-sz.X, p.Y+d*0.7),
		box(p.X+d*0.7, p.Y-d*0.7-sz.Y),
		box(p.X-d*0.7-sz.X, p.Y-d*0.7-sz.Y),
	}
}

// overlap returns the area two rectangles share.
func overlap(a, b vg.Rectangle) vg.Length {
	w := min(a.Max.X, b.Max.X) - max(a.Min.X, b.Min.X)
	h := min(a.Max.Y, b.Max.Y) - max(a.Min.Y, b.Min.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// contains reports whether r lies inside area.
func contains(area, r vg.Rectangle) bool {
	return r.Min.X >= area.Min.X && r.Max.X <= area.Max.X && r.Min.Y >= area.Min.Y && r.Max.Y <= area.Max.Y
}

func dist(a, b vg.Point) vg.Length {
	return vg.Length(math.Hypot(float64(a.X-b.X), float64(a.Y-b.Y)))
}

// nearest returns the point of r nearest p.
func nearest(r vg.Rectangle, p vg.Point) vg.Point {
	return vg.Point{X: min(max(p.X, r.Min.X), r.Max.X), Y: min(max(p.Y, r.Min.Y), r.Max.Y)}
}

// darken returns c at 70 % brightness: label text in its point's hue,
// readable on white.
func darken(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	f := func(v uint32) uint8 { return uint8((v >> 8) * 7 / 10) }
	return color.RGBA{R: f(r), G: f(g), B: f(b), A: 0xff}
}
