package simlink

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// Sentinel errors. Callers test them with errors.Is; the errors returned wrap
// them with the offending field and value. Every error from
// LinkConfig.Validate wraps ErrInvalidConfig and one of the more specific
// sentinels after it.
var (
	// ErrInvalidConfig is wrapped by every LinkConfig.Validate error.
	ErrInvalidConfig = errors.New("simlink: invalid link config")
	// ErrNegative: a duration, rate or size is below zero.
	ErrNegative = errors.New("simlink: negative value")
	// ErrProbability: Loss or Duplicate is outside [0, 1] or NaN.
	ErrProbability = errors.New("simlink: probability outside [0, 1]")
	// ErrBurstLen: BurstLen is below 1, infinite, NaN, or too short for Loss (a
	// Gilbert–Elliott chain whose mean loss run is BurstLen cannot lose more
	// than BurstLen/(BurstLen+1) of the datagrams).
	ErrBurstLen = errors.New("simlink: burst length out of range")
	// ErrRange: Delay or Jitter above MaxDelay, MTU above
	// socket.MaxDatagramSize, or a QueueLimit smaller than one MTU.
	ErrRange = errors.New("simlink: value out of range")

	// ErrAddrInUse is returned by Network.Listen for an address that already
	// has an endpoint. The other errors of Listen and of a Conn use the
	// sentinels of package socket: socket.ErrInvalidAddr for an address
	// that is not a valid, specified IP and port (port 0 is allowed by
	// Listen only, where it picks a free port), socket.ErrInvalidMessage
	// and socket.ErrTooLarge for a message WriteBatch refuses, and
	// socket.ErrClosed (which wraps net.ErrClosed) after Close.
	ErrAddrInUse = errors.New("simlink: address already in use")
)

// Defaults and limits of LinkConfig.
const (
	// DefaultMTU is the largest datagram a link accepts when LinkConfig.MTU
	// is zero: 1500-byte Ethernet minus the IPv4 and UDP headers. The
	// protocol's own packets are smaller (1200 bytes by default), so the
	// default link never gets in their way.
	DefaultMTU = 1472
	// MaxDelay bounds Delay and Jitter, so that delivery times never
	// overflow and a typo (time.Duration(40) for 40 ms) is not silently
	// multiplied into years.
	MaxDelay = time.Hour
)

// LinkConfig describes the impairments of one direction of a link. The zero
// value is a perfect link: no delay, no loss, no duplication, unlimited
// bandwidth, MTU 1472. Each field's comment gives its default and range.
// LinkConfig is a plain value: copying it is cloning it.
//
// A datagram offered to the link passes, in order: the MTU check; the
// bottleneck queue (only when Bandwidth is set); loss (independent or
// Gilbert–Elliott); propagation delay with jitter; duplication (the copy gets
// its own jitter). See Model for the exact semantics.
type LinkConfig struct {
	// Delay is the one-way propagation delay added to every datagram after
	// it leaves the bottleneck queue. Default 0; range [0, MaxDelay].
	Delay time.Duration

	// Jitter spreads the delay of each datagram (and of each duplicate copy)
	// uniformly over [Delay−Jitter, Delay+Jitter], in whole nanoseconds,
	// clamped at 0. Clamping makes the mean slightly larger than Delay when
	// Jitter > Delay. Reordering is a consequence of jitter: two datagrams
	// sent less than 2×Jitter apart may arrive in either order; with Jitter
	// 0 a link is FIFO. Default 0; range [0, MaxDelay].
	Jitter time.Duration

	// Loss is the probability that a datagram that left the queue is lost.
	// With BurstLen 1 every datagram is lost independently; with BurstLen > 1
	// it is the stationary loss rate of the Gilbert–Elliott chain. Default
	// 0; range [0, 1].
	Loss float64

	// BurstLen is the mean length of a run of consecutive losses. 1 (or 0,
	// the default) selects independent loss. Above 1 it selects a two-state
	// Gilbert–Elliott chain: every datagram sent in the Bad state is lost,
	// none in the Good state; Bad→Good has probability 1/BurstLen and
	// Good→Bad is chosen so that the stationary loss rate is Loss. Loss runs
	// are then geometric with mean BurstLen. Feasible only when
	// Loss/(1−Loss) ≤ BurstLen. Default 1; range [1, +Inf), finite.
	BurstLen float64

	// Duplicate is the probability that a delivered datagram is delivered a
	// second time. The copy is made after the bottleneck (it costs no
	// bandwidth) and draws its own jitter, so it may arrive before the
	// original. Default 0; range [0, 1].
	Duplicate float64

	// Bandwidth caps the link at this many bytes per second (payload bytes;
	// headers are not modelled). Each datagram occupies the link for
	// ceil(size×1e9/Bandwidth) ns and datagrams queue behind each other, so
	// a burst is spread out in time. 0, the default, is unlimited: no
	// serialisation delay and no queue. Range [0, +Inf).
	Bandwidth int64

	// QueueLimit bounds the bytes waiting on a capped link (the datagram
	// being serialised included). A datagram that would take the backlog
	// above it is dropped and counted as a queue drop. 0, the default, is an
	// unbounded queue. Ignored when Bandwidth is 0. Range 0 or [MTU, +Inf).
	QueueLimit int

	// MTU is the largest datagram, in bytes, the link accepts. A larger one
	// makes Conn.WriteBatch fail with socket.ErrTooLarge (Model.Decide
	// drops it with DropTooLarge). Default DefaultMTU (1472); range
	// [1, socket.MaxDatagramSize].
	MTU int
}

// WithDefaults returns c with every zero field replaced by its default: the
// config the constructor runs with.
func (c LinkConfig) WithDefaults() LinkConfig {
	if c.BurstLen == 0 {
		c.BurstLen = 1
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	return c
}

// Validate reports the first field out of range, after defaults are
// applied, as an error wrapping ErrInvalidConfig and one of ErrNegative,
// ErrProbability, ErrBurstLen or ErrRange. It allocates only on error.
func (c LinkConfig) Validate() error {
	c = c.WithDefaults()
	bad := func(kind error, format string, args ...any) error {
		return fmt.Errorf("%w: %w: "+format, append([]any{ErrInvalidConfig, kind}, args...)...)
	}
	switch {
	case c.Delay < 0:
		return bad(ErrNegative, "Delay %v", c.Delay)
	case c.Delay > MaxDelay:
		return bad(ErrRange, "Delay %v above %v", c.Delay, MaxDelay)
	case c.Jitter < 0:
		return bad(ErrNegative, "Jitter %v", c.Jitter)
	case c.Jitter > MaxDelay:
		return bad(ErrRange, "Jitter %v above %v", c.Jitter, MaxDelay)
	case !(c.Loss >= 0 && c.Loss <= 1):
		return bad(ErrProbability, "Loss %v", c.Loss)
	case !(c.BurstLen >= 1) || math.IsInf(c.BurstLen, 1):
		return bad(ErrBurstLen, "BurstLen %v not in [1, +Inf)", c.BurstLen)
	case c.BurstLen > 1 && c.Loss > c.BurstLen/(c.BurstLen+1):
		return bad(ErrBurstLen, "Loss %v unreachable with BurstLen %v (at most %.4f)",
			c.Loss, c.BurstLen, c.BurstLen/(c.BurstLen+1))
	case !(c.Duplicate >= 0 && c.Duplicate <= 1):
		return bad(ErrProbability, "Duplicate %v", c.Duplicate)
	case c.Bandwidth < 0:
		return bad(ErrNegative, "Bandwidth %d", c.Bandwidth)
	case c.MTU < 0:
		return bad(ErrNegative, "MTU %d", c.MTU)
	case c.MTU > socket.MaxDatagramSize:
		return bad(ErrRange, "MTU %d above %d", c.MTU, socket.MaxDatagramSize)
	case c.QueueLimit < 0:
		return bad(ErrNegative, "QueueLimit %d", c.QueueLimit)
	case c.QueueLimit > 0 && c.QueueLimit < c.MTU:
		return bad(ErrRange, "QueueLimit %d below MTU %d", c.QueueLimit, c.MTU)
	}
	return nil
}
