package seal

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
)

// reorderRun sends datagrams of size bytes every gap for dur through one
// simlink Model direction, seals each, opens the copies in delivery order,
// and returns the deepest reordering seen (how far behind the highest
// packet number delivered before it a datagram arrived), the datagrams
// opened and those refused as too old.
func reorderRun(t *testing.T, cfg simlink.LinkConfig, size int, gap, dur time.Duration) (depth uint64, opened, tooOld int) {
	t.Helper()
	m, err := simlink.NewModel(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	c, s := pair(t, Config{}, testSecret())
	type arrival struct {
		at time.Duration
		pn int
	}
	var arrivals []arrival
	var sealed [][]byte
	plain := make([]byte, size-Overhead)
	for now := time.Duration(0); now < dur; now += gap {
		v := m.Decide(now, size)
		pn := len(sealed)
		sealed = append(sealed, sealCopy(t, c, plain))
		for i := range v.Copies {
			arrivals = append(arrivals, arrival{v.At[i], pn})
		}
	}
	slices.SortStableFunc(arrivals, func(a, b arrival) int { return int(a.at - b.at) })
	highest := -1
	buf := make([]byte, size)
	for _, a := range arrivals {
		if highest > a.pn {
			depth = max(depth, uint64(highest-a.pn))
		}
		highest = max(highest, a.pn)
		copy(buf, sealed[a.pn])
		switch _, err := s.Open(buf); {
		case err == nil:
			opened++
		case errors.Is(err, ErrTooOld):
			tooOld++
		case errors.Is(err, ErrReplayed): // the duplicate copy
		default:
			t.Fatalf("packet number %d: %v", a.pn, err)
		}
	}
	return depth, opened, tooOld
}

// TestWindowCoversHarnessReordering justifies WindowSize against the
// reliability harness (docs/CONFORMANCE.md): its worst reordering link —
// jitter 80 ms, 10 % duplicates, at the 4 MB/s cap filled with 576-byte
// datagrams (the smallest MTU, so the most datagrams) — reorders far less
// than the window, and a Session behind it refuses nothing as too old.
// The second run shows the window's limit: 2 × jitter × rate above
// WindowSize (80 ms at 100,000 datagrams a second) does drop late
// datagrams as too old.
func TestWindowCoversHarnessReordering(t *testing.T) {
	harness := simlink.LinkConfig{Delay: 250 * time.Millisecond, Jitter: 80 * time.Millisecond, Duplicate: 0.10, Bandwidth: 4 << 20, QueueLimit: 256 << 10}
	rate := float64(harness.Bandwidth) / 576
	dur := 5 * time.Second
	if raceEnabled {
		dur = 2 * time.Second
	}
	depth, opened, tooOld := reorderRun(t, harness, 576, time.Duration(float64(time.Second)/(rate*1.05)), dur)
	t.Logf("harness worst link (%.0f datagrams/s): deepest reordering %d datagrams (window %d), %d opened, %d too old", rate, depth, WindowSize, opened, tooOld)
	if depth >= WindowSize || tooOld != 0 {
		t.Fatalf("the harness's worst link reorders %d datagrams deep (%d too old): the window of %d is too small", depth, tooOld, WindowSize)
	}
	if depth < 100 {
		t.Fatalf("deepest reordering %d: the run did not reorder", depth)
	}
	fast := simlink.LinkConfig{Delay: 100 * time.Millisecond, Jitter: 80 * time.Millisecond}
	fdur := 500 * time.Millisecond
	depth, opened, tooOld = reorderRun(t, fast, 64, 10*time.Microsecond, fdur)
	t.Logf("100,000 datagrams/s with 80 ms jitter: deepest reordering %d datagrams, %d opened, %d too old", depth, opened, tooOld)
	if depth <= WindowSize || tooOld == 0 {
		t.Fatalf("at 2 × jitter × rate = 16,000 the run reordered only %d deep (%d too old)", depth, tooOld)
	}
}
