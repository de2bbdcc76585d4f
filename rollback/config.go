package rollback

import "fmt"

// Config defaults and ranges.
const (
	// DefaultFrameCapacity is Config.FrameCapacity when left zero.
	DefaultFrameCapacity = 64
	// MinFrameCapacity is the smallest Config.FrameCapacity.
	MinFrameCapacity = 2
	// MaxFrameCapacity is the largest Config.FrameCapacity.
	MaxFrameCapacity = 1 << 16
	// DefaultMaxRecordsPerFrame is Config.MaxRecordsPerFrame when left zero.
	DefaultMaxRecordsPerFrame = 8192
	// MaxMaxRecordsPerFrame is the largest Config.MaxRecordsPerFrame.
	MaxMaxRecordsPerFrame = 1 << 20
	// DefaultMaxFrameBytes is Config.MaxFrameBytes when left zero.
	DefaultMaxFrameBytes = 256 << 10
	// MinMaxFrameBytes is the smallest Config.MaxFrameBytes.
	MinMaxFrameBytes = 1 << 10
	// MaxMaxFrameBytes is the largest Config.MaxFrameBytes (offsets in
	// the log are 32-bit).
	MaxMaxFrameBytes = 1 << 30
)

// Config configures an ActionLog. It is a plain value: the zero value of
// every field means its default, and NewActionLog validates it.
type Config struct {
	// FrameCapacity is the number of frames the ring holds, which bounds
	// rollback depth and replication back-fill. Default 64 (about a second
	// at 60 Hz); range MinFrameCapacity..MaxFrameCapacity.
	FrameCapacity int

	// MaxRecordsPerFrame bounds the records of one frame; an action beyond
	// it is refused with ErrFrameFull. Default 8192; range
	// 1..MaxMaxRecordsPerFrame.
	MaxRecordsPerFrame int

	// MaxFrameBytes bounds one frame's arena (payloads plus captured prior
	// state plus 14 bytes of bookkeeping per capture); an action that would
	// cross it is refused with ErrFrameFull. Default 256 KiB; range
	// MinMaxFrameBytes..MaxMaxFrameBytes. Memory grows only as frames fill,
	// to at most about FrameCapacity × 2 × MaxFrameBytes for the arenas.
	MaxFrameBytes int
}

// Validate reports whether c is usable. Zero fields are valid (defaults).
// Errors wrap ErrInvalidConfig.
func (c Config) Validate() error {
	if c.FrameCapacity != 0 && (c.FrameCapacity < MinFrameCapacity || c.FrameCapacity > MaxFrameCapacity) {
		return fmt.Errorf("%w: FrameCapacity %d outside %d..%d", ErrInvalidConfig, c.FrameCapacity, MinFrameCapacity, MaxFrameCapacity)
	}
	if c.MaxRecordsPerFrame != 0 && (c.MaxRecordsPerFrame < 1 || c.MaxRecordsPerFrame > MaxMaxRecordsPerFrame) {
		return fmt.Errorf("%w: MaxRecordsPerFrame %d outside 1..%d", ErrInvalidConfig, c.MaxRecordsPerFrame, MaxMaxRecordsPerFrame)
	}
	if c.MaxFrameBytes != 0 && (c.MaxFrameBytes < MinMaxFrameBytes || c.MaxFrameBytes > MaxMaxFrameBytes) {
		return fmt.Errorf("%w: MaxFrameBytes %d outside %d..%d", ErrInvalidConfig, c.MaxFrameBytes, MinMaxFrameBytes, MaxMaxFrameBytes)
	}
	return nil
}

// WithDefaults returns c with every zero field replaced by its default.
func (c Config) WithDefaults() Config {
	if c.FrameCapacity == 0 {
		c.FrameCapacity = DefaultFrameCapacity
	}
	if c.MaxRecordsPerFrame == 0 {
		c.MaxRecordsPerFrame = DefaultMaxRecordsPerFrame
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	return c
}
