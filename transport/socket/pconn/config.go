package pconn

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/transport/socket"
)

// ErrInvalidConfig is wrapped by Config.Validate for a field out of range.
// The adapter's other errors use the sentinels of package socket:
// socket.ErrInvalidAddr from New for a local address that is not an IP
// and port, socket.ErrTooLarge, socket.ErrInvalidMessage and
// socket.ErrInvalidAddr for a message WriteBatch refuses, and
// socket.ErrClosed (which wraps net.ErrClosed) after Close.
var ErrInvalidConfig = errors.New("pconn: invalid config")

// Defaults and limits applied by Config.
const (
	// DefaultMaxDatagramSize is the default datagram limit: the largest UDP
	// payload of an IPv4 packet on a 1500-byte Ethernet MTU, which covers
	// every MTU tickwire is configured for (576–1472).
	DefaultMaxDatagramSize = 1472
	// DefaultQueueLen is the default number of receive slots.
	DefaultQueueLen = 256
	// MaxQueueLen bounds Config.QueueLen.
	MaxQueueLen = 1 << 16
)

// Config tunes an adapter made by New. The zero value means every
// default; each field's comment gives its default and range. New calls
// Validate.
type Config struct {
	// MaxDatagramSize is the largest payload WriteBatch accepts (a larger
	// message fails with socket.ErrTooLarge) and the largest datagram
	// received whole: a longer one is cut to it and counted in
	// Stats.Truncated. Default 1472; range [1, 65507].
	MaxDatagramSize int

	// QueueLen is the number of datagrams the receiving goroutine may
	// hold ahead of the reader, each in a slot of MaxDatagramSize+1 bytes
	// allocated by New (DefaultQueueLen × 1473 B ≈ 370 KiB by default).
	// When every slot is full the goroutine stops reading until the reader
	// frees one, so datagrams queue (or are dropped) in the layer below,
	// never in the adapter. Default 256; range [1, 65536].
	QueueLen int
}

// WithDefaults returns c with every zero field replaced by its default: the
// config the constructor runs with.
func (c Config) WithDefaults() Config {
	if c.MaxDatagramSize == 0 {
		c.MaxDatagramSize = DefaultMaxDatagramSize
	}
	if c.QueueLen == 0 {
		c.QueueLen = DefaultQueueLen
	}
	return c
}

// Validate reports the first field out of range, wrapping ErrInvalidConfig.
// Zero fields are valid: they mean the default.
func (c Config) Validate() error {
	if c.MaxDatagramSize < 0 || c.MaxDatagramSize > socket.MaxDatagramSize {
		return fmt.Errorf("%w: MaxDatagramSize %d outside [1, %d]", ErrInvalidConfig, c.MaxDatagramSize, socket.MaxDatagramSize)
	}
	if c.QueueLen < 0 || c.QueueLen > MaxQueueLen {
		return fmt.Errorf("%w: QueueLen %d outside [1, %d]", ErrInvalidConfig, c.QueueLen, MaxQueueLen)
	}
	return nil
}
