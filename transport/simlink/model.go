package simlink

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// DropReason says why a datagram was not delivered.
type DropReason uint8

const (
	// DropNone: the datagram was not dropped.
	DropNone DropReason = iota
	// DropTooLarge: the datagram exceeded the link's MTU. Conn.WriteBatch
	// reports it as socket.ErrTooLarge instead of sending it.
	DropTooLarge
	// DropQueue: the bottleneck queue was full (LinkConfig.QueueLimit).
	DropQueue
	// DropRandom: independent random loss (LinkConfig.Loss, BurstLen 1).
	DropRandom
	// DropBurst: Gilbert–Elliott burst loss (LinkConfig.Loss, BurstLen > 1).
	DropBurst
	// DropNoEndpoint: no endpoint was bound to the destination address when
	// the datagram was sent, or it was closed before the datagram arrived.
	// Only the Network produces it; Model never does.
	DropNoEndpoint
)

// String returns the reason's name.
func (r DropReason) String() string {
	switch r {
	case DropNone:
		return "none"
	case DropTooLarge:
		return "too-large"
	case DropQueue:
		return "queue"
	case DropRandom:
		return "random-loss"
	case DropBurst:
		return "burst-loss"
	case DropNoEndpoint:
		return "no-endpoint"
	}
	return fmt.Sprintf("DropReason(%d)", uint8(r))
}

// Verdict is the fate of one datagram offered to a Model.
type Verdict struct {
	// Drop is why the datagram was dropped, or DropNone when Copies ≥ 1.
	Drop DropReason
	// Copies is the number of deliveries: 0 (dropped), 1, or 2 (duplicated).
	Copies int
	// At[:Copies] are the delivery times, on the clock of the now passed to
	// Decide. At[1], the duplicate, may be earlier than At[0].
	At [2]time.Duration
}

// Stats counts everything a Model did. A snapshot; the zero value is a
// model that has seen nothing.
type Stats struct {
	// Sent and SentBytes count every datagram offered to Decide, dropped or
	// not.
	Sent, SentBytes uint64
	// Delivered and DeliveredBytes count the copies scheduled for delivery,
	// duplicates included: Sent − drops + Duplicated.
	Delivered, DeliveredBytes uint64
	// Duplicated counts the extra copies made by LinkConfig.Duplicate.
	Duplicated uint64
	// TooLarge, QueueDrops, RandomLoss and BurstLoss count drops by reason.
	TooLarge, QueueDrops, RandomLoss, BurstLoss uint64
	// LossRuns counts runs of consecutive random or burst losses among the
	// datagrams that left the queue (too-large and queue drops neither
	// extend nor break a run). Mean run length is
	// (RandomLoss+BurstLoss)/LossRuns; see MeanLossRun.
	LossRuns uint64
	// MaxBacklog is the largest backlog, in bytes, the bottleneck queue held
	// (the datagram being serialised included). 0 on an uncapped link.
	MaxBacklog int
}

// Dropped returns the number of datagrams dropped for any reason.
func (s Stats) Dropped() uint64 { return s.TooLarge + s.QueueDrops + s.RandomLoss + s.BurstLoss }

// LossRate returns the fraction of the datagrams that left the queue that
// were lost (randomly or in bursts): the rate LinkConfig.Loss sets. It is 0
// before any datagram left the queue.
func (s Stats) LossRate() float64 {
	onWire := s.Sent - s.TooLarge - s.QueueDrops
	if onWire == 0 {
		return 0
	}
	return float64(s.RandomLoss+s.BurstLoss) / float64(onWire)
}

// MeanLossRun returns the mean length of a run of consecutive losses, or 0
// when nothing was lost: the figure LinkConfig.BurstLen sets.
func (s Stats) MeanLossRun() float64 {
	if s.LossRuns == 0 {
		return 0
	}
	return float64(s.RandomLoss+s.BurstLoss) / float64(s.LossRuns)
}

// RNG stream identifiers: each impairment draws from its own PCG stream, so
// that changing one knob (say Duplicate) leaves the decisions of the others
// (which datagrams are lost, each original's jitter) unchanged for the same
// seed. A duplicate's decision and its jitter share the duplicate stream.
const (
	streamLoss  = 0x6c6f7373 // "loss"
	streamDelay = 0x64656c79 // "dely"
	streamDup   = 0x64757031 // "dup1"
)

// queued is a datagram in the bottleneck queue: it leaves the queue (and
// frees its bytes) at finish.
type queued struct {
	finish time.Duration
	size   int
}

// Model is the impairment model of one direction of a link. It answers
// "what happens to a datagram of this size offered at this time?" with a
// Verdict, and counts what it did. It owns no clock and no goroutine: time
// is whatever the caller passes to Decide (virtual time in Network, time
// since start in a UDP relay), and all randomness comes from PCG streams
// seeded by NewModel's seed. The same seed, config and sequence of Decide
// calls yield the same verdicts, on any machine.
//
// Decide costs a few tens of nanoseconds and allocates nothing in steady
// state (the bottleneck queue's ring grows to its high-water mark once).
// Create one with NewModel (the zero value is not usable). A Model is not
// safe for concurrent use and must not be copied; a relay keeps one per
// direction under its own lock.
type Model struct {
	cfg LinkConfig // defaults applied, validated

	// Gilbert–Elliott chain (cfg.BurstLen > 1): per-datagram transition
	// probabilities and the current state.
	burst            bool
	goodToBad, badTo float64
	bad              bool
	lastLost         bool

	// Bottleneck queue (cfg.Bandwidth > 0): the link is busy serialising
	// until busyUntil; q holds the datagrams not yet fully serialised, oldest
	// first, in a ring of power-of-two size; backlog is the sum of their
	// sizes.
	busyUntil time.Duration
	q         []queued
	qHead     int
	qLen      int
	backlog   int

	last time.Duration // latest now seen; earlier ones are clamped to it

	lossSrc, delaySrc, dupSrc rand.PCG
	loss, delay, dup          *rand.Rand

	stats Stats
}

// NewModel returns a model of a link with the impairments cfg describes,
// drawing its randomness from seed. It fails with cfg.Validate's error.
func NewModel(cfg LinkConfig, seed uint64) (*Model, error) {
	m := &Model{}
	if err := m.init(cfg, seed); err != nil {
		return nil, err
	}
	return m, nil
}

// init sets up m in place (Network embeds Models in its links).
func (m *Model) init(cfg LinkConfig, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m.lossSrc.Seed(streamSeed(seed, streamLoss))
	m.delaySrc.Seed(streamSeed(seed, streamDelay))
	m.dupSrc.Seed(streamSeed(seed, streamDup))
	m.loss = rand.New(&m.lossSrc)
	m.delay = rand.New(&m.delaySrc)
	m.dup = rand.New(&m.dupSrc)
	m.apply(cfg.WithDefaults())
	if m.burst {
		// Start the chain in its stationary distribution, so that short
		// runs are not biased towards the Good state.
		m.bad = m.loss.Float64() < m.cfg.Loss
	}
	return nil
}

// apply installs a validated config with defaults applied.
func (m *Model) apply(cfg LinkConfig) {
	m.cfg = cfg
	m.burst = cfg.BurstLen > 1
	if m.burst {
		// Bad→Good with probability r gives geometric Bad runs of mean 1/r;
		// the stationary Bad probability p/(p+r) equals Loss when
		// p = r·Loss/(1−Loss). Validate guarantees p ≤ 1.
		m.badTo = 1 / cfg.BurstLen
		m.goodToBad = m.badTo * cfg.Loss / (1 - cfg.Loss)
	}
}

// Config returns the model's config with defaults applied.
func (m *Model) Config() LinkConfig { return m.cfg }

// SetConfig changes the impairments from the next Decide on, for a link
// whose conditions change mid-run. The RNG streams, the Gilbert–Elliott
// state, the datagrams already queued and the counters carry over. It fails
// with cfg.Validate's error and then leaves the model unchanged.
func (m *Model) SetConfig(cfg LinkConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m.apply(cfg.WithDefaults())
	return nil
}

// Stats returns a snapshot of the model's counters.
func (m *Model) Stats() Stats { return m.stats }

// Backlog returns the bytes in the bottleneck queue at now (the datagram
// being serialised included): what QueueLimit is compared against. It is 0
// on an uncapped link.
func (m *Model) Backlog(now time.Duration) int {
	m.drain(m.clamp(now))
	return m.backlog
}

// Decide returns the fate of a datagram of size bytes offered to the link at
// now, and updates the queue, the loss chain and the counters. Times are
// durations on the caller's clock; a now earlier than one already seen is
// treated as that later time (the model's clock never runs backwards).
//
// The stages, in order: size > MTU → DropTooLarge. With a bandwidth cap,
// the datagram joins the queue unless that would take the backlog above
// QueueLimit (→ DropQueue), and leaves it once serialised, at
// max(now, end of the previous datagram) + ceil(size·1e9/Bandwidth) ns.
// Loss then drops it (DropRandom or DropBurst) — a lost datagram still used
// its share of bandwidth. Otherwise it is delivered Delay ± Jitter after
// leaving the queue, and with probability Duplicate a second copy is
// delivered with its own jitter.
func (m *Model) Decide(now time.Duration, size int) Verdict {
	now = m.clamp(now)
	m.stats.Sent++
	m.stats.SentBytes += uint64(max(size, 0))
	if size > m.cfg.MTU || size < 0 {
		m.stats.TooLarge++
		return Verdict{Drop: DropTooLarge}
	}

	depart := now
	if m.cfg.Bandwidth > 0 {
		m.drain(now)
		if m.cfg.QueueLimit > 0 && m.backlog+size > m.cfg.QueueLimit {
			m.stats.QueueDrops++
			return Verdict{Drop: DropQueue}
		}
		depart = max(now, m.busyUntil) + txTime(size, m.cfg.Bandwidth)
		m.busyUntil = depart
		m.enqueue(queued{finish: depart, size: size})
		m.stats.MaxBacklog = max(m.stats.MaxBacklog, m.backlog)
	}

	if reason := m.lose(); reason != DropNone {
		if !m.lastLost {
			m.stats.LossRuns++
		}
		m.lastLost = true
		if reason == DropBurst {
			m.stats.BurstLoss++
		} else {
			m.stats.RandomLoss++
		}
		return Verdict{Drop: reason}
	}
	m.lastLost = false

	v := Verdict{Copies: 1}
	v.At[0] = depart + m.jitter(m.delay)
	if m.cfg.Duplicate > 0 && m.dup.Float64() < m.cfg.Duplicate {
		v.Copies = 2
		v.At[1] = depart + m.jitter(m.dup)
		m.stats.Duplicated++
	}
	m.stats.Delivered += uint64(v.Copies)
	m.stats.DeliveredBytes += uint64(v.Copies) * uint64(size)
	return v
}

// clamp keeps the model's clock monotonic.
func (m *Model) clamp(now time.Duration) time.Duration {
	if now < m.last {
		return m.last
	}
	m.last = now
	return now
}

// lose steps the loss process for one datagram on the wire.
func (m *Model) lose() DropReason {
	if m.burst {
		if m.bad {
			if m.loss.Float64() < m.badTo {
				m.bad = false
			}
		} else if m.loss.Float64() < m.goodToBad {
			m.bad = true
		}
		if m.bad {
			return DropBurst
		}
		return DropNone
	}
	if m.cfg.Loss > 0 && m.loss.Float64() < m.cfg.Loss {
		return DropRandom
	}
	return DropNone
}

// jitter returns one draw of the one-way delay from r: the delay stream for
// originals, the duplicate stream for copies (so that duplication does not
// shift the originals' delays).
func (m *Model) jitter(r *rand.Rand) time.Duration {
	j := m.cfg.Jitter
	if j == 0 {
		return m.cfg.Delay
	}
	d := m.cfg.Delay + time.Duration(r.Int64N(2*int64(j)+1)) - j
	return max(d, 0)
}

// drain removes from the queue the datagrams fully serialised by now.
func (m *Model) drain(now time.Duration) {
	for m.qLen > 0 {
		e := m.q[m.qHead]
		if e.finish > now {
			return
		}
		m.backlog -= e.size
		m.qHead = (m.qHead + 1) & (len(m.q) - 1)
		m.qLen--
	}
}

// enqueue appends e to the queue ring, growing it (to a power of two) when
// full.
func (m *Model) enqueue(e queued) {
	if m.qLen == len(m.q) {
		grown := make([]queued, max(16, 2*len(m.q)))
		for i := range m.qLen {
			grown[i] = m.q[(m.qHead+i)&(len(m.q)-1)]
		}
		m.q, m.qHead = grown, 0
	}
	m.q[(m.qHead+m.qLen)&(len(m.q)-1)] = e
	m.qLen++
	m.backlog += e.size
}

// txTime is the serialisation time of size bytes at bw bytes/s, rounded up
// to a whole nanosecond. size ≤ socket.MaxDatagramSize, so size·1e9 fits in
// an int64.
func txTime(size int, bw int64) time.Duration {
	return time.Duration((int64(size)*int64(time.Second) + bw - 1) / bw)
}

// streamSeed derives the two PCG seed words of one RNG stream from a seed.
func streamSeed(seed, stream uint64) (uint64, uint64) {
	hi := mix64(seed ^ mix64(stream))
	return hi, mix64(hi ^ stream)
}

// mix64 is the SplitMix64 finaliser: a bijective 64-bit hash that spreads
// nearby inputs (seeds 1, 2, 3, …) over the whole state space.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
