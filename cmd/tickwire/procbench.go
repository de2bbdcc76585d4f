package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tickwire/tickwire/bench"
)

// `tickwire procbench`: the echo row across processes, measured per
// process. For each loss rate, each rep and each transport (interleaved:
// A B C A B C …) it starts a server, a relay and a client as child
// processes of this binary, and takes from each its CPU time (user+sys,
// from the rusage wait4 returns for it) and, where perf works, its system
// calls (perf stat -e raw_syscalls:sys_enter, the child run as perf's
// workload). Each rep runs the transport twice: once with one message and
// once with --count; per message is the difference over count-1, which
// takes out process start-up, the handshake and shutdown.

// Syscall counters procbench knows.
const (
	countPerf   = "perf"
	countStrace = "strace"
	countNone   = "none"
)

// procbenchTransports are the default transports: each at the setting its
// own documentation recommends for latency (tickwire's defaults, kcp-go's
// fast mode, quic-go with the echo on one stream).
var procbenchTransports = []string{bench.Tickwire, bench.KCPFast, bench.QUIC}

// procbenchRef is the transport the ratios are taken against.
const procbenchRef = bench.KCPFast

// Goals of issue 13 against procbenchRef.
const (
	cpuGoal     = 0.8
	syscallGoal = 1.0
)

// lockedBuffer is a bytes.Buffer a child process writes while the parent
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var (
	pbListening = regexp.MustCompile(`(?m)^listening on (\S+)$`)
	pbKey       = regexp.MustCompile(`(?m)^public key ([0-9a-f]{64})$`)
)

// procCost is what one child process cost over its life.
type procCost struct {
	// CPUSeconds is user+sys CPU; -1 when not measured (a run under
	// strace, whose ptrace stops distort it).
	CPUSeconds float64 `json:"cpu_seconds"`
	// Syscalls is the number of system calls entered; -1 when not counted.
	Syscalls float64 `json:"syscalls"`
	// Kinds counts system calls by name (--syscall-kinds, or strace).
	Kinds map[string]float64 `json:"syscall_kinds,omitempty"`
	// Errors counts the calls that returned an error, by name (strace
	// only: EAGAIN from a read that found nothing, say).
	Errors map[string]float64 `json:"syscall_errors,omitempty"`
}

// pbRun is one run of a transport: one server, one relay, one client.
type pbRun struct {
	Count      int      `json:"count"`
	Server     procCost `json:"server"`
	Client     procCost `json:"client"`
	Relay      procCost `json:"relay"`
	Sent       int64    `json:"sent"`
	Delivered  int64    `json:"delivered"`
	WireBytes  int64    `json:"wire_bytes"`
	P99MS      float64  `json:"p99_ms"`
	ClientRow  float64  `json:"client_row_cpu_seconds"` // the client's own figure over its row
	WallSecond float64  `json:"wall_seconds"`
}

// pbRep is one rep of one transport at one loss: the one-message run, the
// full run, and the per-message figures from the two.
type pbRep struct {
	Transport string  `json:"transport"`
	Loss      float64 `json:"loss_percent"`
	Rep       int     `json:"rep"`
	Base      pbRun   `json:"base"`
	Full      pbRun   `json:"full"`
	// Strace is the full run repeated under strace -f -c (--syscalls
	// strace), for its counts only.
	Strace *pbRun    `json:"strace,omitempty"`
	Per    pbPerMsg  `json:"per_message"`
	Failed bool      `json:"failed"`
	Kinds  pbKindsPM `json:"syscall_kinds_per_message,omitempty"`
	// Errors is the calls that failed, per message by name (strace).
	Errors pbKindsPM `json:"syscall_errors_per_message,omitempty"`
}

// pbPerMsg is one rep's figures per echoed message; -1 where not measured.
type pbPerMsg struct {
	ServerCPUUS   float64 `json:"server_cpu_us"`
	ClientCPUUS   float64 `json:"client_cpu_us"`
	RelayCPUUS    float64 `json:"relay_cpu_us"`
	ServerSyscall float64 `json:"server_syscalls"`
	ClientSyscall float64 `json:"client_syscalls"`
	WireBytes     float64 `json:"wire_bytes"`
}

// pbKindsPM is system calls per message by name, per process.
type pbKindsPM struct {
	Server map[string]float64 `json:"server,omitempty"`
	Client map[string]float64 `json:"client,omitempty"`
}

// pbStat is a median with its min and max over reps.
type pbStat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// pbRow is a transport at a loss rate over its reps.
type pbRow struct {
	Transport     string  `json:"transport"`
	Loss          float64 `json:"loss_percent"`
	Reps          int     `json:"reps"`
	Failed        int     `json:"failed_reps"`
	ServerCPUUS   pbStat  `json:"server_cpu_us_per_msg"`
	ClientCPUUS   pbStat  `json:"client_cpu_us_per_msg"`
	RelayCPUUS    pbStat  `json:"relay_cpu_us_per_msg"`
	ServerSyscall *pbStat `json:"server_syscalls_per_msg"` // nil: not counted
	ClientSyscall *pbStat `json:"client_syscalls_per_msg"`
	WireBytes     pbStat  `json:"wire_bytes_per_msg"`
	P99MS         pbStat  `json:"p99_ms"`
	// Ratios to procbenchRef's medians at the same loss (absent for the
	// reference itself).
	Ratios *pbRatios `json:"ratios,omitempty"`
	Kinds  pbKindsPM `json:"syscall_kinds_per_message,omitempty"`
	Errors pbKindsPM `json:"syscall_errors_per_message,omitempty"`
}

// pbRatios are a row's medians over the reference's.
type pbRatios struct {
	Against       string   `json:"against"`
	ServerCPU     float64  `json:"server_cpu"`
	ClientCPU     float64  `json:"client_cpu"`
	ServerSyscall *float64 `json:"server_syscalls,omitempty"`
	ClientSyscall *float64 `json:"client_syscalls,omitempty"`
}

// pbDoc is procbench's JSON document.
type pbDoc struct {
	Command      string    `json:"command"`
	Binary       string    `json:"binary"`
	Transports   []string  `json:"transports"`
	Losses       []float64 `json:"loss_percents"`
	Count        int       `json:"count"`
	Rate         float64   `json:"rate"`
	Size         int       `json:"size"`
	DelayMS      float64   `json:"delay_ms"`
	JitterMS     float64   `json:"jitter_ms"`
	Seed         uint64    `json:"seed"`
	Reps         int       `json:"reps"`
	Syscalls     string    `json:"syscalls"`      // perf, strace or none
	SyscallsNote string    `json:"syscalls_note"` // how, or why not
	Rows         []pbRow   `json:"rows"`
	Runs         []pbRep   `json:"runs"`
}

// procbench holds one invocation's settings.
type procbench struct {
	bin, perf, strace string
	counter           string
	kinds             bool
	transports        []string
	losses            []float64
	count, size       int
	rate              float64
	delay, jitter     time.Duration
	seed              uint64
	reps              int
	tmp               string
	log               io.Writer
}

// runProcbench is `tickwire procbench`.
func runProcbench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	pb := procbench{log: stderr}
	var (
		transports, losses, syscalls, jsonOut string
	)
	fs := flag.NewFlagSet("tickwire procbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&transports, "transports", strings.Join(procbenchTransports, ","), "comma-separated transports: "+transportNames)
	fs.StringVar(&losses, "loss", "0,1,5,10,20", "comma-separated loss rates in percent, each direction")
	fs.IntVar(&pb.count, "count", 600, "messages per run (at least 10)")
	fs.Float64Var(&pb.rate, "rate", bench.DefaultRate, "messages per second")
	fs.IntVar(&pb.size, "size", bench.DefaultSize, fmt.Sprintf("message size in bytes [%d, %d]", bench.MinSize, bench.MaxSize))
	fs.DurationVar(&pb.delay, "delay", bench.DefaultDelay, "the relay's one-way delay, each direction")
	fs.DurationVar(&pb.jitter, "jitter", bench.DefaultJitter, "the relay's one-way jitter (uniform ±)")
	fs.Uint64Var(&pb.seed, "seed", bench.DefaultSeed, "the relay's seed")
	fs.IntVar(&pb.reps, "reps", 3, "repetitions of each transport at each loss (interleaved), for median and min-max")
	fs.StringVar(&syscalls, "syscalls", "auto", "system call counter: perf (perf stat), strace (strace -f -c, in a separate run: counts only), none, or auto (perf if it works here, else none)")
	fs.StringVar(&pb.perf, "perf", "perf", "the perf `PROGRAM`")
	fs.BoolVar(&pb.kinds, "syscall-kinds", false, "perf: also count system calls by name (syscalls:sys_enter_*) and print the most frequent per message")
	fs.StringVar(&jsonOut, "json", "", "write the figures and every run as JSON to `FILE`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tickwire procbench [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Runs the echo row across processes and measures each process: for every loss")
		fmt.Fprintln(stderr, "rate, rep and transport (interleaved per loss), starts `tickwire server`,")
		fmt.Fprintln(stderr, "`tickwire relay` (the loss, --delay and --jitter each way) and `tickwire client`")
		fmt.Fprintln(stderr, "as child processes of this binary, once with one message and once with --count,")
		fmt.Fprintln(stderr, "and reports per echoed message (the difference over count-1, so start-up, the")
		fmt.Fprintln(stderr, "handshake and shutdown drop out) the server's and the client's CPU (user+sys,")
		fmt.Fprintln(stderr, "the child's rusage) and system calls (perf stat -e raw_syscalls:sys_enter, the")
		fmt.Fprintln(stderr, "child as perf's workload), the client's wire bytes and p99, the relay's CPU,")
		fmt.Fprintln(stderr, "and the ratios to kcp-fast. Where perf is missing or not permitted it says so")
		fmt.Fprintln(stderr, "and reports CPU only. Linux (or another Unix with perf); root or")
		fmt.Fprintln(stderr, "kernel.perf_event_paranoid ≤ -1 for the tracepoint.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code := parseArgs(fs, args, stderr); code >= 0 {
		return code
	}
	err := pb.parse(transports, losses)
	if err == nil {
		err = firstErr(
			intAtLeast("count", pb.count, 10),
			positive("rate", pb.rate, 0),
			intIn("size", pb.size, bench.MinSize, bench.MaxSize),
			durationIn("delay", pb.delay, 0, 10*time.Second),
			durationIn("jitter", pb.jitter, 0, 10*time.Second),
			intIn("reps", pb.reps, 1, 1000),
		)
	}
	switch syscalls {
	case "auto", countPerf, countStrace, countNone:
	default:
		err = firstErr(err, fmt.Errorf("--syscalls %q: want auto, perf, strace or none", syscalls))
	}
	if err != nil {
		fmt.Fprintf(stderr, "tickwire procbench: %v\n", err)
		return exitUsage
	}
	if !procbenchSupported {
		fmt.Fprintln(stderr, "tickwire procbench: needs a Unix (process groups and a child's rusage)")
		return exitFailed
	}
	if pb.bin, err = os.Executable(); err != nil {
		fmt.Fprintf(stderr, "tickwire procbench: this binary: %v\n", err)
		return exitFailed
	}
	if pb.tmp, err = os.MkdirTemp("", "tickwire-procbench-"); err != nil {
		fmt.Fprintf(stderr, "tickwire procbench: %v\n", err)
		return exitFailed
	}
	defer os.RemoveAll(pb.tmp)

	note := pb.chooseCounter(ctx, syscalls)
	if syscalls != "auto" && pb.counter != syscalls {
		fmt.Fprintf(stderr, "tickwire procbench: --syscalls %s: %s\n", syscalls, note)
		return exitFailed
	}
	doc := pbDoc{
		Command: "tickwire procbench " + commandLine(args), Binary: pb.bin,
		Transports: pb.transports, Losses: pb.losses, Count: pb.count, Rate: pb.rate, Size: pb.size,
		DelayMS: ms(pb.delay), JitterMS: ms(pb.jitter), Seed: pb.seed, Reps: pb.reps,
		Syscalls: pb.counter, SyscallsNote: note,
	}
	pb.header(stdout, &doc)

	code := exitOK
	total := len(pb.losses) * pb.reps * len(pb.transports)
	i := 0
	for _, loss := range pb.losses {
		for rep := range pb.reps {
			for _, t := range pb.transports {
				i++
				fmt.Fprintf(stderr, "[%d/%d] %s at %v %% loss, rep %d\n", i, total, t, loss, rep+1)
				r, err := pb.rep(ctx, t, loss, rep)
				if err != nil {
					fmt.Fprintf(stderr, "tickwire procbench: %s at %v %% loss, rep %d: %v\n", t, loss, rep+1, err)
					return exitFailed
				}
				if r.Failed {
					fmt.Fprintf(stderr, "tickwire procbench: FAILED: %s at %v %% loss, rep %d: delivered %d of %d\n", t, loss, rep+1, r.Full.Delivered, r.Full.Sent)
					code = exitFailed
				}
				doc.Runs = append(doc.Runs, r)
			}
		}
	}
	doc.Rows = pbRows(doc.Runs, pb.transports, pb.losses)
	pb.table(stdout, doc.Rows)
	if jsonOut != "" {
		err := writeFile(jsonOut, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(doc)
		})
		if err != nil {
			fmt.Fprintf(stderr, "tickwire procbench: --json: %v\n", err)
			code = exitFailed
		}
	}
	return code
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// parse reads --transports and --loss.
func (pb *procbench) parse(transports, losses string) error {
	for t := range strings.SplitSeq(transports, ",") {
		t = strings.TrimSpace(t)
		switch t {
		case bench.Tickwire, bench.KCPFast, bench.KCPDefault, bench.QUIC, bench.QUICStreams, bench.QUICDatagram:
		default:
			return fmt.Errorf("--transports: %q is not one of %s", t, transportNames)
		}
		if slices.Contains(pb.transports, t) {
			return fmt.Errorf("--transports: %q twice", t)
		}
		pb.transports = append(pb.transports, t)
	}
	for l := range strings.SplitSeq(losses, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(l), 64)
		if err != nil {
			return fmt.Errorf("--loss %q: want percents separated by commas", losses)
		}
		if err := percent("loss", v); err != nil {
			return err
		}
		pb.losses = append(pb.losses, v)
	}
	return nil
}

// chooseCounter settles pb.counter from --syscalls and returns a note
// saying how system calls are counted, or why they are not.
func (pb *procbench) chooseCounter(ctx context.Context, want string) string {
	pb.counter = countNone
	if want == countNone {
		return "not counted (--syscalls none)"
	}
	var reasons []string
	if want == "auto" || want == countPerf {
		err := pb.probePerf(ctx)
		if err == nil {
			pb.counter = countPerf
			return fmt.Sprintf("%s stat -e raw_syscalls:sys_enter, server and client as its workload (CPU: their rusage)", pb.perf)
		}
		reasons = append(reasons, err.Error())
	}
	if want == countStrace {
		path, err := exec.LookPath("strace")
		if err == nil {
			pb.strace, pb.counter = path, countStrace
			return "strace -f -c, in runs of their own (counts only: the CPU is from the runs without strace)"
		}
		reasons = append(reasons, fmt.Sprintf("strace: %v", err))
	}
	return "not counted: " + strings.Join(reasons, "; ")
}

// probePerf checks that perf can count the syscall tracepoint here.
func (pb *procbench) probePerf(ctx context.Context) error {
	path, err := exec.LookPath(pb.perf)
	if err != nil {
		return fmt.Errorf("perf: %v", err)
	}
	pb.perf = path
	out := filepath.Join(pb.tmp, "probe.perf")
	cmd := exec.CommandContext(ctx, path, "stat", "-e", "raw_syscalls:sys_enter", "-o", out, "--", pb.bin, "version")
	msg, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("perf stat -e raw_syscalls:sys_enter: %v: %s", err, firstLine(msg))
	}
	c, err := readPerf(out)
	if err != nil {
		return fmt.Errorf("perf stat: %v", err)
	}
	if c.Syscalls <= 0 {
		return fmt.Errorf("perf stat counted no system calls for `tickwire version` (not permitted? kernel.perf_event_paranoid)")
	}
	return nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// readPerf parses perf stat's (human) output file: the syscall counts and
// the workload's user and sys seconds from its footer.
func readPerf(path string) (procCost, error) {
	c := procCost{CPUSeconds: -1, Syscalls: -1}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	var user, sys float64
	var haveUser, haveSys bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(f[0], ",", ""), 64)
		if err != nil {
			continue
		}
		switch {
		case f[1] == "raw_syscalls:sys_enter":
			c.Syscalls = v
		case strings.HasPrefix(f[1], "syscalls:sys_enter_"):
			if v > 0 {
				if c.Kinds == nil {
					c.Kinds = map[string]float64{}
				}
				c.Kinds[strings.TrimPrefix(f[1], "syscalls:sys_enter_")] = v
			}
		case len(f) >= 3 && f[1] == "seconds" && f[2] == "user":
			user, haveUser = v, true
		case len(f) >= 3 && f[1] == "seconds" && f[2] == "sys":
			sys, haveSys = v, true
		}
	}
	if c.Syscalls < 0 {
		return c, fmt.Errorf("%s: no raw_syscalls:sys_enter count:\n%s", path, b)
	}
	if haveUser && haveSys {
		c.CPUSeconds = user + sys
	}
	return c, nil
}

// readStrace parses strace -c's summary: calls in total and by name.
func readStrace(path string) (procCost, error) {
	c := procCost{CPUSeconds: -1, Syscalls: -1}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		calls, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			continue
		}
		name := f[len(f)-1]
		var errs float64
		if len(f) >= 6 {
			errs, _ = strconv.ParseFloat(f[4], 64)
		}
		if name == "total" {
			c.Syscalls = calls
			continue
		}
		if c.Kinds == nil {
			c.Kinds, c.Errors = map[string]float64{}, map[string]float64{}
		}
		c.Kinds[name] = calls
		if errs > 0 {
			c.Errors[name] = errs
		}
	}
	if c.Syscalls < 0 {
		return c, fmt.Errorf("%s: no total line:\n%s", path, b)
	}
	return c, nil
}

// child is a started child process.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	out            string // the counter's output file, "" for none
	counter        string
	done           chan struct{}
	err            error         // Wait's, once done is closed
	grace          time.Duration // how long stop waits after the interrupt
}

// start starts `bin args…`, under the counter (perf or strace) when
// counter is not countNone.
func (pb *procbench) start(ctx context.Context, name, counter string, args ...string) (*child, error) {
	c := &child{counter: counter, done: make(chan struct{}), grace: 10 * time.Second}
	argv := append([]string{pb.bin}, args...)
	switch counter {
	case countPerf:
		c.out = filepath.Join(pb.tmp, name+".perf")
		events := "raw_syscalls:sys_enter"
		if pb.kinds {
			events += ",syscalls:sys_enter_*"
			c.grace = 2 * time.Minute // perf takes tens of seconds to close ~350 tracepoint counters
		}
		argv = append([]string{pb.perf, "stat", "-e", events, "-o", c.out, "--"}, argv...)
	case countStrace:
		c.out = filepath.Join(pb.tmp, name+".strace")
		argv = append([]string{pb.strace, "-f", "-c", "-o", c.out, "--"}, argv...)
	}
	if c.out != "" {
		os.Remove(c.out)
	}
	c.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	ownGroup(c.cmd)
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	return c, nil
}

// waitListening waits (at most 10 s) for the child's "listening on ADDR".
func (c *child) waitListening(name string) (string, error) {
	deadline := time.After(10 * time.Second)
	for {
		if m := pbListening.FindStringSubmatch(c.stderr.String()); m != nil {
			return m[1], nil
		}
		select {
		case <-c.done:
			return "", fmt.Errorf("%s exited before listening (%v): %s", name, c.err, c.stderr.String())
		case <-deadline:
			return "", fmt.Errorf("%s printed no address in 10 s: %s", name, c.stderr.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// stop interrupts the child's group and waits (at most its grace) for it.
func (c *child) stop(name string) error {
	select {
	case <-c.done:
	default:
		interruptGroup(c.cmd)
	}
	select {
	case <-c.done:
	case <-time.After(c.grace):
		c.cmd.Cancel()
		<-c.done
		return fmt.Errorf("%s did not exit within %v of an interrupt: %s", name, c.grace, c.stderr.String())
	}
	return nil
}

// cost returns what the exited child cost.
func (c *child) cost() (procCost, error) {
	switch c.counter {
	case countPerf:
		return readPerf(c.out)
	case countStrace:
		return readStrace(c.out)
	}
	cpu, ok := processCPU(c.cmd.ProcessState)
	if !ok {
		return procCost{}, fmt.Errorf("no rusage for pid %d", c.cmd.Process.Pid)
	}
	return procCost{CPUSeconds: cpu.Seconds(), Syscalls: -1}, nil
}

// run runs one transport once: server (under counter), relay, client
// (under counter) with count messages, and returns the three costs and the
// client's row.
func (pb *procbench) run(ctx context.Context, t string, loss float64, count int, counter string) (pbRun, error) {
	out := pbRun{Count: count}
	life := fmt.Sprint(time.Duration(float64(count)/pb.rate*float64(time.Second)) + 2*time.Minute)
	sargs := []string{"server", "--listen", "127.0.0.1:0", "--transport", t, "--duration", life}
	cert := filepath.Join(pb.tmp, "cert.pem")
	if isQUIC(t) {
		sargs = append(sargs, "--cert", cert)
	}
	srv, err := pb.start(ctx, "server", counter, sargs...)
	if err != nil {
		return out, err
	}
	defer srv.stop("server")
	saddr, err := srv.waitListening("server")
	if err != nil {
		return out, err
	}
	rly, err := pb.start(ctx, "relay", countNone, "relay", "--listen", "127.0.0.1:0", "--to", saddr,
		"--loss", fmt.Sprint(loss), "--delay", pb.delay.String(), "--jitter", pb.jitter.String(),
		"--seed", fmt.Sprint(pb.seed), "--duration", life)
	if err != nil {
		return out, err
	}
	defer rly.stop("relay")
	raddr, err := rly.waitListening("relay")
	if err != nil {
		return out, err
	}
	cargs := []string{"client", "--connect", raddr, "--transport", t, "--count", fmt.Sprint(count),
		"--rate", fmt.Sprint(pb.rate), "--size", fmt.Sprint(pb.size), "--json", "-"}
	switch {
	case t == bench.Tickwire:
		m := pbKey.FindStringSubmatch(srv.stderr.String())
		if m == nil {
			return out, fmt.Errorf("the tickwire server printed no public key: %s", srv.stderr.String())
		}
		cargs = append(cargs, "--server-key", m[1])
	case isQUIC(t):
		cargs = append(cargs, "--cert", cert)
	}
	start := time.Now()
	cli, err := pb.start(ctx, "client", counter, cargs...)
	if err != nil {
		return out, err
	}
	<-cli.done
	out.WallSecond = time.Since(start).Seconds()
	var res bench.Result
	if err := json.Unmarshal([]byte(cli.stdout.String()), &res); err != nil {
		return out, fmt.Errorf("client (%v): no result on stdout (%v): %s", cli.err, err, cli.stderr.String())
	}
	out.Sent, out.Delivered, out.WireBytes, out.P99MS, out.ClientRow = res.Sent, res.Delivered, res.WireBytes, res.LatencyMS.P99, res.CPUSeconds
	if err := srv.stop("server"); err != nil {
		return out, err
	}
	if err := rly.stop("relay"); err != nil {
		return out, err
	}
	if out.Server, err = srv.cost(); err != nil {
		return out, fmt.Errorf("server: %w", err)
	}
	if out.Client, err = cli.cost(); err != nil {
		return out, fmt.Errorf("client: %w", err)
	}
	if out.Relay, err = rly.cost(); err != nil {
		return out, fmt.Errorf("relay: %w", err)
	}
	return out, nil
}

// rep runs one rep of t at loss: the one-message run, the full run (and
// under strace, the full run again for its counts).
func (pb *procbench) rep(ctx context.Context, t string, loss float64, rep int) (pbRep, error) {
	r := pbRep{Transport: t, Loss: loss, Rep: rep}
	cpuCounter := pb.counter
	if cpuCounter == countStrace {
		cpuCounter = countNone
	}
	var err error
	if r.Base, err = pb.run(ctx, t, loss, 1, cpuCounter); err != nil {
		return r, fmt.Errorf("one-message run: %w", err)
	}
	if r.Full, err = pb.run(ctx, t, loss, pb.count, cpuCounter); err != nil {
		return r, err
	}
	r.Failed = r.Full.Delivered < r.Full.Sent || r.Base.Delivered < r.Base.Sent
	base, full := r.Base, r.Full
	if pb.counter == countStrace {
		sb, err := pb.run(ctx, t, loss, 1, countStrace)
		if err != nil {
			return r, fmt.Errorf("one-message run under strace: %w", err)
		}
		sf, err := pb.run(ctx, t, loss, pb.count, countStrace)
		if err != nil {
			return r, fmt.Errorf("run under strace: %w", err)
		}
		r.Strace = &sf
		base.Server.Syscalls, base.Client.Syscalls = sb.Server.Syscalls, sb.Client.Syscalls
		full.Server.Syscalls, full.Client.Syscalls = sf.Server.Syscalls, sf.Client.Syscalls
		base.Server.Kinds, base.Client.Kinds = sb.Server.Kinds, sb.Client.Kinds
		full.Server.Kinds, full.Client.Kinds = sf.Server.Kinds, sf.Client.Kinds
		base.Server.Errors, base.Client.Errors = sb.Server.Errors, sb.Client.Errors
		full.Server.Errors, full.Client.Errors = sf.Server.Errors, sf.Client.Errors
	}
	n := float64(pb.count - 1)
	per := func(f, b float64) float64 {
		if f < 0 || b < 0 {
			return -1
		}
		return (f - b) / n
	}
	us := func(f, b float64) float64 {
		if v := per(f, b); v != -1 {
			return v * 1e6
		}
		return -1
	}
	r.Per = pbPerMsg{
		ServerCPUUS:   us(full.Server.CPUSeconds, base.Server.CPUSeconds),
		ClientCPUUS:   us(full.Client.CPUSeconds, base.Client.CPUSeconds),
		RelayCPUUS:    us(full.Relay.CPUSeconds, base.Relay.CPUSeconds),
		ServerSyscall: per(full.Server.Syscalls, base.Server.Syscalls),
		ClientSyscall: per(full.Client.Syscalls, base.Client.Syscalls),
		WireBytes:     per(float64(full.WireBytes), float64(base.WireBytes)),
	}
	kinds := func(f, b map[string]float64) map[string]float64 {
		if f == nil {
			return nil
		}
		m := map[string]float64{}
		for k, v := range f {
			m[k] = (v - b[k]) / n
		}
		return m
	}
	r.Kinds = pbKindsPM{Server: kinds(full.Server.Kinds, base.Server.Kinds), Client: kinds(full.Client.Kinds, base.Client.Kinds)}
	if full.Server.Errors != nil {
		r.Errors = pbKindsPM{Server: kinds(full.Server.Errors, base.Server.Errors), Client: kinds(full.Client.Errors, base.Client.Errors)}
	}
	return r, nil
}

// stat returns the median, min and max of vs (bench.StatOf).
func stat(vs []float64) pbStat {
	st := bench.StatOf(vs)
	return pbStat{Median: st.Median, Min: st.Min, Max: st.Max}
}

// pbRows summarises the reps per transport and loss, with the ratios to
// procbenchRef where it ran.
func pbRows(runs []pbRep, transports []string, losses []float64) []pbRow {
	var rows []pbRow
	for _, loss := range losses {
		first := len(rows)
		for _, t := range transports {
			row := pbRow{Transport: t, Loss: loss}
			var scpu, ccpu, rcpu, ssc, csc, wire, p99 []float64
			kinds := pbKindsPM{Server: map[string]float64{}, Client: map[string]float64{}}
			errs := pbKindsPM{Server: map[string]float64{}, Client: map[string]float64{}}
			var kreps int
			for _, r := range runs {
				if r.Transport != t || r.Loss != loss {
					continue
				}
				row.Reps++
				if r.Failed {
					row.Failed++
				}
				scpu, ccpu, rcpu = append(scpu, r.Per.ServerCPUUS), append(ccpu, r.Per.ClientCPUUS), append(rcpu, r.Per.RelayCPUUS)
				if r.Per.ServerSyscall != -1 {
					ssc, csc = append(ssc, r.Per.ServerSyscall), append(csc, r.Per.ClientSyscall)
				}
				wire, p99 = append(wire, r.Per.WireBytes), append(p99, r.Full.P99MS)
				if r.Kinds.Server != nil {
					kreps++
					for k, v := range r.Kinds.Server {
						kinds.Server[k] += v
					}
					for k, v := range r.Kinds.Client {
						kinds.Client[k] += v
					}
					for k, v := range r.Errors.Server {
						errs.Server[k] += v
					}
					for k, v := range r.Errors.Client {
						errs.Client[k] += v
					}
				}
			}
			row.ServerCPUUS, row.ClientCPUUS, row.RelayCPUUS = stat(scpu), stat(ccpu), stat(rcpu)
			row.WireBytes, row.P99MS = stat(wire), stat(p99)
			if len(ssc) > 0 {
				s, c := stat(ssc), stat(csc)
				row.ServerSyscall, row.ClientSyscall = &s, &c
			}
			if kreps > 0 {
				for _, m := range []map[string]float64{kinds.Server, kinds.Client, errs.Server, errs.Client} {
					for k := range m {
						m[k] /= float64(kreps) // the mean over reps
					}
				}
				row.Kinds = kinds
				if len(errs.Server)+len(errs.Client) > 0 {
					row.Errors = errs
				}
			}
			rows = append(rows, row)
		}
		var ref *pbRow
		for i := first; i < len(rows); i++ {
			if rows[i].Transport == procbenchRef {
				ref = &rows[i]
			}
		}
		if ref == nil {
			continue
		}
		for i := first; i < len(rows); i++ {
			r := &rows[i]
			if r == ref {
				continue
			}
			q := &pbRatios{Against: procbenchRef,
				ServerCPU: r.ServerCPUUS.Median / ref.ServerCPUUS.Median,
				ClientCPU: r.ClientCPUUS.Median / ref.ClientCPUUS.Median}
			if r.ServerSyscall != nil && ref.ServerSyscall != nil {
				s := r.ServerSyscall.Median / ref.ServerSyscall.Median
				c := r.ClientSyscall.Median / ref.ClientSyscall.Median
				q.ServerSyscall, q.ClientSyscall = &s, &c
			}
			r.Ratios = q
		}
	}
	return rows
}

// header prints what the run measures and how.
func (pb *procbench) header(w io.Writer, d *pbDoc) {
	fmt.Fprintf(w, "procbench: echo across processes: server, relay and client as child processes of %s\n", pb.bin)
	fmt.Fprintf(w, "  %d messages of %d B at %v Hz per run; relay %v ± %v each way, seed %d; %d reps, transports interleaved per loss\n",
		pb.count, pb.size, pb.rate, pb.delay, pb.jitter, pb.seed, pb.reps)
	fmt.Fprintf(w, "  per message = (%d-message run - 1-message run) / %d, each process's user+sys CPU from its rusage\n", pb.count, pb.count-1)
	fmt.Fprintf(w, "  system calls: %s\n", d.SyscallsNote)
}

// cell formats a median with its range, "12.3 [11.0-14.1]", or "-".
func cell(s *pbStat, prec int) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f [%.*f-%.*f]", prec, s.Median, prec, s.Min, prec, s.Max)
}

// table prints the rows, the ratios to the reference, and (with
// --syscall-kinds) the most frequent system calls.
func (pb *procbench) table(w io.Writer, rows []pbRow) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-5s %-12s %-17s %-17s %-18s %-18s %6s %6s %7s\n",
		"loss", "transport", "server CPU µs/msg", "client CPU µs/msg", "server syscall/msg", "client syscall/msg", "B/msg", "p99 ms", "relay")
	for _, r := range rows {
		fail := ""
		if r.Failed > 0 {
			fail = fmt.Sprintf("  FAILED %d of %d reps", r.Failed, r.Reps)
		}
		fmt.Fprintf(w, "%-5s %-12s %-17s %-17s %-18s %-18s %6.0f %6.1f %7.0f%s\n",
			fmt.Sprintf("%v%%", r.Loss), r.Transport, cell(&r.ServerCPUUS, 0), cell(&r.ClientCPUUS, 0),
			cell(r.ServerSyscall, 1), cell(r.ClientSyscall, 1), r.WireBytes.Median, r.P99MS.Median, r.RelayCPUUS.Median, fail)
	}
	fmt.Fprintln(w, "  medians [min-max] over reps; B/msg: the client's wire bytes, both ways; relay: its CPU µs/msg, not in the ratios")

	var ratios []pbRow
	for _, r := range rows {
		if r.Ratios != nil {
			ratios = append(ratios, r)
		}
	}
	if len(ratios) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "ratios to %s (medians; tickwire's goal, issue 13: CPU ≤ %.2f×, system calls ≤ %.2f×)\n", procbenchRef, cpuGoal, syscallGoal)
	fmt.Fprintf(w, "%-5s %-12s %-16s %-16s %-16s %-16s\n", "loss", "transport", "server CPU", "client CPU", "server syscalls", "client syscalls")
	for _, r := range ratios {
		verdict := func(v *float64, goal float64) string {
			switch {
			case v == nil:
				return "-"
			case r.Transport != bench.Tickwire:
				return fmt.Sprintf("%.2f×", *v)
			case *v > goal:
				return fmt.Sprintf("%.2f× misses", *v)
			}
			return fmt.Sprintf("%.2f× meets", *v)
		}
		q := r.Ratios
		fmt.Fprintf(w, "%-5s %-12s %-16s %-16s %-16s %-16s\n", fmt.Sprintf("%v%%", r.Loss), r.Transport,
			verdict(&q.ServerCPU, cpuGoal), verdict(&q.ClientCPU, cpuGoal),
			verdict(q.ServerSyscall, syscallGoal), verdict(q.ClientSyscall, syscallGoal))
	}

	if !pb.kinds && pb.counter != countStrace {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "system calls per message by name (mean over reps; the most frequent; strace: those that failed after \"errors\")")
	for _, r := range rows {
		for _, side := range []struct {
			name   string
			m, err map[string]float64
		}{{"server", r.Kinds.Server, r.Errors.Server}, {"client", r.Kinds.Client, r.Errors.Client}} {
			line := topKinds(side.m, 7)
			if e := topKinds(side.err, 3); e != "-" {
				line += "; errors " + e
			}
			fmt.Fprintf(w, "%-5s %-12s %-6s %s\n", fmt.Sprintf("%v%%", r.Loss), r.Transport, side.name, line)
		}
	}
}

// topKinds formats the n largest entries of m of at least 0.05,
// "epoll_pwait 12.1, …", or "-".
func topKinds(m map[string]float64, n int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v >= 0.05 { // what rounds to 0.0 is start-up noise
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "-"
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
