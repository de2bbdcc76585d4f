package bench

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/rollback"
)

// TestActionsQuick runs short actions rows — 3 clients, 30 inputs each —
// over tickwire and kcp at 0 % and 10 % loss, 25 ms ± 2 ms each way:
// every input is applied exactly once, and the one-way latency is at
// least the link's delay.
func TestActionsQuick(t *testing.T) {
	const peers, count = 3, 30
	delay := 25 * time.Millisecond
	for _, tr := range []string{Tickwire, KCP} {
		for _, loss := range []float64{0, 0.10} {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			s := Scenario{
				Profile: ProfileActions, Transport: tr, Peers: peers, Count: count, Drain: 3 * time.Second,
				Link: Link{Loss: loss, Delay: delay, Jitter: 2 * time.Millisecond, Seed: 7},
			}
			r, err := Run(ctx, s)
			cancel()
			if err != nil {
				t.Fatalf("%s loss %v: %v", tr, loss, err)
			}
			t.Logf("%s loss %v: sent %d delivered %d refused %d latency %+v wire %d B cpu %.2f s", tr, loss, r.Sent, r.Delivered, r.Refused, r.LatencyMS, r.WireBytes, r.CPUSeconds)
			if r.Profile != ProfileActions || r.Transport != tr || r.LatencyKind != OneWay || r.Peers != peers {
				t.Errorf("%s loss %v: row %+v", tr, loss, r)
			}
			if r.Sent != peers*count || r.Delivered != r.Sent || r.Refused != 0 || r.Failed() {
				t.Errorf("%s loss %v: sent %d, delivered %d, refused %d", tr, loss, r.Sent, r.Delivered, r.Refused)
			}
			l := r.LatencyMS
			if !(l.P50 > float64(delay)/float64(time.Millisecond)) || l.P99 < l.P50 || l.Max < l.P99 || l.Max > 1000 {
				t.Errorf("%s loss %v: latency %+v", tr, loss, l)
			}
			if r.PayloadBytes != actMoveSize*r.Sent || r.WireBytes <= r.PayloadBytes || r.CPUSeconds <= 0 || r.WallSeconds <= 0 || r.PeakRSSBytes <= 0 {
				t.Errorf("%s loss %v: payload %d B, wire %d B, cpu %v s, wall %v s, rss %d", tr, loss, r.PayloadBytes, r.WireBytes, r.CPUSeconds, r.WallSeconds, r.PeakRSSBytes)
			}
		}
	}
}

// TestActionsTooSmallLogFails: with an action log of 2 frames the server
// rewinds at most 1 frame (16.7 ms at 60 Hz), less than the 25 ms an input
// takes to arrive, so it refuses inputs as too old. The row must report
// them (Refused) and fail, never average them away.
func TestActionsTooSmallLogFails(t *testing.T) {
	const peers, count = 2, 60
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := Run(ctx, Scenario{
		Profile: ProfileActions, Transport: Tickwire, Peers: peers, Count: count, Drain: time.Second,
		FrameCapacity: 2, Link: Link{Delay: 25 * time.Millisecond, Seed: 7},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != peers*count || r.Delivered >= r.Sent || r.Refused == 0 || !r.Failed() {
		t.Fatalf("sent %d, delivered %d, refused %d, failed %v: want %d sent, inputs refused, Failed",
			r.Sent, r.Delivered, r.Refused, r.Failed(), peers*count)
	}
}

// TestActionsDeliveryCheck feeds the recorder a frame as the server's log
// would hold it: an input applied once is delivered; one applied twice, one
// with another payload and one never applied are not.
func TestActionsDeliveryCheck(t *testing.T) {
	const peers = 4
	w, err := newActWorld(peers, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := newActionsRecorder(time.Now().Add(-time.Second), peers, 2)
	for p := range rollback.Sender(peers) {
		if !rec.generate(p, 1) {
			t.Fatalf("peer %d has no input for frame 1", p)
		}
	}
	if rec.generate(0, 3) || rec.generate(peers, 1) || rec.generate(0, 0) {
		t.Error("generated an input beyond the row")
	}
	move := w.move.ID()
	if err := w.log.BeginFrame(1); err != nil {
		t.Fatal(err)
	}
	exec := func(p rollback.Sender, m actMove) {
		t.Helper()
		if err := w.x.Execute(p, move, w.ents[p], encodeMove(nil, m)); err != nil {
			t.Fatal(err)
		}
	}
	exec(0, actMoveOf(0, 1))                   // once: delivered
	exec(1, actMoveOf(1, 1))                   // twice: a duplicate
	exec(1, actMoveOf(1, 1))                   //
	exec(2, actMove{DX: 99})                   // not what peer 2 generated
	if err := w.log.CloseFrame(); err != nil { // peer 3's never applied
		t.Fatal(err)
	}
	rec.onFrame(w.log, move, 1)
	sent, delivered, h := rec.result()
	if sent != peers || delivered != 1 || h.TotalCount() != 1 || rec.nApplied.Load() != 2 {
		t.Errorf("sent %d, delivered %d, latencies %d, applied %d", sent, delivered, h.TotalCount(), rec.nApplied.Load())
	}
	if l, _ := latencyOf(h); !(l.P50 > 0) {
		t.Errorf("latency %+v", l)
	}
	r := Result{Profile: ProfileActions, Sent: sent, Delivered: delivered}
	if !r.Reliable() || !r.Failed() {
		t.Error("an actions row with a missing input did not fail")
	}
}

// TestActionInputsMessage: the kcp rows' input message is the links'
// format; the server submits a whole message, binds the session to its
// sender, and refuses every strict prefix and a record of another peer.
func TestActionInputsMessage(t *testing.T) {
	rec := newActionsRecorder(time.Now(), 2, 10)
	srv, err := newActionsServer(Scenario{Peers: 2}, rec)
	if err != nil {
		t.Fatal(err)
	}
	w := srv.w
	msg := appendActionInputs(nil, 3, 1, w.move.ID(), w.ents[1], encodeMove(nil, actMoveOf(1, 3)))
	for n := range len(msg) {
		if _, err := srv.submitActionInputs(msg[:n], -1); !errors.Is(err, errActionMessage) {
			t.Fatalf("prefix %d of %d: %v", n, len(msg), err)
		}
	}
	if _, err := srv.submitActionInputs(append(slices.Clone(msg), 0), -1); !errors.Is(err, errActionMessage) {
		t.Errorf("trailing byte: %v", err)
	}
	if _, err := srv.submitActionInputs(msg, 0); !errors.Is(err, errActionMessage) {
		t.Errorf("peer 1's message as peer 0's: %v", err)
	}
	if srv.srv.Pending() != 0 {
		t.Fatalf("%d inputs queued from refused messages", srv.srv.Pending())
	}
	peer, err := srv.submitActionInputs(msg, -1)
	if err != nil || peer != 1 || srv.srv.Pending() != 1 {
		t.Fatalf("peer %d, %v, %d pending", peer, err, srv.srv.Pending())
	}
}

// TestActionsScenario checks the actions profile's defaults and the
// ranges of its fields, FrameCapacity and MaxInFlight included.
func TestActionsScenario(t *testing.T) {
	d := Scenario{Profile: ProfileActions, Transport: KCP}.withDefaults()
	if d.Peers != DefaultActionPeers || d.Rate != DefaultRate || d.Count != DefaultCount || d.FrameCapacity != 0 || d.MaxInFlight != 0 {
		t.Errorf("defaults: %+v", d)
	}
	if got := actionsServerConfig(0).MaxRewindFrames; got != rollback.DefaultFrameCapacity*3/4 {
		t.Errorf("default rewind bound %d", got)
	}
	if got := actionsServerConfig(rollback.MinFrameCapacity).MaxRewindFrames; got != 1 {
		t.Errorf("smallest ring's rewind bound %d", got)
	}
	for _, s := range []Scenario{
		{Profile: ProfileActions, Transport: Tickwire},
		{Profile: ProfileActions, Transport: KCPDefault, Peers: DefaultPeers, Count: MaxActionInputs / DefaultPeers},
		{Profile: ProfileActions, Transport: Tickwire, FrameCapacity: rollback.MinFrameCapacity, MaxInFlight: 1, Rate: MaxActionRate},
		{Profile: ProfileActions, Transport: KCP, FrameCapacity: rollback.MaxFrameCapacity, MaxInFlight: ackmap.MaxInFlightLimit},
		{Profile: ProfileEcho, Transport: KCP, MaxInFlight: 32},
	} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	for _, s := range []Scenario{
		{Profile: ProfileActions, Transport: Raw},
		{Profile: ProfileActions, Transport: Tickwire, Peers: DefaultPeers + 1},
		{Profile: ProfileActions, Transport: Tickwire, Peers: -1},
		{Profile: ProfileActions, Transport: Tickwire, Rate: MaxActionRate + 1},
		{Profile: ProfileActions, Transport: Tickwire, Peers: DefaultPeers, Count: MaxActionInputs/DefaultPeers + 1},
		{Profile: ProfileActions, Transport: Tickwire, FrameCapacity: rollback.MinFrameCapacity - 1},
		{Profile: ProfileActions, Transport: Tickwire, FrameCapacity: -1},
		{Profile: ProfileActions, Transport: Tickwire, FrameCapacity: rollback.MaxFrameCapacity + 1},
		{Profile: ProfileActions, Transport: Tickwire, MaxInFlight: -1},
		{Profile: ProfileActions, Transport: KCP, MaxInFlight: ackmap.MaxInFlightLimit + 1},
		{Profile: ProfileEcho, Transport: Tickwire, MaxInFlight: -1},
		{Profile: ProfileEcho, Transport: Tickwire, FrameCapacity: -1},
	} {
		if err := s.Validate(); !errors.Is(err, ErrScenario) {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

// TestSuiteActionsRows: actions is a known profile but not a default one;
// the suite expands it like echo (loss-major, transports adjacent, raw
// skipped) with DefaultActionPeers, and passes FrameCapacity and
// MaxInFlight into every row.
func TestSuiteActionsRows(t *testing.T) {
	if !slices.Contains(Profiles, ProfileActions) || slices.Contains(DefaultProfiles, ProfileActions) {
		t.Fatalf("profiles %v, default %v", Profiles, DefaultProfiles)
	}
	def := DefaultSuite()
	for _, sc := range def.Scenarios() {
		if sc.Profile == ProfileActions {
			t.Fatal("the default suite runs actions")
		}
	}
	def.Profiles = []string{ProfileActions, ProfileEcho}
	def.Transports = []string{Tickwire, Raw, KCP}
	def.Losses = []float64{0, 0.10}
	def.FrameCapacity, def.MaxInFlight = 128, 32
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	sc := def.Scenarios()
	type key struct {
		profile, transport string
		loss               float64
	}
	var got []key
	for _, s := range sc {
		got = append(got, key{s.Profile, s.Transport, s.Link.Loss})
		if s.FrameCapacity != 128 || s.MaxInFlight != 32 || s.Link.Delay != DefaultDelay || s.Link.Jitter != DefaultJitter || s.Count != DefaultCount {
			t.Errorf("row %+v", s)
		}
		if s.Profile == ProfileActions && s.Peers != DefaultActionPeers {
			t.Errorf("actions row with %d peers", s.Peers)
		}
	}
	want := []key{
		{ProfileActions, Tickwire, 0}, {ProfileActions, KCP, 0},
		{ProfileActions, Tickwire, 0.10}, {ProfileActions, KCP, 0.10},
		{ProfileEcho, Tickwire, 0}, {ProfileEcho, KCP, 0},
		{ProfileEcho, Tickwire, 0.10}, {ProfileEcho, KCP, 0.10},
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	def.ActionPeers = 3
	if sc := def.Scenarios(); sc[0].Peers != 3 {
		t.Errorf("ActionPeers 3: %d peers", sc[0].Peers)
	}
}

// TestEchoMaxInFlight runs short echo rows with a small in-flight bound on
// both transports (tickwire: 8 unacked datagrams; kcp: windows of 8
// packets): every echo still comes back.
func TestEchoMaxInFlight(t *testing.T) {
	for _, tr := range []string{Tickwire, KCP} {
		r, err := Run(context.Background(), Scenario{Transport: tr, Count: 20, Rate: 200, MaxInFlight: 8, Drain: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if r.Failed() || r.Sent != 20 {
			t.Errorf("%s: sent %d, delivered %d", tr, r.Sent, r.Delivered)
		}
	}
}
