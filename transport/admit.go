package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport/token"
	"github.com/tickwire/tickwire/wire"
)

// Admission of a new client (docs/WIRE.md §9.4, §9.8, §14.7), after its
// cookie verified, in this order, each step refusing with its own Reject
// reason and leaving no state:
//
//	token    the connect token, if any (or required): one AEAD open at
//	         most (Verifier.Open), the server's address (CheckServer),
//	         the replay guard's verdict for this address (Check: no record)
//	hook     EndpointConfig.Admit: client id, user data, address
//	keys     the key exchange, with the token's key material in ikm
//	session  the Peer and its Channel; the token is bound (AdmitBinding)
//	         only at the client's first datagram that opens
//
// Binding late keeps an on-path copy of a token from locking out its real
// owner: the copy's handshake gets an Accept it cannot open (it lacks the
// token's keys), so it never sends a datagram that opens, and never binds.

// tokenServer is a server's connect-token state: the verifier, the
// address tokens must name, the replay guard it owns and the scratch
// Private that Open fills (wiped after each handshake).
type tokenServer struct {
	v     *token.Verifier
	addr  netip.AddrPort
	guard *token.ReplayGuard
	clock func() time.Time
	priv  token.Private
}

// newTokenServer sets up c for a server on local (nil when tokens are off).
func newTokenServer(c TokenConfig, local netip.AddrPort) (*tokenServer, error) {
	if c.Verifier == nil {
		return nil, nil
	}
	addr := c.Addr
	if !addr.IsValid() {
		addr = local
	}
	if !addr.IsValid() || addr.Addr().IsUnspecified() || addr.Port() == 0 {
		return nil, fmt.Errorf("%w: Tokens.Addr unset and the socket's address %v is not one a token can name: set it to the address clients reach this server at", ErrInvalidConfig, local)
	}
	g, err := token.NewReplayGuard(c.Guard)
	if err != nil {
		return nil, fmt.Errorf("%w: Tokens.Guard: %w", ErrInvalidConfig, err)
	}
	return &tokenServer{v: c.Verifier, addr: addr, guard: g, clock: c.Clock}, nil
}

// tokenRefusalOf maps a token package error to its counter and Reject
// reason.
func tokenRefusalOf(err error) (TokenRefusal, wire.RejectReason) {
	switch {
	case errors.Is(err, token.ErrExpired), errors.Is(err, token.ErrInvalidParams): // InvalidParams: a clock before 1970
		return TokenExpired, wire.RejectTokenExpired
	case errors.Is(err, token.ErrProtocol):
		return TokenProtocol, wire.RejectTokenProtocol
	case errors.Is(err, token.ErrWrongKey):
		return TokenWrongKey, wire.RejectTokenWrongKey
	case errors.Is(err, token.ErrTampered):
		return TokenTampered, wire.RejectTokenTampered
	case errors.Is(err, token.ErrNotForServer):
		return TokenNotForServer, wire.RejectTokenNotForServer
	case errors.Is(err, token.ErrBoundElsewhere):
		return TokenBoundElsewhere, wire.RejectTokenBound
	case errors.Is(err, token.ErrGuardFull):
		return TokenGuardFull, wire.RejectTokenGuardFull
	case errors.Is(err, token.ErrLifetime):
		return TokenLifetime, wire.RejectTokenLifetime
	}
	return TokenMalformed, wire.RejectTokenMalformed // ErrShort, ErrVersion, ErrMalformed
}

// refuseToken counts a refused token and rejects the proven address.
func (e *Endpoint) refuseToken(addr netip.AddrPort, nonce uint64, why TokenRefusal, reason wire.RejectReason) {
	e.stats.tokenRefusals[why]++
	e.rejectProven(addr, nonce, reason)
}

// checkToken runs the token step for the ConnectResponse r from the
// proven address addr. It returns the token's private part (in the
// endpoint's scratch: the caller wipes it) or nil for a client without
// one, and false when it refused.
func (e *Endpoint) checkToken(addr netip.AddrPort, r *wire.ConnectResponse) (*token.Private, bool) {
	ts := e.tok
	if r.ConnectToken == nil {
		if e.cfg.Tokens.Required {
			e.refuseToken(addr, r.Nonce, TokenRequired, wire.RejectTokenRequired)
			return nil, false
		}
		return nil, true
	}
	if ts == nil {
		e.refuseToken(addr, r.Nonce, TokenWrongKey, wire.RejectTokenWrongKey)
		return nil, false
	}
	wall := ts.clock()
	p := &ts.priv
	err := ts.v.Open(r.ConnectToken, wall, p)
	if err == nil {
		err = p.CheckServer(ts.addr)
	}
	if err == nil {
		err = ts.guard.Check(p.Binding(), addr, wall)
	}
	if err != nil {
		why, reason := tokenRefusalOf(err)
		p.Wipe()
		e.refuseToken(addr, r.Nonce, why, reason)
		return nil, false
	}
	e.stats.TokensVerified++
	return p, true
}

// admitHook runs EndpointConfig.Admit for the client at addr (tok: its
// token, or nil) and refuses it, counted, if the hook says no.
func (e *Endpoint) admitHook(addr netip.AddrPort, nonce uint64, tok *token.Private) bool {
	if e.cfg.Admit == nil {
		return true
	}
	req := AdmitRequest{Addr: addr}
	if tok != nil {
		req.Token, req.ClientID, req.UserData = true, tok.ClientID, tok.UserData()
	}
	err := e.cfg.Admit(req)
	if err == nil {
		return true
	}
	var code uint8
	var re *RefusedError
	if errors.As(err, &re) {
		code = re.Code
	}
	e.stats.AdmitRefused++
	e.rejectProven(addr, nonce, wire.RejectApp(code))
	return false
}

// bindToken binds p's connect token to p's address at its first datagram
// that opened — the client holds the token's keys — and ends every other
// session still waiting to bind the same token (copies presented from
// other addresses, which can never bind now) with
// wire.DisconnectTokenRefused: an O(MaxPeers) scan, once per session.
// false: the guard refused (another address bound it meanwhile, the guard
// filled up, the token expired), and p is ended the same way; the
// datagram goes no further.
func (e *Endpoint) bindToken(p *Peer) bool {
	p.tokenPending = false
	err := e.tok.guard.AdmitBinding(p.tokenBind, p.addr, e.tok.clock())
	if err == nil {
		e.stats.TokensBound++
		for _, q := range e.peers {
			if q != nil && q != p && q.tokenPending && q.tokenBind == p.tokenBind {
				q.tokenPending = false
				e.logPeer(slog.LevelInfo, "transport: a copy of a bound connect token; ending its session", q)
				e.end(q, wire.DisconnectTokenRefused)
			}
		}
		return true
	}
	e.stats.tokenRefusals[TokenBindFailed]++
	e.logPeer(slog.LevelWarn, "transport: connect token refused at bind; ending the session", p, slog.Any("err", err))
	_ = e.Disconnect(p, wire.DisconnectTokenRefused)
	return false
}

// ClientID returns the client id of the connect token the peer's session
// was admitted with (server), and false for a session without one. The
// token's user data goes only to EndpointConfig.Admit: keep what you need
// of it there.
func (p *Peer) ClientID() (uint64, bool) { return p.clientID, p.hasToken }

// tokenDetail is what a client knows of its connect token that explains
// the server's refusal reason (RejectError.Detail): empty for reasons
// that are not about the token.
func (e *Endpoint) tokenDetail(r wire.RejectReason) string {
	t := e.cfg.Token
	if r < wire.RejectTokenMalformed || r > wire.RejectTokenLifetime {
		return ""
	}
	if t == nil {
		if r == wire.RejectTokenRequired {
			return "EndpointConfig.Token is not set"
		}
		return ""
	}
	switch r {
	case wire.RejectTokenExpired, wire.RejectTokenLifetime:
		return fmt.Sprintf("the token expires at %v (unix %d)", t.Expires.UTC().Format(time.RFC3339), t.Expires.Unix())
	case wire.RejectTokenProtocol:
		return fmt.Sprintf("the token is for protocol 0x%x", t.ProtocolID)
	case wire.RejectTokenNotForServer:
		return fmt.Sprintf("the token names %d servers, %v %s", len(t.Servers), e.server, namedOrNot(t.Servers, e.server))
	case wire.RejectTokenMalformed, wire.RejectTokenTampered, wire.RejectTokenWrongKey:
		return fmt.Sprintf("a %d-byte sealed token", len(t.Sealed))
	}
	return ""
}

func namedOrNot(servers []netip.AddrPort, a netip.AddrPort) string {
	for _, s := range servers {
		if s == a {
			return "among them (the server knows itself by another address: TokenConfig.Addr)"
		}
	}
	return "not among them"
}
