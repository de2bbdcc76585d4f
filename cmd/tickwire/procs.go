package main

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tickwire/tickwire/bench"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/token"
)

// defaultConnectTimeout is the client's --connect-timeout default.
const defaultConnectTimeout = 5 * time.Second

// transportNames are the transports the server and client run.
var transportNames = strings.Join([]string{bench.Tickwire, bench.KCPFast, bench.KCPDefault, bench.QUIC, bench.QUICStreams, bench.QUICDatagram}, ", ")

// isQUIC reports whether name is a quic peer.
func isQUIC(name string) bool {
	return name == bench.QUIC || name == bench.QUICStreams || name == bench.QUICDatagram
}

// parseArgs parses args into fs. It returns -1 to go on, or the exit
// code: 0 for -h, 2 for a bad flag or a stray argument.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage
	}
	return -1
}

// parseAddr parses a --listen, --connect or --to value: an IP address and
// port, or a host name and port resolved now. wantPort refuses port 0.
func parseAddr(name, s string, wantPort bool) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, fmt.Errorf("--%s is required", name)
	}
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		ua, rerr := net.ResolveUDPAddr("udp", s)
		if rerr != nil {
			return netip.AddrPort{}, fmt.Errorf("--%s %q: want host:port (%v)", name, s, rerr)
		}
		a = ua.AddrPort()
	}
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	if wantPort && a.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("--%s %q: want a port other than 0", name, s)
	}
	return a, nil
}

// untilDone returns ctx bounded by d, or ctx itself for d = 0.
func untilDone(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d == 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// runServer is `tickwire server`: the echo profile's server half until
// interrupted or --duration.
func runServer(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		listen, tname, profile, certOut, keyIn string
		tokenKey, tokenAddr                    string
		protocolID                             uint64
		mtu                                    int
		duration                               time.Duration
		prof                                   profileFlags
	)
	fs := flag.NewFlagSet("tickwire server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&listen, "listen", "", "serve on `ADDR` (host:port; port 0 picks one) (required)")
	fs.StringVar(&tname, "transport", bench.Tickwire, "transport: "+transportNames)
	fs.StringVar(&profile, "profile", bench.ProfileEcho, "traffic profile: echo (the only one across processes)")
	fs.IntVar(&mtu, "mtu", bench.DefaultMTU, "largest datagram the server sends [576, 1472] (a tickwire client adopts it)")
	fs.DurationVar(&duration, "duration", 0, "serve this long, then exit (0: until interrupted)")
	fs.StringVar(&keyIn, "key", "", "tickwire: the server's static X25519 private key, 64 hex digits or tickwire keygen --x25519 output, from `FILE` (default: a fresh key; either way the public key is printed to stderr for the clients' --server-key)")
	fs.StringVar(&tokenKey, "token-key", "", "tickwire: admit only clients with a connect token sealed under the fleet key in `FILE` (what tickwire keygen prints; tickwire token issues the tokens)")
	fs.Func("protocol-id", "tickwire, with --token-key: the game's protocol `id` the tokens name, decimal or 0x-hex (default 0, as tickwire token's)", func(s string) (err error) {
		protocolID, err = strconv.ParseUint(s, 0, 64)
		return err
	})
	fs.StringVar(&tokenAddr, "token-addr", "", "tickwire, with --token-key: this server's `ADDR` as the tokens name it (default: the address it listens on, which must then not be 0.0.0.0 or [::])")
	fs.StringVar(&certOut, "cert", "", "quic: write the server's self-signed certificate (PEM) to `FILE`, for the clients' --cert (default: a file in the temporary directory, named on stderr)")
	prof.declare(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tickwire server --listen ADDR [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Serves the echo profile for `tickwire client`s in other processes or on other")
		fmt.Fprintln(stderr, "machines: every reliable message is echoed back on its stream. Prints")
		fmt.Fprintln(stderr, "\"listening on ADDR\" to stderr once bound, serves until interrupted or")
		fmt.Fprintln(stderr, "--duration, then prints the sessions and echoes it served to stdout. tickwire:")
		fmt.Fprintf(stderr, "one Endpoint for up to %d clients; kcp: any number of sessions; quic: one\n", bench.DefaultPeers)
		fmt.Fprintln(stderr, "quic-go listener serving quic, quic-streams and quic-dgram clients alike (by")
		fmt.Fprintln(stderr, "ALPN), with a certificate generated at start and written to --cert.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code := parseArgs(fs, args, stderr); code >= 0 {
		return code
	}
	addr, err := parseAddr("listen", listen, false)
	cfg := bench.ServerConfig{Transport: tname, Listen: addr, MTU: mtu}
	if err == nil {
		err = checkServerFlags(profile, duration, mtu)
	}
	if err == nil && keyIn != "" {
		cfg.PrivateKey, err = readPrivateKey(keyIn)
	}
	if err == nil && tokenKey != "" {
		cfg.Tokens, err = tokenConfig(tokenKey, tokenAddr, protocolID)
	} else if err == nil && tokenAddr != "" {
		err = fmt.Errorf("--token-addr needs --token-key")
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "tickwire server: %v\n", err)
		return exitUsage
	}

	stopProf, err := prof.start(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire server: %v\n", err)
		return exitUsage
	}
	ctx, cancel := untilDone(ctx, duration)
	defer cancel()
	code := exitOK
	srv, err := bench.Serve(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire server: %v\n", err)
		code = exitFailed
	} else {
		if pem := srv.Certificate(); pem != nil {
			if certOut == "" {
				certOut = filepath.Join(os.TempDir(), fmt.Sprintf("tickwire-quic-%d.pem", srv.Addr().Port()))
			}
			if err := os.WriteFile(certOut, pem, 0o644); err != nil {
				fmt.Fprintf(stderr, "tickwire server: --cert: %v\n", err)
				srv.Close()
				return exitFailed
			}
			fmt.Fprintf(stderr, "certificate in %s\n", certOut)
		}
		if k := srv.PublicKey(); k != nil {
			fmt.Fprintf(stderr, "public key %x\n", k.Bytes())
		}
		fmt.Fprintf(stderr, "listening on %v\n", srv.Addr())
		<-ctx.Done()
		srv.Close()
		st := srv.Stats()
		fmt.Fprintf(stdout, "%s server on %v: %d sessions, %d messages echoed\n", srv.Transport(), srv.Addr(), st.Sessions, st.Echoed)
	}
	if err := stopProf(); err != nil {
		fmt.Fprintf(stderr, "tickwire server: %v\n", err)
		code = exitFailed
	}
	return code
}

// runClient is `tickwire client`: one echo row against a server in
// another process.
func runClient(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		connect, tname, profile, jsonOut, certIn, keyHex, tokenText string
		count, size, mtu                                            int
		rate                                                        float64
		drain, timeout                                              time.Duration
		prof                                                        profileFlags
	)
	fs := flag.NewFlagSet("tickwire client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&connect, "connect", "", "the server's (or a relay's) `ADDR`, host:port (required)")
	fs.StringVar(&tname, "transport", bench.Tickwire, "transport, the server's: "+transportNames)
	fs.StringVar(&profile, "profile", bench.ProfileEcho, "traffic profile: echo (the only one across processes)")
	fs.IntVar(&count, "count", bench.DefaultCount, "messages to send")
	fs.Float64Var(&rate, "rate", bench.DefaultRate, "messages per second")
	fs.IntVar(&size, "size", bench.DefaultSize, fmt.Sprintf("message size in bytes [%d, %d]", bench.MinSize, bench.MaxSize))
	fs.IntVar(&mtu, "mtu", bench.DefaultMTU, "largest datagram [576, 1472] (kcp; a tickwire client adopts the server's)")
	fs.DurationVar(&drain, "drain", bench.DefaultDrain, "longest wait for outstanding echoes after the last send")
	fs.DurationVar(&timeout, "connect-timeout", defaultConnectTimeout, "give up when the server has not answered after this long")
	fs.StringVar(&jsonOut, "json", "", "write the JSON result (one object) to `FILE`, or to stdout instead of the table with -")
	fs.StringVar(&keyHex, "server-key", "", "tickwire: the server's X25519 public `KEY`, 64 hex digits, as `tickwire server` prints it (required for tickwire)")
	fs.StringVar(&tokenText, "token", "", "tickwire: the connect `TOKEN` to present, as tickwire token prints it (base64url or hex); with it --server-key is optional")
	fs.StringVar(&certIn, "cert", "", "quic: the server's certificate (PEM, the file its --cert names) to verify it against (required for quic)")
	prof.declare(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tickwire client --connect ADDR [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Runs the echo profile against `tickwire server` (directly or through")
		fmt.Fprintln(stderr, "`tickwire relay`) exactly as `tickwire bench` does in one process, and prints")
		fmt.Fprintln(stderr, "its one result row. The link is whatever sits between the processes, so the")
		fmt.Fprintln(stderr, "row's link is unknown (\"-\"; zero in JSON). Wire bytes are the client socket's,")
		fmt.Fprintln(stderr, "both ways (kcp: kcp-go's process-wide counters); CPU, allocations and RSS are")
		fmt.Fprintln(stderr, "this process's. Exit 1 if a message did not come back or the server does not")
		fmt.Fprintln(stderr, "answer within --connect-timeout.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code := parseArgs(fs, args, stderr); code >= 0 {
		return code
	}
	addr, err := parseAddr("connect", connect, true)
	s := bench.ClientScenario{Addr: addr, Transport: tname, Count: count, Rate: rate, Size: size, MTU: mtu, Drain: drain, ConnectTimeout: timeout}
	if err == nil {
		err = checkClientFlags(profile, tname, count, rate, size, mtu, drain, timeout)
	}
	if err == nil && tname == bench.Tickwire && tokenText != "" {
		s.Token, err = parseToken(tokenText)
	}
	if err == nil && tname == bench.Tickwire {
		switch {
		case keyHex != "":
			s.ServerKey, err = parsePublicKey(keyHex)
		case s.Token == nil:
			err = fmt.Errorf("--transport tickwire needs --server-key KEY, the public key the server prints, or --token TOKEN")
		}
	}
	if err == nil && isQUIC(tname) {
		if certIn == "" {
			err = fmt.Errorf("--transport %s needs --cert FILE, the server's certificate", tname)
		} else if s.ServerCert, err = os.ReadFile(certIn); err != nil {
			err = fmt.Errorf("--cert: %w", err)
		}
	}
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "tickwire client: %v\n", err)
		return exitUsage
	}
	if drain == 0 {
		s.Drain = time.Nanosecond // no wait; 0 would be the default
	}

	stopProf, err := prof.start(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire client: %v\n", err)
		return exitUsage
	}
	res, runErr := bench.RunClient(ctx, s)
	code := exitOK
	if err := stopProf(); err != nil {
		fmt.Fprintf(stderr, "tickwire client: %v\n", err)
		code = exitFailed
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "tickwire client: %v\n", runErr)
		return exitFailed
	}
	if err := reportOne(jsonOut, res, stdout); err != nil {
		fmt.Fprintf(stderr, "tickwire client: %v\n", err)
		code = exitFailed
	}
	if res.Failed() {
		fmt.Fprintf(stderr, "tickwire client: FAILED: %s %s via %v: delivered %d of %d\n",
			res.Transport, res.Profile, addr, res.Delivered, res.Sent)
		code = exitFailed
	}
	return code
}

// tokenConfig is a server's connect-token admission from its flags: the
// fleet key in keyFile, the address tokens name (addr; "" for the listen
// address) and the protocol id; tokens are required.
func tokenConfig(keyFile, addr string, protocolID uint64) (transport.TokenConfig, error) {
	var c transport.TokenConfig
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return c, fmt.Errorf("--token-key: %v", err)
	}
	k, err := token.ParseKey(string(b))
	if err != nil {
		return c, fmt.Errorf("--token-key %s: %v", keyFile, err)
	}
	if c.Verifier, err = token.NewVerifier(protocolID, k); err != nil {
		return c, fmt.Errorf("--token-key: %v", err)
	}
	if addr != "" {
		if c.Addr, err = netip.ParseAddrPort(addr); err != nil {
			return c, fmt.Errorf("--token-addr %q: want IP:PORT (%v)", addr, err)
		}
	}
	c.Required = true
	return c, nil
}

// parseToken decodes a public connect token as `tickwire token` prints
// it: base64url (unpadded) or, failing that, hex.
func parseToken(s string) (*token.Token, error) {
	s = strings.TrimSpace(s)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		if b, err = hex.DecodeString(s); err != nil {
			return nil, fmt.Errorf("--token: neither base64url nor hex")
		}
	}
	var t token.Token
	if err := t.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("--token: %v", err)
	}
	return &t, nil
}

// parsePublicKey reads an X25519 public key written as 64 hex digits,
// bare or as `tickwire keygen --x25519` prints it (x25519-public:<hex>).
func parsePublicKey(s string) (*ecdh.PublicKey, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(s), x25519PublicPrefix))
	if err == nil && len(b) != 32 {
		err = fmt.Errorf("%d bytes, want 32", len(b))
	}
	if err != nil {
		return nil, fmt.Errorf("--server-key: want 64 hex digits: %v", err)
	}
	return ecdh.X25519().NewPublicKey(b)
}

// readPrivateKey reads the server's X25519 private key from path: 64 hex
// digits, or the output of `tickwire keygen --x25519` (its
// x25519-private:<hex> line is taken, the public line ignored).
func readPrivateKey(path string) (*ecdh.PrivateKey, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--key: %w", err)
	}
	key := strings.TrimSpace(string(text))
	for line := range strings.Lines(key) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), x25519PrivatePrefix); ok {
			key = rest
			break
		}
	}
	b, err := hex.DecodeString(key)
	if err == nil && len(b) != 32 {
		err = fmt.Errorf("%d bytes, want 32", len(b))
	}
	if err != nil {
		return nil, fmt.Errorf("--key %s: want 64 hex digits (or tickwire keygen --x25519 output): %v", path, err)
	}
	return ecdh.X25519().NewPrivateKey(b)
}

// reportOne writes r as a one-row table to stdout, and as one JSON object
// (not a {"results":[…]} document) to stdout instead (jsonPath "-") or to
// a file as well.
func reportOne(jsonPath string, r bench.Result, stdout io.Writer) error {
	writeJSON := func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	if jsonPath == "-" {
		return writeJSON(stdout)
	}
	if err := bench.WriteTable(stdout, []bench.Result{r}); err != nil {
		return err
	}
	if jsonPath == "" {
		return nil
	}
	return writeFile(jsonPath, writeJSON)
}

// runRelay is `tickwire relay`: the bench's link conditioner between
// processes (or machines) until interrupted or --duration.
func runRelay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		listen, to         string
		loss, dup, burst   float64
		delay, jitter, dur time.Duration
		seed               uint64
		prof               profileFlags
	)
	fs := flag.NewFlagSet("tickwire relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&listen, "listen", "", "the client-facing `ADDR`, host:port (port 0 picks one) (required)")
	fs.StringVar(&to, "to", "", "the server's `ADDR`, host:port (required)")
	fs.Float64Var(&loss, "loss", 0, "loss rate in percent, each direction")
	fs.DurationVar(&delay, "delay", 0, "one-way delay, each direction")
	fs.DurationVar(&jitter, "jitter", 0, "one-way delay jitter (uniform ±)")
	fs.Float64Var(&dup, "dup", 0, "duplication rate in percent, each direction")
	fs.Float64Var(&burst, "burst", 1, "mean loss-run length (1: independent loss, >1: Gilbert–Elliott bursts)")
	fs.Uint64Var(&seed, "seed", bench.DefaultSeed, "seed of the drop and duplicate decisions")
	fs.DurationVar(&dur, "duration", 0, "relay this long, then exit (0: until interrupted)")
	prof.declare(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tickwire relay --listen ADDR --to ADDR [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Forwards UDP between one client (the latest source seen on --listen) and")
		fmt.Fprintln(stderr, "--to, each direction through the bench's impairment model. Any address is")
		fmt.Fprintln(stderr, "allowed: it may sit between machines. Prints \"listening on ADDR\" to stderr")
		fmt.Fprintln(stderr, "once bound; on exit (interrupt or --duration) prints each direction's")
		fmt.Fprintln(stderr, "datagrams and bytes in, forwarded, dropped and duplicated to stdout.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code := parseArgs(fs, args, stderr); code >= 0 {
		return code
	}
	la, err := parseAddr("listen", listen, false)
	var ta netip.AddrPort
	if err == nil {
		ta, err = parseAddr("to", to, true)
	}
	link := simlink.LinkConfig{Loss: loss / 100, Delay: delay, Jitter: jitter, Duplicate: dup / 100, BurstLen: burst}
	if err == nil {
		err = checkRelayFlags(loss, dup, burst, delay, jitter, dur)
	}
	if err == nil {
		err = link.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "tickwire relay: %v\n", err)
		return exitUsage
	}

	stopProf, err := prof.start(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire relay: %v\n", err)
		return exitUsage
	}
	ctx, cancel := untilDone(ctx, dur)
	defer cancel()
	code := exitOK
	r, err := bench.NewRelay(bench.RelayConfig{Listen: la, Target: ta, Up: link, Down: link, Seed: seed, AllowNonLoopback: true})
	switch {
	case errors.Is(err, bench.ErrRelayConfig):
		fmt.Fprintf(stderr, "tickwire relay: %v\n", err)
		code = exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "tickwire relay: %v\n", err)
		code = exitFailed
	default:
		fmt.Fprintf(stderr, "listening on %v\n", r.Addr())
		<-ctx.Done()
		r.Close()
		st := r.Stats()
		fmt.Fprintf(stdout, "relay %v -> %v, each way: loss %v%%, delay %v ± %v, dup %v%%, burst %v, seed %d\n",
			r.Addr(), ta, loss, delay, jitter, dup, burst, seed)
		printDir(stdout, "up (client -> server)", st.Up)
		printDir(stdout, "down (server -> client)", st.Down)
	}
	if err := stopProf(); err != nil {
		fmt.Fprintf(stderr, "tickwire relay: %v\n", err)
		code = exitFailed
	}
	return code
}

// printDir writes one direction's relay counters: datagrams read, copies
// written onward, drops (by the model, for a full hold queue, refused by
// the socket), copies still held when the relay stopped, duplicates
// made, and datagrams from a source other than the server (down only).
func printDir(w io.Writer, name string, d bench.DirStats) {
	dropped := d.Model.Dropped() + d.Overflow + d.WriteErrors
	var held uint64
	if out := d.Forwarded + d.Overflow + d.WriteErrors; d.Model.Delivered > out {
		held = d.Model.Delivered - out
	}
	fmt.Fprintf(w, "  %-24s in %d datagrams (%d B), forwarded %d (%d B), dropped %d (model %d, overflow %d, write errors %d), held at exit %d, duplicated %d, foreign %d\n",
		name+":", d.Received, d.ReceivedBytes, d.Forwarded, d.ForwardedBytes,
		dropped, d.Model.Dropped(), d.Overflow, d.WriteErrors, held, d.Model.Duplicated, d.Foreign)
}

// checkServerFlags checks the server's flags against their documented
// ranges (see flags.go); bench.ServerConfig.Validate checks the rest.
func checkServerFlags(profile string, duration time.Duration, mtu int) error {
	if profile != bench.ProfileEcho {
		return fmt.Errorf("--profile %q: only %q runs across processes", profile, bench.ProfileEcho)
	}
	return firstErr(
		nonNegative("duration", duration),
		intIn("mtu", mtu, transport.MinMTU, transport.MaxMTU),
	)
}

// checkClientFlags checks the client's flags against their documented
// ranges; bench.ClientScenario.Validate checks the rest (count and rate
// have upper bounds only there). Zero would mean "default" to the bench
// package; on the command line it is a mistake.
func checkClientFlags(profile, tname string, count int, rate float64, size, mtu int, drain, timeout time.Duration) error {
	switch {
	case profile != bench.ProfileEcho:
		return fmt.Errorf("--profile %q: only %q runs across processes", profile, bench.ProfileEcho)
	case tname == bench.Raw:
		return fmt.Errorf("--transport %q: %w", tname, bench.ErrNoReliable)
	}
	return firstErr(
		intAtLeast("count", count, 1),
		positive("rate", rate, 0),
		intIn("size", size, bench.MinSize, bench.MaxSize),
		intIn("mtu", mtu, transport.MinMTU, transport.MaxMTU),
		nonNegative("drain", drain),
		positiveDuration("connect-timeout", timeout, 0),
	)
}

// checkRelayFlags checks the relay's flags against their documented
// ranges; simlink.LinkConfig.Validate checks what depends on several
// (a loss rate a burst length cannot reach).
func checkRelayFlags(loss, dup, burst float64, delay, jitter, dur time.Duration) error {
	return firstErr(
		percent("loss", loss),
		percent("dup", dup),
		burstLen("burst", burst),
		durationIn("delay", delay, 0, simlink.MaxDelay),
		durationIn("jitter", jitter, 0, simlink.MaxDelay),
		nonNegative("duration", dur),
	)
}
