package transport

import (
	"errors"

	"github.com/tickwire/tickwire/wire"
)

// Sentinel errors of the connection layer (Endpoint, handshake, peers).
// Callers test them with errors.Is; returned errors may wrap them with
// detail. The channel-level sentinels (ErrInvalidConfig, ErrClosed, …) live
// in errors.go and are shared.
var (
	// ErrPeerID: no peer id in 0..253 (wire.MaxPeerID) can be assigned, or
	// a config asks for more peers than there are such ids. Ids 254 and 255
	// are the action log's provenance markers and never name a peer. It is
	// returned (or counted, on the server) before any per-peer state exists.
	ErrPeerID = errors.New("transport: no peer id in 0..253 available")

	// ErrHandshakeTimeout: a client gave up after EndpointConfig.
	// HandshakeAttempts handshake datagrams without an Accept.
	ErrHandshakeTimeout = errors.New("transport: handshake timed out")

	// ErrRejected is matched by every *RejectError: the server refused the
	// connection or the resume. The RejectError carries the reason.
	ErrRejected = errors.New("transport: connection rejected")

	// ErrNoSession: the operation needs a session (a live or suspended
	// peer) and there is none, or the peer belongs to another endpoint.
	ErrNoSession = errors.New("transport: no session")

	// ErrWrongRole: a client-only operation on a server endpoint or the
	// reverse.
	ErrWrongRole = errors.New("transport: operation not available in this endpoint role")

	// ErrProtocol: the remote sent something well-formed that the protocol
	// forbids here (an Accept whose limits are out of the channel's
	// ranges, a resume Accept for another peer id or with other limits).
	ErrProtocol = errors.New("transport: protocol violation")

	// ErrIncompatible: a client cannot honour the limits its server's
	// Accept announced — its EndpointConfig.Channel sets a limit both ends
	// must share to another value, or a field of its own is out of range
	// under the server's MTU or max message. The message names each field
	// with both numbers (and wraps the ErrInvalidConfig error when a field
	// is out of range). The client told the server, which freed the
	// session at once.
	ErrIncompatible = errors.New("transport: incompatible with the server's limits")

	// ErrRandom: the configured random source failed. Secrets are never
	// derived from a partial read.
	ErrRandom = errors.New("transport: random source failed")

	// ErrPublished: an expvar variable of that name already exists.
	ErrPublished = errors.New("transport: expvar name already published")
)

// RejectError reports the server's Reject of a connection attempt or a
// resume. It matches ErrRejected with errors.Is.
type RejectError struct {
	Reason wire.RejectReason
}

// Error returns "transport: connection rejected: <reason>".
func (e *RejectError) Error() string { return ErrRejected.Error() + ": " + e.Reason.String() }

// Is reports whether target is ErrRejected.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }
