package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/tickwire/tickwire/bench"
)

// frontierPoint is a point at loss with p99 and bytes spread ±spread %
// over three reps.
func frontierPoint(label, transport string, loss, p99, bytes, spread float64) bench.FrontierPoint {
	s := func(v float64) bench.Spread {
		return bench.Spread{Median: v, Min: v * (1 - spread/100), Max: v * (1 + spread/100)}
	}
	return bench.FrontierPoint{
		Label: label, Transport: transport, Delivery: bench.DeliveryOf(transport, bench.ProfileEcho), Loss: loss, Reps: 3,
		P99MS: s(p99), P50MS: bench.Spread{Median: 52, Min: 52, Max: 52}, BytesPerMsg: s(bytes),
	}
}

// frontier is a run at 10 % and 20 % loss: tickwire's settings crowded
// where adaptive and eager sit almost on one spot, one failed, one row
// that could not run, and the other peers.
func frontier() bench.Frontier {
	f := bench.Frontier{DelayMS: 25, JitterMS: 2, Count: 300, Rate: 60, Size: 64, Reps: 3, TickMS: 1000.0 / 60}
	for _, loss := range []float64{10, 20} {
		k := loss / 10
		failed := frontierPoint("always", bench.Tickwire, loss, 71*k, 600, 1)
		failed.Failed = 1
		na := frontierPoint("quic", bench.QUIC, loss, 0, 0, 0)
		if loss == 20 {
			na.NotSupported = "quic: MTU below 1200"
		} else {
			na = frontierPoint("quic", bench.QUIC, loss, 126, 461, 0)
		}
		f.Points = append(f.Points,
			frontierPoint("adaptive (default)", bench.Tickwire, loss, 97*k, 373, 20),
			frontierPoint("eager", bench.Tickwire, loss, 94*k, 377, 20),
			failed,
			frontierPoint("off", bench.Tickwire, loss, 149*k, 235, 15),
			frontierPoint("eager, 5 ms copies", bench.Tickwire, loss, 59*k, 437, 1),
			frontierPoint(bench.KCPFast, bench.KCPFast, loss, 144*k, 240, 20),
			na,
			frontierPoint(bench.QUICDatagram, bench.QUICDatagram, loss, 55*k, 451, 2),
		)
	}
	return f
}

// wellFormed checks that svg parses as XML to its end.
func wellFormed(t *testing.T, name, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
	}
}

var svgCircleRE = regexp.MustCompile(`<path d="M([-0-9.e]+),([-0-9.e]+)A([0-9.]+),`)

// svgGlyphs returns the centres of svg's circle glyphs.
func svgGlyphs(svg string) []vg.Point {
	var out []vg.Point
	for _, m := range svgCircleRE.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		r, _ := strconv.ParseFloat(m[3], 64)
		out = append(out, vg.Point{X: vg.Length(x - r), Y: vg.Length(y)})
	}
	return out
}

// textEdges reports every text of svg that comes within 2 points of the
// document's edge.
func textEdges(t *testing.T, name, svg string) {
	t.Helper()
	size := svgSizeRE.FindStringSubmatch(svg)
	w, _ := strconv.ParseFloat(size[1], 64)
	h, _ := strconv.ParseFloat(size[2], 64)
	for _, tx := range svgTexts(t, svg) {
		if tx.box.Min.X < 2 || tx.box.Max.X > vg.Length(w-2) || tx.box.Min.Y < 2 || tx.box.Max.Y > vg.Length(h-2) {
			t.Errorf("%s: text %q at %v reaches the edge of %v × %v", name, tx.text, tx.box, w, h)
		}
	}
}

func TestWriteFrontier(t *testing.T) {
	dir := t.TempDir()
	f := frontier()
	files, err := WriteFrontier(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || filepath.Base(files[0]) != "frontier-loss-10.svg" || filepath.Base(files[1]) != "frontier-loss-20.svg" {
		t.Fatalf("files %v", files)
	}
	for i, file := range files {
		name := filepath.Base(file)
		svg := readSVG(t, file)
		wellFormed(t, name, svg)
		textEdges(t, name, svg)
		texts := svgTexts(t, svg)
		has := func(s string) bool {
			for _, tx := range texts {
				if tx.text == s {
					return true
				}
			}
			return false
		}
		goal, two, ok := f.Refs([]float64{10, 20}[i])
		if !ok || math.Abs(goal-(52+1000.0/60)) > 1e-9 || math.Abs(two-(52+2000.0/60)) > 1e-9 {
			t.Errorf("%s: refs %v, %v, %v", name, goal, two, ok)
		}
		want := []string{"adaptive (default)", "eager", "always (FAILED 1/3)", "off", "eager, 5 ms copies", "kcp-fast", "quic-dgram",
			"tickwire (labels: redundancy setting)", "quic-dgram (unreliable: lost echoes not counted)",
			"base RTT + 1 tick = 68.7 ms (goal)", "base RTT + 2 ticks = 85.3 ms",
			"wire bytes per message (both ends, UDP payload)", "p99 round-trip latency (ms)"}
		if i == 0 {
			want = append(want, "quic")
		} else if has("quic") {
			t.Errorf("%s: a point for quic, which could not run", name)
		}
		for _, s := range want {
			if !has(s) {
				t.Errorf("%s lacks the text %q", name, s)
			}
		}
		// Circles: the reliable points (7 at 10 %, quic not at 20 %) and
		// the legend's tickwire, kcp-fast and quic thumbnails.
		if n, want := len(svgGlyphs(svg)), []int{7 + 3, 6 + 2}[i]; n != want {
			t.Errorf("%s: %d circle glyphs, want %d", name, n, want)
		}

		// No point label overlaps another or a point; the legend, the
		// texts below the x axis' label, covers no point.
		var axisLabel vg.Rectangle
		for _, tx := range texts {
			if tx.text == "wire bytes per message (both ends, UDP payload)" {
				axisLabel = tx.box
			}
		}
		var labels, legend []svgText
		for _, tx := range texts {
			switch {
			case tx.box.Max.Y <= axisLabel.Min.Y:
				legend = append(legend, tx)
			case slices.Contains(want[:7], tx.text) || tx.text == "quic":
				labels = append(labels, tx)
			}
		}
		if len(legend) != []int{6, 5}[i] {
			t.Errorf("%s: %d legend entries: %v", name, len(legend), legend)
		}
		if len(labels) != []int{8, 7}[i] {
			t.Errorf("%s: %d point labels found: %v", name, len(labels), labels)
		}
		pts := svgGlyphs(svg)
		for j, a := range labels {
			for _, b := range labels[j+1:] {
				if overlap(a.box, b.box) > 0 {
					t.Errorf("%s: labels %q %v and %q %v overlap", name, a.text, a.box, b.text, b.box)
				}
			}
			for _, p := range pts {
				if inside(p, a.box) {
					t.Errorf("%s: label %q %v covers the point at %v", name, a.text, a.box, p)
				}
			}
		}
		for _, l := range legend {
			for _, p := range pts {
				if inside(p, l.box) {
					t.Errorf("%s: legend %q covers the point at %v", name, l.text, p)
				}
			}
		}
	}

	// The same frontier, the same bytes.
	again, err := WriteFrontier(t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		a, _ := os.ReadFile(files[i])
		b, _ := os.ReadFile(again[i])
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes", filepath.Base(files[i]))
		}
	}
	if _, err := WriteFrontier(filepath.Join(dir, "missing"), f); err == nil || !strings.Contains(err.Error(), "frontier-loss-10.svg") {
		t.Errorf("missing directory: %v", err)
	}
}

// Labels of points on one spot all find a place inside the area, clear
// of each other and of every point.
func TestPlaceLabels(t *testing.T) {
	area := vg.Rectangle{Max: vg.Point{X: 300, Y: 200}}
	at := []vg.Point{{X: 150, Y: 100}, {X: 152, Y: 101}, {X: 149, Y: 98}, {X: 295, Y: 195}, {X: 5, Y: 5}}
	labels := []string{"adaptive (default)", "eager", "eager, 5 ms copies", "corner", "origin"}
	rs := placeLabels(area, at, labels, []vg.Length{110})
	for i, r := range rs {
		if !contains(area, r) {
			t.Errorf("label %q at %v outside %v", labels[i], r, area)
		}
		for j := i + 1; j < len(rs); j++ {
			if overlap(r, rs[j]) > 0 {
				t.Errorf("labels %q %v and %q %v overlap", labels[i], r, labels[j], rs[j])
			}
		}
		for _, p := range at {
			if inside(p, r) {
				t.Errorf("label %q at %v covers the point %v", labels[i], r, p)
			}
		}
		if r.Min.Y < 110 && r.Max.Y > 110 {
			t.Errorf("label %q at %v crosses the line at 110", labels[i], r)
		}
	}
}
