package main

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tickwire/tickwire/transport/token"
)

// Text forms of the X25519 key pair that keygen --x25519 prints, one per
// line: the server keeps the private line, clients pin the public one.
const (
	x25519PrivatePrefix = "x25519-private:"
	x25519PublicPrefix  = "x25519-public:"
)

// runKeygen is `tickwire keygen`: a new fleet key, or an X25519 key pair.
func runKeygen(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tickwire keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	x := fs.Bool("x25519", false, "print an X25519 key pair (a server's static key for the mode without a backend) instead of a fleet key")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tickwire keygen [--x25519] > FILE")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Prints a new fleet key from crypto/rand, the key a token backend and its")
		fmt.Fprintln(stderr, "servers share, as one line: fleet-key:<64 hex digits>.")
		fmt.Fprintln(stderr, "With --x25519, prints an X25519 key pair instead, as two lines:")
		fmt.Fprintln(stderr, "  x25519-private:<64 hex digits>   (the server's secret)")
		fmt.Fprintln(stderr, "  x25519-public:<64 hex digits>    (what clients pin)")
		fmt.Fprintln(stderr, "Both are secrets (the public line excepted): keep the file private.")
		fs.PrintDefaults()
	}
	if code := parseArgs(fs, args, stderr); code >= 0 {
		return code
	}
	if *x {
		priv, err := ecdh.X25519().GenerateKey(rand.Reader)
		if err != nil {
			fmt.Fprintf(stderr, "tickwire keygen: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "%s%x\n%s%x\n", x25519PrivatePrefix, priv.Bytes(), x25519PublicPrefix, priv.PublicKey().Bytes())
		return exitOK
	}
	k, err := token.GenerateKey()
	if err != nil {
		fmt.Fprintf(stderr, "tickwire keygen: %v\n", err)
		return exitFailed
	}
	txt, _ := k.MarshalText()
	fmt.Fprintf(stdout, "%s\n", txt)
	return exitOK
}

// tokenFlags are `tickwire token`'s flags, parsed.
type tokenFlags struct {
	key        token.Key
	params     token.Params
	expire     time.Duration
	hexOut     bool
	keyFile    string
	keyHex     string
	serverList string
	userHex    string
}

// runToken is `tickwire token`: issue a connect token for development.
func runToken(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tickwire token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f tokenFlags
	fs.StringVar(&f.keyFile, "key", "", "`FILE` holding the fleet key (what tickwire keygen prints)")
	fs.StringVar(&f.keyHex, "key-hex", "", "the fleet key as 64 `hex` digits (instead of --key)")
	fs.Func("protocol-id", "the game's protocol `id`, decimal or 0x-hex (default 0)", func(s string) (err error) {
		f.params.ProtocolID, err = strconv.ParseUint(s, 0, 64)
		return err
	})
	clientID := fs.String("client-id", "", "the player's client `id`, decimal or 0x-hex (required)")
	fs.StringVar(&f.serverList, "server", "", "the server addresses the token admits to, `IP:PORT[,IP:PORT…]` (required; 1 to 32, IPv6 as [addr]:port)")
	fs.DurationVar(&f.expire, "expire", time.Hour, "how long the token is valid from now, whole seconds")
	fs.DurationVar(&f.params.Timeout, "timeout", 0, "the session's idle time-out on the server: silence that long ends it (0: the server's IdleTimeout)")
	fs.StringVar(&f.userHex, "user-data-hex", "", "user data for the server's admission decision, as `hex` (at most 256 bytes)")
	fs.BoolVar(&f.hexOut, "hex", false, "print the token as hex instead of base64url")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tickwire token (--key FILE | --key-hex HEX) --client-id N --server ADDR[,ADDR…] [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Issues a connect token for tests and development, as a backend would, and")
		fmt.Fprintln(stderr, "prints its public part (docs/WIRE.md §14.4: what a client receives) as one")
		fmt.Fprintln(stderr, "line of unpadded base64url (with --hex: lowercase hex). Created is now.")
		fs.PrintDefaults()
	}
	if code := parseArgs(fs, args, stderr); code >= 0 {
		return code
	}
	if err := f.check(*clientID); err != nil {
		fmt.Fprintf(stderr, "tickwire token: %v\n", err)
		return exitUsage
	}
	now := time.Now() // the CLI is the edge: the wall clock enters here
	f.params.Created = now
	f.params.Expires = now.Add(f.expire)
	tok, err := token.Issue(f.key, f.params, nil)
	if err != nil {
		fmt.Fprintf(stderr, "tickwire token: %v\n", err)
		if errors.Is(err, token.ErrInvalidParams) {
			return exitUsage
		}
		return exitFailed
	}
	b, err := tok.MarshalBinary()
	if err != nil {
		fmt.Fprintf(stderr, "tickwire token: %v\n", err)
		return exitFailed
	}
	if f.hexOut {
		fmt.Fprintln(stdout, hex.EncodeToString(b))
	} else {
		fmt.Fprintln(stdout, base64.RawURLEncoding.EncodeToString(b))
	}
	return exitOK
}

// check validates the flags and fills f.key and f.params.
func (f *tokenFlags) check(clientID string) error {
	var err error
	switch {
	case f.keyFile != "" && f.keyHex != "":
		return errors.New("give --key or --key-hex, not both")
	case f.keyFile != "":
		b, rerr := os.ReadFile(f.keyFile)
		if rerr != nil {
			return fmt.Errorf("--key: %v", rerr)
		}
		if f.key, err = token.ParseKey(string(b)); err != nil {
			return fmt.Errorf("--key %s: %v", f.keyFile, err)
		}
	case f.keyHex != "":
		if f.key, err = token.ParseKey(f.keyHex); err != nil {
			return fmt.Errorf("--key-hex: %v", err)
		}
	default:
		return errors.New("--key FILE or --key-hex HEX is required (tickwire keygen makes a key)")
	}
	if clientID == "" {
		return errors.New("--client-id is required")
	}
	if f.params.ClientID, err = strconv.ParseUint(clientID, 0, 64); err != nil {
		return fmt.Errorf("--client-id %q: want an unsigned 64-bit number", clientID)
	}
	if f.serverList == "" {
		return errors.New("--server is required")
	}
	for _, s := range strings.Split(f.serverList, ",") {
		a, err := netip.ParseAddrPort(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--server %q: want IP:PORT, IPv6 as [addr]:port (%v)", s, err)
		}
		f.params.Servers = append(f.params.Servers, a)
	}
	if f.expire < time.Second || f.expire%time.Second != 0 {
		return fmt.Errorf("--expire %v: want whole seconds, at least 1s", f.expire)
	}
	if f.params.Timeout < 0 || f.params.Timeout%time.Millisecond != 0 || f.params.Timeout > token.MaxTimeout {
		return fmt.Errorf("--timeout %v: want whole milliseconds, 0 to %v", f.params.Timeout, time.Duration(token.MaxTimeout))
	}
	if f.params.UserData, err = hex.DecodeString(f.userHex); err != nil {
		return fmt.Errorf("--user-data-hex: %v", err)
	}
	if len(f.params.UserData) > token.MaxUserData {
		return fmt.Errorf("--user-data-hex: %d bytes, want at most %d", len(f.params.UserData), token.MaxUserData)
	}
	return nil
}
