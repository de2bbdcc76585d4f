package fragment

import (
	"fmt"
	"time"
)

// Defaults and limits of AssemblerConfig.
const (
	// DefaultMaxPartial is AssemblerConfig.MaxPartial when it is zero.
	DefaultMaxPartial = 8
	// MaxMaxPartial bounds AssemblerConfig.MaxPartial. Partial assemblies
	// are found by a linear scan, which stays cheap at this size.
	MaxMaxPartial = 256
	// DefaultExpiry is AssemblerConfig.Expiry when it is zero.
	DefaultExpiry = 2 * time.Second
)

// AssemblerConfig configures an Assembler. The zero value of every field
// but the piece size (set PieceSize or MTU) selects its default; each
// field's comment gives its default and range. It is a plain value:
// copying it clones it.
type AssemblerConfig struct {
	// MTU is the negotiated largest datagram, in bytes. When PieceSize is
	// zero it is derived as PieceSize(MTU). Range [MinMTU, MaxMTU]; zero
	// means "use PieceSize". One of MTU and PieceSize is required: there is
	// no default, because the value must equal the sender's.
	MTU int

	// PieceSize is the payload bytes of every piece but the last, which
	// must equal the sender's (PieceSize(mtu) of the negotiated MTU). Zero
	// derives it from MTU; when both are set they must agree. Range
	// [1, PieceSize(MaxMTU)].
	PieceSize int

	// MaxPartial is the most partial assemblies (messages with some but not
	// all pieces) kept at once. A piece of a new message beyond it evicts
	// the oldest partial assembly. Default DefaultMaxPartial (8); range
	// [1, MaxMaxPartial].
	MaxPartial int

	// Expiry is how long a partial assembly may wait for its missing
	// pieces, on the caller's clock (the now passed to Add and Expire),
	// counted from its first piece: a partial assembly whose first piece
	// arrived at t is discarded by Expire(now), or by the next Add for its
	// id, once now − t ≥ Expiry. It is a duration, never a count of calls,
	// so it means the same whatever the caller's loop cadence; on an
	// injected clock it is deterministic under simulation. Default
	// DefaultExpiry (2 s); any positive value.
	Expiry time.Duration

	// MaxMessageSize is the largest reassembled message accepted, in
	// bytes; both sides must honour the same limit (the negotiated max
	// message). Pieces declaring a larger message are refused with
	// ErrTooLarge. Default MaxPieces × PieceSize, the most a sender can
	// split; larger values are clipped to it; negative is invalid.
	MaxMessageSize int
}

// Validate reports whether c is usable, with zero fields taking their
// defaults. Its errors wrap ErrInvalidConfig and name the field.
func (c AssemblerConfig) Validate() error {
	_, err := c.resolve()
	return err
}

// resolve returns c with defaults applied and clipping done, or the
// validation error.
func (c AssemblerConfig) resolve() (AssemblerConfig, error) {
	bad := func(format string, args ...any) (AssemblerConfig, error) {
		return AssemblerConfig{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	maxPiece := PieceSize(MaxMTU)
	switch {
	case c.MTU < 0 || c.MTU > 0 && (c.MTU < MinMTU || c.MTU > MaxMTU):
		return bad("MTU %d outside [%d, %d]", c.MTU, MinMTU, MaxMTU)
	case c.PieceSize < 0 || c.PieceSize > maxPiece:
		return bad("PieceSize %d outside [1, %d]", c.PieceSize, maxPiece)
	case c.MTU == 0 && c.PieceSize == 0:
		return bad("one of MTU and PieceSize is required")
	case c.MTU != 0 && c.PieceSize != 0 && c.PieceSize != PieceSize(c.MTU):
		return bad("PieceSize %d disagrees with MTU %d (PieceSize %d)", c.PieceSize, c.MTU, PieceSize(c.MTU))
	case c.MaxPartial < 0 || c.MaxPartial > MaxMaxPartial:
		return bad("MaxPartial %d outside [1, %d]", c.MaxPartial, MaxMaxPartial)
	case c.Expiry < 0:
		return bad("Expiry %v below 0", c.Expiry)
	case c.MaxMessageSize < 0:
		return bad("MaxMessageSize %d below 1", c.MaxMessageSize)
	}
	if c.PieceSize == 0 {
		c.PieceSize = PieceSize(c.MTU)
	}
	if c.MaxPartial == 0 {
		c.MaxPartial = DefaultMaxPartial
	}
	if c.Expiry == 0 {
		c.Expiry = DefaultExpiry
	}
	if limit := MaxPieces * c.PieceSize; c.MaxMessageSize == 0 || c.MaxMessageSize > limit {
		c.MaxMessageSize = limit
	}
	return c, nil
}
