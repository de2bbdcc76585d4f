package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var cellSplit = regexp.MustCompile(`\s{2,}`)

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
	var top map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal([]byte(`{"results":`+string(top["results"])+`}`), &doc); err != nil {
		t.Fatal(err)
	}
	rows := doc["results"]
	if len(rows) != 2 {
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
	want := []string{"allocs_per_msg", "config", "cpu_seconds", "delivered", "delivery", "latency_cdf", "latency_kind", "latency_ms", "link", "memory_per_peer_bytes", "not_supported", "payload_bytes", "peak_rss_bytes", "peers", "profile", "redundant_bytes", "refused", "rep", "sent", "server_cpu_us_per_peer_tick", "server_sys_us_per_peer_tick", "server_user_us_per_peer_tick", "server_wall_us_per_peer_tick", "throughput_datagrams_per_s", "throughput_mb_per_s", "throughput_msgs_per_s", "transport", "wall_seconds", "wire_bytes"}
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
	if err := WriteJSON(&buf, nil); err != nil || !strings.HasSuffix(strings.TrimSpace(buf.String()), `"summary": [],
  "results": []
}`) || strings.Contains(buf.String(), "null") {
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

// textTables splits WriteTable's output into its tables by title, each
// a list of rows of cells (the header first), cells being separated by
// two spaces or more.
func textTables(out string) (map[string][][]string, []string) {
	tables := map[string][][]string{}
	var title string
	var notes []string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case line == "":
			title = ""
		case strings.HasPrefix(line, "n/a: "):
			notes = append(notes, line)
		case !strings.HasPrefix(line, "  "):
			title = line
		default:
			tables[title] = append(tables[title], cellSplit.Split(strings.TrimSpace(line), -1))
		}
	}
	return tables, notes
}

// cellOf returns row's cell under column name of header, or "?".
func cellOf(header, row []string, name string) string {
	if i := slices.Index(header, name); i >= 0 && i < len(row) {
		return row[i]
	}
	return "?"
}

func TestWriteTable(t *testing.T) {
	in := []Result{
		sample(KCP, 0, 60, 10, 10),
		sample(Tickwire, 0, 30, 10, 10),
		sample(KCP, 10, 100, 10, 10),
		sample(Tickwire, 10, 40, 10, 9), // lost one: FAILED
		sample(Tickwire, 20, 40, 10, 10),
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, in); err != nil {
		t.Fatal(err)
	}
	tables, notes := textTables(buf.String())
	lat := tables["echo: round-trip latency in ms, link delay ± jitter in ms one way"]
	cost := tables["cost: wire bytes (UDP payload, both ends; redund B: tickwire's redundant copies per msg), CPU and allocations"]
	if len(tables) != 2 || len(lat) != 6 || len(cost) != 6 || len(notes) != 0 {
		t.Fatalf("tables %q, notes %q:\n%s", tables, notes, buf.String())
	}
	if slices.Contains(lat[0], "min–max") {
		t.Errorf("one rep, a spread column: %q", lat[0])
	}
	for i, want := range []map[string]string{
		{"loss%": "0", "delay": "25±2", "transport": "tickwire", "delivery": "rel", "delivered": "10/10", "p99": "30.00", "max": "36.00", "status": "ok"},
		{"transport": "kcp-fast", "p50": "30.00", "p99": "60.00", "status": "ok"},
		{"loss%": "10", "transport": "tickwire", "delivered": "9/10", "p99": "40.00", "status": "FAILED"},
		{"transport": "kcp-fast", "p99": "100.0", "status": "ok"},
		{"loss%": "20", "transport": "tickwire", "p99": "40.00", "status": "ok"},
	} {
		for col, v := range want {
			if got := cellOf(lat[0], lat[i+1], col); got != v {
				t.Errorf("latency row %d, %s = %q, want %q", i, col, got, v)
			}
		}
	}
	for i := range 5 {
		if got := cellOf(cost[0], cost[i+1], "wire/payload"); got != "2.50" {
			t.Errorf("cost row %d wire/payload %q", i, got)
		}
		if got := cellOf(cost[0], cost[i+1], "wire B/msg"); got != "250" {
			t.Errorf("cost row %d wire B/msg %q", i, got)
		}
		want := "0" // tickwire's rows; kcp says nothing of its copies
		if i%2 == 1 {
			want = "-"
		}
		if got := cellOf(cost[0], cost[i+1], "redund B"); got != want {
			t.Errorf("cost row %d redund B %q, want %q", i, got, want)
		}
	}

	// A RunClient row: unknown link, no loss or delay figures.
	buf.Reset()
	if err := WriteTable(&buf, []Result{{Transport: Tickwire, Profile: ProfileEcho, LatencyKind: RTT, Sent: 1, Delivered: 1}}); err != nil {
		t.Fatal(err)
	}
	tables, _ = textTables(buf.String())
	for title, tb := range tables {
		if len(tb) != 2 || strings.Contains(strings.Join(tb[1], " "), "±") {
			t.Errorf("unknown link row, %s: %q", title, tb)
		}
		if title != "" && strings.HasPrefix(title, "echo") && (cellOf(tb[0], tb[1], "loss%") != "-" || cellOf(tb[0], tb[1], "delay") != "-") {
			t.Errorf("unknown link row: %q", tb)
		}
	}
}

// With reps, a cell is the median over the reps, the p99 and throughput
// carry their min–max, and a row with a failed rep says how many failed.
func TestWriteTableReps(t *testing.T) {
	var in []Result
	for rep, p99 := range []float64{30, 50, 40} {
		for _, r := range []Result{sample(Tickwire, 0, p99, 10, 10), sample(KCP, 0, 2*p99, 10, int64(10-rep%2))} {
			r.Rep = rep
			in = append(in, r)
		}
		in = append(in, Result{Transport: Tickwire, Profile: ProfileBulk, Delivery: Reliable, LatencyKind: NoLatency, Rep: rep,
			Sent: 8, Delivered: 8, PayloadBytes: 8e6, WireBytes: 8.2e6, CPUSeconds: 0.1 * float64(rep+1), ThroughputMBPerS: 100 * float64(rep+1)})
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, in); err != nil {
		t.Fatal(err)
	}
	tables, _ := textTables(buf.String())
	lat := tables["echo: round-trip latency in ms, link delay ± jitter in ms one way"]
	tp := tables["pps and bulk: throughput, direct (no relay)"]
	if len(lat) != 3 || len(tp) != 2 {
		t.Fatalf("tables %q:\n%s", tables, buf.String())
	}
	for i, want := range []map[string]string{
		{"transport": "tickwire", "p99": "40.00", "p99 min–max": "30.00–50.00", "status": "ok"},
		{"transport": "kcp-fast", "p99": "80.00", "p99 min–max": "60.00–100.0", "status": "FAILED 1/3", "delivered": "10/10"},
	} {
		row := lat[i+1]
		for col, v := range want {
			if got := cellOf(lat[0], row, col); got != v {
				t.Errorf("latency row %d, %s = %q, want %q (%q)", i, col, got, v, row)
			}
		}
	}
	for col, v := range map[string]string{"throughput": "200.0 MB/s", "min–max": "100.0–300.0", "cpu per": "25.00 s/GB", "delivered": "8/8"} {
		if got := cellOf(tp[0], tp[1], col); got != v {
			t.Errorf("bulk row, %s = %q, want %q (%q)", col, got, v, tp[1])
		}
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
