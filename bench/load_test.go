package bench

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLoadQuick runs the load profile with 8 peers for a second: every
// peer connects, every echo comes back, and the figures are measured.
func TestLoadQuick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s := Scenario{Profile: ProfileLoad, Transport: Tickwire, Peers: 8, Duration: time.Second, Drain: 3 * time.Second}
	r, err := Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Peers != 8 || r.Profile != ProfileLoad || r.LatencyKind != RTT {
		t.Errorf("row %+v", r)
	}
	// 8 peers at 60 Hz for 1 s: about 480 messages.
	if r.Sent < 8*30 || r.Failed() {
		t.Errorf("sent %d, delivered %d", r.Sent, r.Delivered)
	}
	if !(r.ServerWallUsPerPeerTick > 0) || r.MemoryPerPeerBytes <= 0 || !(r.LatencyMS.P50 > 0) || r.LatencyMS.P99 < r.LatencyMS.P50 {
		t.Errorf("figures: server wall %v µs/peer-tick, %d B/peer, latency %+v", r.ServerWallUsPerPeerTick, r.MemoryPerPeerBytes, r.LatencyMS)
	}
	// The server thread's CPU time: user time is never 0 over a second of
	// ticks (clock ticks are 1-10 ms, the server runs ~60 ticks), system
	// time may round to 0 on some kernels, and CPU is their sum.
	if threadCPUMeasured {
		if !(r.ServerUserUsPerPeerTick > 0) || r.ServerSysUsPerPeerTick < 0 ||
			r.ServerCPUUsPerPeerTick != r.ServerUserUsPerPeerTick+r.ServerSysUsPerPeerTick {
			t.Errorf("server CPU %v µs/peer-tick = user %v + sys %v", r.ServerCPUUsPerPeerTick, r.ServerUserUsPerPeerTick, r.ServerSysUsPerPeerTick)
		}
	} else if r.ServerCPUUsPerPeerTick != 0 || r.ServerUserUsPerPeerTick != 0 || r.ServerSysUsPerPeerTick != 0 {
		t.Errorf("server CPU measured where it cannot be: %+v", r)
	}
	if r.CPUSeconds <= 0 || r.WireBytes <= r.PayloadBytes {
		t.Errorf("cpu %v s, wire %d B, payload %d B", r.CPUSeconds, r.WireBytes, r.PayloadBytes)
	}
}

// TestLoadScenario checks the load profile's defaults and limits, and that
// the suite runs it for tickwire only and not by default.
func TestLoadScenario(t *testing.T) {
	d := Scenario{Profile: ProfileLoad, Transport: Tickwire}.withDefaults()
	if d.Peers != DefaultPeers || d.Duration != DefaultLoadDuration {
		t.Errorf("defaults: %d peers, %v", d.Peers, d.Duration)
	}
	for _, s := range []Scenario{
		{Profile: ProfileLoad, Transport: KCP},
		{Profile: ProfileLoad, Transport: Tickwire, Peers: DefaultPeers + 1},
		{Profile: ProfileLoad, Transport: Tickwire, Peers: -1},
	} {
		if err := s.Validate(); !errors.Is(err, ErrScenario) {
			t.Errorf("%+v: %v", s, err)
		}
	}
	def := DefaultSuite()
	for _, sc := range def.Scenarios() {
		if sc.Profile == ProfileLoad {
			t.Errorf("default suite runs load")
		}
	}
	def.Profiles = []string{ProfileLoad}
	sc := def.Scenarios()
	if len(sc) != 1 || sc[0].Transport != Tickwire || sc[0].Duration != DefaultLoadDuration || sc[0].Peers != DefaultPeers {
		t.Errorf("load scenarios %+v", sc)
	}
}
