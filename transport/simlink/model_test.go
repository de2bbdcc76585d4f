package simlink

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

func newModel(t testing.TB, cfg LinkConfig, seed uint64) *Model {
	t.Helper()
	m, err := NewModel(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// decideMany offers n datagrams of size bytes, one every step, and returns
// the verdicts.
func decideMany(m *Model, n, size int, step time.Duration) []Verdict {
	out := make([]Verdict, n)
	for i := range out {
		out[i] = m.Decide(time.Duration(i)*step, size)
	}
	return out
}

// lossRuns measures the loss rate and the mean length of runs of
// consecutive losses from a sequence of verdicts: the oracle the Stats
// counters are checked against.
func lossRuns(vs []Verdict) (rate, meanRun float64) {
	lost, runs := 0, 0
	prev := false
	for _, v := range vs {
		cur := v.Drop == DropRandom || v.Drop == DropBurst
		if cur {
			lost++
			if !prev {
				runs++
			}
		}
		prev = cur
	}
	if runs == 0 {
		return float64(lost) / float64(len(vs)), 0
	}
	return float64(lost) / float64(len(vs)), float64(lost) / float64(runs)
}

// TestIndependentLossRate: the conditioner requirement of the bench suite —
// over 100,000 datagrams the measured loss rate is within ±1 % (absolute) of
// the setting.
func TestIndependentLossRate(t *testing.T) {
	for _, loss := range []float64{0, 0.01, 0.05, 0.1, 0.25, 0.5, 1} {
		t.Run(fmt.Sprint(loss), func(t *testing.T) {
			m := newModel(t, LinkConfig{Loss: loss}, 7)
			vs := decideMany(m, 100_000, 100, time.Millisecond)
			rate, _ := lossRuns(vs)
			if math.Abs(rate-loss) > 0.01 {
				t.Fatalf("measured loss %.4f, want %.2f ± 0.01", rate, loss)
			}
			s := m.Stats()
			if s.BurstLoss != 0 || s.LossRate() != rate {
				t.Fatalf("stats %+v disagree with the verdicts (rate %.4f)", s, rate)
			}
			if s.Sent != 100_000 || s.Delivered+s.Dropped() != s.Sent {
				t.Fatalf("stats do not add up: %+v", s)
			}
			if loss > 0 && loss < 1 {
				// Independent loss: runs are geometric with mean 1/(1−loss).
				if want := 1 / (1 - loss); math.Abs(s.MeanLossRun()-want) > 0.1*want {
					t.Fatalf("mean loss run %.3f, want about %.3f", s.MeanLossRun(), want)
				}
			}
		})
	}
}

// TestGilbertElliott is S-A3: bursty loss produces runs of losses with the
// configured mean length, at the configured stationary loss rate. Over
// 1,000,000 datagrams the loss rate is within ±1 % (absolute) and the mean
// loss-run length within ±10 % of BurstLen, measured both from the
// verdicts and from the Stats counters.
func TestGilbertElliott(t *testing.T) {
	cases := []struct{ loss, burst float64 }{
		{0.01, 2},
		{0.05, 1.5},
		{0.05, 2},
		{0.10, 4},
		{0.20, 8},
		{0.25, 3},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("loss=%v,burst=%v", c.loss, c.burst), func(t *testing.T) {
			m := newModel(t, LinkConfig{Loss: c.loss, BurstLen: c.burst}, 2024)
			vs := decideMany(m, 1_000_000, 64, time.Microsecond)
			rate, run := lossRuns(vs)
			t.Logf("loss rate %.4f, mean loss run %.3f", rate, run)
			if math.Abs(rate-c.loss) > 0.01 {
				t.Errorf("loss rate %.4f, want %.2f ± 0.01", rate, c.loss)
			}
			if math.Abs(run-c.burst) > 0.1*c.burst {
				t.Errorf("mean loss run %.3f, want %.2f ± 10 %%", run, c.burst)
			}
			s := m.Stats()
			if s.RandomLoss != 0 {
				t.Errorf("burst model counted %d random losses", s.RandomLoss)
			}
			if s.LossRate() != rate || s.MeanLossRun() != run {
				t.Errorf("stats rate %.4f run %.3f, verdicts %.4f %.3f", s.LossRate(), s.MeanLossRun(), rate, run)
			}
		})
	}
}

// TestModelDeterministic is S-A1 at the model level: same seed, same
// verdicts; a different seed, different verdicts.
func TestModelDeterministic(t *testing.T) {
	cfg := LinkConfig{Delay: 30 * time.Millisecond, Jitter: 10 * time.Millisecond,
		Loss: 0.1, BurstLen: 3, Duplicate: 0.1, Bandwidth: 1 << 20, QueueLimit: 16 << 10}
	run := func(seed uint64) []Verdict {
		return decideMany(newModel(t, cfg, seed), 20_000, 700, 500*time.Microsecond)
	}
	a, b, c := run(99), run(99), run(100)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different verdicts")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds, identical verdicts")
	}
}

// TestStreamsIndependent: each knob draws from its own RNG stream, so
// enabling duplication leaves the loss pattern and the original copy's
// delay unchanged.
func TestStreamsIndependent(t *testing.T) {
	base := LinkConfig{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.2}
	dup := base
	dup.Duplicate = 0.5
	a := decideMany(newModel(t, base, 5), 5000, 100, time.Millisecond)
	b := decideMany(newModel(t, dup, 5), 5000, 100, time.Millisecond)
	for i := range a {
		if a[i].Drop != b[i].Drop || a[i].At[0] != b[i].At[0] {
			t.Fatalf("datagram %d: %+v without duplication, %+v with", i, a[i], b[i])
		}
	}
}

func TestJitterBounds(t *testing.T) {
	cases := []LinkConfig{
		{Delay: 30 * time.Millisecond, Jitter: 10 * time.Millisecond},
		{Delay: 5 * time.Millisecond, Jitter: 10 * time.Millisecond}, // clamped at 0
		{Delay: 0, Jitter: time.Nanosecond},
	}
	for _, cfg := range cases {
		m := newModel(t, cfg, 3)
		lo, hi := max(cfg.Delay-cfg.Jitter, 0), cfg.Delay+cfg.Jitter
		minSeen, maxSeen := time.Duration(math.MaxInt64), time.Duration(0)
		var sum time.Duration
		const n = 50_000
		for i := range n {
			now := time.Duration(i) * time.Millisecond
			v := m.Decide(now, 10)
			d := v.At[0] - now
			if d < lo || d > hi {
				t.Fatalf("%+v: delay %v outside [%v, %v]", cfg, d, lo, hi)
			}
			minSeen, maxSeen = min(minSeen, d), max(maxSeen, d)
			sum += d
		}
		// The extremes are reached (within 1 % of the span) and, when no
		// clamping happens, the mean is Delay.
		span := hi - lo
		if minSeen-lo > span/100 || hi-maxSeen > span/100 {
			t.Errorf("%+v: delays span [%v, %v], want close to [%v, %v]", cfg, minSeen, maxSeen, lo, hi)
		}
		if cfg.Jitter <= cfg.Delay {
			mean := sum / n
			if diff := mean - cfg.Delay; diff > cfg.Jitter/50 || diff < -cfg.Jitter/50 {
				t.Errorf("%+v: mean delay %v, want %v", cfg, mean, cfg.Delay)
			}
		}
	}
}

func TestModelDuplicateRate(t *testing.T) {
	m := newModel(t, LinkConfig{Delay: time.Millisecond, Jitter: time.Millisecond, Duplicate: 0.1}, 11)
	vs := decideMany(m, 100_000, 100, time.Millisecond)
	dups := 0
	for _, v := range vs {
		if v.Copies == 2 {
			dups++
		}
	}
	if rate := float64(dups) / float64(len(vs)); math.Abs(rate-0.1) > 0.01 {
		t.Fatalf("duplicate rate %.4f, want 0.10 ± 0.01", rate)
	}
	s := m.Stats()
	if s.Duplicated != uint64(dups) || s.Delivered != uint64(len(vs)+dups) || s.DeliveredBytes != 100*s.Delivered {
		t.Fatalf("stats %+v, counted %d duplicates", s, dups)
	}
}

// TestModelBandwidth: delivery times follow the serialisation delay, the
// queue carries over between bursts, and QueueLimit drops are counted.
func TestModelBandwidth(t *testing.T) {
	const ms = time.Millisecond
	m := newModel(t, LinkConfig{Delay: 10 * ms, Bandwidth: 1_000_000, QueueLimit: 3000}, 1)

	// A burst of five 1000-byte datagrams at t=0: 1 ms each on the wire, and
	// only 3000 bytes fit in the queue.
	var got []Verdict
	for range 5 {
		got = append(got, m.Decide(0, 1000))
	}
	want := []Verdict{
		{Copies: 1, At: [2]time.Duration{11 * ms}},
		{Copies: 1, At: [2]time.Duration{12 * ms}},
		{Copies: 1, At: [2]time.Duration{13 * ms}},
		{Drop: DropQueue},
		{Drop: DropQueue},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("burst verdicts\n got %+v\nwant %+v", got, want)
	}
	if b := m.Backlog(0); b != 3000 {
		t.Fatalf("backlog at 0: %d, want 3000", b)
	}
	// At 1 ms the first datagram is out: 1000 bytes of room.
	if b := m.Backlog(ms); b != 2000 {
		t.Fatalf("backlog at 1ms: %d, want 2000", b)
	}
	if v := m.Decide(ms, 1000); v.Copies != 1 || v.At[0] != 14*ms {
		t.Fatalf("datagram at 1ms: %+v, want delivery at 14ms", v)
	}
	if v := m.Decide(ms, 1); v.Drop != DropQueue {
		t.Fatalf("queue full at 1ms, got %+v", v)
	}
	// After the queue empties (4 ms), a datagram goes straight on the wire.
	if v := m.Decide(10*ms, 500); v.At[0] != 10*ms+500*time.Microsecond+10*ms {
		t.Fatalf("datagram on an idle link: %+v", v)
	}
	s := m.Stats()
	if s.QueueDrops != 3 || s.MaxBacklog != 3000 || s.Delivered != 5 {
		t.Fatalf("stats %+v: want 3 queue drops, max backlog 3000, 5 delivered", s)
	}

	// Rounding: serialisation time is rounded up to whole nanoseconds.
	m = newModel(t, LinkConfig{Bandwidth: 3}, 1)
	if v := m.Decide(0, 1); v.At[0] != 333_333_334 {
		t.Fatalf("1 byte at 3 B/s: delivered at %v, want 333333334ns", v.At[0])
	}
}

// TestModelOversize: a datagram above the MTU is dropped as too large and
// leaves the loss process untouched.
func TestModelOversize(t *testing.T) {
	m := newModel(t, LinkConfig{MTU: 576}, 1)
	if v := m.Decide(0, 577); v.Drop != DropTooLarge || v.Copies != 0 {
		t.Fatalf("577 bytes on MTU 576: %+v", v)
	}
	if v := m.Decide(0, 576); v.Copies != 1 {
		t.Fatalf("576 bytes on MTU 576: %+v", v)
	}
	if s := m.Stats(); s.TooLarge != 1 || s.Sent != 2 || s.LossRate() != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestModelClockClamped: a now earlier than one already seen is treated as
// the later time, so queue accounting never runs backwards.
func TestModelClockClamped(t *testing.T) {
	m := newModel(t, LinkConfig{Delay: time.Millisecond}, 1)
	m.Decide(time.Second, 1)
	if v := m.Decide(0, 1); v.At[0] != time.Second+time.Millisecond {
		t.Fatalf("delivery for an earlier now: %v", v.At[0])
	}
}

// TestModelSetConfig: conditions change mid-run; counters carry over.
func TestModelSetConfig(t *testing.T) {
	m := newModel(t, LinkConfig{}, 1)
	decideMany(m, 1000, 10, time.Millisecond)
	if err := m.SetConfig(LinkConfig{Loss: 1}); err != nil {
		t.Fatal(err)
	}
	for _, v := range decideMany(m, 1000, 10, time.Millisecond) {
		if v.Drop != DropRandom {
			t.Fatalf("after SetConfig(Loss 1): %+v", v)
		}
	}
	if s := m.Stats(); s.Sent != 2000 || s.RandomLoss != 1000 || s.LossRuns != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestModelDecideNoAllocs(t *testing.T) {
	m := newModel(t, LinkConfig{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond,
		Loss: 0.1, BurstLen: 2, Duplicate: 0.05, Bandwidth: 10 << 20, QueueLimit: 64 << 10}, 1)
	now := time.Duration(0)
	step := func() {
		now += 100 * time.Microsecond
		m.Decide(now, 1200)
	}
	for range 10_000 { // grow the queue ring to its high-water mark
		step()
	}
	if a := testing.AllocsPerRun(10_000, step); a != 0 {
		t.Fatalf("Decide allocates %.2f per call", a)
	}
}

func TestDropReasonString(t *testing.T) {
	for r, want := range map[DropReason]string{
		DropNone: "none", DropTooLarge: "too-large", DropQueue: "queue",
		DropRandom: "random-loss", DropBurst: "burst-loss", DropNoEndpoint: "no-endpoint",
		DropReason(99): "DropReason(99)",
	} {
		if got := r.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", r, got, want)
		}
	}
}
