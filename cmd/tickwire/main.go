// Command tickwire is tickwire's toolbox. For now it has one job: bench,
// which measures tickwire against kcp-go on this machine, over loopback
// UDP through a link conditioner, and prints a side-by-side table (with
// --out, also a Markdown report and SVG charts).
//
// Usage:
//
//	tickwire bench [flags]   run the benchmark suite (no flags: the default suite)
//	tickwire soak [flags]    run scenario S-I1, the long soak, in virtual time
//	tickwire help            list the subcommands
//
// Exit status: 0 on success, 1 when a run failed (a reliable row lost
// messages, or a pair could not be set up), 2 for bad usage.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands that exist, in help order.
func commands() []command {
	return []command{
		{"bench", "run the benchmark suite: tickwire vs kcp-go over a conditioned loopback link", runBench},
		{"soak", "scenario S-I1: a million reliable messages and an action stream over a bad simulated link", runSoak},
		{"help", "list the subcommands", func(_ context.Context, _ []string, stdout, _ io.Writer) int {
			usage(stdout)
			return exitOK
		}},
	}
}

// run dispatches args to a subcommand and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "tickwire: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

// usage lists the subcommands.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tickwire <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'tickwire <command> -h' for a command's flags.")
}
