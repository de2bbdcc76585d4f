package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// runQuick runs one small throughput row.
func runQuick(t *testing.T, s Scenario) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Run(ctx, s)
	if err != nil {
		t.Fatalf("%s %s: %v", s.Transport, s.Profile, err)
	}
	t.Logf("%s %s: sent %d delivered %d, %.0f msg/s, %.0f dg/s, %.1f MB/s, cpu %.2f s, wall %.2f s, %.2f allocs/msg",
		r.Transport, r.Profile, r.Sent, r.Delivered, r.ThroughputMsgsPerS, r.ThroughputDatagramsPerS,
		r.ThroughputMBPerS, r.CPUSeconds, r.WallSeconds, r.AllocsPerMsg)
	if r.Profile != s.Profile || r.Transport != s.Transport || r.LatencyKind != NoLatency || r.LatencyMS != (Latency{}) {
		t.Errorf("row %+v: wrong identity or latency", r)
	}
	if r.WireBytes <= 0 || r.CPUSeconds <= 0 || r.WallSeconds <= 0 {
		t.Errorf("no wire bytes, CPU or wall time: %+v", r)
	}
	return r
}

func TestPPSQuick(t *testing.T) {
	for _, tr := range []string{Tickwire, KCP, Raw} {
		t.Run(tr, func(t *testing.T) {
			r := runQuick(t, Scenario{Profile: ProfilePPS, Transport: tr, Duration: 100 * time.Millisecond, Drain: time.Second})
			if r.Sent == 0 || r.Delivered == 0 || r.Delivered > r.Sent {
				t.Errorf("delivered %d of %d", r.Delivered, r.Sent)
			}
			// Tickwire and kcp stop queueing at one Flush's or one window's
			// worth; what was accepted arrives on loopback at 0 % loss.
			if tr != Raw && r.Delivered != r.Sent {
				t.Errorf("delivered %d of %d on a lossless link", r.Delivered, r.Sent)
			}
			if r.ThroughputMsgsPerS <= 0 || r.PayloadBytes != int64(DefaultSize)*r.Delivered {
				t.Errorf("throughput %v msg/s, payload %d", r.ThroughputMsgsPerS, r.PayloadBytes)
			}
			if tr != KCP && (r.ThroughputDatagramsPerS <= 0 || r.ThroughputDatagramsPerS > r.ThroughputMsgsPerS*1.0001) {
				t.Errorf("%v datagrams/s for %v msg/s", r.ThroughputDatagramsPerS, r.ThroughputMsgsPerS)
			}
			if r.Failed() {
				t.Error("a pps row never Fails")
			}
		})
	}
}

func TestBulkQuick(t *testing.T) {
	const size = 2 << 20
	for _, tr := range []string{Tickwire, KCP} {
		t.Run(tr, func(t *testing.T) {
			r := runQuick(t, Scenario{Profile: ProfileBulk, Transport: tr, Bytes: size, Duration: 10 * time.Second, Drain: 5 * time.Second})
			// Delivered counts chunks that arrived in order with the right
			// CRC-32C: all of them means every byte arrived intact.
			if want := int64(size / BulkChunk); r.Sent != want || r.Delivered != want {
				t.Errorf("delivered %d of %d chunks, want %d", r.Delivered, r.Sent, want)
			}
			if r.PayloadBytes != size || r.Failed() {
				t.Errorf("payload %d, failed %v", r.PayloadBytes, r.Failed())
			}
			if r.ThroughputMBPerS <= 0 {
				t.Errorf("throughput %v MB/s", r.ThroughputMBPerS)
			}
		})
	}
}

func TestBulkSinkRejects(t *testing.T) {
	src := newBulkSource()
	k := &bulkSink{src: src, start: time.Now()}
	k.onChunk(src.chunk(0))
	c := append([]byte(nil), src.chunk(1)...)
	c[100] ^= 1 // corrupt body
	k.onChunk(c)
	k.onChunk(src.chunk(2)) // out of order
	k.onChunk(src.chunk(1)[:BulkChunk-1])
	k.onChunk(src.chunk(1))
	if k.delivered.Load() != 2 || k.bad.Load() != 3 {
		t.Errorf("delivered %d bad %d, want 2 and 3", k.delivered.Load(), k.bad.Load())
	}
}

func TestThroughputValidate(t *testing.T) {
	for _, s := range []Scenario{
		{Profile: "nope", Transport: Tickwire},
		{Profile: ProfileEcho, Transport: Raw},
		{Profile: ProfileBulk, Transport: Raw},
		{Profile: ProfilePPS, Transport: Tickwire, Duration: -time.Second},
		{Profile: ProfilePPS, Transport: Tickwire, Duration: 2 * MaxDuration},
		{Profile: ProfileBulk, Transport: Tickwire, Bytes: MaxBulkBytes + 1},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: valid", s)
		}
	}
	for _, s := range []Scenario{{Profile: ProfilePPS, Transport: Raw}, {Profile: ProfileBulk, Transport: KCP}} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestSuiteThroughputRows(t *testing.T) {
	s := DefaultSuite()
	var got []string
	for _, sc := range s.Scenarios() {
		if sc.Profile != ProfileEcho {
			got = append(got, sc.Profile+"/"+sc.Transport+"/"+sc.Delivery)
			if sc.Link != (Link{}) {
				t.Errorf("%s/%s: link %+v, want none (direct)", sc.Profile, sc.Transport, sc.Link)
			}
		}
	}
	want := "pps/tickwire/unreliable pps/tickwire/reliable pps/kcp-bulk/reliable pps/raw/unreliable bulk/tickwire/reliable bulk/kcp-bulk/reliable bulk/quic/reliable"
	if strings.Join(got, " ") != want {
		t.Errorf("throughput rows %q, want %q", got, want)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	s.Profiles, s.Transports = []string{ProfileEcho}, []string{Raw}
	if err := s.Validate(); err == nil {
		t.Error("echo with raw only: valid")
	}
}

func TestTableThroughput(t *testing.T) {
	rows := []Result{
		{Transport: Tickwire, Profile: ProfilePPS, LatencyKind: NoLatency, Sent: 10, Delivered: 10, CPUSeconds: 1,
			ThroughputMsgsPerS: 2.5e6, ThroughputDatagramsPerS: 150e3, PayloadBytes: 640},
		{Transport: KCP, Profile: ProfileBulk, LatencyKind: NoLatency, Sent: 10, Delivered: 9, CPUSeconds: 1,
			ThroughputMBPerS: 412.3, PayloadBytes: 9 * BulkChunk},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"2.50M msg/s", "  150k  ", "s/M msg", "412.3 MB/s", "s/GB", "FAILED"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
