package soak

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
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
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, seq := range []uint64{0, 1, 31, 32, 999_999, 1 << 40} {
		p := appendPayload(nil, seq)
		got, ok := parsePayload(p)
		if !ok || got != seq || len(p) < payloadMin || len(p) >= payloadMin+payloadSpan {
			t.Fatalf("seq %d: got %d %v, %d bytes", seq, got, ok, len(p))
		}
		p[len(p)-1]++
		if _, ok := parsePayload(p); ok {
			t.Fatalf("seq %d: corrupt filler accepted", seq)
		}
		if _, ok := parsePayload(p[:len(p)-1]); ok {
			t.Fatalf("seq %d: truncated payload accepted", seq)
		}
	}
}

// smallCount keeps the race-detector run well under 30 s.
const smallCount = 20_000

// S-I1, scaled down: every message exactly once (in order on the ordered
// streams), the action stream converged, heap and goroutines flat.
func TestSoakSmall(t *testing.T) {
	res, err := Run(context.Background(), Config{Count: smallCount, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", js)
	if !res.OK {
		t.Fatalf("violations: %v", res.ViolationList)
	}
	if res.Delivered != smallCount || res.LinkDuplicated == 0 || res.LinkLost == 0 || res.ReliableBuffered == 0 || res.Streams[0].Reordered == 0 {
		t.Fatalf("the link did not impair the run: %+v", res)
	}
	if res.Action.ChecksumsVerified == 0 || !res.Action.Converged || res.Action.Frames == 0 {
		t.Fatalf("action stream: %+v", res.Action)
	}
}

// A transport that delivers some messages twice is caught: the soak's
// verdict is not an unconditional pass.
func TestSoakCatchesDuplicateDelivery(t *testing.T) {
	res, err := Run(context.Background(), Config{Count: 3000, Seed: 3, redeliverEvery: 500})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Violations < 6 {
		t.Fatalf("injected duplicates not caught: ok %v, %d violations", res.OK, res.Violations)
	}
	dups := res.Streams[0].Duplicates + res.Streams[1].Duplicates + res.Streams[2].Duplicates
	if dups != res.Violations || !strings.Contains(res.ViolationList[0], "twice") {
		t.Fatalf("duplicates %d of %d violations: %v", dups, res.Violations, res.ViolationList)
	}
}

// A run cut short by its bound fails as incomplete rather than passing on
// what it delivered so far.
func TestSoakIncompleteFails(t *testing.T) {
	res, err := Run(context.Background(), Config{Count: 50_000, MaxVirtual: 5 * Tick})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || !strings.Contains(strings.Join(res.ViolationList, "\n"), "incomplete") {
		t.Fatalf("bounded run passed: %v", res.ViolationList)
	}
}

func TestSoakCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Count: 1_000_000}); err == nil {
		t.Fatal("cancelled run returned no error")
	}
}
