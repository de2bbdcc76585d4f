package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Every row of every peer on every profile it runs carries its peer
// configuration into the JSON: the name, the delivery, the MTU (where the
// peer has one) and the settings that tell the peers apart.
func TestEveryRowConfigInJSON(t *testing.T) {
	s := DefaultSuite()
	s.Transports = Transports
	s.Profiles = []string{ProfileEcho, ProfilePPS, ProfileBulk}
	s.Losses = []float64{0}
	s.Link = Link{Delay: time.Millisecond, Seed: 1}
	s.Count, s.Rate, s.Drain = 10, 200, 2*time.Second
	s.Duration, s.Bytes = 100*time.Millisecond, 256<<10
	scenarios := s.Scenarios()
	// Rows out of their place run too: kcp-fast and kcp-default on pps
	// and bulk (the old rows).
	for _, tr := range []string{KCPFast, KCPDefault} {
		for _, p := range []string{ProfilePPS, ProfileBulk} {
			scenarios = append(scenarios, Scenario{Profile: p, Transport: tr, Duration: s.Duration, Bytes: s.Bytes, Drain: s.Drain})
		}
	}
	rs, err := RunAll(context.Background(), scenarios, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rs); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			Transport, Profile, Delivery string
			Config                       PeerConfig
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, r := range doc.Results {
		seen[r.Transport] = true
		set := r.Config.Settings
		switch {
		case r.Config.Name != r.Transport:
			t.Errorf("row %d (%s %s): config name %q", i, r.Transport, r.Profile, r.Config.Name)
		case r.Delivery != DeliveryOf(r.Transport, r.Profile) && !(r.Transport == Tickwire && r.Profile == ProfilePPS):
			t.Errorf("row %d (%s %s): delivery %q", i, r.Transport, r.Profile, r.Delivery)
		case set["delivery"] != r.Delivery || set["path"] == "" || set["implementation"] == "":
			t.Errorf("row %d (%s %s): settings %v", i, r.Transport, r.Profile, set)
		}
		var must []string
		switch peers[r.Transport].family {
		case "tickwire":
			must = []string{"mtu", "ack_max_in_flight", "loop"}
		case "kcp":
			must = []string{"mtu", "nodelay", "window", "mode", "write_delay", "fec", "crypt"}
		case "quic":
			must = []string{"initial_packet_size", "path_mtu_discovery", "max_idle_timeout", "flow_control", "udp_buffers", "carriage", "tls"}
		case "raw":
			must = []string{"socket"}
		}
		for _, k := range must {
			if set[k] == "" {
				t.Errorf("row %d (%s %s): no %q in settings %v", i, r.Transport, r.Profile, k, set)
			}
		}
	}
	for _, tr := range Transports {
		if !seen[tr] {
			t.Errorf("no row for %s", tr)
		}
	}
	if got := rs[0].Config.Settings["mtu"]; got != "1200" {
		t.Errorf("tickwire echo mtu %q, want 1200", got)
	}
	for _, r := range rs {
		if r.Transport == KCPBulk && (r.Config.Settings["mode"] != "stream" || !strings.HasPrefix(r.Config.Settings["window"], "1024/1024") || r.Config.Settings["write_delay"] != "true") {
			t.Errorf("kcp-bulk settings %v", r.Config.Settings)
		}
		if r.Transport == KCPFast && (r.Config.Settings["mode"] != "message" || !strings.HasPrefix(r.Config.Settings["window"], "128/128") || r.Config.Settings["nodelay"] != "NoDelay(1, 10, 2, 1)") {
			t.Errorf("kcp-fast settings %v", r.Config.Settings)
		}
	}
}

// The quic rows deliver every reliable message through the relay on a
// lossless and on a lossy link, and quic bulk delivers every chunk; the
// datagram row, unreliable, delivers everything without loss and most
// with it. Bounded: 60 messages at 100 Hz per row.
func TestQUICRowsDeliver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, loss := range []float64{0, 0.10} {
		for _, tr := range []string{QUIC, QUICStreams, QUICDatagram} {
			r, err := Run(ctx, Scenario{Transport: tr, Count: 60, Rate: 100, Drain: 5 * time.Second,
				Link: Link{Loss: loss, Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Seed: 3}})
			if err != nil {
				t.Fatalf("%s at %v loss: %v", tr, loss, err)
			}
			t.Logf("%s at %v %% loss: %d of %d, p99 %.1f ms, wire/payload %.2f", tr, loss*100, r.Delivered, r.Sent, r.LatencyMS.P99, float64(r.WireBytes)/float64(r.PayloadBytes))
			switch {
			case r.NotSupported != "":
				t.Errorf("%s: not supported: %s", tr, r.NotSupported)
			case r.Sent != 60:
				t.Errorf("%s at %v loss: sent %d, want 60", tr, loss, r.Sent)
			case r.Reliable() && r.Failed():
				t.Errorf("%s at %v loss: delivered %d of %d", tr, loss, r.Delivered, r.Sent)
			case !r.Reliable() && loss == 0 && r.Delivered != r.Sent:
				t.Errorf("%s lossless: delivered %d of %d", tr, r.Delivered, r.Sent)
			case !r.Reliable() && r.Delivered < r.Sent/2:
				// Both ways at 10 %: about 81 % expected.
				t.Errorf("%s at %v loss: delivered only %d of %d", tr, loss, r.Delivered, r.Sent)
			}
		}
	}
	r, err := Run(ctx, Scenario{Profile: ProfileBulk, Transport: QUIC, Bytes: 1 << 20, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed() || r.Delivered != bulkChunks(1<<20) || r.ThroughputMBPerS <= 0 || r.WireBytes < 1<<20 {
		t.Errorf("quic bulk: delivered %d of %d, %.1f MB/s, wire %d", r.Delivered, r.Sent, r.ThroughputMBPerS, r.WireBytes)
	}
}

// --mtu reaches every peer: a row that cannot run at it says why and is
// not Failed; the peers that can, deliver everything.
func TestMTUParity(t *testing.T) {
	ctx := context.Background()
	link := Link{Delay: time.Millisecond, Seed: 1}
	for _, c := range []struct {
		s    Scenario
		want string // "" = runs and delivers all; else in NotSupported
	}{
		{Scenario{Transport: KCPFast, MTU: 576, Size: 600, Count: 10, Rate: 200, Link: link}, "MSS"},
		{Scenario{Transport: QUIC, MTU: 576, Count: 10, Rate: 200, Link: link}, "1200"},
		{Scenario{Profile: ProfileBulk, Transport: KCPFast, MTU: 576, Bytes: 64 << 10}, "MSS"},
		{Scenario{Profile: ProfileBulk, Transport: QUIC, MTU: 576, Bytes: 64 << 10}, "1200"},
		{Scenario{Transport: Tickwire, MTU: 576, Size: 600, Count: 10, Rate: 200, Link: link}, ""},
		{Scenario{Transport: KCPFast, MTU: 576, Size: 500, Count: 10, Rate: 200, Link: link}, ""},
		{Scenario{Profile: ProfileBulk, Transport: KCPBulk, MTU: 576, Bytes: 1 << 20}, ""},
		{Scenario{Profile: ProfileBulk, Transport: Tickwire, MTU: 576, Bytes: 1 << 20}, ""},
		{Scenario{Transport: QUIC, MTU: 1472, Size: 1024, Count: 10, Rate: 200, Link: link}, ""},
	} {
		r, err := Run(ctx, c.s)
		if err != nil {
			t.Fatalf("%+v: %v", c.s, err)
		}
		name := c.s.Transport + " " + r.Profile
		switch {
		case c.want == "" && (r.NotSupported != "" || r.Failed() || r.Delivered == 0):
			t.Errorf("%s at mtu %d: delivered %d of %d, not supported %q", name, c.s.MTU, r.Delivered, r.Sent, r.NotSupported)
		case c.want != "" && (!strings.Contains(r.NotSupported, c.want) || !strings.Contains(r.NotSupported, "--mtu 576") || r.Failed()):
			t.Errorf("%s at mtu %d: not supported %q (want it to name %q and the MTU), failed %v", name, c.s.MTU, r.NotSupported, c.want, r.Failed())
		}
		if r.Config.Settings == nil {
			t.Errorf("%s: no config", name)
		}
	}
}

// The suite places each peer where it belongs: kcp-fast on echo, kcp-bulk
// on pps and bulk; kcp-fast alone also runs its old pps and bulk rows.
func TestSuitePlacesPeers(t *testing.T) {
	rows := func(ts ...string) string {
		s := DefaultSuite()
		s.Transports, s.Losses = ts, []float64{0}
		var got []string
		for _, sc := range s.Scenarios() {
			got = append(got, sc.Profile+"/"+sc.Transport)
		}
		return strings.Join(got, " ")
	}
	for _, c := range []struct {
		ts   []string
		want string
	}{
		{DefaultTransports, "echo/tickwire echo/kcp-fast echo/quic pps/tickwire pps/tickwire pps/kcp-bulk pps/raw bulk/tickwire bulk/kcp-bulk bulk/quic"},
		{[]string{KCPFast}, "echo/kcp-fast pps/kcp-fast pps/raw bulk/kcp-fast"},
		{[]string{KCPFast, KCPBulk}, "echo/kcp-fast pps/kcp-bulk pps/raw bulk/kcp-bulk"},
		{[]string{QUICStreams, QUICDatagram}, "echo/quic-streams echo/quic-dgram pps/raw"},
	} {
		if got := rows(c.ts...); got != c.want {
			t.Errorf("transports %v: rows %q, want %q", c.ts, got, c.want)
		}
	}
	if _, err := NewTransport("kcp"); err == nil || !strings.Contains(err.Error(), KCPBulk) {
		t.Errorf(`NewTransport("kcp"): %v, want an error naming its successors`, err)
	}
	for _, s := range []Scenario{
		{Transport: KCPBulk},                          // echo: not its profile
		{Transport: QUICDatagram, Delivery: Reliable}, // datagrams are unreliable
		{Profile: ProfileBulk, Transport: Tickwire, Delivery: Unreliable},
		{Profile: ProfileActions, Transport: QUIC},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: valid", s)
		}
	}
}

// Every peer's datagrams through the relay stay within --mtu, with
// messages that fill most of a datagram: tickwire's MTU, kcp's SetMtu and
// quic's InitialPacketSize (path MTU discovery off) all bound them.
func TestDatagramsWithinMTU(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		name      string
		mtu, size int
	}{
		{Tickwire, 1200, 1024}, {KCPFast, 1200, 1024}, {QUIC, 1200, 1024}, {QUICStreams, 1200, 1024}, {QUICDatagram, 1200, 1024},
		{QUIC, 1350, 1024}, {Tickwire, 576, 500}, {KCPFast, 576, 500},
	} {
		tr, err := NewTransport(c.name)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := tr.listen(listenConfig{addr: netip.MustParseAddrPort("127.0.0.1:0"), mtu: c.mtu})
		if err != nil {
			t.Fatal(err)
		}
		var largest atomic.Int64
		relay, err := NewRelay(RelayConfig{Target: srv.addr(), Seed: 1, Log: func(d Decision) {
			if int64(d.Size) > largest.Load() {
				largest.Store(int64(d.Size))
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		var got atomic.Int64
		cli, err := tr.dial(ctx, dialConfig{server: relay.Addr(), mtu: c.mtu, connectTimeout: 5 * time.Second, onEcho: func([]byte) { got.Add(1) },
			serverKey: serverKeyOf(srv)})
		if err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, c.size)
		for range 20 {
			if err := cli.Send(msg); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		for deadline := time.Now().Add(5 * time.Second); got.Load() < 20 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		cli.Close()
		srv.close()
		relay.Close()
		t.Logf("%s at mtu %d, %d B messages: %d echoes, largest datagram %d B", c.name, c.mtu, c.size, got.Load(), largest.Load())
		if got.Load() != 20 || largest.Load() > int64(c.mtu) || largest.Load() < int64(c.size) {
			t.Errorf("%s at mtu %d: %d of 20 echoes, largest datagram %d B", c.name, c.mtu, got.Load(), largest.Load())
		}
	}
}

// Throughput rows show "-" for the latency they do not measure, not
// 0.00; a row that could not run shows n/a and its reason under the
// table, with its delivery.
func TestTableNoLatencyAndNotSupported(t *testing.T) {
	rs := []Result{
		{Transport: KCPBulk, Profile: ProfileBulk, Delivery: Reliable, LatencyKind: NoLatency, Sent: 8, Delivered: 8, PayloadBytes: 8192, WireBytes: 8400, ThroughputMBPerS: 100, CPUSeconds: 0.1},
		{Transport: QUIC, Profile: ProfileEcho, Delivery: Reliable, LatencyKind: RTT, Link: LinkResult{Burst: 1}, NotSupported: "not supported at --mtu 576: QUIC needs 1200-byte datagrams"},
		{Transport: QUICDatagram, Profile: ProfileEcho, Delivery: Unreliable, LatencyKind: RTT, Link: LinkResult{Burst: 1}, Sent: 10, Delivered: 9, LatencyMS: Latency{P50: 1, P90: 1, P99: 1, P999: 1, Max: 1}},
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, rs); err != nil {
		t.Fatal(err)
	}
	tables, notes := textTables(buf.String())
	lat := tables["echo: round-trip latency in ms, link delay ± jitter in ms one way"]
	tp := tables["pps and bulk: throughput, direct (no relay)"]
	if len(lat) != 3 || len(tp) != 2 || len(notes) != 1 {
		t.Fatalf("want 2 echo rows, 1 bulk row, 1 note:\n%s", buf.String())
	}
	for _, c := range []struct {
		tb   [][]string
		row  int
		want map[string]string
	}{
		{tp, 1, map[string]string{"profile": "bulk", "transport": "kcp-bulk", "delivery": "rel", "throughput": "100.0 MB/s", "status": "ok"}},
		{lat, 1, map[string]string{"transport": "quic", "delivery": "rel", "delivered": "-", "p99": "-", "status": "n/a"}},
		{lat, 2, map[string]string{"transport": "quic-dgram", "delivery": "unrel", "p99": "1.00", "status": "ok"}}, // unreliable: 9 of 10 is not FAILED
	} {
		for col, v := range c.want {
			if got := cellOf(c.tb[0], c.tb[c.row], col); got != v {
				t.Errorf("%s row: %s = %q, want %q", c.want["transport"], col, got, v)
			}
		}
	}
	if slices.ContainsFunc(tp[0], func(h string) bool { return strings.HasPrefix(h, "p") && h != "profile" }) {
		t.Errorf("throughput table has latency columns: %q", tp[0])
	}
	if !strings.HasPrefix(notes[0], "n/a: echo quic (0 % loss): not supported at --mtu 576") {
		t.Errorf("note %q", notes[0])
	}
}

// A quic client verifies the server against the certificate it was
// given: the server's own passes, another self-signed one (same name)
// fails the handshake, and garbage is refused before dialling.
func TestQUICVerifiesServer(t *testing.T) {
	ctx := context.Background()
	srv, err := Serve(ctx, ServerConfig{Transport: QUIC})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	other, err := newCertificate()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cert []byte
		ok   bool
	}{
		{"the server's", srv.Certificate(), true},
		{"another", other.pem, false},
		{"garbage", []byte("not a certificate"), false},
	} {
		r, err := RunClient(ctx, ClientScenario{Addr: srv.Addr(), Transport: QUIC, Count: 5, Rate: 200, ConnectTimeout: 2 * time.Second, ServerCert: c.cert})
		switch {
		case c.ok && (err != nil || r.Failed()):
			t.Errorf("%s certificate: %v, delivered %d of %d", c.name, err, r.Delivered, r.Sent)
		case !c.ok && err == nil:
			t.Errorf("%s certificate: connected", c.name)
		case !c.ok:
			t.Logf("%s certificate: %v", c.name, err)
		}
	}
	if _, err := RunClient(ctx, ClientScenario{Addr: srv.Addr(), Transport: QUIC}); !errors.Is(err, ErrCertificate) {
		t.Errorf("no certificate: %v, want ErrCertificate", err)
	}
}
