package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/bench"
	"github.com/tickwire/tickwire/bench/chart"
	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

// Settings of --quick: a few seconds in all, for tests and smoke runs.
const (
	quickCount     = 30
	quickDrain     = 3 * time.Second
	quickDuration  = 300 * time.Millisecond // pps sending, bulk bound
	quickBulkBytes = 2 << 20
	quickPeers     = 16          // load
	quickActPeers  = 4           // actions
	quickLoad      = time.Second // load sending
)

// maxReps bounds --reps: 20 full suites are half an hour.
const maxReps = 20

// quickLosses are --quick's loss rates.
var quickLosses = []float64{0, 0.10}

// benchFlags are the bench subcommand's flags.
type benchFlags struct {
	profile    string
	transports string
	losses     string
	delay      time.Duration
	jitter     time.Duration
	dup        float64
	burst      float64
	seed       uint64
	count      int
	rate       float64
	size       int
	mtu        int
	duration   time.Duration
	bulkMB     float64
	peers      int
	inFlight   int
	redundIval time.Duration
	redundMode string
	frameCap   int
	quick      bool
	reps       int
	json       string
	out        string
	prof       profileFlags
}

// newBenchFlagSet declares the bench flags on a new FlagSet writing its
// errors and usage to stderr.
func newBenchFlagSet(f *benchFlags, stderr io.Writer) *flag.FlagSet {
	def := bench.DefaultSuite()
	fs := flag.NewFlagSet("tickwire bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.profile, "profile", strings.Join(def.Profiles, ","), "comma-separated traffic profiles: "+strings.Join(bench.Profiles, ",")+"; or one of "+strings.Join(bench.ChartProfiles, ",")+", which run alone (see below)")
	fs.StringVar(&f.transports, "transport", strings.Join(def.Transports, ","), "comma-separated transports: "+strings.Join(bench.Transports, ","))
	fs.StringVar(&f.losses, "loss", formatPercents(def.Losses), "comma-separated loss rates in percent, one row per transport and rate")
	fs.DurationVar(&f.delay, "delay", def.Link.Delay, "one-way delay of each direction")
	fs.DurationVar(&f.jitter, "jitter", def.Link.Jitter, "one-way delay jitter (uniform ±)")
	fs.Float64Var(&f.dup, "dup", 0, "duplication rate in percent")
	fs.Float64Var(&f.burst, "burst", 1, "mean loss-run length (1: independent loss, >1: Gilbert–Elliott bursts)")
	fs.Uint64Var(&f.seed, "seed", def.Link.Seed, "link conditioner seed (same seed, same drop and duplicate decisions)")
	fs.IntVar(&f.count, "count", def.Count, "messages per row")
	fs.Float64Var(&f.rate, "rate", def.Rate, "messages per second")
	fs.IntVar(&f.size, "size", def.Size, fmt.Sprintf("message size in bytes [%d, %d]", bench.MinSize, bench.MaxSize))
	fs.IntVar(&f.mtu, "mtu", def.MTU, "largest datagram (UDP payload) for every peer [576, 1472]: tickwire's MTU, kcp's SetMtu, quic's InitialPacketSize with path MTU discovery off; a row that cannot run at it (quic below 1200, kcp-fast with a message above its MSS) says so as n/a")
	fs.DurationVar(&f.duration, "duration", def.Duration, fmt.Sprintf("pps: how long to send; bulk: the most time sending may take; load: how long to send, %v unless given", def.LoadDuration))
	fs.IntVar(&f.peers, "peers", 0, fmt.Sprintf("load and actions: clients against the one server [1, %d] (default: load %d, actions %d)", bench.DefaultPeers, def.Peers, def.ActionPeers))
	fs.IntVar(&f.inFlight, "max-in-flight", 0, fmt.Sprintf("echo, actions, pps and bulk: datagrams in flight, tickwire's ack window [1, %d] (default %d) and kcp's send and receive windows in packets (default kcp-fast %d, kcp-bulk %d); quic and raw have no such knob and ignore it; 0 keeps the defaults", ackmap.MaxInFlightLimit, ackmap.DefaultMaxInFlight, bench.KCPWindow, bench.KCPBulkWindow))
	fs.DurationVar(&f.redundIval, "redundancy-interval", 0, "echo: tickwire's spacing of redundant copies (transport.Config.RedundancyInterval) [0, 1s]; 0 keeps the default, one 60 Hz tick")
	fs.StringVar(&f.redundMode, "redundancy", "adaptive", "echo: tickwire's redundancy mode (transport.Config.Redundancy): adaptive, eager, always or off")
	fs.IntVar(&f.frameCap, "frame-capacity", 0, fmt.Sprintf("actions: frames the rollback action log holds [%d, %d] (default %d); the server rewinds at most three quarters of it", rollback.MinFrameCapacity, rollback.MaxFrameCapacity, rollback.DefaultFrameCapacity))
	fs.Float64Var(&f.bulkMB, "bulk-mb", float64(def.Bytes)/(1<<20), "bulk: MiB to transfer")
	fs.BoolVar(&f.quick, "quick", false, fmt.Sprintf("a few seconds in all: losses %s %%, %d messages per echo row (%d inputs per client, %d clients, for actions), pps for %v, bulk of %d MiB, load of %d peers for %v (explicit flags win)",
		formatPercents(quickLosses), quickCount, quickCount, quickActPeers, quickDuration, quickBulkBytes>>20, quickPeers, quickLoad))
	fs.IntVar(&f.reps, "reps", 1, fmt.Sprintf("run each row N times [1, %d], the transports of a link interleaved (A B A B …); the tables show medians and min–max, the summary each ratio's spread over the reps", maxReps))
	fs.StringVar(&f.json, "json", "", "write JSON results to FILE, or to stdout instead of the table with -")
	fs.StringVar(&f.out, "out", "", "write results.json, results.md (a Markdown report) and SVG charts into `DIR`, created if missing")
	f.prof.declare(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tickwire bench [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Runs each transport on each loss rate, one row at a time, through a loopback link")
		fmt.Fprintln(stderr, "conditioner; prints a summary of tickwire's ratios to the other peers, then latency,")
		fmt.Fprintln(stderr, "throughput and cost tables (120 columns), with progress on stderr. With no flags:")
		fmt.Fprintln(stderr, "echo, 64-byte reliable messages at 60 Hz, loss 0/1/5/10/20 %, 25 ms ± 2 ms each")
		fmt.Fprintln(stderr, "way (tickwire, kcp-fast, quic); then pps (64-byte messages for 1 s: tickwire")
		fmt.Fprintln(stderr, "unreliable and reliable, kcp-bulk, a raw UDP floor) and bulk (32 MiB")
		fmt.Fprintln(stderr, "reliable-ordered in 1 KiB messages: tickwire, kcp-bulk, quic), one way, direct")
		fmt.Fprintln(stderr, "at 0 % loss. Each peer runs where it belongs: kcp-fast (kcp-go's fast mode)")
		fmt.Fprintln(stderr, "echo and actions, kcp-bulk (its stream-mode throughput setup) pps and bulk;")
		fmt.Fprintln(stderr, "--transport quic-streams,quic-dgram add quic echo over a stream per message and")
		fmt.Fprintln(stderr, "over RFC 9221 datagrams (unreliable). Every row's settings are in the JSON. One rep")
		fmt.Fprintln(stderr, "of each row; --reps N for medians and spreads (the default suite takes ~85 s).")
		fmt.Fprintln(stderr, "--profile load (not in the default run): --peers clients at 60 Hz against one")
		fmt.Fprintln(stderr, "tickwire server, direct at 0 % loss, for 5 s; server µs per peer-tick, echo")
		fmt.Fprintln(stderr, "round trip, heap per peer. --profile actions (not in the default run): --peers")
		fmt.Fprintln(stderr, "clients (default 8) send one rollback input per 60 Hz frame to one rollback")
		fmt.Fprintln(stderr, "server, each through its own conditioned link, at each --loss; one-way latency")
		fmt.Fprintln(stderr, "from sampling an input to the server applying it, every input exactly once.")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "--out DIR also writes into DIR: results.json (as --json), results.md (the")
		fmt.Fprintln(stderr, "settings, the machine, one table per profile, links to the charts) and SVG charts:")
		fmt.Fprintln(stderr, "latency-cdf-<profile>-loss-<pct>.svg, p99-vs-loss-<profile>.svg and")
		fmt.Fprintln(stderr, "p99-bytes-vs-loss-<profile>.svg for echo, actions and load, throughput-<profile>.svg")
		fmt.Fprintln(stderr, "for pps and bulk. Files of an earlier run stay.")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, chartProfilesUsage)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	return fs
}

// suite turns the parsed flags into a suite; set holds the flags given
// explicitly.
func (f *benchFlags) suite(set map[string]bool) (bench.Suite, error) {
	s := bench.DefaultSuite()
	s.Profiles = nil
	for _, p := range strings.Split(f.profile, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(bench.Profiles, p) {
			return s, fmt.Errorf("--profile %q: want one of %s", p, strings.Join(bench.Profiles, ","))
		}
		s.Profiles = append(s.Profiles, p)
	}
	s.Transports = nil
	for _, t := range strings.Split(f.transports, ",") {
		t = strings.TrimSpace(t)
		if _, err := bench.NewTransport(t); err != nil {
			return s, fmt.Errorf("--transport: %w", err)
		}
		s.Transports = append(s.Transports, t)
	}
	losses, err := parsePercents("loss", f.losses)
	if err != nil {
		return s, err
	}
	s.Losses = losses
	s.Link = bench.Link{Delay: f.delay, Jitter: f.jitter, Dup: f.dup / 100, Burst: f.burst, Seed: f.seed}
	var peers error
	if set["peers"] {
		peers = intIn("peers", f.peers, 1, bench.DefaultPeers)
	}
	// The ranges are the flags' documented ones, which bench.Scenario's
	// Validate also enforces (count and rate have upper bounds only
	// there); zero would mean "default" to the bench package.
	if err := firstErr(
		percent("dup", f.dup),
		burstLen("burst", f.burst),
		durationIn("delay", f.delay, 0, simlink.MaxDelay),
		durationIn("jitter", f.jitter, 0, simlink.MaxDelay),
		intAtLeast("count", f.count, 1),
		positive("rate", f.rate, 0),
		intIn("size", f.size, bench.MinSize, bench.MaxSize),
		intIn("mtu", f.mtu, transport.MinMTU, transport.MaxMTU),
		positiveDuration("duration", f.duration, bench.MaxDuration),
		peers,
		zeroOrIn("max-in-flight", f.inFlight, 1, ackmap.MaxInFlightLimit, "the defaults"),
		durationIn("redundancy-interval", f.redundIval, 0, time.Second),
		zeroOrIn("frame-capacity", f.frameCap, rollback.MinFrameCapacity, rollback.MaxFrameCapacity, "the default"),
		positive("bulk-mb", f.bulkMB, float64(bench.MaxBulkBytes>>20)),
		intIn("reps", f.reps, 1, maxReps),
	); err != nil {
		return s, err
	}
	s.Count, s.Rate, s.Size, s.MTU = f.count, f.rate, f.size, f.mtu
	s.Duration, s.Bytes = f.duration, int64(f.bulkMB*(1<<20))
	s.MaxInFlight, s.FrameCapacity = f.inFlight, f.frameCap
	s.RedundancyInterval = f.redundIval
	mode, ok := redundancyModes[f.redundMode]
	if !ok {
		return s, fmt.Errorf("--redundancy %q: want adaptive, eager, always or off", f.redundMode)
	}
	s.Redundancy = mode
	if set["peers"] {
		s.Peers, s.ActionPeers = f.peers, f.peers
	}
	if set["duration"] {
		s.LoadDuration = f.duration
	}
	if f.quick {
		if !set["peers"] {
			s.Peers, s.ActionPeers = quickPeers, quickActPeers
		}
		if !set["duration"] {
			s.LoadDuration = quickLoad
		}
		if !set["loss"] {
			s.Losses = quickLosses
		}
		if !set["count"] {
			s.Count = quickCount
		}
		if !set["duration"] {
			s.Duration = quickDuration
		}
		if !set["bulk-mb"] {
			s.Bytes = quickBulkBytes
		}
		s.Drain = quickDrain
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// runBench is `tickwire bench`.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f benchFlags
	fs := newBenchFlagSet(&f, stderr)
	if code := parseArgs(fs, args, stderr); code >= 0 {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if slices.Contains(bench.ChartProfiles, strings.TrimSpace(f.profile)) {
		return runChartProfile(ctx, &f, set, args, stdout, stderr)
	}
	suite, err := f.suite(set)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire bench: %v\n", err)
		return exitUsage
	}

	// Create --out's directory now, so that a bad one fails before a
	// minute of running rather than after.
	if f.out != "" {
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			fmt.Fprintf(stderr, "tickwire bench: --out: %v\n", err)
			return exitFailed
		}
	}

	stopProf, err := f.prof.start(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire bench: %v\n", err)
		return exitUsage
	}
	machine := bench.ThisMachine() // its load average before the run's own
	scenarios := suite.Scenarios()
	progress := newProgress(stderr, isTerminal(stderr))
	results, runErr := bench.RunReps(ctx, scenarios, f.reps, progress.row)
	progress.done()
	if err := stopProf(); err != nil {
		fmt.Fprintf(stderr, "tickwire bench: %v\n", err)
	}

	doc := newReport(machine, bench.SettingsOf(suite, f.reps, commandLine(append([]string{"tickwire", "bench"}, args...))), results)
	code := exitOK
	if err := report(f.json, doc, stdout); err != nil {
		fmt.Fprintf(stderr, "tickwire bench: %v\n", err)
		code = exitFailed
	}
	if f.out != "" {
		info := bench.RunInfo{Command: doc.Settings.Command, Suite: suite, Reps: f.reps, Machine: doc.Machine}
		if err := writeOut(f.out, doc, info); err != nil {
			fmt.Fprintf(stderr, "tickwire bench: --out %s: %v\n", f.out, err)
			code = exitFailed
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "tickwire bench: %v\n", runErr)
		code = exitFailed
	}
	for _, r := range results {
		if r.Failed() {
			fmt.Fprintf(stderr, "tickwire bench: FAILED: %s %s loss %v%%: delivered %d of %d\n",
				r.Transport, r.Profile, r.Link.Loss, r.Delivered, r.Sent)
			code = exitFailed
		}
	}
	return code
}

// newReport returns the JSON document of a run: this binary's version
// and commit, the machine m, the settings and results.
func newReport(m bench.Machine, settings bench.Settings, results []bench.Result) bench.Report {
	version, commit := buildStamp()
	return bench.Report{Version: version, Commit: commit, GoVersion: m.GoVersion, Machine: m, Settings: settings, Results: results}
}

// report writes the summary and tables to stdout, and the JSON to stdout
// instead (jsonPath "-") or to a file as well.
func report(jsonPath string, doc bench.Report, stdout io.Writer) error {
	if jsonPath == "-" {
		return bench.WriteReport(stdout, doc)
	}
	if err := bench.WriteText(stdout, doc.Results); err != nil {
		return err
	}
	if jsonPath == "" {
		return nil
	}
	return writeFile(jsonPath, func(w io.Writer) error { return bench.WriteReport(w, doc) })
}

// Files of --out.
const (
	outJSON     = "results.json"
	outMarkdown = "results.md"
)

// writeOut writes into dir (created if missing) results.json, the
// charts, and results.md linking them. info.Charts is filled here.
func writeOut(dir string, doc bench.Report, info bench.RunInfo) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, outJSON), func(w io.Writer) error { return bench.WriteReport(w, doc) }); err != nil {
		return err
	}
	files, err := chart.WriteCharts(dir, doc.Results)
	if err != nil {
		return err
	}
	info.Charts = nil
	for _, f := range files {
		info.Charts = append(info.Charts, filepath.Base(f))
	}
	return writeFile(filepath.Join(dir, outMarkdown), func(w io.Writer) error { return bench.WriteMarkdown(w, doc.Results, info) })
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// commandLine joins args for a shell, single-quoting those that need it.
func commandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r))
		}) {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// parsePercents parses flag's value "0,1,5" into probabilities {0, 0.01,
// 0.05}; an error names the flag and the value.
func parsePercents(flag, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: not a number", flag, f)
		}
		if err := percent(flag, v); err != nil {
			return nil, err
		}
		out = append(out, v/100)
	}
	return out, nil
}

// formatPercents formats probabilities as a comma-separated percent list.
func formatPercents(ps []float64) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.FormatFloat(p*100, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	fh, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := fh.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// redundancyModes maps the --redundancy names to transport.RedundancyMode.
var redundancyModes = map[string]transport.RedundancyMode{
	transport.RedundancyAdaptive.String(): transport.RedundancyAdaptive,
	transport.RedundancyEager.String():    transport.RedundancyEager,
	transport.RedundancyAlways.String():   transport.RedundancyAlways,
	transport.RedundancyOff.String():      transport.RedundancyOff,
}
