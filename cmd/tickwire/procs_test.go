package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer that one goroutine writes while others
// read.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// listening matches the line server and relay print once bound.
var listening = regexp.MustCompile(`(?m)^listening on (\S+)$`)

// waitAddr waits (bounded) for the "listening on ADDR" line on stderr and
// returns ADDR.
func waitAddr(t *testing.T, what string, stderr *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s printed no address; stderr:\n%s", what, stderr.String())
	return ""
}

// publicKeyLine is what a tickwire server prints before "listening on".
var publicKeyLine = regexp.MustCompile(`public key ([0-9a-f]{64})\n`)

// serverKey returns the public key a tickwire server printed (once it
// printed its address, the key is there).
func serverKey(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	m := publicKeyLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("server printed no public key; stderr:\n%s", stderr.String())
	}
	return m[1]
}

// bg is a subcommand running through run() on its own goroutine.
type bg struct {
	stdout, stderr syncBuffer
	code           chan int
}

func startRun(ctx context.Context, args ...string) *bg {
	p := &bg{code: make(chan int, 1)}
	go func() { p.code <- run(ctx, args, &p.stdout, &p.stderr) }()
	return p
}

// exit waits (bounded) for the exit code.
func (p *bg) exit(t *testing.T, what string) int {
	t.Helper()
	select {
	case c := <-p.code:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not exit; stderr:\n%s", what, p.stderr.String())
		return -1
	}
}

// checkClientJSON checks the client's stdout: one Result object (not a
// {"results":…} document), every message echoed, round-trip latency, the
// unknown link.
func checkClientJSON(t *testing.T, out []byte, transport string, count float64) {
	t.Helper()
	var r map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, out)
	}
	if dec.More() {
		t.Errorf("more than one JSON value on stdout:\n%s", out)
	}
	if len(r) != len(schema) {
		t.Errorf("%d fields, want %d (the Result schema): %v", len(r), len(schema), r)
	}
	lat, _ := r["latency_ms"].(map[string]any)
	link, _ := r["link"].(map[string]any)
	if r["transport"] != transport || r["profile"] != "echo" || r["latency_kind"] != "rtt" {
		t.Errorf("transport %v, profile %v, latency kind %v", r["transport"], r["profile"], r["latency_kind"])
	}
	if r["sent"] != count || r["delivered"] != r["sent"] {
		t.Errorf("delivered %v of %v, want %v of %v", r["delivered"], r["sent"], count, count)
	}
	if p50, _ := lat["p50"].(float64); !(p50 > 0) {
		t.Errorf("p50 %v, want > 0", lat["p50"])
	}
	for k, v := range link {
		if v != 0.0 {
			t.Errorf("link.%s = %v, want 0 (unknown link)", k, v)
		}
	}
	if w, _ := r["wire_bytes"].(float64); !(w > 0) {
		t.Errorf("wire_bytes %v", r["wire_bytes"])
	}
}

// server, relay at 10 % loss, client: three subcommands through run(),
// talking only over their sockets, for each transport.
func TestServerRelayClient(t *testing.T) {
	for _, name := range []string{"tickwire", "kcp-fast", "quic", "quic-streams"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			dir := t.TempDir()
			memprof, cpuprof := filepath.Join(dir, "relay.mem"), filepath.Join(dir, "client.cpu")
			cert := filepath.Join(dir, "server.pem")

			srv := startRun(ctx, "server", "--listen", "127.0.0.1:0", "--transport", name, "--duration", "20s", "--pprof", "127.0.0.1:0", "--cert", cert)
			saddr := waitAddr(t, "server", &srv.stderr)
			rel := startRun(ctx, "relay", "--listen", "127.0.0.1:0", "--to", saddr, "--loss", "10", "--seed", "7", "--duration", "20s", "--memprofile", memprof)
			raddr := waitAddr(t, "relay", &rel.stderr)

			var stdout, stderr bytes.Buffer
			args := []string{"client", "--connect", raddr, "--transport", name, "--count", "40", "--rate", "200",
				"--connect-timeout", "3s", "--json", "-", "--cpuprofile", cpuprof}
			if strings.HasPrefix(name, "quic") {
				args = append(args, "--cert", cert)
			}
			if name == "tickwire" {
				args = append(args, "--server-key", serverKey(t, &srv.stderr))
			}
			if code := run(ctx, args, &stdout, &stderr); code != exitOK {
				t.Fatalf("client: exit %d; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
			}
			checkClientJSON(t, stdout.Bytes(), name, 40)

			cancel() // as an interrupt would
			if c := srv.exit(t, "server"); c != exitOK {
				t.Errorf("server: exit %d; stderr:\n%s", c, srv.stderr.String())
			}
			if c := rel.exit(t, "relay"); c != exitOK {
				t.Errorf("relay: exit %d; stderr:\n%s", c, rel.stderr.String())
			}
			echoed := "40 messages echoed"
			if name == "kcp-fast" {
				echoed = "41 messages echoed" // and the probe
			}
			if out := srv.stdout.String(); !strings.Contains(out, "1 sessions, "+echoed) {
				t.Errorf("server summary %q, want 1 session, %s", out, echoed)
			}
			if !strings.Contains(srv.stderr.String(), "pprof: http://127.0.0.1:") {
				t.Errorf("server: no pprof address on stderr:\n%s", srv.stderr.String())
			}
			out := rel.stdout.String()
			for _, want := range []string{"loss 10%", "up (client -> server):", "down (server -> client):", "dropped"} {
				if !strings.Contains(out, want) {
					t.Errorf("relay stats lack %q:\n%s", want, out)
				}
			}
			for _, f := range []string{memprof, cpuprof} {
				if st, err := os.Stat(f); err != nil || st.Size() == 0 {
					t.Errorf("profile %s: %v", f, err)
				}
			}
		})
	}
}

// quietAddr returns the address of a bound UDP socket that never answers.
func quietAddr(t *testing.T) string {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.LocalAddr().String()
}

// A client to an address nobody answers on exits 1 with a clear error
// within its connect timeout.
func TestClientUnreachable(t *testing.T) {
	addr := quietAddr(t)
	for _, name := range []string{"tickwire", "kcp-fast"} {
		var stdout, stderr bytes.Buffer
		start := time.Now()
		args := []string{"client", "--connect", addr, "--transport", name, "--connect-timeout", "200ms"}
		if name == "tickwire" {
			args = append(args, "--server-key", "09"+strings.Repeat("00", 31))
		}
		code := run(context.Background(), args, &stdout, &stderr)
		if code != exitFailed {
			t.Errorf("%s: exit %d, want %d", name, code, exitFailed)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v with --connect-timeout 200ms", name, d)
		}
		if !strings.Contains(stderr.String(), "no answer from the server") || !strings.Contains(stderr.String(), addr) {
			t.Errorf("%s: stderr %q", name, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: stdout %q", name, stdout.String())
		}
	}
}

func TestProcsBadUsage(t *testing.T) {
	// A cancelled context: should a bad flag slip through, the command
	// ends at once (and not with exit 2).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lo := "127.0.0.1:9"
	for _, args := range [][]string{
		{"server"},
		{"server", "--listen", "nope"},
		{"server", "--listen", "127.0.0.1"},
		{"server", "--listen", "127.0.0.1:0", "--transport", "tcp"},
		{"server", "--listen", "127.0.0.1:0", "--transport", "raw"},
		{"server", "--listen", "127.0.0.1:0", "--profile", "pps"},
		{"server", "--listen", "127.0.0.1:0", "--mtu", "100"},
		{"server", "--listen", "127.0.0.1:0", "--mtu", "-1"},
		{"server", "--listen", "127.0.0.1:0", "--duration", "-1s"},
		{"server", "--listen", "127.0.0.1:0", "extra"},
		{"server", "--bogus"},
		{"client"},
		{"client", "--connect", "127.0.0.1:0"},
		{"client", "--connect", "not an address"},
		{"client", "--connect", lo, "--transport", "tcp"},
		{"client", "--connect", lo, "--transport", "raw"},
		{"client", "--connect", lo, "--profile", "bulk"},
		{"client", "--connect", lo, "--count", "0"},
		{"client", "--connect", lo, "--count", "-3"},
		{"client", "--connect", lo, "--rate", "-1"},
		{"client", "--connect", lo, "--size", "8"},
		{"client", "--connect", lo, "--mtu", "9000"},
		{"client", "--connect", lo, "--drain", "-1s"},
		{"client", "--connect", lo, "--connect-timeout", "0"},
		{"client", "--connect", lo, "extra"},
		{"relay"},
		{"relay", "--listen", "127.0.0.1:0"},
		{"relay", "--to", lo},
		{"relay", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:0"},
		{"relay", "--listen", "127.0.0.1:0", "--to", lo, "--loss", "101"},
		{"relay", "--listen", "127.0.0.1:0", "--to", lo, "--loss", "-1"},
		{"relay", "--listen", "127.0.0.1:0", "--to", lo, "--dup", "200"},
		{"relay", "--listen", "127.0.0.1:0", "--to", lo, "--delay", "-1ms"},
		{"relay", "--listen", "127.0.0.1:0", "--to", lo, "--jitter", "-1ms"},
		{"relay", "--listen", "127.0.0.1:0", "--to", lo, "--burst", "0.5"},
		{"relay", "--listen", "127.0.0.1:0", "--to", lo, "--duration", "-1s"},
		{"relay", "--listen", "127.0.0.1:0", "--to", lo, "extra"},
		{"soak", "--bogus"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(ctx, args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d; stderr: %s", args, code, exitUsage, stderr.String())
		}
		if stderr.Len() == 0 {
			t.Errorf("%q: no error message", args)
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: wrote to stdout: %s", args, stdout.String())
		}
	}
	for _, cmd := range []string{"server", "client", "relay", "soak"} {
		var stdout, stderr bytes.Buffer
		if code := run(ctx, []string{cmd, "-h"}, &stdout, &stderr); code != exitOK {
			t.Errorf("%s -h: exit %d", cmd, code)
		}
		for _, f := range []string{"-cpuprofile", "-memprofile", "-trace", "-pprof"} {
			if !strings.Contains(stderr.String(), f) {
				t.Errorf("%s -h lacks %s", cmd, f)
			}
		}
	}
}

// The real thing: the binary built, server, relay and client each in its
// own process.
func TestRealProcesses(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "tickwire")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := []string{"build", "-o", bin}
	if raceEnabled {
		build = append(build, "-race") // the test's packages are cached that way: only a link
	}
	start := time.Now()
	if out, err := exec.CommandContext(ctx, gobin, append(build, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built in %v", time.Since(start))
	start = time.Now()

	// daemon starts a server or relay process and returns it with its
	// address (and sets key to a server's public key).
	var key string
	daemon := func(args ...string) (*exec.Cmd, *syncBuffer, string) {
		cmd := exec.CommandContext(ctx, bin, args...)
		var stdout, stderr syncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr := waitAddr(t, args[0], &stderr)
		if args[0] == "server" {
			key = serverKey(t, &stderr)
		}
		return cmd, &stdout, addr
	}
	srv, srvOut, saddr := daemon("server", "--listen", "127.0.0.1:0", "--duration", "30s")
	_, _, raddr := daemon("relay", "--listen", "127.0.0.1:0", "--to", saddr, "--loss", "10", "--duration", "30s")

	for _, via := range []string{saddr, raddr} {
		out, err := exec.CommandContext(ctx, bin, "client", "--connect", via, "--count", "30", "--rate", "100", "--json", "-", "--server-key", key).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("client via %s: %v\n%s", via, err, stderr)
		}
		checkClientJSON(t, out, "tickwire", 30)
		t.Logf("client via %s: %v since the build", via, time.Since(start))
	}
	if runtime.GOOS == "windows" {
		return // no interrupt to send
	}
	if err := srv.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server after an interrupt: %v", err)
	}
	if out := srvOut.String(); !strings.Contains(out, "2 sessions, 60 messages echoed") {
		t.Errorf("server summary %q, want 2 sessions, 60 echoes", out)
	}
}

// tickwire server --key FILE serves with that key: the public key it
// prints is the file's, and a malformed file is a usage error.
func TestServerKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.key")
	priv := strings.Repeat("42", 32)
	if err := os.WriteFile(path, []byte(priv+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := readPrivateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%x", k.PublicKey().Bytes())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := startRun(ctx, "server", "--listen", "127.0.0.1:0", "--key", path, "--duration", "1s")
	waitAddr(t, "server", &srv.stderr)
	if got := serverKey(t, &srv.stderr); got != want {
		t.Fatalf("server printed public key %s, want %s", got, want)
	}
	srv.exit(t, "server")
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("not hex"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"server", "--listen", "127.0.0.1:0", "--key", bad}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("malformed key file: exit %d; %s", code, stderr.String())
	}
	if _, err := parsePublicKey("abc"); err == nil {
		t.Fatal("a 1.5-byte public key parsed")
	}
}

// TestServerClientToken: `tickwire server --token-key` admits only clients
// with a token that `tickwire token` issued for it under that fleet key:
// a client with --token (and no --server-key) runs its echo row, one with
// only --server-key is refused (exit 1, the reason on stderr).
func TestServerClientToken(t *testing.T) {
	dir := t.TempDir()
	var keyOut, errOut bytes.Buffer
	if code := run(context.Background(), []string{"keygen"}, &keyOut, &errOut); code != exitOK {
		t.Fatalf("keygen: exit %d: %s", code, errOut.String())
	}
	keyFile := filepath.Join(dir, "fleet.key")
	if err := os.WriteFile(keyFile, keyOut.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := startRun(ctx, "server", "--listen", "127.0.0.1:0", "--token-key", keyFile, "--protocol-id", "0x77", "--duration", "4s")
	addr := waitAddr(t, "server", &srv.stderr)

	var tokOut bytes.Buffer
	errOut.Reset()
	if code := run(ctx, []string{"token", "--key", keyFile, "--protocol-id", "0x77", "--client-id", "5", "--server", addr, "--expire", "60s"}, &tokOut, &errOut); code != exitOK {
		t.Fatalf("token: exit %d: %s", code, errOut.String())
	}
	var out, cerr bytes.Buffer
	if code := run(ctx, []string{"client", "--connect", addr, "--token", strings.TrimSpace(tokOut.String()), "--count", "20", "--rate", "200", "--json", "-"}, &out, &cerr); code != exitOK {
		t.Fatalf("token client: exit %d: %s", code, cerr.String())
	}
	checkClientJSON(t, out.Bytes(), "tickwire", 20)

	out.Reset()
	cerr.Reset()
	key := serverKey(t, &srv.stderr)
	if code := run(ctx, []string{"client", "--connect", addr, "--server-key", key, "--count", "5", "--connect-timeout", "2s"}, &out, &cerr); code != exitFailed ||
		!strings.Contains(cerr.String(), "connect token required") {
		t.Fatalf("client without a token: exit %d: %s", code, cerr.String())
	}
	if code := srv.exit(t, "server"); code != exitOK {
		t.Fatalf("server: exit %d: %s", code, srv.stderr.String())
	}
	if _, err := parseToken("!!"); err == nil {
		t.Fatal("a junk token parsed")
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"server", "--listen", "127.0.0.1:0", "--token-addr", addr}, &out, &errOut); code != exitUsage {
		t.Fatalf("--token-addr without --token-key: exit %d", code)
	}
}
