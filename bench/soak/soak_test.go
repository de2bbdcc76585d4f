package soak

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
)

func TestCheckerOrdered(t *testing.T) {
	c := NewChecker(10, true)
	for _, s := range []uint64{0, 1, 2} {
		if err := c.Deliver(s); err != nil {
			t.Fatalf("deliver %d: %v", s, err)
		}
	}
	if err := c.Deliver(2); err == nil || c.Duplicates != 1 {
		t.Fatalf("duplicate 2: err %v, duplicates %d", err, c.Duplicates)
	}
	if err := c.Deliver(4); err == nil || c.OutOfOrder != 1 {
		t.Fatalf("gap (4 before 3): err %v, out of order %d", err, c.OutOfOrder)
	}
	if err := c.Deliver(10); err == nil || c.OutOfRange != 1 {
		t.Fatalf("out of range: err %v, %d", err, c.OutOfRange)
	}
	if err := c.Deliver(3); err != nil {
		t.Fatalf("deliver 3 after the refused 4: %v", err)
	}
	if c.Delivered != 4 || c.Violations() != 3 || c.Missing(5) != 1 || c.Missing(10) != 6 || c.Missing(4) != 0 {
		t.Fatalf("delivered %d, violations %d, missing(5) %d, missing(10) %d", c.Delivered, c.Violations(), c.Missing(5), c.Missing(10))
	}
	if m, ok := c.FirstMissing(10); !ok || m != 4 {
		t.Fatalf("first missing %d %v, want 4", m, ok)
	}
	if _, ok := c.FirstMissing(4); ok {
		t.Fatal("first missing of the 4 delivered reported")
	}
}

func TestCheckerUnordered(t *testing.T) {
	c := NewChecker(200, false)
	for _, s := range []uint64{5, 0, 199, 64, 63, 1} {
		if err := c.Deliver(s); err != nil {
			t.Fatalf("deliver %d: %v", s, err)
		}
	}
	if c.Reordered != 4 || c.Violations() != 0 {
		t.Fatalf("reordered %d, violations %d", c.Reordered, c.Violations())
	}
	for _, s := range []uint64{64, 199, 0} {
		if err := c.Deliver(s); err == nil {
			t.Fatalf("second delivery of %d accepted", s)
		}
	}
	if c.Duplicates != 3 || c.Delivered != 6 || c.Missing(200) != 194 {
		t.Fatalf("duplicates %d, delivered %d, missing %d", c.Duplicates, c.Delivered, c.Missing(200))
	}
	if m, ok := c.FirstMissing(200); !ok || m != 2 || !c.Has(199) || c.Has(2) {
		t.Fatalf("first missing %d %v, has(199) %v, has(2) %v", m, ok, c.Has(199), c.Has(2))
	}
}

// Resolve turns a 16-bit wire id back into the sequence number nearest the
// lowest undelivered one, across the id's wrap-around.
func TestCheckerResolve(t *testing.T) {
	const n = 200_000
	c := NewChecker(n, true)
	for s := uint64(0); s < 70_000; s++ {
		if err := c.Deliver(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []uint64{70_000, 70_001, 70_000 + 16_384, 69_999, 70_000 - 16_384} {
		if got, ok := c.Resolve(uint16(want)); !ok || got != want {
			t.Errorf("resolve id %d: %d %v, want %d", uint16(want), got, ok, want)
		}
	}
	u := NewChecker(n, false)
	if got, ok := u.Resolve(5); !ok || got != 5 {
		t.Errorf("fresh checker: resolve 5 = %d %v", got, ok)
	}
	if _, ok := u.Resolve(0xFFFF); ok {
		t.Error("fresh checker: id 0xFFFF resolved below 0")
	}
}

// The size classes sit on the thresholds that change how a reliable
// message travels, at the default config: 1 B, RedundancyBytes and one
// more, the largest single-datagram payload and one more, 4,000 B, and
// 8–16 KiB; and the sizer draws every class.
func TestSizeClasses(t *testing.T) {
	ch, err := transport.NewChannel(transport.Config{}, nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	red, single := ch.Config().RedundancyBytes, ch.MaxSinglePayload(transport.Reliable)
	classes := sizeClasses(red, single)
	in := func(n int) string {
		name := ""
		for _, c := range classes {
			if n >= c.Min && n <= c.Max {
				if name != "" {
					t.Errorf("%d B in classes %s and %s", n, name, c.Name)
				}
				name = c.Name
			}
		}
		return name
	}
	for _, tc := range []struct {
		n    int
		want string
	}{{1, "tiny"}, {red, "redundant"}, {red + 1, "medium"}, {single, "datagram"}, {single + 1, "datagram"}, {multiMax, "pieces"}, {largeMin, "large"}, {largeMax, "large"}} {
		if got := in(tc.n); got != tc.want {
			t.Errorf("%d B: class %q, want %q (RedundancyBytes %d, MaxSinglePayload %d)", tc.n, got, tc.want, red, single)
		}
	}
	sz := newSizer(classes)
	seen := make([]int, len(classes))
	var atSingle, pastSingle bool
	for seq := range uint64(20_000) {
		c, n := sz.size(flowKey(1, 0, 0, 1), seq)
		if n < classes[c].Min || n > classes[c].Max {
			t.Fatalf("seq %d: %d B outside class %s", seq, n, classes[c].Name)
		}
		seen[c]++
		atSingle = atSingle || n == single
		pastSingle = pastSingle || n == single+1
	}
	for i, k := range seen {
		if k == 0 {
			t.Errorf("class %s never drawn", classes[i].Name)
		}
	}
	if !atSingle || !pastSingle {
		t.Errorf("MaxSinglePayload %d drawn %v, one more %v", single, atSingle, pastSingle)
	}
	// With redundancy off, nothing is labelled redundant.
	for _, c := range sizeClasses(transport.NoRedundancy, single) {
		if c.Name == "redundant" {
			t.Errorf("NoRedundancy: class %+v", c)
		}
	}
}

func TestPayloadIntact(t *testing.T) {
	key := flowKey(9, 1, 1, 3)
	for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 1176, 1177, largeMax} {
		for _, seq := range []uint64{0, 1, 255, 256, 1 << 40} {
			p := fill(nil, key, seq, n)
			if len(p) != n || !intact(p, key, seq, n) {
				t.Fatalf("%d B, seq %d: %d B, intact %v", n, seq, len(p), intact(p, key, seq, n))
			}
			if intact(p, key^1, seq, n) && n > 8 {
				t.Fatalf("%d B, seq %d: intact under another flow's key", n, seq)
			}
			if intact(p[:n-1], key, seq, n) {
				t.Fatalf("%d B, seq %d: truncated payload accepted", n, seq)
			}
			for _, i := range []int{0, n / 2, n - 1} {
				q := append([]byte(nil), p...)
				q[i] ^= 0x20
				if intact(q, key, seq, n) {
					t.Fatalf("%d B, seq %d: byte %d flipped, accepted", n, seq, i)
				}
			}
		}
		if intact(fill(nil, key, 3, n), key, 4, n) {
			t.Fatalf("%d B: message 3 accepted as message 4", n)
		}
	}
}

// The defaults come first, and they are the zero Config: no tuning.
func TestDefaultPhasesStartAtDefaults(t *testing.T) {
	ph := DefaultPhases()
	if len(ph) < 1 || ph[0].Name != "defaults" || ph[0].Channel != (transport.Config{}) {
		t.Fatalf("first phase %+v, want defaults with transport.Config{}", ph[0])
	}
	if p, ok := PhaseByName("tuned"); !ok || p.Channel == (transport.Config{}) {
		t.Fatalf("tuned phase: %+v %v", p, ok)
	}
}

// smallCount keeps the test run of S-I1 short: 1,000 messages under the
// race detector (which slows the simulation tenfold), 2,000 without.
var smallCount = map[bool]uint64{false: 2_000, true: 1_000}[raceEnabled]

// S-I1, scaled down: every phase (the defaults first) delivers every
// message of every size class exactly once, in order, intact, both ways;
// both senders end holding nothing; the action stream converges; heap and
// goroutines flat.
func TestSoakSmall(t *testing.T) {
	res, err := Run(context.Background(), Config{Count: smallCount, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Phases) != len(DefaultPhases()) || res.Phases[0].Name != "defaults" {
		t.Fatalf("phases %d, first %q", len(res.Phases), res.Phases[0].Name)
	}
	for _, p := range res.Phases {
		if !p.OK {
			var b strings.Builder
			p.WriteText(&b)
			t.Logf("%s", b.String())
			t.Errorf("phase %s: %d violations, listed above (reproduce: go run ./cmd/tickwire soak --count %d --seed 7 --phases %s)",
				p.Name, p.Violations, smallCount, p.Name)
			continue
		}
		for _, f := range p.Flows {
			for _, c := range f.Classes {
				if c.Sent == 0 || c.Delivered != c.Sent {
					t.Errorf("phase %s %s class %s: sent %d, delivered %d", p.Name, f.Name, c.Class, c.Sent, c.Delivered)
				}
			}
			if f.Held != 0 || f.Link.Dropped() == 0 || f.Link.Duplicated == 0 {
				t.Errorf("phase %s %s: held %d, link lost %d, duplicated %d", p.Name, f.Name, f.Held, f.Link.Dropped(), f.Link.Duplicated)
			}
		}
		if p.Delivered != smallCount || p.Flows[0].Streams[0].Reordered+p.Flows[1].Streams[0].Reordered == 0 {
			t.Errorf("phase %s: delivered %d, nothing reordered", p.Name, p.Delivered)
		}
		if p.Action.ChecksumsVerified == 0 || !p.Action.Converged {
			t.Errorf("phase %s action stream: %+v", p.Name, p.Action)
		}
	}
}

// benign is a short lossless link: the message pair's 60 Hz sender
// delivers everything on it, so the checks below see real deliveries.
func benign() *simlink.LinkConfig { return &simlink.LinkConfig{Delay: 10 * time.Millisecond} }

// checkOnly runs the defaults phase on the benign link with the given
// injection and returns the a→b flow (60 Hz sender, fast receiver).
func checkOnly(t *testing.T, cfg Config) FlowResult {
	t.Helper()
	cfg.Count, cfg.Seed, cfg.Link, cfg.Phases, cfg.MaxVirtual = 1000, 3, benign(), DefaultPhases()[:1], 10*time.Second
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res.Phases[0].Flows[0]
}

// A transport that delivers some messages twice is caught, each time: the
// soak's verdict is not an unconditional pass.
func TestSoakCatchesDuplicateDelivery(t *testing.T) {
	clean := checkOnly(t, Config{})
	const every = 50
	f := checkOnly(t, Config{redeliverEvery: every})
	var dups uint64
	for _, s := range f.Streams {
		dups += s.Duplicates
	}
	if clean.Delivered < 400 || f.Delivered != clean.Delivered || dups != clean.Delivered/every {
		t.Fatalf("delivered %d (clean run %d), duplicates %d, want %d", f.Delivered, clean.Delivered, dups, clean.Delivered/every)
	}
}

// A payload altered in transit is caught, each time, whatever its size;
// on an ordered stream what follows it is then out of order.
func TestSoakCatchesCorruption(t *testing.T) {
	clean := checkOnly(t, Config{})
	const every = 7
	f := checkOnly(t, Config{corruptEvery: every})
	var corrupt, ooo uint64
	for _, s := range f.Streams {
		corrupt += s.Corrupt
		ooo += s.OutOfOrder
	}
	if corrupt != clean.Delivered/every || ooo == 0 || f.Missing == 0 {
		t.Fatalf("corrupt %d, want %d; out of order %d, missing %d", corrupt, clean.Delivered/every, ooo, f.Missing)
	}
}

// A run cut short by its bound fails as incomplete rather than passing on
// what it delivered so far, and says what is missing.
func TestSoakIncompleteFails(t *testing.T) {
	res, err := Run(context.Background(), Config{Count: 50_000, MaxVirtual: 5 * Tick})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Phases {
		if p.OK || !strings.Contains(strings.Join(p.ViolationList, "\n"), "incomplete") {
			t.Fatalf("phase %s: bounded run passed: %v", p.Name, p.ViolationList)
		}
	}
	if res.OK {
		t.Fatal("run passed")
	}
}

func TestSoakCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Count: 1_000_000}); err == nil {
		t.Fatal("cancelled run returned no error")
	}
}

// The end-state verdicts name what went wrong: more messages missing than
// the sender holds (silent loss), missing while it holds some (stranded),
// and all delivered while it still holds some (never released).
func TestJudge(t *testing.T) {
	missing := []StreamResult{{Stream: 2, Ordered: true, Sent: 10, Delivered: 7, Missing: 3,
		FirstMissing: &MissingMessage{Seq: 4, ID: 4, Bytes: 9000, Class: "large"},
		Classes:      []ClassCount{{Class: "tiny", Sent: 6}, {Class: "large", Sent: 4, Missing: 3}}}}
	for _, tc := range []struct {
		f    FlowResult
		want []string
	}{
		{FlowResult{Name: "a→b", From: "a (60 Hz)", To: "b", Missing: 3, Streams: missing}, []string{"stream 2: 3 of 10 sent never delivered (large 3 of 4); the first is #4 (id 4, 9000 B, large)", "silent loss"}},
		{FlowResult{Name: "a→b", From: "a (60 Hz)", Missing: 3, Held: 5, HeldBytes: 100, Streams: missing}, []string{"still holds 5 reliable messages (100 B)", "stranded"}},
		{FlowResult{Name: "a→b", From: "a (60 Hz)", To: "b", Missing: 3, Held: 1, MaxBuffered: 1, Streams: missing}, []string{"holds 1 and receiver b can buffer at most 1", "at least 1 were released and lost", "stranded"}},
		{FlowResult{Name: "b→a", From: "b (fast)", Held: 2, HeldBytes: 40, Pending: 1}, []string{"every message sent was delivered, yet sender b still holds 2", "never released"}},
	} {
		var p PhaseResult
		tc.f.judge(&p)
		got := strings.Join(p.ViolationList, "\n")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("verdicts %q lack %q", got, w)
			}
		}
	}
	var p PhaseResult
	FlowResult{Name: "a→b", From: "a"}.judge(&p)
	if p.Violations != 0 {
		t.Errorf("clean flow: %v", p.ViolationList)
	}
}
