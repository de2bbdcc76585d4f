package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tickwire/tickwire/bench"
)

// progress reports a bench run on stderr: before each row, its number,
// what runs, the time so far and the estimated time left. On a terminal
// it rewrites one line in place; elsewhere (a pipe, a CI log) it writes
// one line per row.
type progress struct {
	w        io.Writer
	terminal bool
	wrote    bool
}

func newProgress(w io.Writer, terminal bool) *progress { return &progress{w: w, terminal: terminal} }

// row reports p; it is RunReps' progress callback.
func (pr *progress) row(p bench.Progress) {
	line := progressLine(p)
	if pr.terminal {
		fmt.Fprintf(pr.w, "\r\x1b[K%s", line)
	} else {
		fmt.Fprintln(pr.w, line)
	}
	pr.wrote = true
}

// done clears a terminal's progress line.
func (pr *progress) done() {
	if pr.terminal && pr.wrote {
		fmt.Fprint(pr.w, "\r\x1b[K")
	}
}

// progressLine formats p in one line under 80 columns:
//
//	bench: row 7/43 echo kcp-fast 5% loss rep 1/1 · 0:31 elapsed, ETA 0:52
func progressLine(p bench.Progress) string {
	s := p.Scenario
	what := s.Profile + " " + s.Transport
	if s.Profile == bench.ProfilePPS && s.Delivery != "" {
		what += " " + s.Delivery
	}
	if s.Profile == bench.ProfileEcho || s.Profile == bench.ProfileActions {
		what += " " + strconv.FormatFloat(s.Link.Loss*100, 'g', -1, 64) + "% loss"
	}
	if p.Reps > 1 {
		what += fmt.Sprintf(" rep %d/%d", p.Rep+1, p.Reps)
	}
	return fmt.Sprintf("bench: row %d/%d %s · %s elapsed, ETA %s", p.Index+1, p.Total, what, clock(p.Elapsed), clock(p.ETA))
}

// clock formats d as m:ss.
func clock(d time.Duration) string {
	sec := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", sec/60, sec%60)
}
