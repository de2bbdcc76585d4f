package gnetudp

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/tickwire/tickwire/transport/socket"
)

// ErrInvalidConfig is wrapped by Config.Validate for a field out of range.
// The engine's other errors use the sentinels of package socket:
// socket.ErrInvalidAddr from Open for an unusable local address and from
// WriteBatch for a destination it cannot send to, socket.ErrTooLarge and
// socket.ErrInvalidMessage for a message WriteBatch refuses,
// socket.ErrClosed (which wraps net.ErrClosed) after Close; and
// errors.ErrUnsupported, wrapped, from Open on platforms other than Linux.
var ErrInvalidConfig = errors.New("gnetudp: invalid config")

// Defaults and limits applied by Config.
const (
	// DefaultQueueLen is the default capacity, in datagrams, of each event
	// loop's queue.
	DefaultQueueLen = 1024
	// MaxQueueLen bounds Config.QueueLen.
	MaxQueueLen = 1 << 16
	// DefaultMaxDatagramSize is the default datagram limit: the largest UDP
	// payload an IPv4 packet carries on a 1500-byte Ethernet MTU, which
	// covers every MTU tickwire is configured for (576–1472).
	DefaultMaxDatagramSize = 1472
	// MaxEventLoops bounds Config.EventLoops (gnet's own limit).
	MaxEventLoops = 256
	// MaxSocketBuffer caps RecvBuffer and SendBuffer (the kernel clamps
	// further to net.core.rmem_max / wmem_max).
	MaxSocketBuffer = 1 << 30
)

// Config tunes an engine opened by Open. The zero value means every
// default; each field's comment gives its default and range. Open calls
// Validate.
type Config struct {
	// EventLoops is the number of gnet event loops. Each owns one socket
	// bound to the engine's address with SO_REUSEPORT, so the kernel
	// spreads peers across loops by a hash of their address (one peer
	// always lands on the same loop), and one queue. Default 0: one per
	// CPU (runtime.NumCPU, gnet's multicore mode). Range [1, 256].
	EventLoops int

	// QueueLen is the capacity, in datagrams, of each event loop's queue
	// between the loop and the reader, rounded up to a power of two. A
	// datagram arriving at a full queue is dropped and counted in
	// Stats.QueueDrops; the event loop never waits for the reader. Each
	// queue holds QueueLen slots of MaxDatagramSize bytes, allocated at
	// open. Default 1024; range [1, 65536].
	QueueLen int

	// MaxDatagramSize is the largest datagram the engine sends or receives
	// whole. WriteBatch refuses a larger message with socket.ErrTooLarge;
	// a larger incoming datagram is cut to it when queued and counted in
	// Stats.Truncated. Default 1472; range [1, 65507].
	MaxDatagramSize int

	// RecvBuffer and SendBuffer, when non-zero, set SO_RCVBUF and SO_SNDBUF
	// in bytes on every event loop's socket. The kernel doubles the value
	// for its bookkeeping and clamps it to net.core.rmem_max / wmem_max;
	// Stats reports what it granted. Default 0: the system default. Range
	// [0, 1 GiB].
	RecvBuffer, SendBuffer int

	// DisableDrain turns off draining in OnTraffic. By default, after gnet
	// has read one datagram for an event-loop wake-up, the loop takes the
	// rest of what its socket holds with non-blocking recvmmsg calls
	// straight into its queue (at most 256 more datagrams per wake-up).
	// With DisableDrain the engine uses gnet's path alone: a wake-up, two
	// system calls and five allocations for every datagram, which measured
	// a quarter of the throughput (see the package documentation).
	DisableDrain bool

	// Logger receives gnet's log output (start-up, shutdown and event-loop
	// errors). Default nil: discarded. gnet keeps one process-wide logger;
	// Open installs this one there, so with several engines the most
	// recently opened one's logger is gnet's.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field replaced by its default: the
// config the constructor runs with (EventLoops stays zero here: Open
// resolves it from the CPU count).
func (c Config) WithDefaults() Config {
	if c.QueueLen == 0 {
		c.QueueLen = DefaultQueueLen
	}
	if c.MaxDatagramSize == 0 {
		c.MaxDatagramSize = DefaultMaxDatagramSize
	}
	return c
}

// Validate reports the first field out of range, wrapping ErrInvalidConfig.
// Zero fields are valid: they mean the default.
func (c Config) Validate() error {
	if c.EventLoops < 0 || c.EventLoops > MaxEventLoops {
		return fmt.Errorf("%w: EventLoops %d outside [1, %d]", ErrInvalidConfig, c.EventLoops, MaxEventLoops)
	}
	if c.QueueLen < 0 || c.QueueLen > MaxQueueLen {
		return fmt.Errorf("%w: QueueLen %d outside [1, %d]", ErrInvalidConfig, c.QueueLen, MaxQueueLen)
	}
	if c.MaxDatagramSize < 0 || c.MaxDatagramSize > socket.MaxDatagramSize {
		return fmt.Errorf("%w: MaxDatagramSize %d outside [1, %d]", ErrInvalidConfig, c.MaxDatagramSize, socket.MaxDatagramSize)
	}
	if c.RecvBuffer < 0 || c.RecvBuffer > MaxSocketBuffer {
		return fmt.Errorf("%w: RecvBuffer %d outside [0, %d]", ErrInvalidConfig, c.RecvBuffer, MaxSocketBuffer)
	}
	if c.SendBuffer < 0 || c.SendBuffer > MaxSocketBuffer {
		return fmt.Errorf("%w: SendBuffer %d outside [0, %d]", ErrInvalidConfig, c.SendBuffer, MaxSocketBuffer)
	}
	return nil
}
