package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Interleave repeats each block of one profile and link whole: A B C A B
// C at one loss, then the next loss's block, then the pps block.
func TestInterleave(t *testing.T) {
	s := DefaultSuite()
	s.Losses = []float64{0, 0.10}
	s.Profiles = []string{ProfileEcho, ProfilePPS}
	var got []string
	for _, p := range Interleave(s.Scenarios(), 2) {
		got = append(got, fmt.Sprintf("%s/%s/%s/%d", p.Scenario.Profile, num(p.Scenario.Link.Loss*100), p.Scenario.Transport, p.Rep))
	}
	want := []string{
		"echo/0/tickwire/0", "echo/0/kcp-fast/0", "echo/0/quic/0", "echo/0/tickwire/1", "echo/0/kcp-fast/1", "echo/0/quic/1",
		"echo/10/tickwire/0", "echo/10/kcp-fast/0", "echo/10/quic/0", "echo/10/tickwire/1", "echo/10/kcp-fast/1", "echo/10/quic/1",
		"pps/0/tickwire/0", "pps/0/tickwire/0", "pps/0/kcp-bulk/0", "pps/0/raw/0",
		"pps/0/tickwire/1", "pps/0/tickwire/1", "pps/0/kcp-bulk/1", "pps/0/raw/1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Interleave:\n got %v\nwant %v", got, want)
	}
	if n := len(Interleave(s.Scenarios(), 0)); n != len(s.Scenarios()) {
		t.Errorf("reps 0: %d rows, want %d", n, len(s.Scenarios()))
	}
}

// RunReps sets each result's rep, and tells progress every row with a
// falling ETA; Rows gathers the reps of one scenario.
func TestRunReps(t *testing.T) {
	sc := []Scenario{{Profile: ProfileEcho, Transport: Tickwire, Count: 5, Rate: 200, Link: Link{Seed: 1}}}
	var seen []Progress
	rs, err := RunReps(context.Background(), sc, 3, func(p Progress) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Rep != 0 || rs[1].Rep != 1 || rs[2].Rep != 2 || RepCount(rs) != 3 {
		t.Fatalf("results %+v", rs)
	}
	if len(seen) != 3 || seen[2].Index != 2 || seen[2].Total != 3 || seen[2].Rep != 2 || seen[2].Reps != 3 || seen[2].Elapsed <= 0 {
		t.Errorf("progress %+v", seen)
	}
	if !(seen[2].ETA < seen[0].ETA) {
		t.Errorf("ETA %v then %v", seen[0].ETA, seen[2].ETA)
	}
	rows := Rows(rs)
	if len(rows) != 1 || len(rows[0].Reps) != 3 || rows[0].Failed() != 0 {
		t.Errorf("rows %+v", rows)
	}
}

func TestETA(t *testing.T) {
	for _, c := range []struct{ elapsed, done, left, want time.Duration }{
		{0, 0, 80 * time.Second, 80 * time.Second},                              // nothing run: the estimate
		{10 * time.Second, 5 * time.Second, 20 * time.Second, 40 * time.Second}, // running at half speed
		{5 * time.Second, 10 * time.Second, 20 * time.Second, 10 * time.Second},
	} {
		if got := eta(c.elapsed, c.done, c.left); got != c.want {
			t.Errorf("eta(%v, %v, %v) = %v, want %v", c.elapsed, c.done, c.left, got, c.want)
		}
	}
}

func TestStatOf(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{}},
		{[]float64{3}, Stat{3, 3, 3, 1}},
		{[]float64{5, 1, 3}, Stat{3, 1, 5, 3}},
		{[]float64{4, 1, 2, 8}, Stat{3, 1, 8, 4}},
	} {
		if got := StatOf(c.in); got != c.want {
			t.Errorf("StatOf(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
	r := Row{Reps: []Result{sample(Tickwire, 0, 30, 1, 1), sample(Tickwire, 0, 10, 1, 1), sample(Tickwire, 0, 20, 1, 1)}}
	if m := r.Median(); m.LatencyMS.P99 != 20 {
		t.Errorf("median rep p99 %v, want 20", m.LatencyMS.P99)
	}
}

func TestParseLoadAvg(t *testing.T) {
	if got := parseLoadAvg("1.20 0.85 0.50 2/345 6789\n"); !slices.Equal(got, []float64{1.2, 0.85, 0.5}) {
		t.Errorf("parseLoadAvg = %v", got)
	}
	if got := parseLoadAvg("x y"); got != nil {
		t.Errorf("garbage: %v", got)
	}
	if !strings.Contains(machineLine(Machine{GOOS: "linux", GOARCH: "amd64", NumCPU: 2, GoVersion: "go1.26", LoadAvg: []float64{1.2, 0.85, 0.5}}), "load 1.20 0.85 0.50") {
		t.Error("machine line lacks the load")
	}
}
