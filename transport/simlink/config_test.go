package simlink

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

func TestLinkConfigDefaults(t *testing.T) {
	var zero LinkConfig
	if err := zero.Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	d := zero.WithDefaults()
	if d.MTU != DefaultMTU || d.BurstLen != 1 {
		t.Fatalf("defaults: MTU %d BurstLen %v, want %d and 1", d.MTU, d.BurstLen, DefaultMTU)
	}
	m, err := NewModel(zero, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Config(); got != d {
		t.Fatalf("Model.Config() = %+v, want %+v", got, d)
	}
}

func TestLinkConfigValidate(t *testing.T) {
	valid := []LinkConfig{
		{Delay: MaxDelay, Jitter: MaxDelay},
		{Loss: 1},
		{Loss: 0.5, BurstLen: 1},
		{Loss: 2.0 / 3, BurstLen: 2}, // the largest loss a mean run of 2 can reach
		{Loss: 0, BurstLen: 100},
		{Duplicate: 1},
		{Bandwidth: 1, QueueLimit: DefaultMTU},
		{MTU: 1},
		{MTU: socket.MaxDatagramSize},
		{QueueLimit: 576, MTU: 576},
	}
	for _, c := range valid {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: unexpected error %v", c, err)
		}
	}

	invalid := []struct {
		cfg  LinkConfig
		kind error
	}{
		{LinkConfig{Delay: -1}, ErrNegative},
		{LinkConfig{Delay: MaxDelay + 1}, ErrRange},
		{LinkConfig{Jitter: -time.Millisecond}, ErrNegative},
		{LinkConfig{Jitter: MaxDelay + 1}, ErrRange},
		{LinkConfig{Loss: -0.01}, ErrProbability},
		{LinkConfig{Loss: 1.01}, ErrProbability},
		{LinkConfig{Loss: math.NaN()}, ErrProbability},
		{LinkConfig{BurstLen: 0.5}, ErrBurstLen},
		{LinkConfig{BurstLen: -2}, ErrBurstLen},
		{LinkConfig{BurstLen: math.NaN()}, ErrBurstLen},
		{LinkConfig{BurstLen: math.Inf(1)}, ErrBurstLen},
		{LinkConfig{Loss: 0.7, BurstLen: 2}, ErrBurstLen},
		{LinkConfig{Loss: 1, BurstLen: 5}, ErrBurstLen},
		{LinkConfig{Duplicate: -0.1}, ErrProbability},
		{LinkConfig{Duplicate: 2}, ErrProbability},
		{LinkConfig{Duplicate: math.NaN()}, ErrProbability},
		{LinkConfig{Bandwidth: -1}, ErrNegative},
		{LinkConfig{QueueLimit: -1}, ErrNegative},
		{LinkConfig{QueueLimit: 100}, ErrRange},
		{LinkConfig{MTU: -1}, ErrNegative},
		{LinkConfig{MTU: socket.MaxDatagramSize + 1}, ErrRange},
	}
	for _, tc := range invalid {
		err := tc.cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, tc.kind) {
			t.Errorf("%+v: error %v, want one wrapping ErrInvalidConfig and %v", tc.cfg, err, tc.kind)
		}
		if _, err := NewModel(tc.cfg, 1); !errors.Is(err, tc.kind) {
			t.Errorf("NewModel(%+v): error %v, want %v", tc.cfg, err, tc.kind)
		}
	}
}

func TestSetConfigRejectsInvalid(t *testing.T) {
	m, err := NewModel(LinkConfig{Delay: time.Millisecond}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetConfig(LinkConfig{Loss: 2}); !errors.Is(err, ErrProbability) {
		t.Fatalf("SetConfig: %v, want ErrProbability", err)
	}
	if m.Config().Delay != time.Millisecond {
		t.Fatalf("config changed by a rejected SetConfig: %+v", m.Config())
	}

	n := New(1)
	for _, err := range []error{
		n.SetDefaultLink(LinkConfig{Delay: -1}),
		n.SetLink(addr(1, 1), addr(2, 1), LinkConfig{Delay: -1}),
		n.SetPair(addr(1, 1), addr(2, 1), LinkConfig{Delay: -1}),
	} {
		if !errors.Is(err, ErrNegative) {
			t.Errorf("network config setter: %v, want ErrNegative", err)
		}
	}
}
