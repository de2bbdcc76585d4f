// Package soak is scenario S-I1, the long soak: reliable messages of every
// size — from 1 B, through RedundancyBytes, around one datagram, up to
// 16 KiB of several fragment pieces — both ways over sim(500 ms, 100 ms,
// 25 %) with 25 % duplication and the reordering its jitter causes, on the
// unordered stream and every ordered stream, with one side flushing at
// 60 Hz and the other every 1–2 ms. Every message must arrive exactly
// once, in order on the ordered streams, byte for byte intact, and both
// senders must end holding nothing. An action stream (a rollback server
// and one client exchanging inputs, slices and checksums) runs alongside
// and must converge. From the first 10 % of the run to its end the
// goroutine count must not grow, nor the heap beyond a tolerance and what
// the config lets the channels keep in reused buffers.
//
// The run is made of phases, each a fresh network and fresh channels with
// one transport.Config. The first phase is the transport's defaults
// (transport.Config{}, no tuning); a second, "tuned", widens the in-flight
// and reliable windows for the 1.2 s round trip.
//
// Everything runs on the simulated network (transport/simlink) in virtual
// time, on the caller's goroutine, deterministically from the seed.
package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/fragment"
	"github.com/tickwire/tickwire/transport/simlink"
)

// Defaults applied by Config for zero-valued fields.
const (
	DefaultCount      = 100_000
	DefaultSeed       = 1
	DefaultPerTick    = 64
	DefaultMaxVirtual = 12 * time.Hour
	DefaultMaxWall    = 30 * time.Minute
	// DefaultStall ends a phase as wedged when no message has been
	// delivered either way for this long (virtual time) while some are
	// still missing: sixty round trips of the default link.
	DefaultStall = 60 * time.Second
	// DefaultDrain bounds, once every message is delivered, how long the
	// senders may take to be acked and hold nothing, and the action
	// stream to settle (virtual time).
	DefaultDrain = 30 * time.Second
	// DefaultHeapGrowth and DefaultHeapSlack are the memory tolerance: the
	// last heap sample may exceed the first by at most
	// DefaultHeapGrowth × first + DefaultHeapSlack (GC timing and size
	// classes make a live heap wobble by a few per cent) plus what the
	// config lets the channels keep in reused buffers (PhaseResult.Retain).
	DefaultHeapGrowth = 0.20
	DefaultHeapSlack  = 1 << 20
	// Tick is the slow side's flush period (60 Hz), and the unit of
	// Config.PerTick.
	Tick = time.Second / 60
	// FastMin and FastMax bound the fast side's period between two
	// wake-ups (receive, send, flush), drawn uniformly from the seed: an
	// event loop that flushes on every wake-up.
	FastMin = time.Millisecond
	FastMax = 2 * time.Millisecond
	// maxViolations caps the violation messages kept per phase (all are
	// counted).
	maxViolations = 24
)

// DefaultLink is S-I1's link, both ways: 500 ms delay, 100 ms jitter, 25 %
// loss, 25 % duplication.
func DefaultLink() simlink.LinkConfig {
	return simlink.LinkConfig{
		Delay: 500 * time.Millisecond, Jitter: 100 * time.Millisecond,
		Loss: 0.25, Duplicate: 0.25, MTU: transport.MaxMTU,
	}
}

// Phase is one part of a soak run: a channel config that both channel
// pairs (messages and action stream) use.
type Phase struct {
	// Name labels the phase in reports and selects it (PhaseByName).
	Name string `json:"name"`
	// About says what the config is.
	About string `json:"about"`
	// Channel is both pairs' transport config.
	Channel transport.Config `json:"-"`
}

// DefaultPhases returns the phases a run makes by default, in order: the
// transport's defaults, then the tuned config.
func DefaultPhases() []Phase {
	return []Phase{
		{Name: "defaults", About: "transport.Config{}: every default, no tuning", Channel: transport.Config{}},
		{Name: "tuned", About: "in-flight window 512, reliable window 2048: sized for the 1.2 s round trip", Channel: transport.Config{
			Ack:            ackmap.Config{MaxInFlight: 512},
			ReliableWindow: 2048,
		}},
	}
}

// PhaseByName returns the default phase called name.
func PhaseByName(name string) (Phase, bool) {
	for _, p := range DefaultPhases() {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}

// Config configures a soak run. The zero value of every field means its
// default.
type Config struct {
	// Count is how many reliable messages each phase must deliver, half
	// each way, spread over every reliable stream. Default 100,000.
	Count uint64
	// Seed seeds the simulated network, the message sizes, the fast
	// side's cadence and the client's inputs. Default 1.
	Seed uint64
	// Link is the impairment, both ways, of both channel pairs. Default
	// DefaultLink. Its MTU is raised to transport.MaxMTU when zero.
	Link *simlink.LinkConfig
	// Phases are run in order. Default DefaultPhases: defaults first.
	Phases []Phase
	// PerTick is how many messages each side offers per stream per Tick of
	// virtual time (whatever its cadence); the stream's back-pressure
	// (transport.ErrQueueFull) defers the rest to the side's next wake-up.
	// Default 64: more than the link carries, so the senders run saturated.
	PerTick int
	// MaxVirtual bounds each phase in simulated time, MaxWall the whole
	// run in real time; a phase that hits either fails as incomplete (and
	// a phase not started before MaxWall fails as not run). Defaults 12 h
	// and 30 min.
	MaxVirtual, MaxWall time.Duration
	// Stall and Drain bound a phase's progress (see DefaultStall and
	// DefaultDrain). Defaults 60 s and 30 s.
	Stall, Drain time.Duration
	// HeapGrowth and HeapSlack are the memory tolerance (see
	// DefaultHeapGrowth). Defaults 0.20 and 1 MiB.
	HeapGrowth float64
	HeapSlack  uint64

	// redeliverEvery, in tests, hands every n-th delivered message to the
	// checker twice: a deliberately broken transport.
	redeliverEvery uint64
	// corruptEvery, in tests, flips a byte of every n-th delivered
	// message before it is checked.
	corruptEvery uint64
}

func (c Config) withDefaults() Config {
	if c.Count == 0 {
		c.Count = DefaultCount
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.Link == nil {
		l := DefaultLink()
		c.Link = &l
	}
	if len(c.Phases) == 0 {
		c.Phases = DefaultPhases()
	}
	if c.PerTick <= 0 {
		c.PerTick = DefaultPerTick
	}
	if c.MaxVirtual <= 0 {
		c.MaxVirtual = DefaultMaxVirtual
	}
	if c.MaxWall <= 0 {
		c.MaxWall = DefaultMaxWall
	}
	if c.Stall <= 0 {
		c.Stall = DefaultStall
	}
	if c.Drain <= 0 {
		c.Drain = DefaultDrain
	}
	if c.HeapGrowth <= 0 {
		c.HeapGrowth = DefaultHeapGrowth
	}
	if c.HeapSlack == 0 {
		c.HeapSlack = DefaultHeapSlack
	}
	return c
}

// Sample is one memory and goroutine sample, taken after runtime.GC.
type Sample struct {
	// Progress is the fraction of Count delivered when it was taken.
	Progress float64 `json:"progress"`
	// HeapInuse is runtime.MemStats.HeapInuse, in bytes.
	HeapInuse uint64 `json:"heap_inuse"`
	// Goroutines is runtime.NumGoroutine.
	Goroutines int `json:"goroutines"`
}

// Result is a soak run's outcome. OK is the verdict: every phase passed.
type Result struct {
	Count  uint64        `json:"count"`
	Seed   uint64        `json:"seed"`
	Link   string        `json:"link"`
	Phases []PhaseResult `json:"phases"`
	// Wall is the whole run's real time.
	Wall time.Duration `json:"wall_ns"`
	// Violations is the total over the phases.
	Violations uint64 `json:"violations"`
	// OK is true when nothing was violated in any phase.
	OK bool `json:"ok"`
}

// PhaseResult is one phase's outcome.
type PhaseResult struct {
	Name  string `json:"name"`
	About string `json:"about"`
	// The channel limits that shape the size classes and the pacing.
	MTU              int `json:"mtu"`
	RedundancyBytes  int `json:"redundancy_bytes"`
	MaxSinglePayload int `json:"max_single_payload"`
	MaxInFlight      int `json:"max_in_flight"`
	ReliableWindow   int `json:"reliable_window"`
	MaxPartial       int `json:"max_partial"`
	// Classes are the size classes, in the order of every per-class list.
	Classes []SizeClass `json:"classes"`
	// Flows are the two directions: a→b (a flushes at 60 Hz) and b→a
	// (b flushes every 1–2 ms).
	Flows [2]FlowResult `json:"flows"`
	// Delivered is the total of the flows' deliveries.
	Delivered uint64 `json:"delivered"`
	// Wakes counts both sides' wake-ups; Virtual and Wall are the phase's
	// length in simulated and real time. AllDeliveredAt is the virtual time
	// the last message arrived (0 if some never did); SettledAt when both
	// senders held nothing and the action stream had settled (0 if never).
	Wakes          uint64        `json:"wakes"`
	Virtual        time.Duration `json:"virtual_ns"`
	Wall           time.Duration `json:"wall_ns"`
	AllDeliveredAt time.Duration `json:"all_delivered_at_ns"`
	SettledAt      time.Duration `json:"settled_at_ns"`
	// Incomplete says which bound ended the phase early, if one did.
	Incomplete string `json:"incomplete,omitempty"`
	// Action is the action stream's outcome.
	Action ActionResult `json:"action"`
	// First and Last are the samples at 10 % and at 100 % of Count.
	// Retain is the most the message pair's two channels may keep in
	// buffers they reuse, by their config: a reliable message's copy keeps
	// its capacity in its window slot on the sender, and an out-of-order
	// one in the ordered stream's slot on the receiver, so every slot of
	// every window on both sides may come to hold a largest-message
	// buffer; plus the reassembly buffers. HeapLimit is the most
	// Last.HeapInuse may be: First plus the tolerance plus Retain. A leak
	// shows once it outgrows Retain — in a long run.
	First     Sample `json:"first"`
	Last      Sample `json:"last"`
	Retain    uint64 `json:"retain"`
	HeapLimit uint64 `json:"heap_limit"`
	// Violations counts every violation; ViolationList keeps the first
	// few, described.
	Violations    uint64   `json:"violations"`
	ViolationList []string `json:"violation_list,omitempty"`
	// OK is true when nothing was violated.
	OK bool `json:"ok"`
}

func (r *PhaseResult) violate(format string, args ...any) {
	r.Violations++
	if len(r.ViolationList) < maxViolations {
		r.ViolationList = append(r.ViolationList, fmt.Sprintf(format, args...))
	}
}

// sample runs a full GC and reads the heap and the goroutine count.
func sample(progress float64) Sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Sample{Progress: progress, HeapInuse: ms.HeapInuse, Goroutines: runtime.NumGoroutine()}
}

// Run runs every phase of the soak in order. The verdict is Result.OK,
// with each phase's violations listed; the error is for a run that could
// not be set up or was cancelled through ctx.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	link := *cfg.Link
	if link.MTU == 0 {
		link.MTU = transport.MaxMTU
	}
	res := Result{
		Count: cfg.Count, Seed: cfg.Seed,
		Link: fmt.Sprintf("sim(%v, %v, %g%%) dup %g%%", link.Delay, link.Jitter, link.Loss*100, link.Duplicate*100),
	}
	start := time.Now()
	for i, ph := range cfg.Phases {
		var pr PhaseResult
		if time.Since(start) >= cfg.MaxWall {
			pr = PhaseResult{Name: ph.Name, About: ph.About}
			pr.violate("phase not run: the wall-time bound %v was spent by the phases before it", cfg.MaxWall)
		} else {
			var err error
			if pr, err = runPhase(ctx, cfg, link, i, ph, start); err != nil {
				return res, fmt.Errorf("soak: phase %s: %w", ph.Name, err)
			}
		}
		pr.OK = pr.Violations == 0
		res.Violations += pr.Violations
		res.Phases = append(res.Phases, pr)
	}
	res.Wall = time.Since(start)
	res.OK = res.Violations == 0
	return res, nil
}

// runPhase runs one phase on a fresh network. start is the run's start,
// for the wall-time bound.
func runPhase(ctx context.Context, cfg Config, link simlink.LinkConfig, index int, ph Phase, start time.Time) (PhaseResult, error) {
	res := PhaseResult{Name: ph.Name, About: ph.About}
	n := simlink.New(mix64(cfg.Seed + uint64(index)))
	if err := n.SetDefaultLink(link); err != nil {
		return res, fmt.Errorf("link: %w", err)
	}
	ha, hb := &inbox{res: &res, every: cfg.redeliverEvery, corrupt: cfg.corruptEvery}, &inbox{res: &res, every: cfg.redeliverEvery, corrupt: cfg.corruptEvery}
	a, b, err := pair(n, 1, ph.Channel, ha, hb)
	if err != nil {
		return res, err
	}
	ccfg := a.ch.Config()
	res.MTU, res.RedundancyBytes = ccfg.MTU, ccfg.RedundancyBytes
	res.MaxSinglePayload = a.ch.MaxSinglePayload(transport.Reliable)
	res.MaxInFlight, res.ReliableWindow, res.MaxPartial = ccfg.Ack.MaxInFlight, ccfg.ReliableWindow, ccfg.MaxPartial
	if res.MaxInFlight == 0 {
		res.MaxInFlight = ackmap.DefaultMaxInFlight
	}
	res.Classes = sizeClasses(ccfg.RedundancyBytes, res.MaxSinglePayload)
	for _, c := range res.Classes {
		if c.Max > ccfg.MaxMessageSize {
			return res, fmt.Errorf("size class %s reaches %d B, above MaxMessageSize %d", c.Name, c.Max, ccfg.MaxMessageSize)
		}
	}
	slot := uint64(largeMax + 8) // a largest message's reliable frame
	res.Retain = 2 * (uint64(2*ccfg.OrderedStreams+1)*uint64(ccfg.ReliableWindow)*slot +
		uint64(ccfg.MaxPartial+1)*uint64(largeMax+fragment.PieceSize(ccfg.MTU)))
	sz := newSizer(res.Classes)
	streams := ccfg.OrderedStreams + 1
	half := [2]uint64{cfg.Count - cfg.Count/2, cfg.Count / 2}
	flows := [2]*flow{
		newFlow(&res, 0, "a→b", a, b, sz, streams, half[0], cfg, index),
		newFlow(&res, 1, "b→a", b, a, sz, streams, half[1], cfg, index),
	}
	// Each side's handler checks what the other side sends it.
	ha.f, hb.f = flows[1], flows[0]
	act, err := newActionStream(n, cfg.Seed+uint64(index), ph.Channel)
	if err != nil {
		return res, fmt.Errorf("action stream: %w", err)
	}

	phaseStart := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(index)<<8|0xFA))
	fastGap := func() time.Duration { return FastMin + time.Duration(rng.Int64N(int64(FastMax-FastMin)+1)) }
	var (
		now, aNext, bNext time.Duration
		firstAt           = max(cfg.Count/10, 1)
		haveFirst         bool
		delivered         uint64
		lastProgress      time.Duration
	)
	bNext = fastGap()
	for wake := uint64(0); ; wake++ {
		now = min(aNext, bNext)
		n.AdvanceTo(now)
		if now == aNext {
			// a: the 60 Hz side, with the action stream's tick.
			if err := a.receive(now); err != nil {
				return res, err
			}
			if err := flows[0].offer(now); err != nil {
				return res, err
			}
			if err := a.flush(now); err != nil {
				return res, err
			}
			if err := act.step(now); err != nil {
				return res, err
			}
			aNext += Tick
		}
		if now == bNext {
			// b: the fast side, every 1–2 ms.
			if err := b.receive(now); err != nil {
				return res, err
			}
			if err := flows[1].offer(now); err != nil {
				return res, err
			}
			if err := b.flush(now); err != nil {
				return res, err
			}
			bNext += fastGap()
		}
		res.Wakes++

		if d := flows[0].delivered() + flows[1].delivered(); d != delivered {
			delivered, lastProgress = d, now
		}
		if !haveFirst && delivered >= firstAt {
			res.First, haveFirst = sample(float64(delivered)/float64(cfg.Count)), true
		}
		if res.AllDeliveredAt == 0 && delivered >= cfg.Count {
			res.AllDeliveredAt = now
			res.Last = sample(1)
			act.stop()
		}
		if res.AllDeliveredAt != 0 {
			if a.ch.Stats().ReliableHeld == 0 && b.ch.Stats().ReliableHeld == 0 && act.settled() {
				res.SettledAt = now
				break
			}
			if now-res.AllDeliveredAt >= cfg.Drain {
				res.Incomplete = fmt.Sprintf("drain bound %v after the last delivery", cfg.Drain)
				break
			}
		} else if now-lastProgress >= cfg.Stall {
			res.Incomplete = fmt.Sprintf("stall bound: nothing delivered either way for %v", cfg.Stall)
			break
		}
		if now >= cfg.MaxVirtual {
			res.Incomplete = fmt.Sprintf("virtual-time bound %v", cfg.MaxVirtual)
			break
		}
		if wake%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if time.Since(start) >= cfg.MaxWall {
				res.Incomplete = fmt.Sprintf("wall-time bound %v", cfg.MaxWall)
				break
			}
		}
	}
	res.Virtual, res.Wall = now, time.Since(phaseStart)

	// Every message exactly once, in order, intact; nothing held.
	for i, f := range flows {
		res.Flows[i] = f.result(n)
		res.Delivered += res.Flows[i].Delivered
	}
	for _, f := range res.Flows {
		f.judge(&res)
	}
	if res.Incomplete != "" {
		res.violate("incomplete: %d of %d messages delivered (a→b %d of %d, b→a %d of %d) at %v virtual, ended by the %s",
			res.Delivered, cfg.Count, res.Flows[0].Delivered, half[0], res.Flows[1].Delivered, half[1], res.Virtual.Round(time.Millisecond), res.Incomplete)
	}
	if a.foreign+b.foreign+act.se.foreign+act.ce.foreign != 0 {
		res.violate("%d datagrams with a foreign session header", a.foreign+b.foreign+act.se.foreign+act.ce.foreign)
	}

	// The action stream converged.
	var bad []string
	res.Action, bad = act.result()
	for _, v := range bad {
		res.violate("%s", v)
	}

	// Memory and goroutines flat.
	if haveFirst && res.AllDeliveredAt != 0 {
		res.HeapLimit = res.First.HeapInuse + uint64(float64(res.First.HeapInuse)*cfg.HeapGrowth) + cfg.HeapSlack + res.Retain
		if res.Last.HeapInuse > res.HeapLimit {
			res.violate("heap grew from %d to %d bytes (limit %d)", res.First.HeapInuse, res.Last.HeapInuse, res.HeapLimit)
		}
		if res.Last.Goroutines > res.First.Goroutines {
			res.violate("goroutines grew from %d to %d", res.First.Goroutines, res.Last.Goroutines)
		}
	}
	return res, nil
}
