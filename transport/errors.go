package transport

import "errors"

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
	// (released none) for Config.StallTimeout; Channel.Stalled returns it
	// with the stream and the numbers, and an Endpoint ends the session
	// with wire.DisconnectStalled.
	ErrStalled = errors.New("transport: reliable stream stalled")
	// ErrClosed: the channel or endpoint was closed.
	ErrClosed = errors.New("transport: closed")
)
