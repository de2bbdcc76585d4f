package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tickwire/tickwire/bench"
	"github.com/tickwire/tickwire/bench/soak"
)

// kind names the JSON type a schema field must have.
type kind int

const (
	str kind = iota
	number
	object
	array
)

// schema is the Result JSON schema: every field and its type.
var schema = map[string]kind{
	"transport": str, "profile": str, "delivery": str, "config": object, "not_supported": str,
	"link": object, "latency_kind": str,
	"sent": number, "delivered": number, "latency_ms": object, "latency_cdf": array,
	"payload_bytes": number, "wire_bytes": number, "redundant_bytes": number, "cpu_seconds": number,
	"wall_seconds": number, "allocs_per_msg": number, "peak_rss_bytes": number,
	"throughput_msgs_per_s": number, "throughput_datagrams_per_s": number, "throughput_mb_per_s": number,
	"peers": number, "refused": number, "server_cpu_us_per_peer_tick": number,
	"server_user_us_per_peer_tick": number, "server_sys_us_per_peer_tick": number, "server_wall_us_per_peer_tick": number,
	"memory_per_peer_bytes": number,
	"rep":                   number,
}

var (
	linkSchema    = []string{"loss", "delay_ms", "jitter_ms", "dup", "burst", "seed"}
	latencySchema = []string{"p50", "p90", "p99", "p999", "max"}
)

// checkNumbers checks that m has exactly the keys, all numbers.
func checkNumbers(t *testing.T, what string, m map[string]any, keys []string) {
	t.Helper()
	if len(m) != len(keys) {
		t.Errorf("%s: %d fields, want %d: %v", what, len(m), len(keys), m)
	}
	for _, k := range keys {
		if _, ok := m[k].(float64); !ok {
			t.Errorf("%s.%s = %#v, want a number", what, k, m[k])
		}
	}
}

func TestBenchQuickJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	outDir := filepath.Join(dir, "out", "new") // --out creates it
	files := map[string]string{}
	jsonPath := filepath.Join(dir, "results.json")
	args := []string{"bench", "--quick", "--json", jsonPath, "--out", outDir, "--pprof", "127.0.0.1:0"}
	for _, f := range []string{"cpuprofile", "memprofile", "trace"} {
		files[f] = filepath.Join(dir, f)
		args = append(args, "--"+f, files[f])
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if code := run(ctx, args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	t.Logf("quick suite took %v", time.Since(start))
	checkText(t, stdout.String(), stderr.String(), 13)

	jsonOut, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(jsonOut, &doc); err != nil {
		t.Fatalf("--json is not JSON: %v\n%s", err, jsonOut)
	}
	checkDocument(t, jsonOut, doc)
	rows, ok := doc["results"].([]any)
	if !ok {
		t.Fatalf("document has no results: %v", doc)
	}
	if len(rows) != 13 {
		t.Errorf("%d rows, want 13 (echo: 3 transports × 2 losses; pps: 4 rows; bulk: 3)", len(rows))
	}
	transports := map[string]int{}
	profiles := map[string]int{}
	for i, row := range rows {
		r, ok := row.(map[string]any)
		if !ok {
			t.Fatalf("row %d is %T", i, row)
		}
		if len(r) != len(schema) {
			t.Errorf("row %d: %d fields, want %d", i, len(r), len(schema))
		}
		for k, want := range schema {
			var ok bool
			switch want {
			case str:
				_, ok = r[k].(string)
			case number:
				_, ok = r[k].(float64)
			case object:
				_, ok = r[k].(map[string]any)
			case array:
				_, ok = r[k].([]any)
			}
			if !ok {
				t.Errorf("row %d: %s = %#v, wrong type or missing", i, k, r[k])
			}
		}
		if t.Failed() {
			continue
		}
		checkConfig(t, i, r)
		checkNumbers(t, "link", r["link"].(map[string]any), linkSchema)
		checkNumbers(t, "latency_ms", r["latency_ms"].(map[string]any), latencySchema)
		profiles[r["profile"].(string)]++
		cdf := r["latency_cdf"].([]any)
		if r["profile"] != "echo" {
			if len(cdf) != 0 {
				t.Errorf("row %d (%v): latency_cdf %v, want []", i, r["profile"], cdf)
			}
			checkThroughputRow(t, i, r)
			continue
		}
		checkCDF(t, i, cdf, r["latency_ms"].(map[string]any))
		if r["latency_kind"] != "rtt" {
			t.Errorf("row %d: kind %v, profile %v", i, r["latency_kind"], r["profile"])
		}
		sent, delivered := r["sent"].(float64), r["delivered"].(float64)
		if sent != 30 || delivered != sent {
			t.Errorf("row %d (%v): delivered %v of %v, want 30 of 30", i, r["transport"], delivered, sent)
		}
		if p99 := r["latency_ms"].(map[string]any)["p99"].(float64); p99 < 50 || p99 > 2000 {
			t.Errorf("row %d: p99 %v ms on a 25 ms ± 2 ms link each way", i, p99)
		}
		if r["wire_bytes"].(float64) <= 0 || r["wall_seconds"].(float64) <= 0 {
			t.Errorf("row %d: no wire bytes or wall time: %v", i, r)
		}
		transports[r["transport"].(string)]++
	}
	if transports["tickwire"] != 2 || transports["kcp-fast"] != 2 || transports["quic"] != 2 {
		t.Errorf("echo transports %v, want tickwire, kcp-fast and quic twice each", transports)
	}
	if profiles["echo"] != 6 || profiles["pps"] != 4 || profiles["bulk"] != 3 {
		t.Errorf("profiles %v, want echo 6, pps 4, bulk 3", profiles)
	}
	for f, path := range files {
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Errorf("--%s wrote nothing: %v", f, err)
		}
	}
	if !strings.Contains(stderr.String(), "pprof: http://127.0.0.1:") {
		t.Errorf("no pprof address on stderr: %s", stderr.String())
	}
	checkOut(t, outDir, jsonOut)
}

// checkText checks the text output of a quick run: every line at most
// 120 columns, the summary block first with its ratios, the tables after
// it; and on stderr a progress line per row (rows of them).
func checkText(t *testing.T, out, errOut string, rows int) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 120 {
			t.Errorf("a line of %d columns: %s", n, line)
		}
	}
	if !strings.HasPrefix(out, "Summary: 1 rep of each row") {
		t.Errorf("output does not start with the summary:\n%s", out)
	}
	for _, s := range []string{"echo p99 at 0 % loss", "echo p99 at 10 % loss", "best other: ", "echo wire bytes/msg at 0 %",
		"pps unrel msg/s", "pps rel msg/s", "bulk MB/s", "every reliable row delivered every message (13 rows)",
		"\n\necho: round-trip latency", "\n\npps and bulk: throughput", "\n\ncost: "} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	for k := 1; k <= rows; k++ {
		if !strings.Contains(errOut, fmt.Sprintf("bench: row %d/%d ", k, rows)) {
			t.Errorf("no progress line for row %d/%d on stderr:\n%s", k, rows, errOut)
		}
	}
	if !strings.Contains(errOut, " elapsed, ETA ") {
		t.Errorf("progress without elapsed and ETA:\n%s", errOut)
	}
}

// checkDocument checks the JSON document's top level: version, commit,
// Go version, machine, settings and summary, in that order, before the
// results.
func checkDocument(t *testing.T, raw []byte, doc map[string]any) {
	t.Helper()
	keys := []string{"version", "commit", "go_version", "machine", "settings", "summary", "results"}
	if len(doc) != len(keys) {
		t.Errorf("top-level keys %v, want %v", doc, keys)
	}
	at := -1
	for _, k := range keys {
		i := bytes.Index(raw, []byte("\n  \""+k+"\": "))
		if i < at {
			t.Errorf("%s out of order", k)
		}
		at = i
	}
	if v, _ := doc["version"].(string); v == "" {
		t.Errorf("version %q", doc["version"])
	}
	if _, ok := doc["commit"].(string); !ok {
		t.Errorf("commit %v", doc["commit"])
	}
	if v, _ := doc["go_version"].(string); !strings.HasPrefix(v, "go") {
		t.Errorf("go_version %v", doc["go_version"])
	}
	m, _ := doc["machine"].(map[string]any)
	if n, _ := m["num_cpu"].(float64); n < 1 || m["goos"] == "" || m["goarch"] == "" {
		t.Errorf("machine %v", m)
	}
	set, _ := doc["settings"].(map[string]any)
	if set["reps"] != 1.0 || set["count"] != float64(quickCount) || set["mtu"] != 1200.0 || set["delay_ms"] != 25.0 ||
		!strings.HasPrefix(fmt.Sprint(set["command"]), "tickwire bench --quick") {
		t.Errorf("settings %v", set)
	}
	if sum, _ := doc["summary"].([]any); len(sum) != 7 { // p99 and bytes at 2 losses, pps × 2, bulk
		t.Errorf("summary %v", sum)
	}
}

// checkConfig checks that row i names its peer configuration: the
// transport, its delivery, and settings including the MTU wherever the
// peer has one.
func checkConfig(t *testing.T, i int, r map[string]any) {
	t.Helper()
	cfg := r["config"].(map[string]any)
	set, ok := cfg["settings"].(map[string]any)
	if cfg["name"] != r["transport"] || !ok || len(set) < 3 {
		t.Errorf("row %d (%v %v): config %v", i, r["transport"], r["profile"], cfg)
		return
	}
	if set["delivery"] != r["delivery"] || (r["delivery"] != "reliable" && r["delivery"] != "unreliable") {
		t.Errorf("row %d (%v %v): delivery %v, settings say %v", i, r["transport"], r["profile"], r["delivery"], set["delivery"])
	}
	_, mtu := set["mtu"]
	_, pkt := set["initial_packet_size"]
	if r["transport"] != "raw" && !mtu && !pkt {
		t.Errorf("row %d (%v %v): no MTU in settings %v", i, r["transport"], r["profile"], set)
	}
}

// checkOut checks what --out wrote for the quick suite: results.json as
// --json wrote it, results.md with a section per profile linking every
// chart, and the charts.
func checkOut(t *testing.T, dir string, jsonOut []byte) {
	t.Helper()
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("--out directory: %v, %v", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "results.json")); err != nil || !bytes.Equal(b, jsonOut) {
		t.Errorf("results.json (%v) differs from --json -", err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"# tickwire bench", "tickwire bench --quick --json ", "**Settings:** profiles echo, pps, bulk", "**Machine:** ", "## Summary", "## echo: round-trip latency", "## pps and bulk: throughput", "## cost: ", "| tickwire |", "| kcp-fast |", "| kcp-bulk |", "| quic |", "## Peer settings", "**kcp-bulk**, bulk: "} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("results.md lacks %q", s)
		}
	}
	charts := []string{
		"p99-vs-loss-echo.svg", "p99-bytes-vs-loss-echo.svg", "latency-cdf-echo-loss-0.svg", "latency-cdf-echo-loss-10.svg",
		"throughput-pps.svg", "throughput-bulk.svg",
	}
	for _, c := range charts {
		b, err := os.ReadFile(filepath.Join(dir, c))
		if err != nil || !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.Contains(b, []byte("<svg ")) {
			t.Errorf("%s: %v, %.80q", c, err, b)
		}
		if !bytes.Contains(md, []byte("]("+c+")")) {
			t.Errorf("results.md does not link %s", c)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(charts)+2 {
		t.Errorf("%d files in --out, want %d", len(entries), len(charts)+2)
	}
}

func TestBenchOutErrors(t *testing.T) {
	// --out under a regular file: exit 1 at once, before running.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"bench", "--quick", "--out", filepath.Join(file, "out")}, &stdout, &stderr); code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	if !strings.Contains(stderr.String(), "tickwire bench: --out:") || stdout.Len() != 0 {
		t.Errorf("stderr %q, stdout %q", stderr.String(), stdout.String())
	}

	// A file of --out that cannot be written: the error names it.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "results.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	rows := []bench.Result{{Transport: bench.Tickwire, Profile: bench.ProfileEcho, LatencyKind: bench.RTT, Sent: 1, Delivered: 1}}
	err := writeOut(dir, bench.Report{Results: rows}, bench.RunInfo{Suite: bench.DefaultSuite()})
	if err == nil || !strings.Contains(err.Error(), "results.md") {
		t.Errorf("writeOut over a directory: %v", err)
	}
}

func TestCommandLine(t *testing.T) {
	got := commandLine([]string{"tickwire", "bench", "--out", "docs/x y", "--loss", "0,1.5", "it's", ""})
	if want := `tickwire bench --out 'docs/x y' --loss 0,1.5 'it'\''s' ''`; got != want {
		t.Errorf("commandLine = %s, want %s", got, want)
	}
}

// checkCDF checks an echo row's latency_cdf: {p, ms} points ascending in
// both, from 0 to 100, its last point the max.
func checkCDF(t *testing.T, i int, cdf []any, latency map[string]any) {
	t.Helper()
	if len(cdf) < 10 {
		t.Errorf("row %d: %d CDF points", i, len(cdf))
		return
	}
	var prevP, prevMS float64 = -1, -1
	for j, pt := range cdf {
		m, _ := pt.(map[string]any)
		checkNumbers(t, fmt.Sprintf("row %d latency_cdf[%d]", i, j), m, []string{"p", "ms"})
		p, ms := m["p"].(float64), m["ms"].(float64)
		if p <= prevP || ms < prevMS {
			t.Errorf("row %d: latency_cdf not ascending at %d: %v", i, j, cdf)
			return
		}
		prevP, prevMS = p, ms
	}
	if first := cdf[0].(map[string]any); first["p"] != 0.0 || first["ms"].(float64) <= 0 {
		t.Errorf("row %d: first CDF point %v", i, first)
	}
	if prevP != 100 || prevMS != latency["max"] {
		t.Errorf("row %d: last CDF point p%v = %v ms, want p100 = max %v ms", i, prevP, prevMS, latency["max"])
	}
}

// checkThroughputRow checks a pps or bulk row of the quick suite.
func checkThroughputRow(t *testing.T, i int, r map[string]any) {
	t.Helper()
	sent, delivered := r["sent"].(float64), r["delivered"].(float64)
	if r["latency_kind"] != "none" || r["latency_ms"].(map[string]any)["p99"].(float64) != 0 {
		t.Errorf("row %d: latency kind %v, latency %v", i, r["latency_kind"], r["latency_ms"])
	}
	if r["throughput_msgs_per_s"].(float64) <= 0 || r["throughput_mb_per_s"].(float64) <= 0 {
		t.Errorf("row %d (%v %v): no throughput: %v", i, r["profile"], r["transport"], r)
	}
	switch r["profile"] {
	case "pps":
		if delivered <= 0 || delivered > sent {
			t.Errorf("row %d (pps %v): delivered %v of %v", i, r["transport"], delivered, sent)
		}
	case "bulk":
		// 2 MiB in 1 KiB chunks, each checked for order and CRC-32C;
		// kcp's window may not send them all in the 300 ms bound on a
		// loaded machine, tickwire's does with a wide margin.
		if delivered != sent || sent <= 0 || (r["transport"] == "tickwire" && sent != 2048) {
			t.Errorf("row %d (bulk %v): delivered %v of %v, want all of 2048", i, r["transport"], delivered, sent)
		}
	default:
		t.Errorf("row %d: profile %v", i, r["profile"])
	}
}

func TestBadUsage(t *testing.T) {
	// A cancelled context: should a bad flag slip through, the suite stops
	// at once (exit 1) instead of running for a minute.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{},
		{"nope"},
		{"bench", "--bogus"},
		{"bench", "--loss", "200"},
		{"bench", "--loss", "1,x"},
		{"bench", "--transport", "tcp"},
		{"bench", "--profile", "nope"},
		{"bench", "--profile", "pps,"},
		{"bench", "--profile", "echo", "--transport", "raw"},
		{"bench", "--duration", "0"},
		{"bench", "--bulk-mb", "0"},
		{"bench", "--bulk-mb", "5000"},
		{"bench", "--size", "8"},
		{"bench", "--mtu", "9000"},
		{"bench", "--count", "0"},
		{"bench", "--rate", "0"},
		{"bench", "--size", "0"},
		{"bench", "--mtu", "0"},
		{"bench", "--loss", ""},
		{"bench", "--rate", "-1"},
		{"bench", "--dup", "101"},
		{"bench", "--burst", "0.5"},
		{"bench", "--delay", "-1ms"},
		{"bench", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(ctx, args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
		if stderr.Len() == 0 {
			t.Errorf("%q: no error message", args)
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: wrote to stdout: %s", args, stdout.String())
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
			t.Fatalf("%q: exit %d", args, code)
		}
		out := stdout.String()
		for _, cmd := range []string{"bench", "soak", "server", "client", "relay", "keygen", "token"} {
			if !strings.Contains(out, "  "+cmd+" ") {
				t.Errorf("%q: help lacks %s:\n%s", args, cmd, out)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"bench", "-h"}, &stdout, &stderr); code != exitOK {
		t.Errorf("bench -h: exit %d", code)
	}
	if !strings.Contains(stderr.String(), "--quick") && !strings.Contains(stderr.String(), "-quick") {
		t.Errorf("bench -h lacks the flags:\n%s", stderr.String())
	}
}

func TestReportJSONFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	rows := []bench.Result{{Transport: bench.Tickwire, Profile: bench.ProfileEcho, Sent: 1, Delivered: 1}}
	var stdout bytes.Buffer
	if err := report(path, bench.Report{Results: rows}, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "tickwire") {
		t.Errorf("no table on stdout: %q", stdout.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc bench.Report
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Results) != 1 {
		t.Errorf("file: %v, %s", err, b)
	}
	if err := report(filepath.Join(t.TempDir(), "no", "such", "dir"), bench.Report{Results: rows}, &stdout); err == nil {
		t.Error("unwritable path: no error")
	}
}

// The soak subcommand runs S-I1's phases, bounded to 10 s of simulated
// time each, and prints its JSON result: the defaults phase first, every
// size class and stream reported, and the exit status the verdict's
// (whether the transport passes is bench/soak's TestSoakSmall). An
// unknown phase is a usage error.
func TestSoakQuickJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"soak", "--count", "2000", "--max-virtual", "10s", "--json", "-"}, &stdout, &stderr)
	var res soak.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("soak --json - printed %q: %v", stdout.String(), err)
	}
	if want := map[bool]int{true: exitOK, false: exitFailed}[res.OK]; code != want {
		t.Fatalf("exit %d with ok=%v: %s", code, res.OK, stderr.String())
	}
	if res.Count != 2000 || len(res.Phases) != 2 || res.Phases[0].Name != "defaults" || res.Phases[1].Name != "tuned" {
		t.Fatalf("count %d, %d phases", res.Count, len(res.Phases))
	}
	for _, p := range res.Phases {
		for _, f := range p.Flows {
			if len(f.Classes) != len(p.Classes) || len(p.Classes) < 6 || len(f.Streams) != 5 || f.Sent == 0 {
				t.Fatalf("phase %s %s: %d classes of %d, %d streams, %d sent", p.Name, f.Name, len(f.Classes), len(p.Classes), len(f.Streams), f.Sent)
			}
		}
		if p.OK != (p.Violations == 0) {
			t.Fatalf("phase %s: ok %v with %d violations", p.Name, p.OK, p.Violations)
		}
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"soak", "--phases", "defaults,bogus"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "bogus") {
		t.Fatalf("unknown phase: exit %d, %q", code, stderr.String())
	}
}

// TestBenchLoadQuick runs `bench --profile load --quick` with 4 peers: one
// tickwire row with the load figures, everything delivered; a --peers out
// of range is a usage error.
func TestBenchLoadQuick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "--profile", "load", "--quick", "--peers", "4", "--duration", "500ms", "--json", "-"}
	if code := run(ctx, args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	var doc struct{ Results []map[string]any }
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || len(doc.Results) != 1 {
		t.Fatalf("want one row: %v\n%s", err, stdout.String())
	}
	r := doc.Results[0]
	if r["transport"] != "tickwire" || r["profile"] != "load" || r["peers"] != 4.0 || r["sent"] != r["delivered"] {
		t.Errorf("row %v", r)
	}
	for _, k := range []string{"server_cpu_us_per_peer_tick", "memory_per_peer_bytes", "sent"} {
		if v, _ := r[k].(float64); !(v > 0) {
			t.Errorf("%s = %v, want > 0", k, r[k])
		}
	}
	if code := run(ctx, []string{"bench", "--profile", "load", "--peers", "255"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("--peers 255: exit %d, want %d", code, exitUsage)
	}
}

// TestBenchActionsQuick runs `bench --profile actions` with 2 peers, 30
// inputs each, at 0 and 10 % loss, with the window and frame-capacity
// flags set: one row per transport and loss, one-way latency, every input
// applied exactly once; the new flags reject values out of range.
func TestBenchActionsQuick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "--profile", "actions", "--quick", "--peers", "2", "--loss", "0,10",
		"--max-in-flight", "128", "--frame-capacity", "128", "--json", "-"}
	if code := run(ctx, args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	var doc struct{ Results []map[string]any }
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || len(doc.Results) != 4 {
		t.Fatalf("want 4 rows (tickwire and kcp at 2 loss rates): %v\n%s", err, stdout.String())
	}
	for i, r := range doc.Results {
		if r["profile"] != "actions" || r["latency_kind"] != "one_way" || r["peers"] != 2.0 ||
			r["sent"] != 2.0*quickCount || r["delivered"] != r["sent"] || r["refused"] != 0.0 {
			t.Errorf("row %d: %v", i, r)
		}
		if l, _ := r["latency_ms"].(map[string]any); !(l["p50"].(float64) > 25) {
			t.Errorf("row %d: p50 %v, want above the 25 ms one-way delay", i, l["p50"])
		}
	}
	for _, bad := range [][]string{
		{"--max-in-flight", "-1"},
		{"--max-in-flight", "20000"},
		{"--frame-capacity", "-1"},
		{"--frame-capacity", "1"},
		{"--peers", "0"},
	} {
		stderr.Reset()
		a := append([]string{"bench", "--profile", "actions"}, bad...)
		if code := run(ctx, a, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, code, exitUsage, stderr.String())
		}
	}
}
