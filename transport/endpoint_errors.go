package transport

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

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

	// ErrHandshakeTimeout: a client got no Accept within
	// EndpointConfig.HandshakeTimeout of its Dial. The error returned is a
	// *HandshakeTimeoutError (with the numbers), which matches it with
	// errors.Is and reports Timeout() == true, as a net.Error does.
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

	// ErrNoServerKey: Dial without EndpointConfig.ServerKey, the server's
	// public key the client pins, without a connect Token and without
	// InsecureCleartext. Set
	// ServerKey (Endpoint.PublicKey of an in-process server, or the key
	// `tickwire server` prints), or InsecureCleartext on both ends for a
	// LAN test.
	ErrNoServerKey = errors.New("transport: Dial needs EndpointConfig.ServerKey (the server's X25519 public key), a Token, or InsecureCleartext")

	// ErrPublished: an expvar variable of that name already exists.
	ErrPublished = errors.New("transport: expvar name already published")

	// ErrRefused is matched by every *RefusedError: the server's
	// admission hook (EndpointConfig.Admit) refused the client.
	ErrRefused = errors.New("transport: refused by the server's admission hook")
)

// RejectError reports the server's Reject of a connection attempt or a
// resume. It matches ErrRejected with errors.Is.
type RejectError struct {
	Reason wire.RejectReason
	// Detail, for a refused connect token, is what the client knows of
	// it: its expiry, its servers, its length (empty otherwise).
	Detail string
}

// Error returns "transport: connection rejected: <reason>", followed by
// "; <detail>" when there is one.
func (e *RejectError) Error() string {
	s := ErrRejected.Error() + ": " + e.Reason.String()
	if e.Detail != "" {
		s += "; " + e.Detail
	}
	return s
}

// RefusedError is the refusal of a client by the server's admission hook
// (EndpointConfig.Admit), with the application's Code, 0 to 127
// (wire.MaxAppCode). A hook returns one (Refuse) to refuse with a code;
// a client's Dial, Flush and Err return one when refused (it travels as
// a Reject reason of 128 + Code). It matches ErrRefused and ErrRejected
// with errors.Is.
type RefusedError struct {
	Code uint8
}

// Refuse returns the error an EndpointConfig.Admit hook returns to
// refuse a client with an application code (above 127: sent as 127).
func Refuse(code uint8) error { return &RefusedError{Code: code} }

// Error returns "transport: refused by the server's admission hook: code <n>".
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%v: code %d", ErrRefused, e.Code)
}

// Is reports whether target is ErrRefused or ErrRejected.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused || target == ErrRejected }

// Is reports whether target is ErrRejected.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

// HandshakeTimeoutError reports a client handshake that got no Accept
// within EndpointConfig.HandshakeTimeout: Flush, Err and DialContext return
// it. It matches ErrHandshakeTimeout with errors.Is and implements net.Error
// with Timeout() == true.
type HandshakeTimeoutError struct {
	Server    netip.AddrPort // the address dialled
	After     time.Duration  // how long the handshake ran, on the endpoint's clock
	Limit     time.Duration  // EndpointConfig.HandshakeTimeout
	Datagrams int            // handshake datagrams sent
	// Challenged: a Challenge arrived (the server is there and answered the
	// ConnectRequest) but no Accept followed.
	Challenged bool
}

// Error returns "transport: handshake timed out: no Accept from <server>
// after <after> (HandshakeTimeout <limit>); <n> handshake datagrams sent,
// <no Challenge came | a Challenge came>".
func (e *HandshakeTimeoutError) Error() string {
	heard := "no Challenge came"
	if e.Challenged {
		heard = "a Challenge came"
	}
	return fmt.Sprintf("%v: no Accept from %v after %v (HandshakeTimeout %v); %d handshake datagrams sent, %s",
		ErrHandshakeTimeout, e.Server, e.After, e.Limit, e.Datagrams, heard)
}

// Is reports whether target is ErrHandshakeTimeout.
func (e *HandshakeTimeoutError) Is(target error) bool { return target == ErrHandshakeTimeout }

// Timeout reports true: a deadline passed (net.Error).
func (e *HandshakeTimeoutError) Timeout() bool { return true }

// Temporary reports true, as os.ErrDeadlineExceeded does (net.Error; the
// method is deprecated there).
func (e *HandshakeTimeoutError) Temporary() bool { return true }

// contextError is the error DialContext returns when its context ends
// first: it wraps ctx.Err() (context.Canceled or context.DeadlineExceeded)
// and, for a deadline, reports Timeout() == true, as a net.Error does.
type contextError struct {
	msg string
	err error
}

func (e *contextError) Error() string   { return e.msg }
func (e *contextError) Unwrap() error   { return e.err }
func (e *contextError) Timeout() bool   { return errors.Is(e.err, context.DeadlineExceeded) }
func (e *contextError) Temporary() bool { return e.Timeout() }
