package bench

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// A server and clients of each transport, in one process but talking only
// through their sockets: several clients at once against one server,
// every echo back, the client's socket bytes counted.
func TestServeRunClient(t *testing.T) {
	for _, name := range []string{Tickwire, KCP} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			srv, err := Serve(ctx, ServerConfig{Transport: name})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			if a := srv.Addr(); !a.Addr().IsLoopback() || a.Port() == 0 {
				t.Fatalf("server address %v", a)
			}
			const clients, count = 3, 40
			results := make([]Result, clients)
			errs := make([]error, clients)
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					results[i], errs[i] = RunClient(ctx, ClientScenario{
						Addr: srv.Addr(), Transport: name, Count: count, Rate: 200, Drain: 5 * time.Second, ServerKey: srv.PublicKey(),
					})
				})
			}
			wg.Wait()
			for i, r := range results {
				if errs[i] != nil {
					t.Fatalf("client %d: %v", i, errs[i])
				}
				if r.Failed() || r.Sent != count || r.Transport != name || r.LatencyKind != RTT {
					t.Errorf("client %d: %+v", i, r)
				}
				if r.Link != (LinkResult{}) {
					t.Errorf("client %d: link %+v, want the zero (unknown) link", i, r.Link)
				}
				if r.LatencyMS.P50 <= 0 || r.WireBytes < r.PayloadBytes {
					t.Errorf("client %d: p50 %v ms, wire %d bytes for %d payload", i, r.LatencyMS.P50, r.WireBytes, r.PayloadBytes)
				}
			}
			st := srv.Stats()
			if st.Sessions != clients || st.Echoed != clients*count+probes(name, clients) {
				t.Errorf("server stats %+v, want %d sessions, %d echoes", st, clients, clients*count+probes(name, clients))
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// probes is the number of probe echoes n clients of transport name cost
// the server.
func probes(name string, n uint64) uint64 {
	if name == Tickwire {
		return 0
	}
	return n
}

// A client of either transport to a port nobody answers on fails with
// ErrConnectTimeout within its connect timeout.
func TestRunClientNoServer(t *testing.T) {
	// A bound UDP socket that never answers: nothing else can take the port.
	quiet, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	addr := quiet.LocalAddr().(*net.UDPAddr).AddrPort()
	for _, name := range []string{Tickwire, KCP} {
		start := time.Now()
		_, err := RunClient(context.Background(), ClientScenario{Addr: addr, Transport: name, Count: 1, ConnectTimeout: 200 * time.Millisecond, ServerKey: anyKey(t)})
		if !errors.Is(err, ErrConnectTimeout) {
			t.Errorf("%s: err %v, want ErrConnectTimeout", name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v with a 200 ms connect timeout", name, d)
		}
	}
}

func TestServerClientValidate(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:9")
	for _, cfg := range []ServerConfig{{Transport: "tcp"}, {Transport: Raw}, {MTU: 100}} {
		if _, err := Serve(context.Background(), cfg); err == nil {
			t.Errorf("Serve(%+v): no error", cfg)
		}
	}
	for _, s := range []ClientScenario{
		{}, {Addr: netip.MustParseAddrPort("127.0.0.1:0")}, {Addr: lo, Transport: Raw},
		{Addr: lo, Size: 8}, {Addr: lo, ConnectTimeout: -1}, {Addr: lo, Rate: -1},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: valid", s)
		}
	}
	if err := (ClientScenario{Addr: lo, ServerKey: anyKey(t)}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (ClientScenario{Addr: lo}).Validate(); !errors.Is(err, ErrServerKey) {
		t.Errorf("tickwire without a server key: %v", err)
	}
}

// Serve's server closes when its context ends: it answers no more.
func TestServeClosesWithContext(t *testing.T) {
	for _, name := range []string{Tickwire, KCP} {
		ctx, cancel := context.WithCancel(context.Background())
		srv, err := Serve(ctx, ServerConfig{Transport: name})
		if err != nil {
			t.Fatal(err)
		}
		s := ClientScenario{Addr: srv.Addr(), Transport: name, Count: 2, Rate: 100, ConnectTimeout: 300 * time.Millisecond, ServerKey: srv.PublicKey()}
		if r, err := RunClient(context.Background(), s); err != nil || r.Failed() {
			t.Fatalf("%s: before cancel: %+v, %v", name, r, err)
		}
		cancel()
		// The close runs on its own goroutine: wait until it has released
		// the server's port, which it does only by closing the socket.
		waitPortFree(t, srv.Addr(), 5*time.Second)
		if _, err := RunClient(context.Background(), s); !errors.Is(err, ErrConnectTimeout) {
			t.Errorf("%s: after cancel: err %v, want ErrConnectTimeout", name, err)
		}
		srv.Close()
	}
}

// waitPortFree returns once a UDP socket can be bound to addr — that is,
// once whoever held it closed it — and fails the test if that takes
// longer than limit.
func waitPortFree(t *testing.T, addr netip.AddrPort, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v still bound after %v: %v", addr, limit, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// anyKey returns a fresh X25519 public key, for a tickwire client of a
// server that is not there.
func anyKey(t testing.TB) *ecdh.PublicKey {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k.PublicKey()
}
