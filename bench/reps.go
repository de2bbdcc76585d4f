package bench

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Progress is what RunReps tells its progress callback before each row.
type Progress struct {
	// Index is the row about to run, 0 … Total-1, counting every rep.
	Index, Total int
	// Scenario is the row's scenario; Rep its repetition, 0 … Reps-1.
	Scenario  Scenario
	Rep, Reps int
	// Elapsed is the wall time since RunReps started; ETA the estimated
	// time still to run, this row included (see RunReps).
	Elapsed, ETA time.Duration
}

// RunReps runs every scenario reps times (reps < 1 counts as 1), one row
// at a time, and returns the results with Result.Rep set. Runs are
// interleaved: each block of consecutive scenarios with the same profile
// and link (the transports of one loss rate, say A, B, C) runs whole, reps
// times over (A B C A B C …), before the next block, so that a slow minute
// of a shared machine falls on every transport of the block rather than on
// one.
//
// progress, if not nil, is called before each row. Its ETA weights each
// remaining row by the time the scenario should take (for echo and
// actions Count/Rate plus a second of drain, for pps and load their
// Duration, for bulk a second) and scales the sum by how long the rows so
// far took against the same estimate; before the first row it is the
// plain estimate. RunReps stops at the first error, returning the results
// so far.
func RunReps(ctx context.Context, scenarios []Scenario, reps int, progress func(Progress)) ([]Result, error) {
	plan := Interleave(scenarios, reps)
	var total time.Duration
	for _, p := range plan {
		total += p.Scenario.estimate()
	}
	start := time.Now()
	var done time.Duration // estimate of the rows run
	out := make([]Result, 0, len(plan))
	for i, p := range plan {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if progress != nil {
			elapsed := time.Since(start)
			progress(Progress{
				Index: i, Total: len(plan), Scenario: p.Scenario, Rep: p.Rep, Reps: max(reps, 1),
				Elapsed: elapsed, ETA: eta(elapsed, done, total-done),
			})
		}
		r, err := Run(ctx, p.Scenario)
		if err != nil {
			return out, err
		}
		r.Rep = p.Rep
		out = append(out, r)
		done += p.Scenario.estimate()
	}
	return out, nil
}

// eta scales the estimate of the rows left by the ratio of the time the
// rows run so far took (elapsed) to their estimate (done); with none run
// yet, it is the estimate itself.
func eta(elapsed, done, left time.Duration) time.Duration {
	if done <= 0 || elapsed <= 0 {
		return left
	}
	return time.Duration(float64(left) * float64(elapsed) / float64(done))
}

// estimate is how long s should take to run: a weight for RunReps' ETA,
// not a bound.
func (s Scenario) estimate() time.Duration {
	s = s.withDefaults()
	switch s.Profile {
	case ProfileEcho, ProfileActions:
		return time.Duration(float64(s.Count)/s.Rate*float64(time.Second)) + time.Second
	case ProfilePPS, ProfileLoad:
		return s.Duration + 200*time.Millisecond
	}
	return time.Second // bulk: as long as the transfer takes
}

// Planned is one row of an interleaved run: a scenario and its rep.
type Planned struct {
	Scenario Scenario
	Rep      int
}

// Interleave returns the order RunReps runs scenarios in reps times (see
// RunReps): each block of consecutive scenarios with the same profile and
// link repeated reps times, reps < 1 counting as 1.
func Interleave(scenarios []Scenario, reps int) []Planned {
	reps = max(reps, 1)
	out := make([]Planned, 0, len(scenarios)*reps)
	for i := 0; i < len(scenarios); {
		j := i + 1
		for j < len(scenarios) && scenarios[j].Profile == scenarios[i].Profile && scenarios[j].Link == scenarios[i].Link {
			j++
		}
		for rep := range reps {
			for _, s := range scenarios[i:j] {
				out = append(out, Planned{Scenario: s, Rep: rep})
			}
		}
		i = j
	}
	return out
}

// Row is one scenario's results over its reps: rows of one profile,
// transport, delivery and link, in rep order.
type Row struct {
	Reps []Result
}

// First returns the row's first rep (its profile, transport, delivery,
// link and config are every rep's).
func (r Row) First() Result { return r.Reps[0] }

// NotSupported returns the reason the row could not run, from its first
// rep that could not, or "".
func (r Row) NotSupported() string {
	for _, x := range r.Reps {
		if x.NotSupported != "" {
			return x.NotSupported
		}
	}
	return ""
}

// Failed returns how many of the row's reps failed (see Result.Failed).
func (r Row) Failed() int {
	var n int
	for _, x := range r.Reps {
		if x.Failed() {
			n++
		}
	}
	return n
}

// Stat returns f over the reps that ran (NotSupported empty): median,
// minimum and maximum. The zero Stat (N 0) when none ran.
func (r Row) Stat(f func(Result) float64) Stat {
	var vs []float64
	for _, x := range r.Reps {
		if x.NotSupported == "" {
			vs = append(vs, f(x))
		}
	}
	return StatOf(vs)
}

// Median returns the rep whose p99 latency (a row with latency), MB/s
// (bulk) or messages/s (pps) is the median, the lower of the two
// middle ones for an even count: the rep the charts draw a CDF of.
func (r Row) Median() Result {
	idx := make([]int, len(r.Reps))
	for i := range idx {
		idx[i] = i
	}
	key := func(x Result) float64 {
		switch {
		case x.Profile == ProfileBulk:
			return x.ThroughputMBPerS
		case x.LatencyKind == NoLatency:
			return x.ThroughputMsgsPerS
		}
		return x.LatencyMS.P99
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(key(r.Reps[a]), key(r.Reps[b])) })
	return r.Reps[idx[(len(idx)-1)/2]]
}

// Stat is a value over a row's reps.
type Stat struct {
	Median, Min, Max float64
	N                int // reps it is over
}

// StatOf returns the median (the mean of the two middle values for an
// even count), minimum and maximum of vs; the zero Stat for none.
func StatOf(vs []float64) Stat {
	if len(vs) == 0 {
		return Stat{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// rowKey identifies a Row.
type rowKey struct {
	profile, transport, delivery string
	link                         LinkResult
}

func keyOf(r Result) rowKey {
	d := r.Delivery
	if d == "" {
		d = DeliveryOf(r.Transport, r.Profile)
	}
	return rowKey{r.Profile, r.Transport, d, r.Link}
}

// Rows gathers rs into Rows in the order of Group (profile and link
// groups in order of first appearance, transports in report order, a
// transport's deliveries in order of first appearance), each Row's reps in
// the order they appear in rs.
func Rows(rs []Result) []Row {
	var out []Row
	at := map[rowKey]int{}
	for _, r := range Group(rs) {
		k := keyOf(r)
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Row{})
		}
		out[i].Reps = append(out[i].Reps, r)
	}
	return out
}

// RepCount returns the number of reps in rs: one more than the largest
// Result.Rep, 1 for none.
func RepCount(rs []Result) int {
	n := 0
	for _, r := range rs {
		n = max(n, r.Rep)
	}
	return n + 1
}
