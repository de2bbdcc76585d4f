package transport

import (
	"errors"
	"net"
)

// Sentinel errors. Callers test them with errors.Is; returned errors may
// wrap them with detail.
var (
	// ErrInvalidConfig is wrapped by Config.Validate for a field out of range.
	ErrInvalidConfig = errors.New("transport: invalid config")
	// ErrQueueFull is back-pressure: a send queue or window is full. The
	// message was not accepted; nothing already accepted was dropped.
	ErrQueueFull = errors.New("transport: send queue full")
	// ErrTooLarge: the message exceeds Config.MaxMessageSize.
	ErrTooLarge = errors.New("transport: message too large")
	// ErrNoStream: the stream id is outside the configured streams.
	ErrNoStream = errors.New("transport: no such stream")
	// ErrMalformed: a received datagram could not be decoded. It was
	// dropped whole and counted; nothing in it was applied.
	ErrMalformed = errors.New("transport: malformed datagram")
	// ErrStalled: a reliable stream held messages and made no progress
	// (released none, and no piece of a large one was acked) for
	// Config.StallTimeout; Channel.Stalled returns it
	// with the stream and the numbers, and an Endpoint ends the session
	// with wire.DisconnectStalled.
	ErrStalled = errors.New("transport: reliable stream stalled")
	// ErrClosed: the endpoint (or its socket) was closed. It matches
	// net.ErrClosed too, so errors.Is(err, net.ErrClosed) holds for every
	// error an Endpoint returns once closed, whatever the socket's own
	// errors wrap.
	ErrClosed error = closedError{}
)

// closedError is ErrClosed: "transport: closed", and errors.Is matches it
// against net.ErrClosed.
type closedError struct{}

func (closedError) Error() string { return "transport: closed" }

// Is reports whether target is net.ErrClosed.
func (closedError) Is(target error) bool { return target == net.ErrClosed }
