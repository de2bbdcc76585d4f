package bench

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strings"
	"testing"
	"time"
)

// A short bottleneck run (2 s capped, 1 s lifted): the series has a sample
// every 50 ms, the wire rate while capped falls below the offered load
// toward the bottleneck, every reliable message arrives, and the budget
// sheds.
func TestRunBottleneckShort(t *testing.T) {
	cfg := BottleneckConfig{Duration: 2 * time.Second, After: time.Second, Settle: time.Second}
	r, err := RunBottleneck(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Samples) != 60 {
		t.Fatalf("%d samples over 3 s at 50 ms, want 60", len(r.Samples))
	}
	var capped, lifted int
	for i, s := range r.Samples {
		if want := float64(i+1) * 50; s.AtMS != want {
			t.Fatalf("sample %d at %v ms, want %v", i, s.AtMS, want)
		}
		if s.CapacityBps != 0 {
			capped++
		} else {
			lifted++
		}
	}
	if capped != 40 || lifted != 20 {
		t.Errorf("%d capped and %d lifted samples, want 40 and 20", capped, lifted)
	}
	last := r.Samples[39] // the last 50 ms before the lift
	if last.SendBps >= float64(r.Config.OfferedBps) || last.BudgetBps >= r.Config.OfferedBps {
		t.Errorf("at %v ms the sender put %.0f B/s on the wire with a budget of %d B/s: not below the %d B/s offered",
			last.AtMS, last.SendBps, last.BudgetBps, r.Config.OfferedBps)
	}
	if r.MeanSendBps > 1.5*float64(r.Config.BandwidthBps) || r.MeanSendBps == 0 {
		t.Errorf("mean wire rate %.0f B/s over a %d B/s bottleneck", r.MeanSendBps, r.Config.BandwidthBps)
	}
	if r.Failed() || r.ReliableAccepted < 100 {
		t.Errorf("reliable: %d delivered of %d accepted, in order %v", r.ReliableDelivered, r.ReliableAccepted, r.ReliableInOrder)
	}
	if r.ShedSuperseded+r.ShedExpired == 0 || r.QueueDatagrams == 0 {
		t.Errorf("shed %d superseded, %d expired; %d datagrams in the p99", r.ShedSuperseded, r.ShedExpired, r.QueueDatagrams)
	}
	again, _ := RunBottleneck(cfg)
	var a, b bytes.Buffer
	if WriteBottleneckJSON(&a, r) != nil || WriteBottleneckJSON(&b, again) != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two runs of one config differ")
	}

	var c bytes.Buffer
	if err := WriteBottleneckCSV(&c, r); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&c).ReadAll()
	if err != nil || len(rows) != 61 || rows[0][0] != "at_ms" || rows[1][0] != "50" {
		t.Errorf("CSV: %d rows, %v", len(rows), err)
	}
	var md bytes.Buffer
	if err := WriteBottleneckMarkdown(&md, r, "bottleneck.svg"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"![send rate and queuing delay over time](bottleneck.svg)", "| p99 one-way queuing delay", "ErrQueueFull"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("Markdown lacks %q:\n%s", s, md.String())
		}
	}
}

func TestBottleneckConfigValidate(t *testing.T) {
	for _, c := range []BottleneckConfig{
		{Bandwidth: 5},
		{QueueLimit: 10},
		{Duration: time.Second, Settle: time.Second},
		{Sample: time.Millisecond},
		{Delay: time.Millisecond, Jitter: 2 * time.Millisecond},
	} {
		if _, err := RunBottleneck(c); !errors.Is(err, ErrBottleneck) {
			t.Errorf("%+v: %v, want ErrBottleneck", c, err)
		}
	}
	if err := (BottleneckConfig{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
