package transport

import (
	"time"

	"github.com/tickwire/tickwire/wire"
)

// The send budget: a per-channel token bucket whose rate a delay-based
// estimator sets, with pacing inside the tick. It is logic only — Flush
// asks it before opening a datagram (mayOpen), tells it what it committed
// (spend) and what the peer acked (acked), and Receive feeds it the RTT
// samples the SendTracker takes (sample).
//
// The congestion signal is queuing delay: how far the mean RTT sample of
// an update interval lies above the path's minimum RTT over the last
// budgetMinWindow (LEDBAT's base delay, BBR's min_rtt). The mean, not the
// smallest sample: a queue that drains between the bursts of a tick leaves
// some samples of an interval clean, and the smallest would not see it (on
// real UDP through tbf it read 0.1 ms under a p99 queue of 56–69 ms; the
// mean takes that to 41 ms). On a path whose RTT jitter reaches the target
// the mean would read the jitter as queue, and the smallest sample is the
// signal there. A constant part of
// the RTT — the peer's ack delay at a fixed tick, a slow path — cancels
// out; a queue growing in a bottleneck router does not. Loss is never a
// signal: a link that drops 20 % at random but queues nothing keeps its
// rate.
//
// One back-off is not followed by another before samples of what left
// after it are back; the threshold does not grow with a queue that
// builds; and the rate climbs fast back to the last rate the path carried
// clean, creeping only a little above it.
// A loop the scheduler stalled neither comes back with a burst of the
// tokens it did not spend nor reads the late acks of the stall as queue.
// (On real UDP through tbf each of these showed as a p99 above 33 ms.)

// Defaults and fixed constants of the send budget.
const (
	// DefaultMaxSendRate is the budget's ceiling when Config.MaxSendRate
	// is 0: 4 GiB/s, well above what one peer moves on loopback (bulk runs at
	// 0.6–0.8 GB/s; a ceiling near that would pace it), so the budget
	// only ever binds where a queue grows. NoSendBudget turns it off.
	DefaultMaxSendRate = 1 << 32
	// NoSendBudget, as Config.MaxSendRate, turns the send budget off: no
	// estimator, no pacing, no shedding (the behaviour before it existed).
	NoSendBudget = -1
	// DefaultQueueDelayTarget is the queuing delay above which the budget
	// backs off: well under one 60 Hz tick.
	DefaultQueueDelayTarget = 8 * time.Millisecond
	// DefaultUnreliableMaxAge is how long an unreliable message the budget
	// held back may wait before it is shed.
	DefaultUnreliableMaxAge = 100 * time.Millisecond
	// MinSendRate is the floor of the estimated rate, bytes/s: a back-off
	// never goes below it, so keep-alives, acks and a trickle of state
	// always flow.
	MinSendRate = 16 << 10

	budgetInterval  = 50 * time.Millisecond // one estimator update per interval
	budgetMinWindow = 10 * time.Second      // the base RTT is the minimum over this long
	budgetMinSlots  = 10                    // ... kept as this many per-slot minima
	budgetBurst     = KeepAliveInterval     // unused budget carries over at most this long
	budgetMinBurst  = 5 * time.Millisecond  // ... and at least this long, or twice the loop's usual Flush gap
	budgetStall     = 20 * time.Millisecond // a loop this late for its pacing slot was stalled
	budgetFlat      = 4                     // intervals of a low, steady delay that let the rate grow
	budgetQuantum   = time.Millisecond      // pacing slots are at least this far apart
	budgetSamples   = 4                     // ... and holds at least this many RTT samples
)

// ShedReason says why the budget kept something from the wire.
type ShedReason uint8

const (
	// ShedRedundant: a redundant copy of an unacked reliable message.
	ShedRedundant ShedReason = iota
	// ShedSuperseded: a queued sequenced message a newer one on the same
	// stream replaced before it could go.
	ShedSuperseded
	// ShedExpired: a queued unreliable message older than
	// Config.UnreliableMaxAge while the budget held it back.
	ShedExpired
	shedReasons
)

// String returns the reason's name.
func (r ShedReason) String() string {
	switch r {
	case ShedRedundant:
		return "redundant"
	case ShedSuperseded:
		return "superseded"
	case ShedExpired:
		return "expired"
	}
	return "unknown"
}

// BudgetStats describe a channel's send budget (ChannelStats.Budget). All
// zero when the budget is off (Config.MaxSendRate NoSendBudget), but for
// Shed and ShedBytes: a full span of seqs sheds stale traffic too
// (ChannelStats.SpanWaits).
type BudgetStats struct {
	// Rate is the estimated rate the path carries without queuing, bytes/s,
	// at most the ceiling (Config.MaxSendRate).
	Rate int64
	// Tokens is the bucket: bytes that may leave now (negative: the last
	// datagram went out on credit, and the next waits until it is repaid).
	Tokens int64
	// QueueDelay is the last measured queuing delay: the mean RTT sample
	// of the last update interval (the smallest, on a path whose RTT
	// jitter reaches Config.QueueDelayTarget) minus BaseRTT.
	QueueDelay time.Duration
	// BaseRTT is the minimum RTT over the last 10 s.
	BaseRTT time.Duration
	// Threshold is the queuing delay above which the budget backs off now:
	// Config.QueueDelayTarget plus twice the path's delay noise and
	// jitter (a jittery path tolerates more before it reads as queuing).
	Threshold time.Duration
	// SendQueueDelay is how long what waits to be sent — reliable messages
	// not yet sent or due again, queued unreliable and sequenced bytes —
	// takes to leave at Rate: the back-pressure figure. (Computed by Stats.)
	SendQueueDelay time.Duration
	// Backoffs and Increases count the estimator's decisions.
	Backoffs, Increases uint64
	// PacedWaits counts the Flushes that held something back for lack of
	// tokens (its next pacing slot is in NextDeadline).
	PacedWaits uint64
	// Shed and ShedBytes count what the budget kept from the wire, by
	// ShedReason (frame bytes). Reliable messages are never shed: they
	// wait in their stream, and a full stream answers ErrQueueFull.
	Shed, ShedBytes [shedReasons]uint64
}

// budget is the send budget's state; the zero value is off.
type budget struct {
	on      bool
	ceiling int64
	target  time.Duration
	mtu     int64

	rate      int64 // bytes/s; set it with setRate
	ratePerMs int64 // rate / 1000, kept by setRate (mulRate's first division, once per change)
	tokens    int64 // bytes; may go one datagram negative
	filledAt  time.Duration
	gapAvg    time.Duration // smoothed time between Flushes (refills)
	started   bool
	paced     bool // the last Flush held something back for lack of tokens

	// The estimator.
	mins       [budgetMinSlots]time.Duration // per-slot minimum RTT, 0: none
	base       time.Duration                 // the minimum of mins (baseRTT), kept as they change
	minSlot    int64                         // the slot mins[minSlot%len] covers
	minIdx     int                           // minSlot % len, once a sample has set slotFrom, slotTo
	slotFrom   time.Duration                 // sample times in [slotFrom, slotTo) fall in minSlot
	slotTo     time.Duration                 // (empty until the first sample at a time ≥ 0)
	intervalAt time.Duration                 // start of the current interval
	rateAt     time.Duration                 // start of the current rate measurement (sent, acked)
	lowest     time.Duration                 // smallest RTT sample in it, 0: none
	sumRTT     time.Duration                 // sum of its RTT samples (their mean is the queue signal)
	nSamples   int                           // samples in it
	sent       int64                         // bytes committed in it
	sentTr     int64                         // ... of them in datagrams that expect an ack
	sentRate   int64                         // smoothed sent rate over intervals, bytes/s
	noise      time.Duration                 // smoothed change of the queuing delay
	jitter     time.Duration                 // the RTT's jitter at the last update
	lastMax    int64                         // the rate in use at the last back-off
	cleanRate  int64                         // the last rate two clean intervals in a row carried
	knownRate  int64                         // cleanRate at the last back-off: the path's capacity, from below
	prevRate   int64                         // the rate in use in the interval before
	prevPaced  bool                          // pacedIn of the interval before
	probes     uint                          // probing increases in a row
	rises      int                           // intervals in a row whose queuing delay grew
	prevQ      time.Duration                 // the queuing delay of the interval before
	ackRate    int64                         // smoothed delivery rate, bytes/s
	maxAck     int64                         // its recent maximum, fading
	acked      uint64                        // SendStats.Acked at the last update
	sentB      int64                         // bytes and datagrams committed, all time
	sentN      int64                         // (their ratio is the mean datagram size)
	pacedIn    bool                          // a Flush was paced in it
	holdUntil  time.Duration                 // no back-off before this
	cutAt      time.Duration                 // the last back-off
	heard      bool                          // a sample of a datagram sent after it came back
	flat       int                           // intervals in a row whose low queuing delay held still
	samples    uint64                        // the tracker's sample count last seen
	peerDelay  time.Duration                 // the peer's mean stated ack delay (notePeerDelay)
	peerDelays int                           // delays it has seen, up to 8
	peerDev    time.Duration                 // their mean deviation

	stats BudgetStats
}

// init sets the budget up from a config with defaults applied.
func (b *budget) init(cfg Config) {
	if cfg.MaxSendRate == NoSendBudget {
		return
	}
	*b = budget{
		on:      true,
		ceiling: cfg.MaxSendRate,
		target:  cfg.QueueDelayTarget,
		mtu:     int64(cfg.MTU),
		heard:   true,
	}
	b.setRate(cfg.MaxSendRate)
}

// setRate sets the estimated rate (always at least MinSendRate once the
// budget is on) and the per-millisecond rate refill earns by.
func (b *budget) setRate(rate int64) {
	b.rate, b.ratePerMs = rate, rate/1000
}

// refill adds the tokens earned since the last refill. Unused budget
// carries over only as long as the time since the last Flush — at most
// budgetBurst, and at most twice the loop's usual gap between Flushes
// (but 5 ms at least) — plus one datagram, so a Flush can always send: a
// loop that Flushes every millisecond (at its pacing slots) sends in small
// bursts, one that Flushes once a tick sends the tick's worth at once, one
// that Flushes at 10 Hz a tenth of a second's, and a channel idle for a
// while, or a loop the scheduler stalled for a while, does not save up a
// burst (what the link did not carry while nothing was sent, a burst
// after it carries only by queuing: on real UDP through tbf, 94 ms of a
// stalled process came out as a 17 KB burst and 50 ms of queue).
func (b *budget) refill(now time.Duration) {
	if !b.started {
		b.started, b.filledAt, b.intervalAt, b.rateAt = true, now, now, now
		b.tokens = 2 * b.mtu
		return
	}
	gap := now - b.filledAt
	if gap <= 0 {
		return
	}
	b.filledAt = now
	earned := mulRatePerMs(b.ratePerMs, gap)
	// What carries over is earned over the gap itself when the gap is
	// within the bounds (a loop Flushing at its usual cadence): then the
	// cap is what this gap earned, with no second multiplication.
	capTok := earned
	if w := min(gap, budgetBurst, max(2*b.gapAvg, budgetMinBurst)); w != gap {
		capTok = mulRatePerMs(b.ratePerMs, w)
	}
	capTok += b.mtu
	b.tokens = min(b.tokens+earned, capTok)
	b.gapAvg += (gap - b.gapAvg) / 8
}

// mulRatePerMs returns the bytes a rate of perMs bytes per millisecond
// (the budget's rate/1000, ratePerMs) earns in d > 0, without overflow for
// any rate up to 2^40 bytes/s and d up to an hour: perMs · (d in µs) / 1000.
// The budget's rates are positive (MinSendRate at least), so the divisions
// are done unsigned, which is cheaper and gives the same result.
func mulRatePerMs(perMs int64, d time.Duration) int64 {
	if d > time.Hour {
		d = time.Hour
	}
	return int64(uint64(perMs) * (uint64(d) / uint64(time.Microsecond)) / 1000)
}

// mayOpen reports whether a new datagram may open now: the bucket is
// positive. A datagram may take it up to one MTU negative (spend).
func (b *budget) mayOpen() bool {
	if !b.on || b.tokens > 0 {
		return true
	}
	if !b.paced {
		b.paced = true
		b.pacedIn = true
		b.stats.PacedWaits++
	}
	return false
}

// spend takes a committed datagram of n bytes from the bucket; acked says
// whether it expects an ack (it has frames: SendStats.Acked may count it).
func (b *budget) spend(n int, acked bool) {
	if !b.on {
		return
	}
	b.tokens -= int64(n)
	b.sent += int64(n)
	if acked {
		b.sentB += int64(n)
		b.sentN++
		b.sentTr += int64(n)
	}
}

// shed counts n frame bytes kept from the wire for reason r.
func (b *budget) shed(r ShedReason, n int) {
	b.stats.Shed[r]++
	b.stats.ShedBytes[r] += uint64(n)
}

// congested reports whether the last interval measured queuing delay above
// the threshold: redundant copies, the first traffic shed, then stay home.
func (b *budget) congested() bool { return b.on && b.stats.QueueDelay > b.threshold() }

// sample takes one RTT sample at now and reports whether an interval has
// passed: then the caller runs update.
func (b *budget) sample(now, rtt time.Duration) bool {
	if rtt <= 0 || b.stalled(now) {
		return false
	}
	b.sumRTT += rtt
	if b.lowest == 0 || rtt < b.lowest {
		b.lowest = rtt
	}
	if now < b.slotFrom || now >= b.slotTo {
		b.newSlot(now) // (a sample in the slot of the last one needs no division)
	}
	if m := &b.mins[b.minIdx]; *m == 0 || rtt < *m {
		*m = rtt
		if b.base == 0 || rtt < b.base {
			b.base = rtt
		}
	}
	b.nSamples++
	// (now − rtt is when the sampled datagram left, give or take the
	// peer's ack delay.)
	if !b.heard && now-rtt >= b.cutAt {
		b.heard = true
		b.holdUntil = max(b.holdUntil, now+budgetInterval)
	}
	if now-b.intervalAt >= budgetInterval && b.nSamples >= budgetSamples {
		// (An interval lasts until it holds budgetSamples samples: the
		// minimum of fewer is mostly the peer's ack delay.)
		return true
	}
	// A queue that is already over the threshold ends the interval early:
	// four samples in a row above it are no accident of one late ack.
	return b.nSamples >= 4 && b.heard && now >= b.holdUntil && b.lowest-b.baseRTT() > b.threshold()
}

// newSlot moves the per-slot minima to the slot of a sample at now: the
// slots skipped since the last sample are cleared (their minima are older
// than the window now), and minIdx, slotFrom and slotTo are set for it.
func (b *budget) newSlot(now time.Duration) {
	const width = budgetMinWindow / budgetMinSlots
	slot := int64(now / width)
	if slot != b.minSlot {
		for s := b.minSlot + 1; s <= slot && s <= b.minSlot+budgetMinSlots; s++ {
			b.mins[s%budgetMinSlots] = 0
		}
		b.minSlot = slot
		b.base = b.minOfSlots()
	}
	b.minIdx = int(slot % budgetMinSlots)
	if now >= 0 {
		b.slotFrom, b.slotTo = time.Duration(slot)*width, time.Duration(slot+1)*width
	} else {
		b.slotFrom, b.slotTo = 0, 0 // (division truncates toward 0: no such range; always recompute)
	}
}

// stalled reports whether the loop is late: its last Flush was held back
// and asked to be woken at its pacing slot, and now is far past it (more
// than twice the loop's usual Flush gap, and budgetStall: a descheduled
// process). The acks it reads now may have waited in its socket all that
// time, and their RTT samples measure the stall, not a queue on the path,
// so the estimator skips them (the SendTracker still takes them).
func (b *budget) stalled(now time.Duration) bool {
	return b.started && b.paced && now-b.nextSlot(b.filledAt) > max(2*b.gapAvg, budgetStall)
}

// notePeerDelay folds an ack delay the peer stated into peerDelay and its
// deviation from it into peerDev: the means of the first eight, then
// smoothed by 1/8, so the first ones are not averaged with a 0 that was
// never stated.
func (b *budget) notePeerDelay(d time.Duration) {
	if b.peerDelays < 8 {
		b.peerDelays++
	}
	dev := d - b.peerDelay
	if dev < 0 {
		dev = -dev
	}
	b.peerDelay += (d - b.peerDelay) / time.Duration(b.peerDelays)
	b.peerDev += (dev - b.peerDev) / time.Duration(b.peerDelays)
}

// threshold is the queuing delay above which the budget backs off.
//
// It is target + 2·noise + 2·jitter: jitter is the RTT's own (the
// smoothed difference between consecutive samples, ackmap.RTT.Jitter),
// which a queue that grows or drains smoothly hardly moves and a jittery
// radio link makes tens of milliseconds. On such a link a queue shorter
// than the jitter is not told from it, and the budget tolerates it rather
// than starving the game.
func (b *budget) threshold() time.Duration { return b.target + 2*b.noise + 2*b.jitter }

// baseRTT is the minimum RTT over the window. O(1): sample keeps it as
// the per-slot minima change.
func (b *budget) baseRTT() time.Duration { return b.base }

// minOfSlots computes baseRTT from the per-slot minima. O(budgetMinSlots).
func (b *budget) minOfSlots() time.Duration {
	var base time.Duration
	for _, m := range b.mins {
		if m != 0 && (base == 0 || m < base) {
			base = m
		}
	}
	return base
}

// update ends an interval. The queuing delay q is the interval's mean
// RTT sample (smallest, when the RTT jitter reaches the target) above the
// base RTT; noise is the smoothed change of q from interval to interval,
// which random jitter makes large and a growing queue does not (see
// threshold) — taken only from intervals where q did not grow, so a queue
// that builds does not raise the threshold away from itself. Above the
// threshold in two intervals in a row — or above half of it after growing
// by more than the noise three intervals in a row, each of eight samples
// or more: a queue building up (two rises are what a peer that acks on
// its tick makes of nothing) — and unless the queue is
// already draining or the RTT jitter is four targets or more (no usable
// delay signal: a documented limit), it backs off: to 0.85 of the
// delivery rate (half of it when the queue is deeper than eight targets),
// then not again before a sample of a datagram sent after the cut is back
// and an interval more has passed (the samples before it still show the
// queue the cut is draining). Below a quarter of the threshold (or
// below half of it, holding still for budgetFlat intervals, at a rate far
// below what the path has shown it carries) it grows when the budget was
// used (a Flush was paced, or more than half the rate
// went out): up to 0.95 of the clean rate at the last back-off (the last
// rate two intervals in a row carried without a queue: the capacity, from
// below) at the probing pace; near the clean rate, the rate of the last
// back-off or the best recent delivery rate (0.8–1.1×) by 1/64 an
// interval, so it does not overshoot into the queue it just drained;
// elsewhere by 1/32, doubling with each interval in a row up to 1/8 while
// the acks keep up with what goes out (probing: a lifted bottleneck is
// found again within a second or two). Else it holds. Loss plays no part.
//
// srtt is the smoothed RTT (the least hold after a back-off), jitter the
// RTT's jitter (see threshold), acked the datagrams acked so far
// (SendStats.Acked): the interval's delivery rate is the ones it added
// times the mean datagram size, and a back-off goes to 0.85 of the
// smoothed delivery rate — what the bottleneck carried while its queue
// grew — when that is below the rate in use.
func (b *budget) update(now, srtt, jitter time.Duration, acked uint64) {
	b.jitter = jitter
	base := b.baseRTT()
	b.stats.BaseRTT = base
	q := b.lowest - base
	if b.jitter < b.target {
		q = b.sumRTT/time.Duration(max(b.nSamples, 1)) - base
	}
	d := q - b.stats.QueueDelay
	if d < 0 {
		d = -d
	}
	thr := b.threshold()
	b.prevQ = b.stats.QueueDelay
	// A rise counts only in an interval of 2·budgetSamples samples or
	// more: the mean of fewer moves by itself more than the noise learned
	// (a peer that acks at random wake-ups gives about four an interval,
	// and three such steps in a row cut senders on a clean, 20 % lossy
	// path to 54–85 % of their offer).
	if rise := q > b.stats.QueueDelay+max(b.target/10, b.noise); rise && b.nSamples < 2*budgetSamples {
		b.rises = 0
	} else if rise {
		b.rises++
	} else {
		b.rises = 0
		// The noise is the change of the delay the path shows by itself,
		// and it, like the RTT jitter, is not taken from intervals whose
		// delay grew: a queue that builds makes both grow, and the
		// threshold would recede before the very queue it is there to
		// catch (on real UDP through tbf it went from 11 to 29 ms while
		// the queue grew). (Nor only from intervals below the threshold:
		// a path whose delay varies by itself — a peer that acks on its
		// tick — would then never raise it, and back off for nothing.)
		b.noise += (d - b.noise) / 8
	}
	b.stats.QueueDelay = q
	// A delay below half the threshold that holds still, interval after
	// interval, is no queue: a constant part of it — the bottleneck's
	// serialisation of a datagram larger than those that set the base RTT
	// (5 ms for 1000 B at 200 KB/s) — would otherwise hold the rate
	// wherever it stands once that part reaches a quarter of the threshold
	// — so far below what the path has shown it carries (maxAck, knownRate)
	// the rate grows on a steady delay too (on simlink it stood at 57 KB/s
	// under a 200 KB/s bottleneck for 4 s, seed 31 of the bench).
	if q < thr/2 && d <= max(b.noise, b.target/10) {
		b.flat++
	} else {
		b.flat = 0
	}
	// A rate that two intervals in a row carried without a queue, while
	// the budget was used, is one the path takes.
	if q < thr/4 && b.prevQ < thr/4 && b.pacedIn && b.prevPaced {
		b.cleanRate = min(b.prevRate, b.rate)
	}
	b.prevRate = b.rate
	// The sent and delivery rates are measured over an interval at least:
	// over one that a queue ended early (sample) a count of a few acks is
	// no rate (on real UDP one of 9 ms read 760 KB/s through a 200 KB/s
	// bottleneck). Until then the smoothed ones stand in.
	sentRate, ackRate := b.sentRate, b.ackRate
	if el := now - b.rateAt; el >= budgetInterval {
		sentRate = b.sent * int64(time.Second) / int64(el)
		b.sentRate = (b.sentRate + sentRate) / 2
		if b.sentN > 0 {
			ackRate = int64(acked-b.acked) * (b.sentB / b.sentN) * int64(time.Second) / int64(el)
			if b.sentTr > 0 && b.sent > b.sentTr {
				// Datagrams of only unreliable frames near a full
				// window go untracked (Channel.finish): no ack counts
				// them, so scale the tracked deliveries by the share
				// of bytes tracked, or the delivery rate reads low
				// against sentRate.
				ackRate = ackRate * b.sent / b.sentTr
			}
			b.ackRate += (ackRate - b.ackRate) / 4
		}
		// The largest smoothed delivery rate seen while a queue stood
		// (then the acks come at the bottleneck's rate), fading by a
		// third every ~4 s: the capacity the path showed lately, so the
		// creep zone stays near it even after a cut far below it.
		// (Without a queue the acks only echo what was sent, and say
		// nothing of the capacity.)
		b.maxAck -= b.maxAck / 128
		if q >= thr/2 {
			b.maxAck = max(b.maxAck, min(ackRate, b.sentRate))
		}
		b.acked, b.sent, b.sentTr, b.rateAt = acked, 0, 0, now
	}
	// The threshold as the noise learned above leaves it (thr is the one
	// before): nothing below changes it.
	thrNow := b.threshold()
	switch {
	case min(q, b.prevQ) > thrNow || q > thrNow/2 && b.rises >= 3:
		// A queue already draining (q fell since the last interval) needs
		// no further cut: the last one is working.
		// And a path whose RTT jitter is four targets or more carries no
		// usable delay signal: it is not cut for what may be jitter.
		if b.heard && now >= b.holdUntil && q >= b.prevQ-max(b.noise, b.target/10) && b.jitter < 4*b.target {
			// While a queue grows, the acks arrive at the rate the
			// bottleneck drains it: its capacity. (Half the sent rate
			// bounds it from below in the first round trips, when the
			// acks are still stuck behind the queue.)
			b.lastMax = max(ackRate, b.ackRate, b.sentRate/2)
			b.knownRate = b.cleanRate
			// To 0.85 of it; to half of it when the standing queue is
			// deep (eight targets: a start at the ceiling, a path that
			// just narrowed), so it drains in a few round trips.
			cut := int64(85)
			if q > 8*b.target {
				cut = 50
			}
			b.setRate(max(min(b.rate, b.lastMax)*cut/100, MinSendRate))
			// Its effect shows in the samples of what leaves after it
			// (sample ends the hold an interval after the first one),
			// which take one round trip as it stands now, queue
			// included: the smoothed RTT lags far behind that while a
			// deep queue builds, and a second cut on samples of what left
			// before the first is a cut for the same queue.
			b.holdUntil, b.cutAt, b.heard = now+srtt+budgetInterval, now, false
			b.stats.Backoffs++
		}
	case (q < thrNow/4 || b.flat >= budgetFlat && b.rate < max(b.maxAck, b.knownRate)*8/10) && (b.pacedIn || sentRate*2 > b.rate):
		// Probing, far from the last back-off: 1/32, doubling with each
		// interval in a row up to 1/8.
		// The doubling needs the peer's acks to keep up with what goes
		// out (a saturated bottleneck delivers less than is sent; loss
		// too, and then probing stays gentle).
		step := max(b.rate/32<<min(b.probes, 2), 2*b.mtu)
		b.probes++
		if ackRate*100 < sentRate*85 {
			b.probes = 0
		}
		clean := b.knownRate * 95 / 100
		switch known := max(b.lastMax, b.maxAck, b.knownRate); {
		case b.rate < clean:
			// Below a rate the path carried without a queue: back to
			// it at the probing pace, no further.
			step = min(step, clean-b.rate)
		case b.rate > known*8/10 && b.rate < known*11/10:
			step, b.probes = max(b.rate/64, b.mtu/2), 0 // near it: creep
		}
		b.setRate(min(b.ceiling, b.rate+step))
		b.stats.Increases++
	default:
		b.probes = 0
	}
	if q >= thrNow/4 {
		b.probes = 0
	}
	b.prevPaced = b.pacedIn
	b.intervalAt, b.lowest, b.pacedIn, b.nSamples, b.sumRTT = now, 0, false, 0, 0
}

// nextSlot is the pacing slot: when the bucket turns positive again.
func (b *budget) nextSlot(now time.Duration) time.Duration {
	wait := budgetQuantum
	if b.tokens <= 0 && b.rate > 0 {
		wait = max(wait, time.Duration((-b.tokens+1)*int64(time.Second)/b.rate))
	}
	return max(now, b.filledAt) + wait
}

// shedStale runs at the start of a Flush after one that the budget or a
// full span of seqs (Channel.pacedRoom; with the budget on or off) held
// back: a queued sequenced message that a newer queued one on the same
// stream supersedes is dropped (the peer would discard it anyway), and so
// is an unreliable message queued more than Config.UnreliableMaxAge ago.
// Messages partly sent (large ones, piece by piece) stay. O(queued), no
// allocation: latest is a per-stream scratch array.
func (c *Channel) shedStale() {
	b := &c.budget
	if !b.paced && !c.spanHeld || len(c.outMsgs) == 0 {
		return
	}
	latest := c.seqLatest
	for i := range latest {
		latest[i] = -1
	}
	for i := range c.outMsgs {
		q := &c.outMsgs[i]
		if wire.FrameType(c.outArena[q.off]) == wire.FrameSequenced {
			latest[c.outArena[q.off+1]] = int32(i)
		}
	}
	keep := 0
	for i := range c.outMsgs {
		q := c.outMsgs[i]
		if q.n == 0 {
			continue // its frame moved into an older entry's place
		}
		if q.piece == 0 {
			switch wire.FrameType(c.outArena[q.off]) {
			case wire.FrameSequenced:
				j := latest[c.outArena[q.off+1]]
				if j == int32(i) {
					break
				}
				// Superseded. The newest update takes this one's place in
				// the queue when it fits there (a game's state updates
				// mostly have one size): state then leaves at the pace
				// it was queued, instead of starving behind the
				// unreliable messages queued since.
				if nq := &c.outMsgs[j]; j > int32(i) && nq.piece == 0 && nq.n <= q.n {
					copy(c.outArena[q.off:], c.outArena[nq.off:nq.off+nq.n])
					b.shed(ShedSuperseded, int(q.n))
					q.n, q.at = nq.n, nq.at
					nq.n = 0 // moved: dropped below, not counted again
					latest[c.outArena[q.off+1]] = int32(i)
					break
				}
				b.shed(ShedSuperseded, int(q.n))
				continue
			case wire.FrameUnreliable:
				if c.now-q.at > c.cfg.UnreliableMaxAge {
					b.shed(ShedExpired, int(q.n))
					continue
				}
			}
		}
		c.outMsgs[keep] = q
		keep++
	}
	c.outMsgs = c.outMsgs[:keep]
	c.outBytes = 0
	for _, q := range c.outMsgs {
		c.outBytes += int(q.n)
	}
}

// budgetStats fills s.Budget.
func (c *Channel) budgetStats(s *ChannelStats) {
	b := &c.budget
	if !b.on {
		s.Budget.Shed, s.Budget.ShedBytes = b.stats.Shed, b.stats.ShedBytes // a span wait sheds too
		return
	}
	s.Budget = b.stats
	s.Budget.Rate, s.Budget.Tokens, s.Budget.Threshold = b.rate, b.tokens, b.threshold()
	waiting := int64(c.outBytes)
	for _, rs := range c.reliable {
		for id := rs.oldest; id != rs.next; id++ {
			if sl := rs.slot(id); sl != nil && (!sl.sent || sl.resend) {
				waiting += int64(len(sl.buf))
			}
		}
	}
	if b.rate > 0 {
		s.Budget.SendQueueDelay = time.Duration(waiting * int64(time.Second) / b.rate)
	}
}
