package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func sample(transport string, loss, p99 float64, sent, delivered int64) Result {
	return Result{
		Transport: transport, Profile: ProfileEcho, Delivery: Reliable,
		Config:      PeerConfig{Name: transport, Settings: map[string]string{"mtu": "1200"}},
		Link:        LinkResult{Loss: loss, DelayMS: 25, JitterMS: 2, Burst: 1, Seed: 1},
		LatencyKind: RTT, Sent: sent, Delivered: delivered,
		LatencyMS:    Latency{P50: p99 / 2, P90: p99 * 0.8, P99: p99, P999: p99 * 1.1, Max: p99 * 1.2},
		LatencyCDF:   []CDFPoint{{0, p99 / 3}, {50, p99 / 2}, {99, p99}, {100, p99 * 1.2}},
		PayloadBytes: 1000, WireBytes: 2500, CPUSeconds: 0.5, WallSeconds: 6, AllocsPerMsg: 3, PeakRSSBytes: 1 << 20,
	}
}

func TestWriteJSONSchema(t *testing.T) {
	in := []Result{sample(Tickwire, 0, 50, 10, 10), sample(KCP, 0, 60, 10, 10)}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	rows := doc["results"]
	if len(doc) != 1 || len(rows) != 2 {
		t.Fatalf("document %v", doc)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for s := range m {
			k = append(k, s)
		}
		slices.Sort(k)
		return k
	}
	want := []string{"allocs_per_msg", "config", "cpu_seconds", "delivered", "delivery", "latency_cdf", "latency_kind", "latency_ms", "link", "memory_per_peer_bytes", "not_supported", "payload_bytes", "peak_rss_bytes", "peers", "profile", "refused", "sent", "server_cpu_us_per_peer_tick", "throughput_datagrams_per_s", "throughput_mb_per_s", "throughput_msgs_per_s", "transport", "wall_seconds", "wire_bytes"}
	if got := keys(rows[0]); !slices.Equal(got, want) {
		t.Errorf("row keys %v, want %v", got, want)
	}
	if got := keys(rows[0]["link"].(map[string]any)); !slices.Equal(got, []string{"burst", "delay_ms", "dup", "jitter_ms", "loss", "seed"}) {
		t.Errorf("link keys %v", got)
	}
	if got := keys(rows[0]["latency_ms"].(map[string]any)); !slices.Equal(got, []string{"max", "p50", "p90", "p99", "p999"}) {
		t.Errorf("latency keys %v", got)
	}
	if got := keys(rows[0]["latency_cdf"].([]any)[0].(map[string]any)); !slices.Equal(got, []string{"ms", "p"}) {
		t.Errorf("latency_cdf point keys %v", got)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Results, in) {
		t.Errorf("round trip: %+v != %+v", back.Results, in)
	}

	// A row without a CDF (a throughput row, or one built by hand) has
	// latency_cdf [], not null, and the caller's row is left alone.
	bare := []Result{{Transport: Tickwire, Profile: ProfilePPS, LatencyKind: NoLatency}}
	buf.Reset()
	if err := WriteJSON(&buf, bare); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"latency_cdf": []`) || strings.Contains(buf.String(), "null") {
		t.Errorf("nil CDF written as:\n%s", buf.String())
	}
	if bare[0].LatencyCDF != nil {
		t.Error("WriteJSON modified its input")
	}

	buf.Reset()
	if err := WriteJSON(&buf, nil); err != nil || strings.TrimSpace(buf.String()) != `{
  "results": []
}` {
		t.Errorf("empty: %q, %v", buf.String(), err)
	}
}

func TestGroup(t *testing.T) {
	in := []Result{
		sample(KCP, 0, 60, 1, 1), sample(KCP, 10, 90, 1, 1),
		sample(Tickwire, 10, 30, 1, 1), sample(KCPDefault, 0, 70, 1, 1), sample(Tickwire, 0, 50, 1, 1),
	}
	var got []string
	for _, r := range Group(in) {
		got = append(got, r.Transport+"@"+num(r.Link.Loss))
	}
	want := []string{"tickwire@0", "kcp-fast@0", "kcp-default@0", "tickwire@10", "kcp-fast@10"}
	if !slices.Equal(got, want) {
		t.Fatalf("Group: %v, want %v", got, want)
	}
}

func TestWriteTable(t *testing.T) {
	in := []Result{
		sample(KCP, 0, 60, 10, 10),
		sample(Tickwire, 0, 30, 10, 10),
		sample(KCP, 10, 100, 10, 10),
		sample(Tickwire, 10, 40, 10, 9),  // lost one: FAILED
		sample(Tickwire, 20, 40, 10, 10), // no kcp row: no ratio
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, in); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	for _, h := range []string{"transport", "p99 ms", "p99 tw/kcp", "wire/payload", "status"} {
		if !strings.Contains(lines[0], h) {
			t.Errorf("header lacks %q: %s", h, lines[0])
		}
	}
	checks := []struct {
		line int
		has  []string
	}{
		{1, []string{"tickwire", "30.00", "0.50x", "2.50", " ok"}},
		{2, []string{"kcp-fast", "60.00", " ok"}},
		{3, []string{"tickwire", "40.00", "0.40x", "FAILED"}},
		{4, []string{"kcp-fast", "100.00", " ok"}},
		{5, []string{"tickwire", "20", " - ", " ok"}},
	}
	for _, c := range checks {
		for _, s := range c.has {
			if !strings.Contains(lines[c.line], s) {
				t.Errorf("line %d lacks %q: %s", c.line, s, lines[c.line])
			}
		}
	}
	if strings.Contains(lines[2], "x ") {
		t.Errorf("kcp row has a ratio: %s", lines[2])
	}

	// A RunClient row: unknown link, no loss or delay figures.
	buf.Reset()
	if err := WriteTable(&buf, []Result{{Transport: Tickwire, Profile: ProfileEcho, Sent: 1, Delivered: 1}}); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 2 || strings.Fields(lines[1])[1] != "-" || strings.Fields(lines[1])[2] != "-" || strings.Contains(lines[1], "±") {
		t.Errorf("unknown link row:\n%s", buf.String())
	}
}

func TestFailed(t *testing.T) {
	if sample(Tickwire, 0, 1, 10, 10).Failed() {
		t.Error("complete row failed")
	}
	if !sample(Tickwire, 0, 1, 10, 9).Failed() || !sample(KCP, 0, 1, 10, 11).Failed() {
		t.Error("incomplete row did not fail")
	}
}
