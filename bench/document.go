package bench

import (
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is the JSON document WriteReport writes: what was measured, by
// which build, on which machine, with which settings; the summary's
// ratios; then the rows. Every field is always present.
type Report struct {
	// Version is the tickwire command's module version ("(devel)" in a
	// checkout); Commit the VCS revision the binary was stamped with, ""
	// when not stamped (go run, go test), with "+modified" appended for a
	// dirty tree. Both empty when the writer did not know them.
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// GoVersion is the Go release that built the binary (runtime.Version).
	GoVersion string   `json:"go_version"`
	Machine   Machine  `json:"machine"`
	Settings  Settings `json:"settings"`
	// Summary is Headlines(Results).
	Summary []HeadlineJSON `json:"summary"`
	Results []Result       `json:"results"`
}

// Settings is a run's settings in the JSON: the suite's (a zero count,
// rate, size, MTU or duration already replaced by its default) and the
// number of reps.
type Settings struct {
	// Command is the command line, as a shell would take it; "" when not
	// known.
	Command        string    `json:"command"`
	Reps           int       `json:"reps"`
	Profiles       []string  `json:"profiles"`
	Transports     []string  `json:"transports"`
	LossesPct      []float64 `json:"losses_pct"`
	DelayMS        float64   `json:"delay_ms"`
	JitterMS       float64   `json:"jitter_ms"`
	DupPct         float64   `json:"dup_pct"`
	Burst          float64   `json:"burst"`
	Seed           uint64    `json:"seed"`
	Count          int       `json:"count"`
	RateHz         float64   `json:"rate_hz"`
	Size           int       `json:"size"`
	MTU            int       `json:"mtu"`
	DrainMS        float64   `json:"drain_ms"`
	DurationMS     float64   `json:"duration_ms"`
	BulkBytes      int64     `json:"bulk_bytes"`
	LoadDurationMS float64   `json:"load_duration_ms"`
	Peers          int       `json:"peers"`
	ActionPeers    int       `json:"action_peers"`
	// FrameCapacity and MaxInFlight are 0 when each peer keeps its own
	// default (listed per row in Result.Config).
	FrameCapacity int `json:"frame_capacity"`
	MaxInFlight   int `json:"max_in_flight"`
}

// SettingsOf returns s's settings as the JSON states them, with reps
// (below 1: 1) and the command line.
func SettingsOf(s Suite, reps int, command string) Settings {
	d := Scenario{Count: s.Count, Rate: s.Rate, Size: s.Size, MTU: s.MTU, Drain: s.Drain, Duration: s.Duration, Bytes: s.Bytes}.withDefaults()
	ms := func(t time.Duration) float64 { return float64(t) / float64(time.Millisecond) }
	losses := make([]float64, len(s.Losses))
	for i, l := range s.Losses {
		losses[i] = l * 100
	}
	load := s.LoadDuration
	if load == 0 {
		load = DefaultLoadDuration
	}
	ap := s.ActionPeers
	if ap == 0 {
		ap = DefaultActionPeers
	}
	peers := s.Peers
	if peers == 0 {
		peers = DefaultPeers
	}
	return Settings{
		Command: command, Reps: max(reps, 1),
		Profiles: nonNil(s.Profiles), Transports: nonNil(s.Transports), LossesPct: losses,
		DelayMS: ms(s.Link.Delay), JitterMS: ms(s.Link.Jitter), DupPct: s.Link.Dup * 100, Burst: max(s.Link.Burst, 1), Seed: s.Link.Seed,
		Count: d.Count, RateHz: d.Rate, Size: d.Size, MTU: d.MTU, DrainMS: ms(d.Drain), DurationMS: ms(d.Duration),
		BulkBytes: d.Bytes, LoadDurationMS: ms(load), Peers: peers, ActionPeers: ap,
		FrameCapacity: s.FrameCapacity, MaxInFlight: s.MaxInFlight,
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// HeadlineJSON is a Headline in the JSON: a ratio's median, minimum and
// maximum over the reps it was computed in, and the two sides' medians.
type HeadlineJSON struct {
	Profile string `json:"profile"`
	Metric  string `json:"metric"`
	// LossPct is the rows' loss rate, percent.
	LossPct  float64 `json:"loss_pct"`
	Delivery string  `json:"delivery"`
	Peer     string  `json:"peer"`
	Tickwire float64 `json:"tickwire"`
	Other    float64 `json:"other"`
	Ratio    float64 `json:"ratio"`
	RatioMin float64 `json:"ratio_min"`
	RatioMax float64 `json:"ratio_max"`
	Reps     int     `json:"reps"`
	// LowerIsBetter says whether a ratio below 1 favours tickwire.
	LowerIsBetter bool `json:"lower_is_better"`
}

// headlinesJSON converts hs.
func headlinesJSON(hs []Headline) []HeadlineJSON {
	out := make([]HeadlineJSON, len(hs))
	for i, h := range hs {
		out[i] = HeadlineJSON{
			Profile: h.Profile, Metric: h.Metric, LossPct: h.Link.Loss, Delivery: h.Delivery, Peer: h.Peer,
			Tickwire: h.Tickwire.Median, Other: h.Other.Median,
			Ratio: h.Ratio.Median, RatioMin: h.Ratio.Min, RatioMax: h.Ratio.Max, Reps: h.Ratio.N,
			LowerIsBetter: h.LowerIsBetter(),
		}
	}
	return out
}

// WriteReport writes rep, indented, with a final newline, its Summary
// computed from its Results (Headlines). A nil LatencyCDF is written as
// [] and nil settings as {}, so that every field of the schema has one
// JSON type; rep is not modified.
func WriteReport(w io.Writer, rep Report) error {
	rs := rep.Results
	if rs == nil {
		rs = []Result{}
	}
	if slices.ContainsFunc(rs, func(r Result) bool { return r.LatencyCDF == nil || r.Config.Settings == nil }) {
		rs = slices.Clone(rs)
		for i := range rs {
			if rs[i].LatencyCDF == nil {
				rs[i].LatencyCDF = []CDFPoint{}
			}
			if rs[i].Config.Settings == nil {
				rs[i].Config.Settings = map[string]string{}
			}
		}
	}
	rep.Results = rs
	rep.Summary = headlinesJSON(Headlines(rs))
	rep.Settings.Profiles, rep.Settings.Transports = nonNil(rep.Settings.Profiles), nonNil(rep.Settings.Transports)
	if rep.Settings.LossesPct == nil {
		rep.Settings.LossesPct = []float64{}
	}
	if rep.Machine.LoadAvg == nil {
		rep.Machine.LoadAvg = []float64{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteJSON writes rs as a Report with only its results (and their
// summary) filled: WriteReport(w, Report{Results: rs}).
func WriteJSON(w io.Writer, rs []Result) error {
	return WriteReport(w, Report{Results: rs})
}

// loadAvg returns the 1, 5 and 15 minute load averages from
// /proc/loadavg, or nil where there is none.
func loadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	return parseLoadAvg(string(b))
}

// parseLoadAvg parses the first three fields of a /proc/loadavg line;
// nil if they are not numbers.
func parseLoadAvg(s string) []float64 {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}
