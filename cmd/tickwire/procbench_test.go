package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildTickwire builds this command into a temporary directory (with
// -race when the test runs with it, so that only a link is needed) and
// returns the binary's path. It skips the test when go is not in PATH.
func buildTickwire(t *testing.T, ctx context.Context) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	bin := filepath.Join(t.TempDir(), "tickwire")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := []string{"build", "-o", bin}
	if raceEnabled {
		build = append(build, "-race")
	}
	if out, err := exec.CommandContext(ctx, gobin, append(build, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// procbench end to end at a tiny size: two transports, 0 % loss, one
// rep, system calls counted by perf where it works here (elsewhere the
// CPU alone is checked; TestProcbenchNoPerf checks what is printed then).
func TestProcbench(t *testing.T) {
	if !procbenchSupported {
		t.Skip("procbench needs a Unix")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin := buildTickwire(t, ctx)
	dir := t.TempDir()

	bench := func(t *testing.T, extra ...string) (string, pbDoc) {
		t.Helper()
		out := filepath.Join(dir, t.Name()[strings.LastIndex(t.Name(), "/")+1:]+".json")
		args := append([]string{"procbench", "--loss", "0", "--count", "20", "--rate", "100", "--reps", "1", "--json", out}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		// A -race binary sleeps 1 s at exit by default; the children inherit this.
		cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var doc pbDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("--json: %v\n%s", err, b)
		}
		return stdout.String(), doc
	}
	checkRuns := func(t *testing.T, doc pbDoc, transports []string) {
		t.Helper()
		if len(doc.Runs) != len(transports) || len(doc.Rows) != len(transports) {
			t.Fatalf("%d runs, %d rows, want %d of each", len(doc.Runs), len(doc.Rows), len(transports))
		}
		for i, r := range doc.Runs {
			if r.Transport != transports[i] || r.Failed {
				t.Errorf("run %d: %s failed=%v, want %s delivered", i, r.Transport, r.Failed, transports[i])
			}
			if r.Full.Sent != 20 || r.Full.Delivered != 20 || r.Base.Delivered != 1 {
				t.Errorf("%s: delivered %d of %d (one-message run %d), want 20 of 20 and 1", r.Transport, r.Full.Delivered, r.Full.Sent, r.Base.Delivered)
			}
			for name, c := range map[string]procCost{"server": r.Full.Server, "client": r.Full.Client, "relay": r.Full.Relay} {
				if !(c.CPUSeconds > 0 && c.CPUSeconds < 60) {
					t.Errorf("%s %s: CPU %v s, want a plausible figure above 0", r.Transport, name, c.CPUSeconds)
				}
			}
			if r.Full.WireBytes <= r.Base.WireBytes || r.Per.WireBytes < 64 {
				t.Errorf("%s: wire bytes %d (one-message run %d), %.0f per message, want more than the 64 B payload",
					r.Transport, r.Full.WireBytes, r.Base.WireBytes, r.Per.WireBytes)
			}
		}
		for _, r := range doc.Rows {
			if r.Ratios != nil && (r.Transport == "kcp-fast" || !slices.Contains(transports, "kcp-fast")) {
				t.Errorf("%s: ratios to kcp-fast in its own row or in a run without it: %+v", r.Transport, r.Ratios)
			}
		}
	}

	t.Run("perf", func(t *testing.T) {
		out, doc := bench(t, "--transports", "kcp-fast,tickwire")
		checkRuns(t, doc, []string{"kcp-fast", "tickwire"})
		if doc.Rows[1].Ratios == nil || !(doc.Rows[1].Ratios.ServerCPU != 0) {
			t.Errorf("tickwire's row has no ratios to kcp-fast: %+v", doc.Rows[1])
		}
		for _, want := range []string{"loss  transport", "kcp-fast", "tickwire", "ratios to kcp-fast"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		for line := range strings.Lines(out) {
			if n := len([]rune(strings.TrimRight(line, "\n"))); n > 120 && !strings.HasPrefix(line, "procbench:") { // that one names the binary
				t.Errorf("line of %d columns, want at most 120: %q", n, line)
			}
		}
		switch doc.Syscalls {
		case countPerf:
			for _, r := range doc.Runs {
				// Every echo is at least one receive and one send.
				if r.Full.Server.Syscalls < 2*20 || r.Full.Client.Syscalls < 2*20 {
					t.Errorf("%s: %v server and %v client system calls for 20 messages, want at least 40 each", r.Transport, r.Full.Server.Syscalls, r.Full.Client.Syscalls)
				}
			}
			if doc.Rows[0].ServerSyscall == nil {
				t.Errorf("perf counted, but the row has no system calls: %+v", doc.Rows[0])
			}
		case countNone:
			t.Logf("perf does not work here (%s): checked the CPU only", doc.SyscallsNote)
			if !strings.Contains(out, "system calls: not counted: ") {
				t.Errorf("output does not say why system calls are not counted:\n%s", out)
			}
		default:
			t.Errorf("syscalls %q, want perf or none under --syscalls auto", doc.Syscalls)
		}
	})

}

// Without perf (here: a perf that does not exist), procbench says why on
// its "system calls:" line and prints "-" for the system call columns
// only; the CPU columns stay. In-process: no child is started.
func TestProcbenchNoPerf(t *testing.T) {
	pb := procbench{perf: filepath.Join(t.TempDir(), "no-such-perf"), bin: "tickwire", tmp: t.TempDir(), count: 600, rate: 60, size: 64, reps: 1}
	note := pb.chooseCounter(context.Background(), "auto")
	if pb.counter != countNone || !strings.HasPrefix(note, "not counted: perf: ") || !strings.Contains(note, "no-such-perf") {
		t.Fatalf("counter %q, note %q: want none, saying perf is missing", pb.counter, note)
	}
	run := func(tr string, cpu float64) pbRep {
		return pbRep{Transport: tr, Per: pbPerMsg{ServerCPUUS: cpu, ClientCPUUS: 2 * cpu, RelayCPUUS: 1, ServerSyscall: -1, ClientSyscall: -1, WireBytes: 200}}
	}
	rows := pbRows([]pbRep{run("tickwire", 100), run("kcp-fast", 400)}, []string{"tickwire", "kcp-fast"}, []float64{0})
	if rows[0].ServerSyscall != nil || rows[0].Ratios == nil || rows[0].Ratios.ServerCPU != 0.25 || rows[0].Ratios.ServerSyscall != nil {
		t.Fatalf("rows %+v: want CPU ratios 0.25 and no system calls", rows)
	}
	var out bytes.Buffer
	pb.header(&out, &pbDoc{SyscallsNote: note})
	pb.table(&out, rows)
	text := out.String()
	for _, want := range []string{"system calls: not counted: perf: ",
		"0%    tickwire     100 [100-100]     200 [200-200]     -                  -                     200",
		"0%    tickwire     0.25× meets      0.25× meets      -                -"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestProcbenchBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--count", "5"},
		{"--transports", "tcp"},
		{"--transports", "quic,quic"},
		{"--loss", "0,x"},
		{"--loss", "120"},
		{"--syscalls", "dtrace"},
		{"--reps", "0"},
		{"stray"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"procbench"}, args...), &stdout, &stderr); code != exitUsage {
			t.Errorf("procbench %q: exit %d, want %d; stderr:\n%s", args, code, exitUsage, stderr.String())
		}
	}
}

// The perf and strace summaries as they print them.
func TestProcbenchParse(t *testing.T) {
	dir := t.TempDir()
	perf := filepath.Join(dir, "p")
	os.WriteFile(perf, []byte(`# started on Wed Dec  2 03:49:12 2026


 Performance counter stats for '/tmp/x-tw server --listen 127.0.0.1:7311':

              2,546      raw_syscalls:sys_enter
                 12      syscalls:sys_enter_epoll_pwait
                  0      syscalls:sys_enter_read

       2.989747211 seconds time elapsed

       0.015892000 seconds user
       0.022249000 seconds sys

`), 0o644)
	c, err := readPerf(perf)
	if err != nil {
		t.Fatal(err)
	}
	if c.Syscalls != 2546 || c.CPUSeconds < 0.038141 || c.CPUSeconds > 0.038142 || len(c.Kinds) != 1 || c.Kinds["epoll_pwait"] != 12 {
		t.Errorf("perf: %+v, want 2546 calls, 0.038141 s, epoll_pwait 12", c)
	}
	os.WriteFile(perf, []byte("<not supported> raw_syscalls:sys_enter\n"), 0o644)
	if _, err := readPerf(perf); err == nil {
		t.Error("perf without a count: no error")
	}

	st := filepath.Join(dir, "s")
	os.WriteFile(st, []byte(`% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 60.00    0.000300           3       100           epoll_pwait
 40.00    0.000200           4        50        10 recvmmsg
------ ----------- ----------- --------- --------- ----------------
100.00    0.000500           3       150        10 total
`), 0o644)
	c, err = readStrace(st)
	if err != nil {
		t.Fatal(err)
	}
	if c.Syscalls != 150 || c.CPUSeconds != -1 || c.Kinds["epoll_pwait"] != 100 || c.Kinds["recvmmsg"] != 50 || len(c.Errors) != 1 || c.Errors["recvmmsg"] != 10 {
		t.Errorf("strace: %+v, want 150 calls, CPU not measured, epoll_pwait 100, recvmmsg 50 of which 10 failed", c)
	}
}
