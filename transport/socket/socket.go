// Package socket defines the one batch-shaped datagram interface that every
// tickwire packet source implements: the batched UDP socket (package udp,
// which also takes over a caller's *net.UDPConn with udp.FromConn), the
// gnet engine, the adapter for any net.PacketConn (package pconn) and the
// in-process simulated link.
//
// It also holds what they share: the error sentinels (ErrTooLarge,
// ErrInvalidMessage, ErrInvalidAddr, ErrClosed), so that errors.Is works
// whatever backend returned an error; the closed error every backend
// returns after Close (Closed); and the check of an outgoing message
// (Message.Check).
//
// A batch is a slice of [Message] whose buffers the caller owns. An
// implementation never keeps a reference to a caller's buffer after the call
// returns: WriteBatch copies (or hands to the kernel) what it sends before
// returning, and ReadBatch writes into the caller's buffers and forgets them.
// That rule is what lets a tick loop reuse one set of buffers forever, and is
// checked by the conformance suite in package sockettest (scenario S-A4).
package socket

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// IdealBatchSize is the number of messages a caller should offer per
// ReadBatch or WriteBatch call. It matches the kernel batch the UDP
// implementation issues in one recvmmsg/sendmmsg system call.
const IdealBatchSize = 64

// MaxDatagramSize is the largest UDP payload any implementation accepts:
// the IPv4 maximum (65535 − 20 − 8). Implementations may set a lower limit.
const MaxDatagramSize = 65507

// Sentinel errors shared by every implementation, so that a caller tests
// errors.Is(err, socket.ErrInvalidAddr) whatever backend returned it. The
// errors returned wrap them with the numbers: the size and the limit, the
// N and len(Buf), the address.
var (
	// ErrTooLarge is returned by WriteBatch for a message whose payload
	// exceeds the implementation's datagram limit. Messages before it in
	// the batch have been sent; it and the messages after it have not.
	ErrTooLarge = errors.New("socket: datagram too large")

	// ErrInvalidMessage is returned by WriteBatch for a message whose N is
	// negative or larger than len(Buf).
	ErrInvalidMessage = errors.New("socket: message length outside its buffer")

	// ErrInvalidAddr is returned by WriteBatch for a destination a socket
	// cannot send to (the zero netip.AddrPort, an unspecified address,
	// port 0, or an IPv6 address on an IPv4 socket), and by the
	// constructors for an unusable local address.
	ErrInvalidAddr = errors.New("socket: invalid address")

	// ErrClosed is what every I/O method of a Conn reports after Close,
	// inside a *net.OpError (see Closed). It wraps net.ErrClosed, so both
	// errors.Is(err, socket.ErrClosed) and errors.Is(err, net.ErrClosed)
	// hold.
	ErrClosed = fmt.Errorf("socket: %w", net.ErrClosed)
)

// Closed returns the error a Conn's op ("read", "write", "wait") reports
// after Close: a *net.OpError for the socket bound to local whose Err is
// ErrClosed. Implementations return it instead of whatever the layer
// below said (the netpoller's own closed error, an EBADF), so the closed
// error reads the same from every backend. It allocates (the OpError and
// its address): it is meant for the end of a socket's life, not a hot
// path.
func Closed(op string, local netip.AddrPort) error {
	return &net.OpError{Op: op, Net: "udp", Source: net.UDPAddrFromAddrPort(local), Err: ErrClosed}
}

// Check reports whether m can be sent by a Conn whose datagram limit is
// limit: ErrTooLarge when N exceeds limit, ErrInvalidMessage when N is
// outside [0, len(Buf)], ErrInvalidAddr when Addr is the zero
// netip.AddrPort. Each error says what was wrong, with the numbers. It
// knows nothing of the socket: an IPv6 Addr on an IPv4 socket is the
// implementation's to refuse, and a destination only the kernel refuses
// (port 0, say) is the kernel's. It allocates only when it reports an
// error.
func (m *Message) Check(limit int) error {
	switch {
	case m.N > limit:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, m.N, limit)
	case m.N < 0 || m.N > len(m.Buf):
		return fmt.Errorf("%w: N %d with len(Buf) %d", ErrInvalidMessage, m.N, len(m.Buf))
	case !m.Addr.IsValid():
		return fmt.Errorf("%w: destination %v", ErrInvalidAddr, m.Addr)
	}
	return nil
}

// MaxDatagramSizer is implemented by a Conn whose datagram limit is below
// MaxDatagramSize; WriteBatch refuses a larger message with ErrTooLarge.
type MaxDatagramSizer interface {
	MaxDatagramSize() int
}

// Message is one datagram in a batch.
//
// On write, Buf[:N] is sent to Addr. On read, the datagram is copied into
// Buf (whose length is the room available), N is set to its size and Addr to
// its source. A datagram longer than len(Buf) is truncated to len(Buf) and
// counted by the implementation; callers size Buf to the MTU they accept.
//
// On read, Age is how long the datagram had waited in the socket when the
// read returned it: the kernel's receive timestamp against the clock at
// the read, where the implementation has one, else 0. A loop that reads
// its socket only when it wakes (a fixed tick) learns from it when each
// datagram really arrived. Writes ignore it.
type Message struct {
	Buf  []byte
	N    int
	Addr netip.AddrPort
	Age  time.Duration
}

// Conn is a datagram socket that moves messages in batches.
//
// Reads (ReadBatch and TryReadBatch) are one role and writes another: each
// role is used by one goroutine at a time — a TryReadBatch must not run
// while a ReadBatch is parked — and a reader and a writer may run
// concurrently. Close may be called from any goroutine, any number of times;
// calls after the first return nil or an error wrapping net.ErrClosed. After
// Close every I/O method returns Closed(op, LocalAddr()), an error wrapping
// ErrClosed and net.ErrClosed.
//
// An empty batch returns (0, nil) at once, even from ReadBatch.
// Zero-length datagrams are legal and arrive with N == 0. A message with an
// invalid N or Addr makes WriteBatch return an error at its index; no
// input makes a Conn panic.
type Conn interface {
	// ReadBatch blocks until at least one datagram is available, then fills
	// msgs[:n] and returns n ≥ 1. After Close it returns an error for which
	// errors.Is(err, ErrClosed) and errors.Is(err, net.ErrClosed) hold,
	// including for a ReadBatch that was blocked when Close was called.
	ReadBatch(msgs []Message) (n int, err error)

	// TryReadBatch is ReadBatch without blocking: it returns (0, nil) when no
	// datagram is ready. A tick loop calls it until it returns 0: a short
	// batch does not mean the socket is drained (the UDP socket's GRO path
	// returns at most 16 coalesced buffers per call).
	TryReadBatch(msgs []Message) (n int, err error)

	// WriteBatch sends msgs in order and returns how many were sent. On error,
	// msgs[:n] were sent and msgs[n] caused the error. It does not retain
	// any buffer.
	WriteBatch(msgs []Message) (n int, err error)

	// LocalAddr returns the address the socket is bound to.
	LocalAddr() netip.AddrPort

	// Close releases the socket and unblocks pending reads.
	Close() error
}

// Waiter is implemented by a Conn that can put its reading goroutine to
// sleep until there is something to read, instead of that goroutine
// polling on a fixed period. It lets a tick loop react to a datagram
// within microseconds while idle loops cost nothing.
type Waiter interface {
	// Wait blocks until a datagram may be ready to read, Wake is called,
	// or timeout passes, whichever is first, and then returns nil; a
	// caller cannot tell which happened and simply reads (a wake-up with
	// nothing to read is allowed). A Wake that came while no Wait was
	// blocked makes the next Wait return at once. Wait belongs to the read
	// role: it must not run concurrently with ReadBatch or TryReadBatch.
	// After Close it returns an error wrapping ErrClosed and net.ErrClosed,
	// and Close ends a blocked Wait at once.
	Wait(timeout time.Duration) error
	// Wake ends a blocked Wait, or the next one. It is safe from any
	// goroutine and never blocks.
	Wake()
}
