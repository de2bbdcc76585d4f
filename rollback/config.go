package rollback

import "fmt"

// Config defaults and ranges.
const (
	// DefaultFrameCapacity is LogConfig.FrameCapacity when left zero.
	DefaultFrameCapacity = 64
	// MinFrameCapacity is the smallest LogConfig.FrameCapacity.
	MinFrameCapacity = 2
	// MaxFrameCapacity is the largest LogConfig.FrameCapacity.
	MaxFrameCapacity = 1 << 16
	// defaultMaxRecordsPerFrame is LogConfig.MaxRecordsPerFrame when left zero.
	defaultMaxRecordsPerFrame = 8192
	// maxMaxRecordsPerFrame is the largest LogConfig.MaxRecordsPerFrame.
	maxMaxRecordsPerFrame = 1 << 20
	// defaultMaxFrameBytes is LogConfig.MaxFrameBytes when left zero.
	defaultMaxFrameBytes = 256 << 10
	// minMaxFrameBytes is the smallest LogConfig.MaxFrameBytes.
	minMaxFrameBytes = 1 << 10
	// maxMaxFrameBytes is the largest LogConfig.MaxFrameBytes (offsets in
	// the log are 32-bit).
	maxMaxFrameBytes = 1 << 30
)

// LogConfig configures an ActionLog. It is a plain value: the zero value of
// every field means its default, and NewActionLog validates it.
type LogConfig struct {
	// FrameCapacity is the number of frames the ring holds, which bounds
	// rollback depth and replication back-fill. Default 64 (about a second
	// at 60 Hz); range MinFrameCapacity..MaxFrameCapacity.
	FrameCapacity int

	// MaxRecordsPerFrame bounds the records of one frame; an action beyond
	// it is refused with ErrFrameFull. Default 8192; range
	// 1..1<<20.
	MaxRecordsPerFrame int

	// MaxFrameBytes bounds one frame's arena (payloads plus captured prior
	// state plus 14 bytes of bookkeeping per capture); an action that would
	// cross it is refused with ErrFrameFull. Default 256 KiB; range
	// 1 KiB..1 GiB. Memory grows only as frames fill,
	// to at most about FrameCapacity × 2 × MaxFrameBytes for the arenas.
	MaxFrameBytes int
}

// Validate reports whether c is usable. Zero fields are valid (defaults).
// Errors wrap ErrInvalidConfig.
func (c LogConfig) Validate() error {
	if c.FrameCapacity != 0 && (c.FrameCapacity < MinFrameCapacity || c.FrameCapacity > MaxFrameCapacity) {
		return fmt.Errorf("%w: FrameCapacity %d outside %d..%d", ErrInvalidConfig, c.FrameCapacity, MinFrameCapacity, MaxFrameCapacity)
	}
	if c.MaxRecordsPerFrame != 0 && (c.MaxRecordsPerFrame < 1 || c.MaxRecordsPerFrame > maxMaxRecordsPerFrame) {
		return fmt.Errorf("%w: MaxRecordsPerFrame %d outside 1..%d", ErrInvalidConfig, c.MaxRecordsPerFrame, maxMaxRecordsPerFrame)
	}
	if c.MaxFrameBytes != 0 && (c.MaxFrameBytes < minMaxFrameBytes || c.MaxFrameBytes > maxMaxFrameBytes) {
		return fmt.Errorf("%w: MaxFrameBytes %d outside %d..%d", ErrInvalidConfig, c.MaxFrameBytes, minMaxFrameBytes, maxMaxFrameBytes)
	}
	return nil
}

// WithDefaults returns c with every zero field replaced by its default.
func (c LogConfig) WithDefaults() LogConfig {
	if c.FrameCapacity == 0 {
		c.FrameCapacity = DefaultFrameCapacity
	}
	if c.MaxRecordsPerFrame == 0 {
		c.MaxRecordsPerFrame = defaultMaxRecordsPerFrame
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = defaultMaxFrameBytes
	}
	return c
}
