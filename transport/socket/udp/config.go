package udp

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/transport/socket"
)

// ErrInvalidConfig is wrapped by Config.Validate for a field out of range.
// The socket's other errors use the sentinels of package socket:
// socket.ErrTooLarge, socket.ErrInvalidMessage and socket.ErrInvalidAddr
// for a message WriteBatch refuses, socket.ErrClosed (which wraps
// net.ErrClosed) after Close; and errors.ErrUnsupported, wrapped, from
// TryReadBatch on platforms that are neither Unix nor Windows, where the
// socket has no way to read without waiting.
var ErrInvalidConfig = errors.New("udp: invalid config")

// Defaults and limits applied by Config.
const (
	// DefaultBatchSize is the number of messages per recvmmsg/sendmmsg.
	DefaultBatchSize = socket.IdealBatchSize
	// MaxBatchSize is the kernel's per-call limit on the message vector
	// (UIO_MAXIOV).
	MaxBatchSize = 1024
	// MaxSocketBuffer caps RecvBuffer and SendBuffer (the kernel clamps
	// further to net.core.rmem_max / wmem_max).
	MaxSocketBuffer = 1 << 30
)

// Config tunes a socket opened by Open or OpenPlain. The zero value means
// every default; each field's comment gives its default and range. Open
// calls Validate.
type Config struct {
	// BatchSize is the most messages one recvmmsg or sendmmsg system call
	// carries, and the size of the per-socket header arrays allocated at
	// open. A WriteBatch of more messages is sent in several calls; a
	// ReadBatch without GRO returns at most BatchSize messages. Default
	// socket.IdealBatchSize (64); range [1, 1024]. The plain socket ignores
	// it.
	BatchSize int

	// RecvBuffer and SendBuffer, when non-zero, set SO_RCVBUF and SO_SNDBUF
	// in bytes. The kernel doubles the value for its bookkeeping and clamps
	// it to net.core.rmem_max / wmem_max; Stats reports what it granted.
	// Default 0: leave the system default. Range [0, 1 GiB].
	RecvBuffer, SendBuffer int

	// MaxDatagramSize is the largest payload WriteBatch accepts; a larger
	// message fails with socket.ErrTooLarge. It does not limit reads: a
	// received datagram is bounded by the caller's buffer. Default and
	// maximum socket.MaxDatagramSize (65507); range [1, 65507].
	MaxDatagramSize int

	// DisableGSO turns off UDP generic segmentation offload on send
	// (coalescing same-size datagrams to one destination into one kernel
	// send). Default false: GSO is used when the kernel supports it.
	DisableGSO bool

	// DisableGRO turns off UDP generic receive offload (the kernel handing
	// up several same-size datagrams of one flow as one buffer, which the
	// socket splits). Default false: GRO is used when the kernel supports
	// it. With GRO live the socket receives into an internal buffer of
	// min(BatchSize, 16) × 64 KiB (1 MiB by default) and copies each
	// datagram into the caller's buffer; without it the kernel writes
	// straight into caller buffers.
	DisableGRO bool

	// DisableTimestamps turns off kernel receive timestamps. Default false:
	// on Linux, Open, OpenPlain and FromConn set SO_TIMESTAMPNS (the kernel
	// stamps each datagram as it arrives) and every read sets
	// socket.Message.Age from the stamp: how long the datagram waited in
	// the socket. It costs the kernel a clock read per datagram, and the
	// socket a 56-byte control buffer per receive header, one time.Now
	// per read call and about 10 ns of parsing per header (see the
	// package documentation); with it set, Age is 0. Features.Timestamps
	// reports whether it is on. Other platforms have no timestamps and
	// ignore it.
	DisableTimestamps bool
}

// WithDefaults returns c with every zero field replaced by its default: the
// config the constructor runs with.
func (c Config) WithDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxDatagramSize == 0 {
		c.MaxDatagramSize = socket.MaxDatagramSize
	}
	return c
}

// Validate reports the first field out of range, wrapping ErrInvalidConfig.
// Zero fields are valid: they mean the default.
func (c Config) Validate() error {
	if c.BatchSize < 0 || c.BatchSize > MaxBatchSize {
		return fmt.Errorf("%w: BatchSize %d outside [1, %d]", ErrInvalidConfig, c.BatchSize, MaxBatchSize)
	}
	if c.RecvBuffer < 0 || c.RecvBuffer > MaxSocketBuffer {
		return fmt.Errorf("%w: RecvBuffer %d outside [0, %d]", ErrInvalidConfig, c.RecvBuffer, MaxSocketBuffer)
	}
	if c.SendBuffer < 0 || c.SendBuffer > MaxSocketBuffer {
		return fmt.Errorf("%w: SendBuffer %d outside [0, %d]", ErrInvalidConfig, c.SendBuffer, MaxSocketBuffer)
	}
	if c.MaxDatagramSize < 0 || c.MaxDatagramSize > socket.MaxDatagramSize {
		return fmt.Errorf("%w: MaxDatagramSize %d outside [1, %d]", ErrInvalidConfig, c.MaxDatagramSize, socket.MaxDatagramSize)
	}
	return nil
}
