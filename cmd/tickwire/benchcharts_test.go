package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickwire/tickwire/bench"
)

// --profile bottleneck --quick prints its figures and writes its four
// files; the flags that do not apply are refused.
func TestBenchBottleneckProfile(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"bench", "--profile", "bottleneck", "--quick", "--out", dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "| p99 one-way queuing delay at the bottleneck") {
		t.Errorf("stdout: %s", out.String())
	}
	for _, f := range []string{outBottleneckJSON, outBottleneckCSV, outBottleneckMD, "bottleneck.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	var r bench.BottleneckResult
	b, _ := os.ReadFile(filepath.Join(dir, outBottleneckJSON))
	if err := json.Unmarshal(b, &r); err != nil || r.Config.DurationS != 2 || len(r.Samples) != 100 {
		t.Errorf("JSON: %v, %g s capped, %d samples (want 2 s, 100)", err, r.Config.DurationS, len(r.Samples))
	}
	for _, args := range [][]string{
		{"--profile", "bottleneck", "--loss", "10"},
		{"--profile", "bottleneck", "--reps", "3"},
		{"--profile", "bottleneck", "--delay", "0s"},
		{"--profile", "frontier", "--redundancy", "eager"},
		{"--profile", "frontier", "--transport", "raw"},
		{"--profile", "frontier,echo"},
	} {
		errb.Reset()
		if code := run(context.Background(), append([]string{"bench"}, args...), &out, &errb); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errb.String())
		}
	}
}

// --profile frontier with one transport and a few messages: one point at
// the frontier's 10 % loss, its table, JSON and chart.
func TestBenchFrontierProfile(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"bench", "--profile", "frontier", "--quick", "--transport", "kcp-fast", "--count", "20", "--out", dir}
	if code := run(context.Background(), args, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "## 10 % loss") || !strings.Contains(out.String(), "| kcp-fast | kcp-fast |") {
		t.Errorf("stdout: %s", out.String())
	}
	var f bench.Frontier
	b, _ := os.ReadFile(filepath.Join(dir, outFrontierJSON))
	if err := json.Unmarshal(b, &f); err != nil || len(f.Points) != 1 || f.Points[0].Loss != 10 || f.Points[0].Reps != 1 {
		t.Fatalf("JSON: %v, %+v", err, f.Points)
	}
	md, _ := os.ReadFile(filepath.Join(dir, outFrontierMD))
	if !strings.Contains(string(md), "](frontier-loss-10.svg)") {
		t.Errorf("frontier.md does not link its chart:\n%s", md)
	}
	if st, err := os.Stat(filepath.Join(dir, "frontier-loss-10.svg")); err != nil || st.Size() == 0 {
		t.Errorf("chart: %v", err)
	}
}
