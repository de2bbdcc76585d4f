package ackmap

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Callers test them with errors.Is; the messages returned
// wrap them with the offending value.
var (
	// ErrInvalidConfig is wrapped by Config.Validate for a field out of range.
	ErrInvalidConfig = errors.New("ackmap: invalid config")
	// ErrAckUnsent is returned by SendTracker.OnAck for an ack of a seq that
	// was never sent (nothing sent yet, or an ack newer than the newest
	// send). The header is ignored; a well-behaved peer never sends one.
	ErrAckUnsent = errors.New("ackmap: ack for a seq never sent")
)

// Defaults applied by Config for zero-valued fields.
const (
	DefaultMaxInFlight      = 64
	DefaultReorderThreshold = 3
	DefaultInitialRTO       = time.Second
	DefaultMinRTO           = 50 * time.Millisecond
	DefaultMaxRTO           = 2 * time.Second

	// MaxInFlightLimit is the largest MaxInFlight: the span of unresolved
	// seqs (see SpanLimit) must stay within half the 16-bit seq space.
	MaxInFlightLimit = 16384
	// MaxSpanLimit is the largest SpanLimit: half the 16-bit seq space, so
	// every seq in the span compares unambiguously with every other.
	MaxSpanLimit = MaxSeqBufferSize
	// spanFactor is how many times MaxInFlight the span may cover before a
	// send evicts: room for the skipped seqs of ack-only datagrams sent
	// while data is in flight.
	spanFactor = 4
	// maxBackoff caps the exponential time-out back-off (2^6 = 64×).
	maxBackoff = 64
)

// Config tunes a SendTracker. The zero value means every default; each
// field's comment gives its default and range. Call Validate (New does) to
// check a config before use.
type Config struct {
	// MaxInFlight bounds the pending seqs: those handed out by Send (or
	// SendOne) that have no verdict yet. A Send with MaxInFlight pending
	// first evicts the oldest as lost. Seqs handed out by Skip are never
	// pending and do not count; they only widen the span from the oldest
	// pending seq to the newest handed out, which is bounded separately by
	// the tracker's SpanLimit (4 × MaxInFlight rounded up to a power of
	// two, at most 32768). Default 64; range [1, 16384].
	MaxInFlight int

	// ReorderThreshold is the starting and lowest packet threshold (QUIC's
	// kPacketThreshold): a seq is declared lost once a seq at least this
	// many newer has been acked while its own ack bit is clear. Lower
	// detects loss sooner; higher tolerates more reordering. The tracker
	// raises its effective threshold when an ack shows that a loss it
	// declared this way was spurious — up to 33, and to 34 (the window
	// age-out off too) after a spurious window loss — and lowers it one
	// step at a time after a quiet spell (SendStats.ReorderThreshold is the
	// current value). 33 starts with the packet threshold off, leaving the
	// window age-out (a seq more than 32 behind an ack) and the time
	// threshold (see SendTracker). Default 3; range [1, 33].
	ReorderThreshold int

	// InitialRTO is the time-out before any RTT sample. Default 1 s
	// (RFC 6298 §2.1); range [MinRTO, MaxRTO].
	InitialRTO time.Duration

	// MinRTO and MaxRTO clamp the time-out after which an unacked seq is
	// declared lost on a quiet link. Defaults 50 ms and 2 s; MinRTO must be
	// at least 1 ms and no more than MaxRTO. RFC 6298's 1 s minimum suits
	// bulk TCP, not a 60 Hz game, so the default is far lower; the
	// exponential back-off after a time-out still protects a slow path.
	MinRTO, MaxRTO time.Duration
}

// WithDefaults returns c with every zero field replaced by its default: the
// config the constructor runs with.
func (c Config) WithDefaults() Config {
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.ReorderThreshold == 0 {
		c.ReorderThreshold = DefaultReorderThreshold
	}
	if c.InitialRTO == 0 {
		c.InitialRTO = DefaultInitialRTO
	}
	if c.MinRTO == 0 {
		c.MinRTO = DefaultMinRTO
	}
	if c.MaxRTO == 0 {
		c.MaxRTO = DefaultMaxRTO
	}
	return c
}

// Validate reports the first field out of range, after defaults are
// applied, as an error wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.MaxInFlight < 1 || c.MaxInFlight > MaxInFlightLimit:
		return fmt.Errorf("%w: MaxInFlight %d not in [1, %d]", ErrInvalidConfig, c.MaxInFlight, MaxInFlightLimit)
	case c.ReorderThreshold < 1 || c.ReorderThreshold > AckWindow:
		return fmt.Errorf("%w: ReorderThreshold %d not in [1, %d]", ErrInvalidConfig, c.ReorderThreshold, AckWindow)
	case c.MinRTO < time.Millisecond:
		return fmt.Errorf("%w: MinRTO %v below 1ms", ErrInvalidConfig, c.MinRTO)
	case c.MaxRTO < c.MinRTO:
		return fmt.Errorf("%w: MaxRTO %v below MinRTO %v", ErrInvalidConfig, c.MaxRTO, c.MinRTO)
	case c.InitialRTO < c.MinRTO || c.InitialRTO > c.MaxRTO:
		return fmt.Errorf("%w: InitialRTO %v not in [MinRTO %v, MaxRTO %v]", ErrInvalidConfig, c.InitialRTO, c.MinRTO, c.MaxRTO)
	}
	return nil
}
