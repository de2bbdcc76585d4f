// Command tickwire is tickwire's toolbox: bench, which measures tickwire
// against kcp-go and quic-go on this machine, over loopback UDP through a link
// conditioner, and prints a side-by-side table (with --out, also a
// Markdown report and SVG charts); server, client and relay, which run the
// bench's echo traffic across real processes (or machines); and soak.
//
// Usage:
//
//	tickwire bench [flags]    run the benchmark suite (no flags: the default suite)
//	tickwire server --listen ADDR [flags]
//	                          serve the echo profile until interrupted or --duration
//	tickwire client --connect ADDR [flags]
//	                          run one echo row against a server; print its result
//	tickwire relay --listen ADDR --to ADDR [flags]
//	                          the link conditioner between processes: loss, delay, jitter, dup
//	tickwire procbench [flags]
//	                          run server, relay and client as child processes per
//	                          transport and loss; print CPU and system calls per message
//	tickwire soak [flags]     run scenario S-I1, the long soak, in virtual time
//	tickwire keygen [--x25519]
//	                          print a new fleet key, or an X25519 key pair
//	tickwire token --key FILE --client-id N --server ADDR[,ADDR] [flags]
//	                          issue a connect token (its public part) for development
//	tickwire version          print the CLI and library versions and the VCS revision
//	                          (also tickwire --version)
//	tickwire help             list the subcommands
//
// Across processes, for example (each line in its own terminal):
//
//	tickwire server --listen 127.0.0.1:7000
//	tickwire relay --listen 127.0.0.1:7001 --to 127.0.0.1:7000 --loss 10 --delay 25ms --jitter 2ms
//	tickwire client --connect 127.0.0.1:7001 --count 600
//
// The server and the relay print "listening on ADDR" to stderr once bound
// (so --listen 127.0.0.1:0 suits scripts) and their counters to stdout on
// exit. The client's row is measured like a bench row, but its link is
// whatever sits between the processes (reported as unknown), its wire
// bytes are its own socket's, and its CPU and memory figures are its own
// process's. Every subcommand takes --cpuprofile, --memprofile, --trace
// and --pprof. SIGINT or SIGTERM ends a server or relay cleanly.
//
// Exit status: 0 on success, 1 when a run failed (a reliable row lost
// messages, a pair could not be set up, the server did not answer), 2 for
// bad usage.
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
		{"bench", "run the benchmark suite: tickwire vs kcp-go and quic-go over a conditioned loopback link", runBench},
		{"server", "serve the echo profile for clients in other processes, until interrupted", runServer},
		{"client", "run one echo row against a server in another process; exit 1 if it fails", runClient},
		{"relay", "the bench's link conditioner between processes or machines", runRelay},
		{"procbench", "echo across processes (server, relay, client as children): CPU and system calls per message per process", runProcbench},
		{"soak", "scenario S-I1: reliable messages of 1 B to 16 KiB both ways over a bad simulated link, at the defaults, then tuned", runSoak},
		{"keygen", "print a new fleet key (fleet-key:<hex>), or with --x25519 an X25519 key pair (x25519-private:<hex>, x25519-public:<hex>)", runKeygen},
		{"token", "issue a connect token for development: its public part as one base64url line (--hex: hex)", runToken},
		{"version", "print the CLI and library versions and the VCS revision they were built from", runVersion},
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
	case "-version", "--version":
		return runVersion(ctx, args[1:], stdout, stderr)
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
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'tickwire <command> -h' for a command's flags.")
}
