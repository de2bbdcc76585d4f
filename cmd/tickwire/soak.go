package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tickwire/tickwire/bench/soak"
)

// runSoak is the soak subcommand: scenario S-I1 (bench/soak) in virtual
// time, its result printed as a summary or as JSON; exit 1 on any
// violation.
func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		count   uint64
		seed    uint64
		perTick int
		maxWall time.Duration
		jsonOut string
		prof    profileFlags
	)
	fs := flag.NewFlagSet("tickwire soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&count, "count", soak.DefaultCount, "reliable messages to deliver (over sim(500ms, 100ms, 25%) with 25% duplication)")
	fs.Uint64Var(&seed, "seed", soak.DefaultSeed, "simulated network and input seed (same seed, same run)")
	fs.IntVar(&perTick, "per-tick", soak.DefaultPerTick, "messages offered per stream per 1/60 s tick (back-pressure defers the rest)")
	fs.DurationVar(&maxWall, "max-wall", soak.DefaultMaxWall, "real-time bound: a run still going then fails as incomplete")
	fs.StringVar(&jsonOut, "json", "", "write the JSON result to FILE, or to stdout instead of the summary with -")
	prof.declare(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 0 || count == 0 || perTick <= 0 || maxWall <= 0 {
		fmt.Fprintln(stderr, "tickwire soak: --count, --per-tick and --max-wall must be positive, and no arguments follow the flags")
		return exitUsage
	}
	stopProf, err := prof.start(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire soak: %v\n", err)
		return exitUsage
	}
	res, err := soak.Run(ctx, soak.Config{Count: count, Seed: seed, PerTick: perTick, MaxWall: maxWall})
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
		printSoak(stdout, res)
	}
	if !res.OK {
		return exitFailed
	}
	return exitOK
}

// printSoak writes the human-readable summary of a soak result.
func printSoak(w io.Writer, r soak.Result) {
	fmt.Fprintf(w, "S-I1 soak: %d messages over %s, seed %d\n", r.Count, r.Link, r.Seed)
	for _, s := range r.Streams {
		kind := "unordered"
		if s.Ordered {
			kind = "ordered"
		}
		fmt.Fprintf(w, "  stream %d (%-9s) sent %d delivered %d missing %d duplicates %d out-of-order %d reordered %d\n",
			s.Stream, kind, s.Sent, s.Delivered, s.Missing, s.Duplicates, s.OutOfOrder, s.Reordered)
	}
	fmt.Fprintf(w, "  time: %d ticks, %.0f s virtual, %.2f s wall (%.0fx real time)\n",
		r.Ticks, r.Virtual.Seconds(), r.Wall.Seconds(), r.Virtual.Seconds()/max(r.Wall.Seconds(), 1e-9))
	fmt.Fprintf(w, "  link: %d datagrams, %d duplicated, %d lost; receiver dropped %d duplicate datagrams and %d duplicate messages, buffered %d behind gaps; %d re-sends, %d sends deferred by back-pressure\n",
		r.Datagrams, r.LinkDuplicated, r.LinkLost, r.DuplicateDatagrams, r.ReliableDuplicates, r.ReliableBuffered, r.ReliableResent, r.QueueFull)
	a := r.Action
	fmt.Fprintf(w, "  action stream: %d frames, confirmed %d, checksums verified %d, desyncs %d, last-frame checksum client %#x server %#x; inputs %d (late %d, dropped %d), rewinds server %d client %d, converged %v\n",
		a.Frames, a.Confirmed, a.ChecksumsVerified, a.Desyncs, a.ClientSum, a.ServerSum, a.Inputs, a.InputsLate, a.InputsDropped, a.ServerRewinds, a.ClientRewinds, a.Converged)
	fmt.Fprintf(w, "  memory: heap in use %.1f MiB at %.0f%% -> %.1f MiB at 100%% (limit %.1f MiB); goroutines %d -> %d\n",
		mib(r.First.HeapInuse), r.First.Progress*100, mib(r.Last.HeapInuse), mib(r.HeapLimit), r.First.Goroutines, r.Last.Goroutines)
	for _, v := range r.ViolationList {
		fmt.Fprintf(w, "  VIOLATION: %s\n", v)
	}
	if r.Violations > uint64(len(r.ViolationList)) {
		fmt.Fprintf(w, "  ... %d violations in all\n", r.Violations)
	}
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "verdict: %s\n", verdict)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
