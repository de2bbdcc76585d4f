package chart

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tickwire/tickwire/bench"
)

// BottleneckChartName is the bottleneck chart's file name.
const BottleneckChartName = "bottleneck.svg"

// WriteBottleneck draws r into dir/BottleneckChartName (dir must exist)
// and returns its path: send rate over time (top: the sender's wire rate,
// its budget's estimated rate, the offered load and the bottleneck's
// capacity, in KB/s) and queuing delay over time (bottom: the largest and
// the median one-way queuing delay at the bottleneck of each interval's
// datagrams, the budget's own estimate, and the 2-tick line), a vertical
// line where the bottleneck lifts. The output is a pure function of r.
func WriteBottleneck(dir string, r bench.BottleneckResult) (string, error) {
	path := filepath.Join(dir, BottleneckChartName)
	b, err := render(bottleneckChart(r))
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		return "", fmt.Errorf("chart: %s: %w", BottleneckChartName, err)
	}
	return path, nil
}

// Bottleneck chart colours.
var (
	sendColor    = rgb(0x1f77b4) // wire rate, queue max: tickwire blue
	budgetColor  = rgb(0x2ca02c) // the budget's estimates: green
	offerColor   = rgb(0x7f7f7f) // offered: grey
	capColor     = rgb(0xd62728) // capacity, 2-tick line: red
	medianColor  = rgb(0x9ecae1) // queue median: light blue
	liftColor    = color.Gray{Y: 0x44}
	dashLong     = []vg.Length{vg.Points(6), vg.Points(3)}
	dashDot      = []vg.Length{vg.Points(2), vg.Points(2)}
	dashLongDot  = []vg.Length{vg.Points(6), vg.Points(2), vg.Points(2), vg.Points(2)}
	bottleneckKB = 1000.0
)

// bottleneckChart draws r.
func bottleneckChart(r bench.BottleneckResult) figure {
	c := r.Config
	top := newPlot(
		fmt.Sprintf("bottleneck: %s KB/s, %s KB queue, %s ms one way; %s KB/s offered, lifted at %s s",
			num(float64(c.BandwidthBps)/bottleneckKB), num(float64(c.QueueLimit)/1024), num(c.DelayMS),
			num(math.Round(float64(c.OfferedBps)/bottleneckKB)), num(c.DurationS)),
		"", "send rate (KB/s)", true)
	cut := "" // the queue panel's cut, set below
	bottom := newPlot("", "simulated time (s)", "queuing delay (ms)", true)
	f := figure{panels: []*plot.Plot{top, bottom}, height: Height * 7 / 4}

	n := len(r.Samples)
	send, budget, offered := make(plotter.XYs, n), make(plotter.XYs, n), make(plotter.XYs, n)
	var capXY, qmax, qmed, qest plotter.XYs
	var hiRate, hiQ float64
	for i, s := range r.Samples {
		t := s.AtMS / 1000
		send[i] = plotter.XY{X: t, Y: s.SendBps / bottleneckKB}
		offered[i] = plotter.XY{X: t, Y: s.OfferedBps / bottleneckKB}
		budget[i] = plotter.XY{X: t, Y: float64(s.BudgetBps) / bottleneckKB}
		hiRate = max(hiRate, s.SendBps, s.OfferedBps)
		if s.CapacityBps > 0 {
			capXY = append(capXY, plotter.XY{X: t, Y: float64(s.CapacityBps) / bottleneckKB})
		}
		if s.Datagrams > 0 {
			qmax = append(qmax, plotter.XY{X: t, Y: s.QueueMaxMS})
			qmed = append(qmed, plotter.XY{X: t, Y: s.QueueP50MS})
			hiQ = max(hiQ, s.QueueMaxMS)
		}
		qest = append(qest, plotter.XY{X: t, Y: s.BudgetQueueMS})
		hiQ = max(hiQ, s.BudgetQueueMS)
	}
	if len(capXY) > 0 {
		capXY = append(plotter.XYs{{X: 0, Y: capXY[0].Y}}, capXY...)
	}
	goal := float64(bench.BottleneckQueueGoal) / 1e6
	add := func(p *plot.Plot, pts plotter.XYs, col color.Color, dash []vg.Length, width float64, text string) {
		if len(pts) == 0 {
			return
		}
		l, _ := plotter.NewLine(pts) // finite points: cannot fail
		l.Color, l.Dashes, l.Width = col, dash, vg.Points(width)
		p.Add(l)
		f.legend = append(f.legend, legendItem{text, []plot.Thumbnailer{l}})
	}
	add(top, capXY, capColor, nil, 2.5, "bottleneck capacity")
	add(top, offered, offerColor, dashDot, 1.25, "offered load")
	add(top, budget, budgetColor, dashLong, 1.25, "budget: estimated rate")
	add(top, send, sendColor, nil, 1.5, "sent on the wire")
	add(bottom, qmed, medianColor, nil, 1.25, "bottleneck queue: median")
	add(bottom, qmax, sendColor, nil, 1.5, "bottleneck queue: max")
	add(bottom, qest, budgetColor, dashLong, 1.25, "budget: measured queuing")
	gl := hline(goal, capColor, dashLongDot)
	bottom.Add(gl)
	f.legend = append(f.legend, legendItem{"2 ticks = " + ms(goal) + " ms (goal)", []plot.Thumbnailer{gl}})
	lift := c.DurationS
	vl := &vline{x: lift, style: draw.LineStyle{Color: liftColor, Width: vg.Points(0.75), Dashes: dashLong}}
	for _, p := range f.panels {
		p.Add(vl)
	}
	f.legend = append(f.legend, legendItem{"bottleneck lifts", []plot.Thumbnailer{vl}})
	end := lift + c.AfterS
	if n > 0 {
		end = max(end, r.Samples[n-1].AtMS/1000)
	}
	for _, p := range f.panels {
		p.X.Min, p.X.Max = 0, end
		p.X.Tick.Marker = ticks(plain)
	}
	top.X.Tick.Label.Color = color.Transparent // the bottom panel names the times
	top.Y.Min, top.Y.Max = 0, max(hiRate*1.15, 1)/bottleneckKB
	top.Y.Tick.Marker = ticks(plain)
	// The queue panel is cut at 4 ticks' worth or the largest delay,
	// whichever is less, but never below the goal: the start, before the
	// estimator finds the bottleneck, may queue far longer and would
	// flatten the rest.
	bottom.Y.Min, bottom.Y.Max = 0, max(goal*1.5, min(hiQ*1.1, goal*4))
	if hiQ > bottom.Y.Max {
		cut = fmt.Sprintf("; delay axis cut at %s ms (peak %s ms, settling)", ms(bottom.Y.Max), ms(hiQ))
	}
	top.Title.Text += "\neach point 50 ms of simulated time" + cut
	bottom.Y.Tick.Marker = ticks(plain)
	return f
}

// vline is a vertical line at x across the plot.
type vline struct {
	x     float64
	style draw.LineStyle
}

// Plot implements plot.Plotter.
func (l *vline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(l.x)
	c.StrokeLines(l.style, c.ClipLinesX([]vg.Point{{X: x, Y: c.Min.Y}, {X: x, Y: c.Max.Y}})...)
}

// Thumbnail implements plot.Thumbnailer: a vertical line.
func (l *vline) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(l.style, x, c.Min.Y, x, c.Max.Y)
}
