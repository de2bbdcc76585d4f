package transport

import (
	"encoding/json"
	"expvar"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// MalformedReason says why the endpoint dropped a datagram as malformed
// (EndpointStats.Malformed).
type MalformedReason uint8

// The malformed reasons.
const (
	// MalformedEmpty: a zero-byte datagram.
	MalformedEmpty MalformedReason = iota
	// MalformedOversize: larger than the largest MTU (wire limit
	// MaxMTU), possibly truncated by the socket.
	MalformedOversize
	// MalformedKind: the first byte is not a packet kind.
	MalformedKind
	// MalformedUnexpected: a packet kind this role never receives (a
	// Challenge at a server, a ConnectRequest at a client).
	MalformedUnexpected
	// MalformedShort: a handshake message cut short (wire.ErrShort).
	MalformedShort
	// MalformedEncoding: a handshake message that cannot be valid — wrong
	// magic, reserved flags, a token without its flag, non-zero padding,
	// a peer id above 253 (wire.ErrMalformed).
	MalformedEncoding
	// MalformedLimit: a well-formed handshake value beyond its limit (an
	// Accept whose announced limits are out of the channel's ranges;
	// wire.ErrTooLarge).
	MalformedLimit
	// MalformedSessionHeader: a session datagram shorter than its 9-byte
	// header.
	MalformedSessionHeader
	// MalformedChannel: an authenticated session datagram the channel
	// refused as undecodable (see ChannelStats.Malformed).
	MalformedChannel

	malformedReasons = iota
)

var malformedNames = [malformedReasons]string{
	MalformedEmpty:         "empty",
	MalformedOversize:      "oversize",
	MalformedKind:          "kind",
	MalformedUnexpected:    "unexpected kind",
	MalformedShort:         "short",
	MalformedEncoding:      "encoding",
	MalformedLimit:         "limit",
	MalformedSessionHeader: "session header",
	MalformedChannel:       "channel",
}

// String returns the reason's name.
func (r MalformedReason) String() string {
	if int(r) < malformedReasons {
		return malformedNames[r]
	}
	return fmt.Sprintf("MalformedReason(%d)", uint8(r))
}

// SealDropReason says why the endpoint dropped a sealed session datagram
// (docs/WIRE.md §13) of a session at its source address before any of it
// reached the channel (EndpointStats.SealDrops). Each is one of
// seal.Session.Open's refusals, except SealDropCleartext.
type SealDropReason uint8

// The seal drop reasons.
const (
	// SealDropShort: shorter than the 19 bytes of header and tag
	// (seal.ErrShort): truncated.
	SealDropShort SealDropReason = iota
	// SealDropMalformed: a sealed kind byte with a reserved bit set
	// (seal.ErrMalformed). Defence in depth: the dispatcher sends only
	// the kinds 0x80 and 0x81 to Open and drops the others as
	// Malformed(MalformedKind) first.
	SealDropMalformed
	// SealDropAuth: the tag did not verify — tampered, truncated, sealed
	// under another key (another session, a forgery), or a packet number
	// too far away to reconstruct (seal.ErrAuth). Costs one AEAD open.
	SealDropAuth
	// SealDropReplayed: a packet number already opened (seal.ErrReplayed).
	SealDropReplayed
	// SealDropTooOld: a packet number below the 8128-wide replay window
	// (seal.ErrTooOld): reordered beyond the window.
	SealDropTooOld
	// SealDropKeyPhase: the key phase of a key generation already
	// discarded (seal.ErrKeyPhase).
	SealDropKeyPhase
	// SealDropIntegrityLimit: the session reached its cipher's integrity
	// limit of forgeries (seal.ErrIntegrityLimit); the session is ended
	// with wire.DisconnectProtocolError.
	SealDropIntegrityLimit
	// SealDropCleartext: a cleartext session datagram (kind 0x06) at an
	// encrypted endpoint, or a sealed one at an InsecureCleartext
	// endpoint.
	SealDropCleartext

	sealDropReasons = iota
)

var sealDropNames = [sealDropReasons]string{
	SealDropShort:          "short",
	SealDropMalformed:      "malformed",
	SealDropAuth:           "auth",
	SealDropReplayed:       "replayed",
	SealDropTooOld:         "too old",
	SealDropKeyPhase:       "key phase",
	SealDropIntegrityLimit: "integrity limit",
	SealDropCleartext:      "cleartext",
}

// String returns the reason's name.
func (r SealDropReason) String() string {
	if int(r) < sealDropReasons {
		return sealDropNames[r]
	}
	return fmt.Sprintf("SealDropReason(%d)", uint8(r))
}

// TokenRefusal says why a server refused a connect token (docs/WIRE.md
// §9.6, §14): EndpointStats.TokenRefusals. Each but TokenBindFailed has its
// own Reject reason, which the client sees.
type TokenRefusal uint8

// The token refusal reasons.
const (
	// TokenMalformed: the sealed token does not parse — truncated, a bad
	// length field, an unknown version, bytes after it, or (an issuer's
	// bug) a private part that does not parse (token.ErrShort,
	// ErrVersion, ErrMalformed). wire.RejectTokenMalformed.
	TokenMalformed TokenRefusal = iota
	// TokenExpired: its expiry has passed on TokenConfig.Clock (or that
	// clock reads before 1970; token.ErrExpired). wire.RejectTokenExpired.
	TokenExpired
	// TokenProtocol: issued for another protocol id (token.ErrProtocol).
	TokenProtocol
	// TokenWrongKey: sealed under a fleet key the server does not hold,
	// or the server has no Verifier (token.ErrWrongKey).
	TokenWrongKey
	// TokenTampered: the AEAD tag did not verify (token.ErrTampered):
	// the one refusal that cost an AEAD open.
	TokenTampered
	// TokenNotForServer: the token names other servers than
	// TokenConfig.Addr (token.ErrNotForServer).
	TokenNotForServer
	// TokenBoundElsewhere: another client address bound the token first
	// (token.ErrBoundElsewhere).
	TokenBoundElsewhere
	// TokenGuardFull: the replay guard has no free slot (token.ErrGuardFull).
	TokenGuardFull
	// TokenRequired: TokenConfig.Required and the client sent no token.
	TokenRequired
	// TokenLifetime: the token expires further ahead than the guard's
	// MaxLifetime (token.ErrLifetime).
	TokenLifetime
	// TokenBindFailed: the token passed at the handshake, but binding it
	// at the client's first datagram failed (it expired or the guard
	// filled up since): the session is ended with
	// wire.DisconnectTokenRefused, no Reject. (Sessions holding a copy of
	// a token that another session bound are ended too, counted only in
	// Disconnects.)
	TokenBindFailed

	tokenRefusalReasons = iota
)

var tokenRefusalNames = [tokenRefusalReasons]string{
	TokenMalformed:      "malformed",
	TokenExpired:        "expired",
	TokenProtocol:       "protocol",
	TokenWrongKey:       "wrong key",
	TokenTampered:       "tampered",
	TokenNotForServer:   "not for server",
	TokenBoundElsewhere: "bound elsewhere",
	TokenGuardFull:      "guard full",
	TokenRequired:       "required",
	TokenLifetime:       "lifetime",
	TokenBindFailed:     "bind failed",
}

// String returns the reason's name.
func (r TokenRefusal) String() string {
	if int(r) < tokenRefusalReasons {
		return tokenRefusalNames[r]
	}
	return fmt.Sprintf("TokenRefusal(%d)", uint8(r))
}

// Array sizes of the per-reason counters: every named reason.
const (
	rejectReasons     = int(wire.RejectTokenLifetime) + 1
	disconnectReasons = int(wire.DisconnectTokenRefused) + 1
)

// EndpointStats are an endpoint's counters. Every datagram the endpoint
// reads is counted once under what became of it. Read them with
// Endpoint.Stats on the endpoint's goroutine (a struct copy), or through
// the expvar Endpoint.Publish registers.
type EndpointStats struct {
	// Socket traffic.
	DatagramsIn, BytesIn   uint64
	DatagramsOut, BytesOut uint64
	SendErrors             uint64 // datagrams the socket refused (skipped)
	Ticks                  uint64 // Flush calls

	// The loop's wake-ups (see Endpoint.NextDeadline): Waits counts Wait
	// calls (each a sleep, ended by a datagram, a Wake or its time-out);
	// DueRounds counts the rounds an event-driven Run started without
	// sleeping, something being due already; Reads counts the socket
	// reads Poll issued (TryReadBatch calls) and EmptyReads those that
	// found nothing.
	Waits, DueRounds  uint64
	Reads, EmptyReads uint64

	// Server handshake.
	ConnectRequests   uint64 // well-formed requests within the rate limits
	ConnectResponses  uint64 // well-formed responses within the rate limits
	Challenges        uint64
	Accepts           uint64                // new sessions and resumes
	AcceptResends     uint64                // Accept sent again for a duplicate ConnectResponse
	rejects           [rejectReasons]uint64 // by wire.RejectReason: Rejects
	RateLimited       uint64                // handshake datagrams over their source's bucket
	RateLimitedGlobal uint64                // handshake datagrams over the global budget
	BadCookie         uint64                // cookie with a wrong tag or unknown bucket
	ExpiredCookie     uint64                // cookie from a bucket older than the two accepted
	ForeignVersion    uint64                // handshake from another protocol version
	ReplySuppressed   uint64                // replies to unproven addresses withheld as too large (always 0)
	RandomFailures    uint64                // handshakes dropped because Rand failed

	// Client handshake.
	HandshakeSends uint64 // ConnectRequest and ConnectResponse datagrams sent
	StrayReplies   uint64 // replies from another address or for another nonce
	// AcceptsRefused counts Accepts this client could not honour — its
	// config sets a shared limit otherwise, or the server's limits leave a
	// field of it out of range — and answered with a Disconnect
	// (wire.DisconnectIncompatible) in the new session.
	AcceptsRefused uint64

	// Outbox (Endpoint.Send from other goroutines).
	OutboxSent uint64 // messages moved from the outbox into their peer's channel
	// OutboxDropped counts outbox messages that never reached a channel:
	// their session ended first, the channel refused them for a reason
	// other than back-pressure, or the endpoint was closed with them
	// queued. A full channel is back-pressure, not a drop: the message
	// waits in the outbox for a later Flush.
	OutboxDropped uint64

	// Handshake keys. AcceptForged (client): Accepts with the right nonce
	// whose sealed body did not open — not made by the holder of the
	// pinned server key — ignored while the handshake goes on.
	// ResumeProofFailed (server): resumes naming a live session's token
	// whose proof of its secret did not verify (refused, the session
	// untouched). KeyExchangeFailed: X25519 with a peer's key of low
	// order.
	AcceptForged      uint64
	ResumeProofFailed uint64
	KeyExchangeFailed uint64

	// Connect tokens and admission (server). TokensVerified: tokens that
	// opened, named this server and were not bound elsewhere; TokensBound:
	// those the replay guard bound at the client's first datagram; the
	// refused by reason: TokenRefusals. AdmitRefused: clients the
	// admission hook refused (server), or refusals by the server's hook
	// received (client); they are not in Rejects.
	TokensVerified uint64
	TokensBound    uint64
	tokenRefusals  [tokenRefusalReasons]uint64
	AdmitRefused   uint64

	// Sealed session datagrams (docs/WIRE.md §13): Sealed sent, Opened
	// authenticated and decrypted; the refused by reason: SealDrops.
	Sealed, Opened uint64
	sealDrops      [sealDropReasons]uint64
	// KeyUpdates counts the key generations the endpoint's sessions moved
	// to, sending and receiving.
	KeyUpdates uint64

	// Session datagrams dropped before they reach a channel (S-E2).
	UnknownSource  uint64 // no session at the source address
	WrongSecret    uint64 // session at the address, wrong secret (InsecureCleartext)
	PeerOverBudget uint64 // authenticated, past the peer's PeerDatagramsPerPoll in one Poll

	malformed [malformedReasons]uint64 // by MalformedReason: Malformed

	// Sessions.
	Connects    uint64
	Suspends    uint64
	Resumes     uint64
	Timeouts    uint64 // idle time-outs (suspended or ended)
	Stalled     uint64 // sessions ended because a reliable stream stalled (Config.StallTimeout)
	Expired     uint64 // suspended sessions freed at the end of their grace
	Superseded  uint64
	disconnects [disconnectReasons]uint64 // by wire.DisconnectReason: Disconnects
	Peers       int                       // live sessions (connected or closing)
	Suspended   int                       // suspended sessions held for resumption
}

// Rejects counts the Rejects sent (server) or received (client) with
// reason r; reasons this build does not name count under 0.
func (s EndpointStats) Rejects(r wire.RejectReason) uint64 {
	if int(r) >= rejectReasons {
		return 0
	}
	return s.rejects[r]
}

// RejectsTotal counts every Reject sent (server) or received (client).
func (s EndpointStats) RejectsTotal() uint64 { return sum(s.rejects[:]) }

// Malformed counts the datagrams dropped as malformed for reason r.
func (s EndpointStats) Malformed(r MalformedReason) uint64 {
	if int(r) >= malformedReasons {
		return 0
	}
	return s.malformed[r]
}

// MalformedTotal counts every datagram dropped as malformed.
func (s EndpointStats) MalformedTotal() uint64 { return sum(s.malformed[:]) }

// SealDrops counts the sealed session datagrams dropped for reason r,
// before any of them reached a channel.
func (s EndpointStats) SealDrops(r SealDropReason) uint64 {
	if int(r) >= sealDropReasons {
		return 0
	}
	return s.sealDrops[r]
}

// SealDropsTotal counts every sealed session datagram dropped.
func (s EndpointStats) SealDropsTotal() uint64 { return sum(s.sealDrops[:]) }

// TokenRefusals counts the connect tokens refused for reason r.
func (s EndpointStats) TokenRefusals(r TokenRefusal) uint64 {
	if int(r) >= tokenRefusalReasons {
		return 0
	}
	return s.tokenRefusals[r]
}

// TokenRefusalsTotal counts every connect token refused.
func (s EndpointStats) TokenRefusalsTotal() uint64 { return sum(s.tokenRefusals[:]) }

// Disconnects counts the sessions that ended with reason r; reasons this
// build does not name count under 0.
func (s EndpointStats) Disconnects(r wire.DisconnectReason) uint64 {
	if int(r) >= disconnectReasons {
		return 0
	}
	return s.disconnects[r]
}

// DisconnectsTotal counts every session that ended.
func (s EndpointStats) DisconnectsTotal() uint64 { return sum(s.disconnects[:]) }

func sum(v []uint64) (n uint64) {
	for _, x := range v {
		n += x
	}
	return n
}

// MarshalJSON encodes the stats as an object: every counter field, and
// the per-reason counters as objects keyed by the reason's name (only
// reasons with a non-zero count), as an expvar published with
// Endpoint.Publish shows them. Cost: allocates; for monitoring, not the
// datagram path.
func (s EndpointStats) MarshalJSON() ([]byte, error) {
	type fields EndpointStats // the exported fields, without this method
	byName := func(n int, count func(i int) uint64, name func(i int) string) map[string]uint64 {
		m := map[string]uint64{}
		for i := range n {
			if c := count(i); c != 0 {
				m[name(i)] = c
			}
		}
		return m
	}
	return json.Marshal(struct {
		fields
		Rejects       map[string]uint64
		Malformed     map[string]uint64
		Disconnects   map[string]uint64
		SealDrops     map[string]uint64
		TokenRefusals map[string]uint64
	}{
		fields(s),
		byName(rejectReasons, func(i int) uint64 { return s.rejects[i] }, func(i int) string { return wire.RejectReason(i).String() }),
		byName(malformedReasons, func(i int) uint64 { return s.malformed[i] }, func(i int) string { return MalformedReason(i).String() }),
		byName(disconnectReasons, func(i int) uint64 { return s.disconnects[i] }, func(i int) string { return wire.DisconnectReason(i).String() }),
		byName(sealDropReasons, func(i int) uint64 { return s.sealDrops[i] }, func(i int) string { return SealDropReason(i).String() }),
		byName(tokenRefusalReasons, func(i int) uint64 { return s.tokenRefusals[i] }, func(i int) string { return TokenRefusal(i).String() }),
	})
}

// PeerSnapshot is one peer in a published stats snapshot.
type PeerSnapshot struct {
	ID      uint8
	Addr    netip.AddrPort
	State   PeerState
	Channel ChannelStats
}

// StatsSnapshot is what an expvar published by Endpoint.Publish reports.
type StatsSnapshot struct {
	At       time.Duration // endpoint time of the snapshot
	Endpoint EndpointStats
	Peers    []PeerSnapshot
}

// statsBoard holds the latest snapshot for expvar readers. The endpoint
// goroutine writes it under mu at most once per StatsInterval; readers
// copy it under mu. It is separate from the Endpoint so that a published
// variable does not keep a closed endpoint alive.
type statsBoard struct {
	mu   sync.Mutex
	snap StatsSnapshot
}

func (b *statsBoard) value() any {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.snap
	s.Peers = append([]PeerSnapshot(nil), b.snap.Peers...)
	return s
}

// Publish registers an expvar variable called name (an expvar.Func) that
// reports a StatsSnapshot: endpoint totals and every session's channel
// counters. The snapshot is refreshed by Flush at most once per
// EndpointConfig.StatsInterval, on the endpoint's goroutine, and copied
// under a mutex when read: readers on any goroutine (an HTTP handler) see a
// consistent snapshot up to one interval old, and the tick loop pays one
// uncontended lock and a copy per interval, allocation-free once its peer
// slice has grown. expvar cannot unregister a name: after Close the
// variable keeps reporting the last snapshot. Publish fails with
// ErrPublished if name is taken. Call it on the endpoint's goroutine.
func (e *Endpoint) Publish(name string) error {
	if expvar.Get(name) != nil {
		return fmt.Errorf("%w: %q", ErrPublished, name)
	}
	b := &statsBoard{}
	b.snap.Peers = make([]PeerSnapshot, 0, e.cfg.MaxPeers)
	e.board = b
	e.refreshBoard(e.now)
	expvar.Publish(name, expvar.Func(b.value))
	return nil
}

// refreshBoard copies the current counters to the published snapshot.
func (e *Endpoint) refreshBoard(now time.Duration) {
	b := e.board
	b.mu.Lock()
	defer b.mu.Unlock()
	b.snap.At = now
	b.snap.Endpoint = e.Stats()
	b.snap.Peers = b.snap.Peers[:0]
	e.eachPeer(func(p *Peer) {
		b.snap.Peers = append(b.snap.Peers, PeerSnapshot{ID: p.id, Addr: p.addr, State: p.state, Channel: p.ch.Stats()})
	})
	e.boardAt = now
}
