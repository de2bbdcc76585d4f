package bench

import (
	"context"
	"time"
)

// Default suite settings: what `tickwire bench` runs with no flags.
var (
	// DefaultLosses are the loss rates of the default suite.
	DefaultLosses = []float64{0, 0.01, 0.05, 0.10, 0.20}
	// DefaultTransports are the transports of the default suite.
	DefaultTransports = []string{Tickwire, KCP}
)

// Default link of the default suite.
const (
	DefaultDelay  = 25 * time.Millisecond
	DefaultJitter = 2 * time.Millisecond
	DefaultSeed   = 1
)

// Suite is a set of scenarios: every transport on every loss rate, the
// rest of the settings shared.
type Suite struct {
	Profile    string
	Transports []string
	Losses     []float64 // probabilities in [0, 1]
	Link       Link      // Loss is taken from Losses
	Count      int
	Rate       float64
	Size       int
	MTU        int
	Drain      time.Duration
}

// DefaultSuite returns the suite `tickwire bench` runs with no flags:
// echo at 0/1/5/10/20 % loss, 25 ms ± 2 ms one way, tickwire and kcp.
func DefaultSuite() Suite {
	return Suite{
		Profile:    ProfileEcho,
		Transports: DefaultTransports,
		Losses:     DefaultLosses,
		Link:       Link{Delay: DefaultDelay, Jitter: DefaultJitter, Seed: DefaultSeed},
		Count:      DefaultCount,
		Rate:       DefaultRate,
		Size:       DefaultSize,
		MTU:        DefaultMTU,
	}
}

// Scenarios expands the suite, loss-major, transports adjacent.
func (s Suite) Scenarios() []Scenario {
	var out []Scenario
	for _, loss := range s.Losses {
		for _, t := range s.Transports {
			link := s.Link
			link.Loss = loss
			out = append(out, Scenario{
				Profile: s.Profile, Transport: t, Link: link,
				Count: s.Count, Rate: s.Rate, Size: s.Size, MTU: s.MTU, Drain: s.Drain,
			})
		}
	}
	return out
}

// Validate reports the first invalid scenario of the suite.
func (s Suite) Validate() error {
	for _, sc := range s.Scenarios() {
		if err := sc.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// RunAll runs scenarios one after the other (never concurrently, so rows
// do not disturb each other's latency), calling progress, if not nil,
// before each. It stops at the first error, returning the results so far.
func RunAll(ctx context.Context, scenarios []Scenario, progress func(i int, s Scenario)) ([]Result, error) {
	out := make([]Result, 0, len(scenarios))
	for i, sc := range scenarios {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if progress != nil {
			progress(i, sc)
		}
		r, err := Run(ctx, sc)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}
