package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/tickwire/tickwire/transport"
)

// ProfileFrontier is the latency–bytes frontier (tickwire bench --profile
// frontier, not in the default suite): echo rows at one loss rate for
// tickwire's redundancy settings and the other peers, through the same
// relay, each a point of p99 latency against wire bytes per message (see
// RunFrontier).
const ProfileFrontier = "frontier"

// DefaultFrontierLoss is the frontier's loss rate when none is given.
const DefaultFrontierLoss = 0.10

// FrontierSetting is one point of the frontier: a transport and, for
// tickwire, its redundancy settings.
type FrontierSetting struct {
	// Label names the point in the chart and the table.
	Label     string
	Transport string
	// Redundancy and RedundancyInterval are tickwire's
	// (Scenario.Redundancy, Scenario.RedundancyInterval); the other
	// transports ignore them.
	Redundancy         transport.RedundancyMode
	RedundancyInterval time.Duration
}

// FrontierEarlyCopy is the copy spacing of the frontier's early-copy
// setting: one early copy ~5 ms after the original (the efficiency issue's
// sub-tick knob).
const FrontierEarlyCopy = 5 * time.Millisecond

// DefaultFrontierSettings are the frontier's points: tickwire adaptive (the
// default), eager, always and off, eager with copies 5 ms apart, and
// kcp-fast, quic (one stream) and quic-dgram (RFC 9221 datagrams,
// unreliable).
func DefaultFrontierSettings() []FrontierSetting {
	return []FrontierSetting{
		{Label: "adaptive (default)", Transport: Tickwire, Redundancy: transport.RedundancyAdaptive},
		{Label: "eager", Transport: Tickwire, Redundancy: transport.RedundancyEager},
		{Label: "always", Transport: Tickwire, Redundancy: transport.RedundancyAlways},
		{Label: "off", Transport: Tickwire, Redundancy: transport.RedundancyOff},
		{Label: "eager, 5 ms copies", Transport: Tickwire, Redundancy: transport.RedundancyEager, RedundancyInterval: FrontierEarlyCopy},
		{Label: KCPFast, Transport: KCPFast},
		{Label: QUIC, Transport: QUIC},
		{Label: QUICDatagram, Transport: QUICDatagram},
	}
}

// FrontierScenarios returns the echo scenario of every setting at every
// loss of s (s.Losses, s.Link and the echo settings; s.Profiles,
// s.Transports and s's redundancy settings are not used: the settings
// say), loss-major, and each scenario's setting label.
func FrontierScenarios(s Suite, settings []FrontierSetting) ([]Scenario, []string) {
	var out []Scenario
	var labels []string
	for _, loss := range s.Losses {
		link := s.Link
		link.Loss = loss
		for _, fs := range settings {
			sc := Scenario{
				Profile: ProfileEcho, Transport: fs.Transport, Delivery: DeliveryOf(fs.Transport, ProfileEcho), Link: link,
				Count: s.Count, Rate: s.Rate, Size: s.Size, MTU: s.MTU, Drain: s.Drain, MaxInFlight: s.MaxInFlight,
				Redundancy: fs.Redundancy, RedundancyInterval: fs.RedundancyInterval,
			}
			out = append(out, sc)
			labels = append(labels, fs.Label)
		}
	}
	return out, labels
}

// FrontierPoint is one setting at one loss rate over its reps: medians
// and min–max.
type FrontierPoint struct {
	Label     string  `json:"label"`
	Transport string  `json:"transport"`
	Delivery  string  `json:"delivery"`
	Loss      float64 `json:"loss"` // percent
	// Redundancy and RedundancyIntervalMS are tickwire's settings ("" and 0
	// for the other transports; 0: the default, one 60 Hz tick).
	Redundancy           string  `json:"redundancy"`
	RedundancyIntervalMS float64 `json:"redundancy_interval_ms"`
	Reps                 int     `json:"reps"`
	// P99MS is the p99 round trip; BytesPerMsg the wire bytes of both ends
	// per message sent (Result.WireBytes / Result.Sent); RedundantPerMsg
	// tickwire's redundant-copy bytes among them.
	P99MS           Spread `json:"p99_ms"`
	P50MS           Spread `json:"p50_ms"`
	BytesPerMsg     Spread `json:"bytes_per_msg"`
	RedundantPerMsg Spread `json:"redundant_bytes_per_msg"`
	// Failed counts the reps that did not deliver every message (a
	// reliable row); NotSupported why the row could not run, or "".
	Failed       int    `json:"failed"`
	NotSupported string `json:"not_supported"`
}

// Spread is a value's median, minimum and maximum over reps.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spreadOf(s Stat) Spread { return Spread{s.Median, s.Min, s.Max} }

// Frontier is a frontier run: its points, loss-major in setting order,
// and the rows they come from.
type Frontier struct {
	// Link is the relay's link (Loss aside: each point has its own).
	DelayMS  float64 `json:"delay_ms"`
	JitterMS float64 `json:"jitter_ms"`
	Count    int     `json:"count"`
	Rate     float64 `json:"rate"`
	Size     int     `json:"size"`
	Reps     int     `json:"reps"`
	// TickMS is the echo's send interval, one tick (1/Rate).
	TickMS  float64         `json:"tick_ms"`
	Points  []FrontierPoint `json:"points"`
	Results []Result        `json:"results"`
}

// Refs returns the frontier's reference latencies at loss (percent): the
// base RTT — the smallest median p50 of the points there, the round trip
// of a message nothing delayed, relay and loops included — plus one tick
// (the efficiency issue's p99 goal) and plus two ticks (where copies a
// tick apart bottom out); ok false when no point there has a p50.
func (f Frontier) Refs(loss float64) (goal, twoTicks float64, ok bool) {
	base := math.Inf(1)
	for _, p := range f.Points {
		if p.Loss == loss && p.NotSupported == "" && p.P50MS.Median > 0 {
			base = min(base, p.P50MS.Median)
		}
	}
	if math.IsInf(base, 1) {
		return 0, 0, false
	}
	return base + f.TickMS, base + 2*f.TickMS, true
}

// RunFrontier runs the frontier: every setting at every loss of s as an
// echo row (FrontierScenarios) reps times, the settings of a loss rate
// interleaved (A B C … A B C …, see RunReps), and gathers each setting's
// reps into a point. progress is RunReps'. On an error it returns the
// points of the rows run so far.
func RunFrontier(ctx context.Context, s Suite, settings []FrontierSetting, reps int, progress func(Progress)) (Frontier, error) {
	scs, labels := FrontierScenarios(s, settings)
	reps = max(reps, 1)
	f := Frontier{
		DelayMS: msOf(s.Link.Delay), JitterMS: msOf(s.Link.Jitter), Count: s.Count, Rate: s.Rate, Size: s.Size, Reps: reps,
		TickMS: 1000 / s.Rate,
	}
	for _, sc := range scs {
		if err := sc.Validate(); err != nil {
			return f, err
		}
	}
	results, err := RunReps(ctx, scs, reps, progress)
	f.Results = results
	plan := Interleave(scs, reps)
	byScenario := map[int][]Result{}
	for i, r := range results {
		for j, sc := range scs {
			if sc == plan[i].Scenario {
				byScenario[j] = append(byScenario[j], r)
				break
			}
		}
	}
	for j, sc := range scs {
		rs := byScenario[j]
		if len(rs) == 0 {
			continue
		}
		f.Points = append(f.Points, pointOf(labels[j], sc, rs))
	}
	return f, err
}

// pointOf gathers the reps rs of scenario sc into a point.
func pointOf(label string, sc Scenario, rs []Result) FrontierPoint {
	row := Row{Reps: rs}
	p := FrontierPoint{
		Label: label, Transport: sc.Transport, Delivery: rs[0].Delivery, Loss: sc.Link.Loss * 100,
		Reps: len(rs), Failed: row.Failed(), NotSupported: row.NotSupported(),
	}
	if p.Delivery == "" {
		p.Delivery = DeliveryOf(sc.Transport, ProfileEcho)
	}
	if sc.Transport == Tickwire {
		p.Redundancy = sc.Redundancy.String()
		p.RedundancyIntervalMS = msOf(sc.RedundancyInterval)
	}
	per := func(v func(Result) int64) func(Result) float64 {
		return func(r Result) float64 {
			if r.Sent == 0 {
				return 0
			}
			return float64(v(r)) / float64(r.Sent)
		}
	}
	p.P99MS = spreadOf(row.Stat(func(r Result) float64 { return r.LatencyMS.P99 }))
	p.P50MS = spreadOf(row.Stat(func(r Result) float64 { return r.LatencyMS.P50 }))
	p.BytesPerMsg = spreadOf(row.Stat(per(func(r Result) int64 { return r.WireBytes })))
	p.RedundantPerMsg = spreadOf(row.Stat(per(func(r Result) int64 { return r.RedundantBytes })))
	return p
}

// WriteFrontierJSON writes f as indented JSON.
func WriteFrontierJSON(w io.Writer, f Frontier) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}

// WriteFrontierMarkdown writes f's points as a Markdown table per loss
// rate, p99 against the goal, linking charts[i] (file names, one per loss
// rate in point order; missing or "" for none) above each table. command
// is the command line that ran it.
func WriteFrontierMarkdown(w io.Writer, f Frontier, command string, charts []string) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# tickwire bench --profile frontier\n\n")
	if command != "" {
		p("`%s`\n\n", command)
	}
	p("Echo of %d × %d B messages at %g Hz through the relay, %g ms ± %g ms one way; %d rep(s) per point, interleaved; medians, min–max in brackets. "+
		"Bytes are the UDP payload both ends sent per message (acks, retransmissions and copies included). "+
		"Goal: p99 ≤ base RTT + 1 tick, base RTT being the smallest median p50 of a loss rate's points.\n",
		f.Count, f.Size, f.Rate, f.DelayMS, f.JitterMS, f.Reps)
	loss, chart, goal := -1.0, 0, 0.0
	for _, pt := range f.Points {
		if pt.Loss != loss {
			loss = pt.Loss
			var two float64
			goal, two, _ = f.Refs(loss)
			p("\n## %g %% loss\n\nbase RTT + 1 tick = %.1f ms, + 2 ticks = %.1f ms.\n\n", loss, goal, two)
			if chart < len(charts) && charts[chart] != "" {
				p("![p99 against wire bytes per message at %g %% loss](%s)\n\n", loss, charts[chart])
			}
			chart++
			p("| setting | transport | p99 ms | p50 ms | wire B/msg | redundant B/msg | p99 ≤ %.1f ms |\n|---|---|---:|---:|---:|---:|---|\n", goal)
		}
		if pt.NotSupported != "" {
			p("| %s | %s | n/a | n/a | n/a | n/a | %s |\n", pt.Label, pt.Transport, pt.NotSupported)
			continue
		}
		met := "no"
		if pt.P99MS.Median <= goal {
			met = "yes"
		}
		if pt.Failed > 0 {
			met += fmt.Sprintf(", FAILED %d of %d reps", pt.Failed, pt.Reps)
		}
		if pt.Delivery == Unreliable {
			met += " (unreliable: lost echoes not counted)"
		}
		p("| %s | %s | %s | %s | %s | %s | %s |\n", pt.Label, pt.Transport, spreadText(pt.P99MS, 1), spreadText(pt.P50MS, 1),
			spreadText(pt.BytesPerMsg, 0), spreadText(pt.RedundantPerMsg, 0), met)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// spreadText formats s as "median [min–max]" with prec decimals, the
// bracket left out when every rep agrees.
func spreadText(s Spread, prec int) string {
	m := fmt.Sprintf("%.*f", prec, s.Median)
	lo, hi := fmt.Sprintf("%.*f", prec, s.Min), fmt.Sprintf("%.*f", prec, s.Max)
	if lo == hi {
		return m
	}
	return m + " [" + lo + "–" + hi + "]"
}
