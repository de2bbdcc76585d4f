package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/bench"
)

// A short simulated bottleneck run (2 s capped, 1 s lifted), drawn: the
// chart is a well-formed SVG whose text stays inside it, with its legend,
// the 2-tick line, a send-rate line of one point per sample and the
// capacity line stopping at the lift; the same run draws the same bytes.
func TestWriteBottleneck(t *testing.T) {
	r, err := bench.RunBottleneck(bench.BottleneckConfig{Duration: 2 * time.Second, After: time.Second, Settle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, err := WriteBottleneck(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != BottleneckChartName {
		t.Fatalf("wrote %s", path)
	}
	svg := readSVG(t, path)
	wellFormed(t, BottleneckChartName, svg)
	textEdges(t, BottleneckChartName, svg)
	var texts []string
	for _, tx := range svgTexts(t, svg) {
		texts = append(texts, tx.text)
	}
	for _, s := range []string{"bottleneck capacity", "offered load", "budget: estimated rate", "sent on the wire",
		"bottleneck queue: max", "bottleneck queue: median", "budget: measured queuing", "2 ticks = 33.3 ms (goal)", "bottleneck lifts",
		"send rate (KB/s)", "queuing delay (ms)", "simulated time (s)"} {
		if !slices.Contains(texts, s) {
			t.Errorf("chart lacks the text %q", s)
		}
	}
	// The lines by colour and width: the wire rate (blue, 1.5) has a point
	// per sample; the capacity (red, 2.5) spans 0 to the lift, 40 samples
	// and its start.
	lines := map[string][]int{}
	re := regexp.MustCompile(`<path d="([^"]+)" style="fill:none;stroke:(#[0-9A-F]{6});stroke-width:([0-9.]+)`)
	for _, m := range re.FindAllStringSubmatch(strings.ReplaceAll(svg, "\n", " "), -1) {
		k := m[2] + "/" + m[3]
		lines[k] = append(lines[k], strings.Count(m[1], "L")+strings.Count(m[1], "M"))
	}
	if got := lines["#1F77B4/1.5"]; len(got) < 2 || !slices.Contains(got, len(r.Samples)) {
		t.Errorf("blue 1.5 pt lines of %v points, want one of %d (the wire rate) and the queue's", got, len(r.Samples))
	}
	if got := lines["#D62728/2.5"]; len(got) < 1 || got[0] != 41 {
		t.Errorf("capacity lines of %v points, want 41", got)
	}
	if !strings.Contains(svg, "stroke:#D62728;stroke-dasharray:6,2,2,2") {
		t.Error("no 2-tick line")
	}
	again := t.TempDir()
	p2, _ := WriteBottleneck(again, r)
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(p2)
	if !bytes.Equal(a, b) {
		t.Error("two writes of one run differ")
	}
	if _, err := WriteBottleneck(filepath.Join(dir, "missing"), r); err == nil {
		t.Error("no error for a missing directory")
	}
}
