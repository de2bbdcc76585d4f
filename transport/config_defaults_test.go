package transport

import (
	"testing"

	"github.com/tickwire/tickwire/ackmap"
)

// Every config's zero value means "the defaults": WithDefaults spells them
// out, Validate accepts them, and applying WithDefaults again changes
// nothing.
func TestWithDefaultsValidAndStable(t *testing.T) {
	check := func(name string, validate func() error, again func() bool) {
		t.Helper()
		if err := validate(); err != nil {
			t.Errorf("%s: the defaults do not validate: %v", name, err)
		}
		if !again() {
			t.Errorf("%s: WithDefaults is not idempotent", name)
		}
	}
	c := Config{}.WithDefaults()
	check("Config", c.Validate, func() bool { return c.WithDefaults() == c })
	a := ackmap.Config{}.WithDefaults()
	check("ackmap.Config", a.Validate, func() bool { return a.WithDefaults() == a })
	r := RunConfig{}.WithDefaults()
	check("RunConfig", r.Validate, func() bool {
		d := r.WithDefaults()
		return d.Tick == r.Tick && d.MaxWait == r.MaxWait && d.Drain == r.Drain
	})
	e := EndpointConfig{}.WithDefaults()
	check("EndpointConfig", e.Validate, func() bool {
		d := e.WithDefaults()
		return d.Channel == e.Channel && d.IdleTimeout == e.IdleTimeout && d.HandshakeTimeout == e.HandshakeTimeout &&
			d.OutboxMessages == e.OutboxMessages && d.MaxPeers == e.MaxPeers
	})
	if c.MTU == 0 || e.HandshakeTimeout == 0 || a.MaxInFlight == 0 || r.MaxWait == 0 {
		t.Fatalf("defaults left zero: MTU %d, HandshakeTimeout %v, MaxInFlight %d, MaxWait %v", c.MTU, e.HandshakeTimeout, a.MaxInFlight, r.MaxWait)
	}
}
