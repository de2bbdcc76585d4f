package wire

import "strconv"

// KeepAliveFrame has no fields: one FrameKeepAlive byte. A peer with
// nothing to send puts one in a datagram so the link stays warm and the
// peer's time-out does not fire; unlike an ack-only datagram (no frames),
// it asks nothing of the receiver but to note that the peer is alive.
type KeepAliveFrame struct{}

// KeepAliveFrameLen is the encoded size of a KeepAliveFrame.
const KeepAliveFrameLen = 1

// AppendKeepAliveFrame appends the one-byte keep-alive frame to dst and
// returns the extended slice.
func AppendKeepAliveFrame(dst []byte, _ KeepAliveFrame) []byte {
	return append(dst, byte(FrameKeepAlive))
}

// ParseKeepAliveFrame decodes a keep-alive frame from the front of b, with
// n = 1. An empty b returns ErrShort, any other type byte ErrMalformed.
func ParseKeepAliveFrame(b []byte) (KeepAliveFrame, int, error) {
	if len(b) == 0 {
		return KeepAliveFrame{}, 0, ErrShort
	}
	if FrameType(b[0]) != FrameKeepAlive {
		return KeepAliveFrame{}, 0, ErrMalformed
	}
	return KeepAliveFrame{}, keepAliveLen, nil
}

// DisconnectReason says why a peer ends a session (DisconnectFrame).
// Every byte value is accepted on the wire — a peer that is told to go
// away should go even if it does not know the reason — and values without
// a name here are reported as "DisconnectReason(N)".
type DisconnectReason uint8

// Named disconnect reasons.
const (
	DisconnectUnspecified   DisconnectReason = 0 // no reason given
	DisconnectClosed        DisconnectReason = 1 // orderly close by the application
	DisconnectTimeout       DisconnectReason = 2 // the peer stopped hearing from us
	DisconnectKicked        DisconnectReason = 3 // removed by the server's application
	DisconnectShutdown      DisconnectReason = 4 // the server is shutting down
	DisconnectProtocolError DisconnectReason = 5 // the peer sent something it must not
	DisconnectSuperseded    DisconnectReason = 6 // the session was resumed from another address
	// DisconnectIncompatible: the client cannot honour the limits the
	// server's Accept announced (its own config sets them otherwise); it
	// sends this in the new session at once, so the server frees it.
	DisconnectIncompatible DisconnectReason = 7
	// DisconnectStalled: a reliable stream held messages and made no
	// progress for the channel's stall time-out.
	DisconnectStalled DisconnectReason = 8
	// DisconnectTokenRefused: the server could not bind the session's
	// connect token at the client's first datagram (it expired, the replay
	// guard filled up), or another session bound the same token first.
	DisconnectTokenRefused DisconnectReason = 9
)

var disconnectReasonNames = [...]string{
	DisconnectUnspecified:   "unspecified",
	DisconnectClosed:        "closed",
	DisconnectTimeout:       "timeout",
	DisconnectKicked:        "kicked",
	DisconnectShutdown:      "server shutdown",
	DisconnectProtocolError: "protocol error",
	DisconnectSuperseded:    "superseded",
	DisconnectIncompatible:  "incompatible limits",
	DisconnectStalled:       "stalled",
	DisconnectTokenRefused:  "connect token refused",
}

// String returns the reason's name, or "DisconnectReason(N)" for an
// unnamed value (which allocates).
func (r DisconnectReason) String() string {
	if int(r) < len(disconnectReasonNames) {
		return disconnectReasonNames[r]
	}
	return "DisconnectReason(" + strconv.Itoa(int(r)) + ")"
}

// DisconnectFrame ends the session: the sender will send nothing more on
// it, and the receiver tears its state down. It travels inside a session
// datagram, so only a holder of the session secret can send it.
type DisconnectFrame struct {
	Reason DisconnectReason
}

// DisconnectFrameLen is the encoded size of a DisconnectFrame.
const DisconnectFrameLen = 2

// AppendDisconnectFrame appends f — FrameDisconnect, reason — to dst and
// returns the extended slice.
func AppendDisconnectFrame(dst []byte, f DisconnectFrame) []byte {
	return append(dst, byte(FrameDisconnect), byte(f.Reason))
}

// ParseDisconnectFrame decodes a disconnect frame from the front of b, with
// n = 2. Input shorter than 2 bytes returns ErrShort, a wrong type byte
// ErrMalformed. It never allocates.
func ParseDisconnectFrame(b []byte) (DisconnectFrame, int, error) {
	if len(b) == 0 {
		return DisconnectFrame{}, 0, ErrShort
	}
	if FrameType(b[0]) != FrameDisconnect {
		return DisconnectFrame{}, 0, ErrMalformed
	}
	if len(b) < disconnectLen {
		return DisconnectFrame{}, 0, ErrShort
	}
	return DisconnectFrame{Reason: DisconnectReason(b[1])}, disconnectLen, nil
}
