package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tickwire/tickwire/bench/soak"
)

// runSoak is the soak subcommand: scenario S-I1 (bench/soak) in virtual
// time, phase by phase, its result printed as a summary or as JSON; exit 1
// on any violation.
func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		count   uint64
		seed    uint64
		perTick int
		maxWall time.Duration
		maxVirt time.Duration
		phases  string
		jsonOut string
		prof    profileFlags
	)
	var names []string
	for _, p := range soak.DefaultPhases() {
		names = append(names, p.Name)
	}
	fs := flag.NewFlagSet("tickwire soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&count, "count", soak.DefaultCount, "reliable messages each phase delivers, half each way, 1 B to 16 KiB (over sim(500ms, 100ms, 25%) with 25% duplication)")
	fs.Uint64Var(&seed, "seed", soak.DefaultSeed, "simulated network, message size and cadence seed (same seed, same run)")
	fs.IntVar(&perTick, "per-tick", soak.DefaultPerTick, "messages offered per stream per 1/60 s of virtual time (back-pressure defers the rest)")
	fs.DurationVar(&maxWall, "max-wall", soak.DefaultMaxWall, "real-time bound on the whole run: a phase still going then fails as incomplete")
	fs.DurationVar(&maxVirt, "max-virtual", soak.DefaultMaxVirtual, "simulated-time bound on each phase: a phase still going then fails as incomplete")
	fs.StringVar(&phases, "phases", strings.Join(names, ","), "comma-separated phases to run, in order (defaults: transport.Config{}; tuned: wider windows)")
	fs.StringVar(&jsonOut, "json", "", "write the JSON result to FILE, or to stdout instead of the summary with -")
	prof.declare(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "tickwire soak: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if err := checkSoakFlags(count, perTick, maxWall, maxVirt); err != nil {
		fmt.Fprintf(stderr, "tickwire soak: %v\n", err)
		return exitUsage
	}
	var run []soak.Phase
	for _, name := range strings.Split(phases, ",") {
		p, ok := soak.PhaseByName(strings.TrimSpace(name))
		if !ok {
			fmt.Fprintf(stderr, "tickwire soak: unknown phase %q (phases: %s)\n", name, strings.Join(names, ", "))
			return exitUsage
		}
		run = append(run, p)
	}
	stopProf, err := prof.start(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire soak: %v\n", err)
		return exitUsage
	}
	res, err := soak.Run(ctx, soak.Config{Count: count, Seed: seed, PerTick: perTick, MaxWall: maxWall, MaxVirtual: maxVirt, Phases: run})
	if perr := stopProf(); perr != nil {
		fmt.Fprintf(stderr, "tickwire soak: %v\n", perr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tickwire soak: %v\n", err)
		return exitFailed
	}
	if jsonOut != "" {
		w := stdout
		if jsonOut != "-" {
			fh, err := os.Create(jsonOut)
			if err != nil {
				fmt.Fprintf(stderr, "tickwire soak: %v\n", err)
				return exitFailed
			}
			defer fh.Close()
			w = fh
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "tickwire soak: %v\n", err)
			return exitFailed
		}
	}
	if jsonOut != "-" {
		res.WriteText(stdout)
	}
	if !res.OK {
		return exitFailed
	}
	return exitOK
}

// checkSoakFlags checks the soak's flags: each must be positive (zero
// would mean "default" to bench/soak).
func checkSoakFlags(count uint64, perTick int, maxWall, maxVirt time.Duration) error {
	var countErr error
	if count == 0 {
		countErr = fmt.Errorf("--count %d: want at least 1", count)
	}
	return firstErr(
		countErr,
		intAtLeast("per-tick", perTick, 1),
		positiveDuration("max-wall", maxWall, 0),
		positiveDuration("max-virtual", maxVirt, 0),
	)
}
