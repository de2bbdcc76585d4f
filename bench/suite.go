package bench

import (
	"context"
	"fmt"
	"github.com/tickwire/tickwire/transport"
	"slices"
	"time"
)

// Default suite settings: what `tickwire bench` runs with no flags.
var (
	// DefaultLosses are the loss rates of the default suite's echo rows.
	DefaultLosses = []float64{0, 0.01, 0.05, 0.10, 0.20}
	// DefaultTransports are the transports of the default suite: each
	// runs the profiles it is placed in (see Suite.Scenarios).
	DefaultTransports = []string{Tickwire, KCPFast, KCPBulk, QUIC}
	// DefaultProfiles are the profiles of the default suite.
	DefaultProfiles = []string{ProfileEcho, ProfilePPS, ProfileBulk}
	// ChartProfiles are the profiles that run on their own, not as rows of
	// a Suite: the latency–bytes frontier (RunFrontier) and the bottleneck
	// time series (RunBottleneck). Neither is in the default suite.
	ChartProfiles = []string{ProfileFrontier, ProfileBottleneck}
)

// Default link of the default suite.
const (
	DefaultDelay  = 25 * time.Millisecond
	DefaultJitter = 2 * time.Millisecond
	DefaultSeed   = 1
)

// Suite is a set of scenarios: for echo and actions, every transport on
// every loss rate through the relay; for pps and bulk, one row per
// transport, direct at 0 % loss (see Run), pps with a Raw row added as its
// floor and tickwire twice (unreliable, then reliable). Load, not in the
// default suite, is one tickwire row, direct at 0 % loss. Actions is not
// in the default suite either. The rest of the settings are shared.
//
// Each transport runs the profiles it is placed in: kcp-fast (and
// kcp-default) echo and actions, kcp-bulk pps and bulk, quic echo and
// bulk, quic-streams and quic-dgram echo, raw pps, tickwire all. A kcp
// peer also runs the other profiles it can when no kcp peer placed in
// them is in Transports (so --transport kcp-fast alone runs its old pps
// and bulk rows); other transports are skipped for a profile they do not
// run.
type Suite struct {
	Profiles   []string
	Transports []string
	Losses     []float64 // probabilities in [0, 1]; echo and actions only
	Link       Link      // Loss is taken from Losses; echo and actions only
	Count      int
	Rate       float64
	Size       int
	MTU        int
	Drain      time.Duration
	Duration   time.Duration // pps and bulk
	Bytes      int64         // bulk
	// LoadDuration is how long load sends (0: DefaultLoadDuration).
	LoadDuration time.Duration
	Peers        int // load
	// ActionPeers is the actions rows' clients (0: DefaultActionPeers).
	ActionPeers int
	// FrameCapacity and MaxInFlight go to every row (see Scenario; they
	// apply to actions, and MaxInFlight to echo too).
	FrameCapacity int
	MaxInFlight   int
	// RedundancyInterval goes to every echo row (see Scenario).
	RedundancyInterval time.Duration
	Redundancy         transport.RedundancyMode
}

// DefaultSuite returns the suite `tickwire bench` runs with no flags:
// echo at 0/1/5/10/20 % loss, 25 ms ± 2 ms one way, for tickwire,
// kcp-fast and quic; then pps (tickwire unreliable and reliable,
// kcp-bulk, raw) and bulk (tickwire, kcp-bulk, quic).
func DefaultSuite() Suite {
	return Suite{
		Profiles:   DefaultProfiles,
		Transports: DefaultTransports,
		Losses:     DefaultLosses,
		Link:       Link{Delay: DefaultDelay, Jitter: DefaultJitter, Seed: DefaultSeed},
		Count:      DefaultCount,
		Rate:       DefaultRate,
		Size:       DefaultSize,
		MTU:        DefaultMTU,
		Duration:   DefaultDuration,
		Bytes:      DefaultBulkBytes,
		// Not run by default; the settings for --profile load and
		// --profile actions.
		LoadDuration: DefaultLoadDuration,
		Peers:        DefaultPeers,
		ActionPeers:  DefaultActionPeers,
	}
}

// Scenarios expands the suite, profile by profile; echo and actions
// loss-major, transports adjacent.
func (s Suite) Scenarios() []Scenario {
	var out []Scenario
	row := func(profile, t string, link Link) Scenario {
		return Scenario{
			Profile: profile, Transport: t, Delivery: DeliveryOf(t, profile), Link: link,
			Count: s.Count, Rate: s.Rate, Size: s.Size, MTU: s.MTU, Drain: s.Drain,
			Duration: s.Duration, Bytes: s.Bytes, Peers: s.Peers,
			FrameCapacity: s.FrameCapacity, MaxInFlight: s.MaxInFlight,
			RedundancyInterval: s.RedundancyInterval, Redundancy: s.Redundancy,
		}
	}
	for _, profile := range s.Profiles {
		switch profile {
		case ProfileEcho, ProfileActions:
			for _, loss := range s.Losses {
				for _, t := range s.Transports {
					if !s.places(t, profile) {
						continue
					}
					link := s.Link
					link.Loss = loss
					r := row(profile, t, link)
					if profile == ProfileActions {
						r.Peers = s.ActionPeers
					}
					out = append(out, r)
				}
			}
		case ProfilePPS, ProfileBulk:
			ts := slices.Clone(s.Transports)
			if profile == ProfilePPS && !slices.Contains(ts, Raw) {
				ts = append(ts, Raw)
			}
			for _, t := range ts {
				if !s.places(t, profile) {
					continue
				}
				out = append(out, row(profile, t, Link{}))
				if t == Tickwire && profile == ProfilePPS {
					r := row(profile, t, Link{})
					r.Delivery = Reliable
					out = append(out, r)
				}
			}
		case ProfileLoad:
			if slices.Contains(s.Transports, Tickwire) {
				r := row(profile, Tickwire, Link{})
				r.Duration = s.LoadDuration
				out = append(out, r)
			}
		default:
			out = append(out, row(profile, "", Link{})) // fails Validate
		}
	}
	return out
}

// places reports whether the suite runs transport t on profile: where t
// is placed, or for a kcp peer that runs profile, when no kcp peer in
// s.Transports is placed there.
func (s Suite) places(t, profile string) bool {
	p, ok := peers[t]
	switch {
	case !ok:
		return true // an unknown name: Validate reports it
	case slices.Contains(p.home, profile):
		return true
	case p.family != "kcp" || !Runs(t, profile):
		return false
	}
	for _, o := range s.Transports {
		if peers[o].family == "kcp" && slices.Contains(peers[o].home, profile) {
			return false
		}
	}
	return true
}

// Validate reports the first invalid scenario of the suite, or that it
// has none.
func (s Suite) Validate() error {
	scenarios := s.Scenarios()
	if len(scenarios) == 0 {
		return fmt.Errorf("%w: the suite has no rows", ErrScenario)
	}
	for _, sc := range scenarios {
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
