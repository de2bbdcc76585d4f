package udp_test

import (
	"errors"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []udp.Config{
		{},
		{BatchSize: 1, MaxDatagramSize: 1},
		{BatchSize: udp.MaxBatchSize, MaxDatagramSize: socket.MaxDatagramSize, RecvBuffer: udp.MaxSocketBuffer, SendBuffer: 1},
		{DisableGSO: true, DisableGRO: true},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", cfg, err)
		}
	}
	for _, cfg := range []udp.Config{
		{BatchSize: -1},
		{BatchSize: udp.MaxBatchSize + 1},
		{RecvBuffer: -1},
		{SendBuffer: udp.MaxSocketBuffer + 1},
		{MaxDatagramSize: -1},
		{MaxDatagramSize: socket.MaxDatagramSize + 1},
	} {
		if err := cfg.Validate(); !errors.Is(err, udp.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
		if _, err := udp.Open(lo4, cfg); !errors.Is(err, udp.ErrInvalidConfig) {
			t.Errorf("Open with %+v = %v, want ErrInvalidConfig", cfg, err)
		}
		if _, err := udp.OpenPlain(lo4, cfg); !errors.Is(err, udp.ErrInvalidConfig) {
			t.Errorf("OpenPlain with %+v = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := udp.Open(netip.AddrPort{}, udp.Config{}); !errors.Is(err, socket.ErrInvalidAddr) {
		t.Errorf("Open(zero AddrPort) = %v, want ErrInvalidAddr", err)
	}
}

// TestFeatures checks that Open takes the batched path on Linux and the
// plain one elsewhere, and that the switches turn GSO, GRO and timestamps
// off.
func TestFeatures(t *testing.T) {
	for _, v := range variants {
		c, err := v.open(lo4, v.cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Features()
		c.Close()
		want := v.want
		if runtime.GOOS != "linux" {
			want = udp.Features{}
		}
		// GSO, GRO and timestamps depend on the kernel; everything else
		// is fixed.
		k := kernelFeatures(t)
		want.GSO = want.GSO && k.GSO
		want.GRO = want.GRO && k.GRO
		want.Timestamps = want.Timestamps && k.Timestamps
		if got != want {
			t.Errorf("%s: Features() = %+v, want %+v", v.name, got, want)
		}
		t.Logf("%s: %+v", v.name, got)
	}
}

// kernelFeatures is what a default socket gets on this machine.
func kernelFeatures(t *testing.T) udp.Features {
	c, err := udp.Open(lo4, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Features()
}

// TestStats checks the counters of every variant after a known exchange.
func TestStats(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			a, b := openPair(t, v, lo4)
			dst := b.LocalAddr()
			limit := a.MaxDatagramSize()
			msgs := []socket.Message{
				{Buf: make([]byte, 100), N: 100, Addr: dst},
				{Buf: make([]byte, 30), N: 30, Addr: dst},
				{Buf: make([]byte, limit+1), N: limit + 1, Addr: dst},
			}
			if n, err := a.WriteBatch(msgs); n != 2 || !errors.Is(err, socket.ErrTooLarge) {
				t.Fatalf("WriteBatch = %d, %v; want 2, ErrTooLarge", n, err)
			}
			in := []socket.Message{{Buf: make([]byte, 50)}, {Buf: make([]byte, 50)}}
			watchdog := time.AfterFunc(10*time.Second, func() { b.Close() }) // bound the blocking reads
			defer watchdog.Stop()
			for got := 0; got < 2; {
				n, err := b.ReadBatch(in[got:])
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
			if in[0].N != 50 || in[1].N != 30 {
				t.Fatalf("read sizes %d, %d; want 50 (truncated), 30", in[0].N, in[1].N)
			}
			as, bs := a.Stats(), b.Stats()
			if as.DatagramsOut != 2 || as.BytesOut != 130 || as.OversizeRejected != 1 || as.SendSyscalls == 0 {
				t.Errorf("sender stats %+v: want 2 out, 130 bytes, 1 oversize, ≥1 syscall", as)
			}
			if bs.DatagramsIn != 2 || bs.BytesIn != 80 || bs.Truncated != 1 || bs.RecvSyscalls == 0 {
				t.Errorf("receiver stats %+v: want 2 in, 80 bytes, 1 truncated, ≥1 syscall", bs)
			}
			if runtime.GOOS == "linux" && (bs.RecvBufferBytes <= 0 || as.SendBufferBytes <= 0) {
				t.Errorf("socket buffers not reported: %+v", bs)
			}
		})
	}
}

// TestDualStack: a socket bound to [::] talks to an IPv4 peer, which it
// sees as an IPv4 address, and replies to that address.
func TestDualStack(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			requireLoopback(t, netip.MustParseAddrPort("[::1]:0"))
			srv, err := v.open(netip.MustParseAddrPort("[::]:0"), v.cfg)
			if err != nil {
				t.Skipf("no dual-stack socket here: %v", err)
			}
			defer srv.Close()
			cli, err := v.open(lo4, v.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), srv.LocalAddr().Port())
			if _, err := cli.WriteBatch([]socket.Message{{Buf: []byte("ping"), N: 4, Addr: to}}); err != nil {
				t.Fatal(err)
			}
			in := []socket.Message{{Buf: make([]byte, 16)}}
			readWithin(t, srv, in)
			if in[0].Addr != cli.LocalAddr() || string(in[0].Buf[:in[0].N]) != "ping" {
				t.Fatalf("server got %q from %v, want ping from %v", in[0].Buf[:in[0].N], in[0].Addr, cli.LocalAddr())
			}
			in[0].N = 4
			if _, err := srv.WriteBatch(in); err != nil {
				t.Fatalf("reply to %v: %v", in[0].Addr, err)
			}
			readWithin(t, cli, in)
			if in[0].Addr != to || string(in[0].Buf[:in[0].N]) != "ping" {
				t.Fatalf("client got %q from %v, want ping from %v", in[0].Buf[:in[0].N], in[0].Addr, to)
			}
		})
	}
}

// TestAddressFamilyMismatch: an IPv6 destination on an IPv4 socket fails
// at its index with ErrInvalidAddr, after the messages before it went out.
func TestAddressFamilyMismatch(t *testing.T) {
	for _, v := range variants {
		a, b := openPair(t, v, lo4)
		msgs := []socket.Message{
			{Buf: []byte("x"), N: 1, Addr: b.LocalAddr()},
			{Buf: []byte("y"), N: 1, Addr: netip.MustParseAddrPort("[::1]:9")},
		}
		if n, err := a.WriteBatch(msgs); n != 1 || !errors.Is(err, socket.ErrInvalidAddr) {
			t.Errorf("%s: WriteBatch = %d, %v; want 1, ErrInvalidAddr", v.name, n, err)
		}
	}
}

// readWithin reads one batch from c, failing after 5 s.
func readWithin(t *testing.T, c *udp.Conn, msgs []socket.Message) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := c.TryReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing arrived at %v within 5s", c.LocalAddr())
		}
		time.Sleep(time.Millisecond)
	}
}
