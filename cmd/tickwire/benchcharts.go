package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tickwire/tickwire/bench"
	"github.com/tickwire/tickwire/bench/chart"
)

// chartProfilesUsage is the bench usage's paragraph on the profiles that
// run alone.
const chartProfilesUsage = `--profile frontier (alone, not in the default run): echo at --loss (default 10 %)
for tickwire's redundancy settings (adaptive, eager, always, off, and eager with
copies 5 ms apart) and kcp-fast, quic and quic-dgram through the same relay,
--reps times interleaved; prints a Markdown table of p99 against wire bytes per
message, and with --out DIR writes frontier.json, frontier.md and
frontier-loss-<pct>.svg. --transport keeps the points of those transports;
--redundancy and --redundancy-interval do not apply (each point sets them).
--profile bottleneck (alone): one tickwire channel offering ~400 KB/s into a
simulated 200 KB/s bottleneck with a 64 KB queue for --duration (default 10 s),
then the bottleneck lifts for 3 s, on a simulated clock (deterministic per --seed,
about a second); prints its figures, and with --out DIR writes bottleneck.json,
bottleneck.csv (the 50 ms time series), bottleneck.md and bottleneck.svg.
--delay and --jitter set its link when given (default 20 ms ± 1 ms).`

// Files of the chart profiles' --out.
const (
	outFrontierJSON   = "frontier.json"
	outFrontierMD     = "frontier.md"
	outBottleneckJSON = "bottleneck.json"
	outBottleneckCSV  = "bottleneck.csv"
	outBottleneckMD   = "bottleneck.md"
)

// quickBottleneck is --quick's capped time for --profile bottleneck.
const quickBottleneck = 2 * time.Second

// runChartProfile runs --profile frontier or bottleneck (f.profile); set
// holds the flags given explicitly.
func runChartProfile(ctx context.Context, f *benchFlags, set map[string]bool, args []string, stdout, stderr io.Writer) int {
	profile := strings.TrimSpace(f.profile)
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "tickwire bench: --profile %s: %v\n", profile, err)
		return code
	}
	for _, name := range []string{"redundancy", "redundancy-interval", "json"} {
		if set[name] {
			return fail(exitUsage, fmt.Errorf("--%s does not apply (see tickwire bench -h)", name))
		}
	}
	if f.out != "" {
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return fail(exitFailed, fmt.Errorf("--out: %w", err))
		}
	}
	command := commandLine(append([]string{"tickwire", "bench"}, args...))
	if profile == bench.ProfileBottleneck {
		return runBottleneckProfile(f, set, stdout, fail)
	}

	// The frontier: the suite's echo settings, at 10 % loss unless --loss.
	ef := *f
	ef.profile = bench.ProfileEcho
	eset := maps.Clone(set)
	if !set["loss"] {
		ef.losses = formatPercents([]float64{bench.DefaultFrontierLoss})
		eset["loss"] = true // as if given: --quick keeps it
	}
	suite, err := ef.suite(eset)
	if err != nil {
		return fail(exitUsage, err)
	}
	settings := bench.DefaultFrontierSettings()
	if set["transport"] {
		settings = slices.DeleteFunc(settings, func(s bench.FrontierSetting) bool { return !slices.Contains(suite.Transports, s.Transport) })
		if len(settings) == 0 {
			return fail(exitUsage, fmt.Errorf("--transport %s: none of the frontier's transports", f.transports))
		}
	}
	stopProf, err := f.prof.start(stderr)
	if err != nil {
		return fail(exitUsage, err)
	}
	progress := newProgress(stderr, isTerminal(stderr))
	fr, runErr := bench.RunFrontier(ctx, suite, settings, f.reps, progress.row)
	progress.done()
	if err := stopProf(); err != nil {
		fmt.Fprintf(stderr, "tickwire bench: %v\n", err)
	}
	code := exitOK
	if err := bench.WriteFrontierMarkdown(stdout, fr, command, nil); err != nil {
		code = fail(exitFailed, err)
	}
	if f.out != "" {
		files, err := chart.WriteFrontier(f.out, fr)
		var names []string
		for _, p := range files {
			names = append(names, filepath.Base(p))
		}
		if err == nil {
			err = writeFile(filepath.Join(f.out, outFrontierJSON), func(w io.Writer) error { return bench.WriteFrontierJSON(w, fr) })
		}
		if err == nil {
			err = writeFile(filepath.Join(f.out, outFrontierMD), func(w io.Writer) error { return bench.WriteFrontierMarkdown(w, fr, command, names) })
		}
		if err != nil {
			code = fail(exitFailed, fmt.Errorf("--out %s: %w", f.out, err))
		}
	}
	if runErr != nil {
		code = fail(exitFailed, runErr)
	}
	for _, p := range fr.Points {
		if p.Failed > 0 {
			fmt.Fprintf(stderr, "tickwire bench: FAILED: frontier %s at %v%% loss: %d of %d reps did not deliver every message\n", p.Label, p.Loss, p.Failed, p.Reps)
			code = exitFailed
		}
	}
	return code
}

// runBottleneckProfile runs --profile bottleneck.
func runBottleneckProfile(f *benchFlags, set map[string]bool, stdout io.Writer, fail func(int, error) int) int {
	for _, name := range []string{"loss", "transport", "reps", "count", "rate", "size", "mtu", "peers", "max-in-flight", "bulk-mb", "frame-capacity", "dup", "burst"} {
		if set[name] {
			return fail(exitUsage, fmt.Errorf("--%s does not apply (see tickwire bench -h)", name))
		}
	}
	cfg := bench.BottleneckConfig{Seed: f.seed}
	if set["delay"] || set["jitter"] {
		if f.delay <= 0 {
			return fail(exitUsage, fmt.Errorf("--delay %v: the bottleneck's link needs a delay above 0", f.delay))
		}
		cfg.Delay, cfg.Jitter = f.delay, f.jitter
	}
	switch {
	case set["duration"]:
		cfg.Duration = f.duration
	case f.quick:
		cfg.Duration, cfg.Settle = quickBottleneck, time.Second
	}
	r, err := bench.RunBottleneck(cfg)
	if err != nil {
		return fail(exitUsage, err)
	}
	code := exitOK
	if err := bench.WriteBottleneckMarkdown(stdout, r, ""); err != nil {
		code = fail(exitFailed, err)
	}
	if f.out != "" {
		_, err := chart.WriteBottleneck(f.out, r)
		if err == nil {
			err = writeFile(filepath.Join(f.out, outBottleneckJSON), func(w io.Writer) error { return bench.WriteBottleneckJSON(w, r) })
		}
		if err == nil {
			err = writeFile(filepath.Join(f.out, outBottleneckCSV), func(w io.Writer) error { return bench.WriteBottleneckCSV(w, r) })
		}
		if err == nil {
			err = writeFile(filepath.Join(f.out, outBottleneckMD), func(w io.Writer) error {
				return bench.WriteBottleneckMarkdown(w, r, chart.BottleneckChartName)
			})
		}
		if err != nil {
			code = fail(exitFailed, fmt.Errorf("--out %s: %w", f.out, err))
		}
	}
	if r.Failed() {
		code = fail(exitFailed, fmt.Errorf("FAILED: %d reliable messages delivered of %d accepted (in order: %v)", r.ReliableDelivered, r.ReliableAccepted, r.ReliableInOrder))
	}
	return code
}
