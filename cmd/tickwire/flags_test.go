package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/bench"
	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

// Every flag check refuses exactly the values outside the range its
// message states, and the message carries the value given and the limit:
// each row runs the command line and wants exit 2 with that message on
// stderr, or — for a value on the boundary — no message about that flag.
// (A cancelled context: a row that slips through stops at once.)
func TestFlagChecksAgreeWithMessages(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lo := "127.0.0.1:9"
	srv := []string{"server", "--listen", "127.0.0.1:0"}
	cli := []string{"client", "--connect", lo}
	rel := []string{"relay", "--listen", "127.0.0.1:0", "--to", lo}
	mtuRange := fmt.Sprintf("want %d to %d", transport.MinMTU, transport.MaxMTU)
	sizeRange := fmt.Sprintf("want %d to %d", bench.MinSize, bench.MaxSize)
	d := func(v time.Duration) string { return v.String() }
	cases := []struct {
		args []string
		want string // the error message; "" = this flag's value is accepted
	}{
		// --mtu: said "at least 576", checked < 1.
		{[]string{"bench", "--mtu", "575"}, "--mtu 575: " + mtuRange},
		{[]string{"bench", "--mtu", "1"}, "--mtu 1: " + mtuRange},
		{[]string{"bench", "--mtu", "1473"}, "--mtu 1473: " + mtuRange},
		{append(srv, "--mtu", "100"), "--mtu 100: " + mtuRange},
		{append(srv, "--mtu", "0"), "--mtu 0: " + mtuRange},
		{append(cli, "--mtu", "9000"), "--mtu 9000: " + mtuRange},
		{append(cli, "--mtu", "575"), "--mtu 575: " + mtuRange},
		// --size: said "at least 16", checked < 1.
		{[]string{"bench", "--size", "15"}, "--size 15: " + sizeRange},
		{[]string{"bench", "--size", "1025"}, "--size 1025: " + sizeRange},
		{append(cli, "--size", "8"), "--size 8: " + sizeRange},
		// --max-in-flight and --frame-capacity: said "at least 0", the
		// help (and bench) say 0 or a range.
		{[]string{"bench", "--max-in-flight", "-1"}, fmt.Sprintf("--max-in-flight -1: want 0 (the defaults) or 1 to %d", ackmap.MaxInFlightLimit)},
		{[]string{"bench", "--max-in-flight", fmt.Sprint(ackmap.MaxInFlightLimit + 1)}, fmt.Sprintf("--max-in-flight %d: want 0 (the defaults) or 1 to %d", ackmap.MaxInFlightLimit+1, ackmap.MaxInFlightLimit)},
		{[]string{"bench", "--frame-capacity", fmt.Sprint(rollback.MinFrameCapacity - 1)}, fmt.Sprintf("--frame-capacity %d: want 0 (the default) or %d to %d", rollback.MinFrameCapacity-1, rollback.MinFrameCapacity, rollback.MaxFrameCapacity)},
		{[]string{"bench", "--frame-capacity", fmt.Sprint(rollback.MaxFrameCapacity + 1)}, fmt.Sprintf("--frame-capacity %d: want 0 (the default) or %d to %d", rollback.MaxFrameCapacity+1, rollback.MinFrameCapacity, rollback.MaxFrameCapacity)},
		{[]string{"bench", "--redundancy", "sometimes"}, `--redundancy "sometimes": want adaptive, eager, always or off`},
		{[]string{"bench", "--redundancy-interval", "2s"}, "--redundancy-interval 2s: want 0s to 1s"},
		{[]string{"bench", "--peers", "0"}, fmt.Sprintf("--peers 0: want 1 to %d", bench.DefaultPeers)},
		{[]string{"bench", "--peers", fmt.Sprint(bench.DefaultPeers + 1)}, fmt.Sprintf("--peers %d: want 1 to %d", bench.DefaultPeers+1, bench.DefaultPeers)},
		// Percentages, bursts, delays.
		{[]string{"bench", "--loss", "0,100.5"}, "--loss 100.5: want 0 to 100 (percent)"},
		{[]string{"bench", "--loss", "1,x"}, `--loss "x": not a number`},
		{[]string{"bench", "--dup", "NaN"}, "--dup NaN: want 0 to 100 (percent)"},
		{[]string{"bench", "--dup", "-0.5"}, "--dup -0.5: want 0 to 100 (percent)"},
		{[]string{"bench", "--burst", "0.5"}, "--burst 0.5: want at least 1 (1: independent loss) and finite"},
		{[]string{"bench", "--delay", "-1ms"}, "--delay -1ms: want 0s to " + d(simlink.MaxDelay)},
		{[]string{"bench", "--jitter", "2h"}, "--jitter 2h0m0s: want 0s to " + d(simlink.MaxDelay)},
		{append(rel, "--loss", "101"), "--loss 101: want 0 to 100 (percent)"},
		{append(rel, "--dup", "-1"), "--dup -1: want 0 to 100 (percent)"},
		{append(rel, "--burst", "Inf"), "--burst +Inf: want at least 1 (1: independent loss) and finite"},
		{append(rel, "--delay", "-1ms"), "--delay -1ms: want 0s to " + d(simlink.MaxDelay)},
		{append(rel, "--jitter", "-1ms"), "--jitter -1ms: want 0s to " + d(simlink.MaxDelay)},
		// Counts, rates and durations.
		{[]string{"bench", "--count", "0"}, "--count 0: want at least 1"},
		{[]string{"bench", "--rate", "0"}, "--rate 0: want more than 0 (and finite)"},
		{[]string{"bench", "--rate", "Inf"}, "--rate +Inf: want more than 0 (and finite)"},
		{[]string{"bench", "--duration", "0"}, "--duration 0s: want more than 0 and at most " + d(bench.MaxDuration)},
		{[]string{"bench", "--duration", "61s"}, "--duration 1m1s: want more than 0 and at most " + d(bench.MaxDuration)},
		{[]string{"bench", "--bulk-mb", "0"}, "--bulk-mb 0: want more than 0 and at most 1024"},
		{[]string{"bench", "--bulk-mb", "1024.5"}, "--bulk-mb 1024.5: want more than 0 and at most 1024"},
		{append(srv, "--duration", "-1s"), "--duration -1s: want 0 or more"},
		{append(cli, "--count", "-3"), "--count -3: want at least 1"},
		{append(cli, "--rate", "-1"), "--rate -1: want more than 0 (and finite)"},
		{append(cli, "--drain", "-1s"), "--drain -1s: want 0 or more"},
		{append(cli, "--connect-timeout", "0"), "--connect-timeout 0s: want more than 0"},
		{append(rel, "--duration", "-1s"), "--duration -1s: want 0 or more"},
		{[]string{"soak", "--count", "0"}, "--count 0: want at least 1"},
		{[]string{"soak", "--per-tick", "0"}, "--per-tick 0: want at least 1"},
		{[]string{"soak", "--max-wall", "0"}, "--max-wall 0s: want more than 0"},
		{[]string{"soak", "--max-virtual", "-1s"}, "--max-virtual -1s: want more than 0"},
		{[]string{"soak", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(ctx, c.args, &stdout, &stderr)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d; stderr: %s", c.args, code, exitUsage, stderr.String())
		}
		if got := stderr.String(); !strings.Contains(got, c.want) {
			t.Errorf("%q: stderr %q, want it to contain %q", c.args, got, c.want)
		}
	}
}

// The boundary values every message names as allowed pass the checks.
func TestFlagChecksAcceptTheirBounds(t *testing.T) {
	for _, mtu := range []int{transport.MinMTU, transport.MaxMTU} {
		if err := checkServerFlags(bench.ProfileEcho, 0, mtu); err != nil {
			t.Errorf("server --mtu %d: %v", mtu, err)
		}
		for _, size := range []int{bench.MinSize, bench.MaxSize} {
			if err := checkClientFlags(bench.ProfileEcho, bench.Tickwire, 1, 0.001, size, mtu, 0, time.Nanosecond); err != nil {
				t.Errorf("client --mtu %d --size %d: %v", mtu, size, err)
			}
		}
	}
	for _, c := range []struct{ loss, dup, burst float64 }{{0, 0, 1}, {100, 100, 1}, {0, 0, 1e9}} {
		if err := checkRelayFlags(c.loss, c.dup, c.burst, simlink.MaxDelay, 0, 0); err != nil {
			t.Errorf("relay %+v: %v", c, err)
		}
	}
	if err := checkSoakFlags(1, 1, time.Nanosecond, time.Nanosecond); err != nil {
		t.Errorf("soak minimums: %v", err)
	}
	// bench: the suite is built from the flags (and bench's Validate agrees).
	for _, args := range [][]string{
		{"--mtu", fmt.Sprint(transport.MinMTU), "--size", fmt.Sprint(bench.MinSize)},
		{"--mtu", fmt.Sprint(transport.MaxMTU), "--size", fmt.Sprint(bench.MaxSize)},
		{"--max-in-flight", "0", "--frame-capacity", "0"},
		{"--max-in-flight", "1", "--frame-capacity", fmt.Sprint(rollback.MinFrameCapacity)},
		{"--max-in-flight", fmt.Sprint(ackmap.MaxInFlightLimit), "--frame-capacity", fmt.Sprint(rollback.MaxFrameCapacity)},
		{"--profile", "load", "--peers", "1"},
		{"--profile", "load", "--peers", fmt.Sprint(bench.DefaultPeers)},
		{"--loss", "0,100", "--dup", "100", "--delay", "0s", "--jitter", simlink.MaxDelay.String()},
		{"--duration", bench.MaxDuration.String(), "--bulk-mb", "1024", "--count", "1", "--rate", "0.5"},
	} {
		var f benchFlags
		var stderr bytes.Buffer
		fs := newBenchFlagSet(&f, &stderr)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		set := map[string]bool{}
		for i := 0; i < len(args); i += 2 {
			set[strings.TrimPrefix(args[i], "--")] = true
		}
		if _, err := f.suite(set); err != nil {
			t.Errorf("bench %q: %v", args, err)
		}
	}
	if err := positive("x", math.SmallestNonzeroFloat64, 0); err != nil {
		t.Errorf("positive of the smallest float: %v", err)
	}
}
