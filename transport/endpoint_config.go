package transport

import (
	"crypto/ecdh"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/token"
	"github.com/tickwire/tickwire/wire"
)

// Defaults applied by EndpointConfig for zero-valued fields, and limits.
const (
	DefaultMaxPeers             = 64
	DefaultIdleTimeout          = 10 * time.Second
	DefaultResumeGrace          = 30 * time.Second
	DefaultResumeAfter          = 2 * time.Second
	DefaultDisconnectRepeats    = 4
	DefaultCookiePeriod         = 5 * time.Second
	DefaultHandshakeRetry       = 250 * time.Millisecond
	DefaultHandshakeRetryMax    = 2 * time.Second
	DefaultHandshakeTimeout     = 5 * time.Second
	DefaultHandshakeRate        = 4
	DefaultHandshakeBurst       = 8
	DefaultGlobalHandshakeRate  = 2000
	DefaultGlobalHandshakeBurst = 256
	DefaultRateLimitSlots       = 4096
	DefaultMaxDatagramsPerPoll  = 4096
	DefaultStatsInterval        = time.Second
	DefaultOutboxMessages       = 1024
	DefaultOutboxBytes          = 1 << 20

	// MaxPeersLimit is the most peers a server can hold: one per peer id
	// 0..wire.MaxPeerID (253). Ids 254 and 255 are provenance markers.
	MaxPeersLimit = int(wire.MaxPeerID) + 1

	// NoResume, as EndpointConfig.ResumeGrace or ResumeAfter, turns that
	// part of session resumption off.
	NoResume time.Duration = -1
)

// EndpointConfig tunes an Endpoint. The zero value means every default;
// each field says its default and range, and which role (server, client)
// reads it. Validate reports the first field out of range; Listen and Dial
// call it. A config is a plain value: copies are independent (Rand, the
// keys, Token, Tokens.Verifier and Admit are shared by reference).
type EndpointConfig struct {
	// Channel configures every peer's Channel. The limits both ends of a
	// session must share — MTU, MaxMessageSize, ReliableBytes,
	// ReliableWindow, MaxPartial, OrderedStreams and SequencedStreams —
	// are the server's: a server announces its own (defaults applied) in
	// Accept, and a client takes each one it left at zero from the Accept;
	// one it set must equal the server's. Every other field is the
	// client's own, with its zero-valued defaults derived from the
	// server's limits (UnreliableBytes from the server's MaxMessageSize,
	// say), never from the client's default MTU. A client that cannot
	// honour an Accept — a shared limit set otherwise, or a field of its
	// own out of range under the server's limits — answers with a
	// Disconnect (wire.DisconnectIncompatible) in the new session, so the
	// server frees it at once, and its Flush and Err return an error
	// wrapping ErrIncompatible that names the fields and both numbers. So
	// both ends size fragmenters, assemblers and reliable windows alike
	// (S-C3). After the Accept, a client's Endpoint.Config reports the
	// channel config it adopted.
	Channel Config

	// MaxPeers (server) caps the sessions held at once, live or suspended.
	// The next client is refused with RejectServerFull before any state is
	// created (S-E5). Default 64; range [1, 254] — one per peer id 0..253;
	// more is an error wrapping ErrInvalidConfig and ErrPeerID (S-E4).
	MaxPeers int

	// IdleTimeout (both) is how long a peer may send nothing before it is
	// reaped: the application gets OnSuspend or OnDisconnect with
	// wire.DisconnectTimeout, and the peer, best effort, a Disconnect frame
	// with that reason (S-E6). Channels send a keep-alive after
	// KeepAliveInterval (250 ms) of silence, so a live peer is never idle.
	// Default 10 s; range [4 × KeepAliveInterval, 1 h]. On a server, a
	// connect token's Timeout replaces it for the session the token admits
	// (TokenConfig).
	IdleTimeout time.Duration

	// ResumeGrace (server) is how long a timed-out session is kept,
	// suspended, so its client can resume it with its session token (same
	// peer id, channel and streams; S-E7). A client keeps trying to resume
	// for IdleTimeout + ResumeGrace of silence, so give both ends the same
	// value. Default 30 s; NoResume (−1) frees timed-out sessions at once;
	// range [−1, 1 h].
	ResumeGrace time.Duration

	// ResumeAfter (client) is how long the server may stay silent before
	// the client suspends the session (OnSuspend) and starts resuming it
	// on its current socket — the path, or the client's public address,
	// probably changed. Default 2 s, or IdleTimeout/2 if that is less;
	// NoResume (−1) disables automatic resumption (Endpoint.Resume still
	// works); range [−1, IdleTimeout).
	ResumeAfter time.Duration

	// DisconnectRepeats (both) is how many Flushes carry the Disconnect
	// frame of an orderly Endpoint.Disconnect, against loss, before the
	// session is removed. Default 4; range [1, 64].
	DisconnectRepeats int

	// CookiePeriod (server) is the length of a cookie time bucket. The
	// cookie key rotates every period and the current and previous
	// buckets are accepted, so a Challenge is good for one to two periods.
	// Default 5 s; range [100 ms, 10 min].
	CookiePeriod time.Duration

	// HandshakeRetry and HandshakeRetryMax (client) bound the re-send
	// interval of a handshake datagram: it starts at HandshakeRetry and
	// doubles on every re-send up to HandshakeRetryMax. Defaults 250 ms
	// and 2 s; range [10 ms, 10 s], Max ≥ Retry.
	HandshakeRetry    time.Duration
	HandshakeRetryMax time.Duration

	// HandshakeTimeout (client) is how long, on the endpoint's clock from
	// Dial's now, the handshake may go without an Accept before the client
	// gives up with a *HandshakeTimeoutError (ErrHandshakeTimeout; S-E1),
	// whatever the re-send schedule. The first Flush at or after the
	// deadline reports it. With the default intervals 5 s is 5 datagrams
	// (at 0, 0.25, 0.75, 1.75 and 3.75 s). Default 5 s; range [10 ms, 1 h].
	// A resume keeps trying until the session's horizon instead.
	HandshakeTimeout time.Duration

	// HandshakeRate and HandshakeBurst (server) are the per-source token
	// bucket for handshake datagrams (ConnectRequest, ConnectResponse): a
	// source (an IPv4 address, an IPv6 /64) may send HandshakeBurst at
	// once and HandshakeRate per second after that; the rest are dropped
	// and counted, unanswered. Buckets live in a fixed table of
	// RateLimitSlots slots indexed by a keyed hash of the source, so a
	// flood of distinct sources costs no memory. Defaults 4/s and 8;
	// ranges (0, 1e6] and [1, 1e6].
	HandshakeRate  float64
	HandshakeBurst int

	// GlobalHandshakeRate and GlobalHandshakeBurst (server) are the budget
	// for all handshake datagrams together, which caps the HMAC work and
	// the replies a flood of spoofed sources can cause. Defaults 2000/s and
	// 256; ranges (0, 1e9] and [1, 1e9].
	GlobalHandshakeRate  float64
	GlobalHandshakeBurst int

	// RateLimitSlots (server) is the size of the per-source bucket table.
	// Default 4096; a power of two in [16, 1<<20]. Memory: 8 bytes a slot.
	RateLimitSlots int

	// MaxDatagramsPerPoll (both) caps the datagrams one Poll reads, so a
	// flood cannot keep the tick loop from flushing; the rest wait in the
	// socket for the next Poll. Default 4096; range [64, 1<<20].
	MaxDatagramsPerPoll int

	// PeerDatagramsPerPoll (server) caps the session datagrams of one peer
	// that one Poll hands to its channel, so a peer that floods its
	// session cannot take the tick's work from the others: the peer's
	// further datagrams in that Poll are dropped after the secret check
	// (which a spoofer cannot pass, so it cannot spend a real peer's
	// budget) and counted (PeerOverBudget); its reliable traffic recovers
	// them as losses. Default MaxDatagramsPerPoll/4 (1024); range [32,
	// MaxDatagramsPerPoll]. A peer Flushing every millisecond at the full
	// burst of 32 sends about 530 per 60 Hz tick.
	PeerDatagramsPerPoll int

	// StatsInterval (both) is how often Flush refreshes the snapshot an
	// expvar published with Endpoint.Publish reports. Default 1 s; range
	// [1 ms, 1 h].
	StatsInterval time.Duration

	// OutboxMessages and OutboxBytes (both) bound the outbox that
	// Endpoint.Send fills from other goroutines and the next Flush drains
	// into the peers' channels: at most OutboxMessages messages of
	// OutboxBytes payload bytes in all wait at once; Send refuses more with
	// an error wrapping ErrQueueFull. Defaults 1024 and 1 MiB; ranges
	// [1, 1<<20] and [1 KiB, 1 GiB]. Memory: grows on use to what is held
	// at the peak, then is reused.
	OutboxMessages int
	OutboxBytes    int

	// Logger (both), if set, receives the endpoint's lifecycle events:
	// connect, suspend, resume and disconnect (with the reason), rejects
	// of proven addresses and of this client, a handshake time-out, a
	// stalled session, an Accept refused as incompatible, and socket
	// errors (the first of a kind). Never one record per datagram: a flood
	// of unproven handshakes logs nothing. Records are Info for the
	// session lifecycle, Warn for failures of one session, Error for the
	// socket. Default nil: silent, and the event paths skip the logging
	// entirely.
	Logger *slog.Logger

	// Clock (both) is the endpoint's clock as Run, DialContext and
	// Endpoint.Now read it: a monotonic duration from any origin. Poll,
	// Flush and Dial still take now from the caller; pass them this
	// clock's readings (or one clock of your own throughout) — an
	// endpoint's time must never go backwards. Default Now (time since the
	// package was initialised, on the monotonic clock).
	Clock func() time.Duration

	// Rand is the source of handshake nonces, cookie and token keys,
	// session tokens and first seqs. Default crypto/rand.Reader. Tests
	// inject a seeded generator to be deterministic; production code must
	// leave it nil or use a cryptographic source, since the security of
	// cookies and tokens rests on it. Key material — ephemeral X25519
	// keys, the server randomness of every session secret, a generated
	// PrivateKey — always comes from crypto/rand, whatever Rand is, so
	// that no seeded or restarted generator can make two sessions share
	// keys (docs/WIRE.md §13.8).
	Rand io.Reader

	// PrivateKey (server) is the server's static X25519 key
	// (ecdh.X25519()): the handshake proves to every client that the
	// server holds it (docs/WIRE.md §9). Clients pin its public key
	// (ServerKey): give them Endpoint.PublicKey, or keep the key in a file
	// (`tickwire server --key`). Default: Listen generates a fresh one, good
	// for an in-process client or a server whose key is logged at start.
	// It must be an X25519 key.
	PrivateKey *ecdh.PrivateKey
	// ServerKey (client) is the server's pinned static public key
	// (ecdh.X25519()). A client accepts only an Accept made with its
	// private key, so an on-path attacker cannot stand in for the server.
	// Required unless InsecureCleartext or a Token: Dial without any of
	// them fails with ErrNoServerKey.
	ServerKey *ecdh.PublicKey
	// Token (client) is a connect token from the game's backend (decoded
	// with token.Token.UnmarshalBinary). The client presents its sealed
	// part (Token.Sealed) in its ConnectResponse and mixes its 64 bytes
	// of key material into the session's keys (docs/WIRE.md §9.8), so a
	// server of the fleet that cannot open the token cannot complete the
	// handshake. With a Token, ServerKey is optional: the token's keys,
	// which only the backend and the fleet's servers can read, then
	// authenticate the server on their own — any holder of the fleet key
	// could stand in for it, the netcode trust model; pin ServerKey too
	// to trust only that server's static key. A resume does not present
	// the token again: it re-keys from the session's secret. The Token is
	// shared, not copied, by copies of the config; the endpoint only reads
	// it. Default nil: no token.
	Token *token.Token
	// Tokens (server) turns on connect-token admission (docs/WIRE.md §9,
	// §14). Zero: off — a ConnectResponse that carries a token is refused
	// with wire.RejectTokenWrongKey.
	Tokens TokenConfig
	// Admit (server), if set, decides whether to admit each client whose
	// cookie (and token, if any) verified, before the server does any
	// key exchange or keeps any state for it: return nil to admit, or an
	// error to refuse — Refuse(code) to send the client an application
	// code 0–127 (wire.MaxAppCode; Dial then fails with a *RefusedError
	// carrying it), any other error refuses with code 0. A refused client
	// leaves no state on the server (StateSize), and costs it what the
	// cookie and the token cost, and the hook's own time. It runs on the
	// endpoint's goroutine, inside Poll, once per admission attempt (not
	// for a resume, nor for a re-sent ConnectResponse): keep it fast and
	// non-blocking, and do not call the endpoint's Poll, Flush or Close
	// from it. The AdmitRequest's UserData is valid only during the
	// call. Default nil: admit everyone who gets this far.
	Admit func(AdmitRequest) error
	// Cipher (client) is the AEAD that seals the session's datagrams:
	// seal.AES128GCM (the zero value, the default; hardware-accelerated on
	// amd64 and arm64) or seal.ChaCha20Poly1305 (for CPUs without AES
	// instructions). The client asks for it in its ConnectResponse; the
	// server takes the client's choice, so a server ignores this field.
	Cipher seal.Suite
	// InsecureCleartext (both) turns encryption off: session datagrams
	// travel in the cleartext format of docs/WIRE.md §4, authenticated only
	// by an 8-byte session secret that an on-path attacker reads, and the
	// server is not authenticated (no ServerKey needed). For LAN tests and
	// debugging with a packet capture only; never the default. Both ends
	// must set it alike: a server refuses the other kind of client with
	// wire.RejectCleartext.
	InsecureCleartext bool
}

// TokenConfig is a server's connect-token admission (EndpointConfig.Tokens):
// each ConnectResponse carrying a token, once its cookie verified, is
// opened with Verifier (at most one AEAD open), must name Addr and must not
// be bound to another client address; its key material enters the session
// keys, and the replay guard binds it to the client's address once the
// client's first session datagram opens under those keys (docs/WIRE.md
// §14.7). Every refusal is a Reject with its own reason, counted in
// EndpointStats.TokenRefusals. The zero value turns tokens off. A
// token's Timeout, when not 0, is the idle time-out of the session it
// admits once the token is bound (in place of IdleTimeout, clamped to
// IdleTimeout's range [4×KeepAliveInterval, 1 h]); a client holding the
// token tries to resume for at least that long plus its ResumeGrace. A
// Timeout below the client's ResumeAfter (2 s by default) ends a session
// before its client tries to resume when the server has no ResumeGrace.
type TokenConfig struct {
	// Verifier opens the sealed tokens: the fleet keys and the protocol id
	// (token.NewVerifier). nil: tokens off. Shared, not copied, by copies
	// of the config (it is safe for concurrent use).
	Verifier *token.Verifier
	// Addr is this server's address as the backend names it in tokens
	// (token.Private.CheckServer). Default: the socket's local address;
	// Listen fails if that is unspecified (0.0.0.0, ::) and Addr unset.
	Addr netip.AddrPort
	// Required refuses every new client without a token
	// (wire.RejectTokenRequired). Resumes need no token either way. It
	// needs a Verifier.
	Required bool
	// Guard sizes the server's replay guard (token.GuardConfig; zero:
	// 16384 tokens, about 2.4 MiB, allocated at Listen; MaxLifetime an
	// hour). The Endpoint owns its guard.
	Guard token.GuardConfig
	// Clock reads the wall clock that token expiries are checked against
	// (unix seconds). Default time.Now; tests inject a fixed time.
	Clock func() time.Time
}

// AdmitRequest is what EndpointConfig.Admit sees of a client asking to be
// admitted. Addr is proven (the cookie verified), and a token's fields
// are its backend's word (it verified, names this server and is not bound
// elsewhere).
type AdmitRequest struct {
	// Addr is the client's address.
	Addr netip.AddrPort
	// Token reports whether the client presented a connect token; without
	// one ClientID is 0 and UserData empty.
	Token bool
	// ClientID is the token's client id.
	ClientID uint64
	// UserData is the token's user data (at most 256 bytes): a window into
	// the endpoint's scratch, valid only during the Admit call.
	UserData []byte
}

// WithDefaults returns c with every zero field replaced by its default: the
// config the constructor runs with.
func (c EndpointConfig) WithDefaults() EndpointConfig {
	c.Channel = c.Channel.WithDefaults()
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defInt(&c.MaxPeers, DefaultMaxPeers)
	defDur(&c.IdleTimeout, DefaultIdleTimeout)
	defDur(&c.ResumeGrace, DefaultResumeGrace)
	defDur(&c.ResumeAfter, min(DefaultResumeAfter, c.IdleTimeout/2))
	defInt(&c.DisconnectRepeats, DefaultDisconnectRepeats)
	defDur(&c.CookiePeriod, DefaultCookiePeriod)
	defDur(&c.HandshakeRetry, DefaultHandshakeRetry)
	defDur(&c.HandshakeRetryMax, DefaultHandshakeRetryMax)
	defDur(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	if c.HandshakeRate == 0 {
		c.HandshakeRate = DefaultHandshakeRate
	}
	defInt(&c.HandshakeBurst, DefaultHandshakeBurst)
	if c.GlobalHandshakeRate == 0 {
		c.GlobalHandshakeRate = DefaultGlobalHandshakeRate
	}
	defInt(&c.GlobalHandshakeBurst, DefaultGlobalHandshakeBurst)
	defInt(&c.RateLimitSlots, DefaultRateLimitSlots)
	defInt(&c.MaxDatagramsPerPoll, DefaultMaxDatagramsPerPoll)
	defInt(&c.PeerDatagramsPerPoll, max(c.MaxDatagramsPerPoll/4, 32))
	defDur(&c.StatsInterval, DefaultStatsInterval)
	defInt(&c.OutboxMessages, DefaultOutboxMessages)
	defInt(&c.OutboxBytes, DefaultOutboxBytes)
	if c.Clock == nil {
		c.Clock = Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Tokens.Clock == nil {
		c.Tokens.Clock = time.Now
	}
	c.Tokens.Guard = c.Tokens.Guard.WithDefaults()
	return c
}

// Validate reports the first field out of range, after defaults are
// applied, as an error wrapping ErrInvalidConfig (and ErrPeerID for
// MaxPeers above 254). It checks Channel too.
func (c EndpointConfig) Validate() error {
	if err := c.Channel.Validate(); err != nil {
		return fmt.Errorf("Channel: %w", err)
	}
	c = c.WithDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case uint64(c.Channel.ReliableBytes) > math.MaxUint32: // negative: refused by Channel.Validate above
		return bad("Channel.ReliableBytes %d above %d (Accept carries it as a u32)", c.Channel.ReliableBytes, uint32(math.MaxUint32))
	case uint64(c.Channel.MaxPartial) > math.MaxUint32:
		return bad("Channel.MaxPartial %d above %d (Accept carries it as a u32)", c.Channel.MaxPartial, uint32(math.MaxUint32))
	case c.MaxPeers > MaxPeersLimit:
		return fmt.Errorf("%w: MaxPeers %d above %d (ids 0..%d): %w",
			ErrInvalidConfig, c.MaxPeers, MaxPeersLimit, wire.MaxPeerID, ErrPeerID)
	case c.MaxPeers < 1:
		return bad("MaxPeers %d below 1", c.MaxPeers)
	case c.IdleTimeout < 4*KeepAliveInterval || c.IdleTimeout > time.Hour:
		return bad("IdleTimeout %v not in [%v, 1h]", c.IdleTimeout, 4*KeepAliveInterval)
	case c.ResumeGrace < NoResume || c.ResumeGrace > time.Hour:
		return bad("ResumeGrace %v not in [-1, 1h]", c.ResumeGrace)
	case c.ResumeAfter < NoResume || c.ResumeAfter >= c.IdleTimeout:
		return bad("ResumeAfter %v not in [-1, IdleTimeout %v)", c.ResumeAfter, c.IdleTimeout)
	case c.DisconnectRepeats < 1 || c.DisconnectRepeats > 64:
		return bad("DisconnectRepeats %d not in [1, 64]", c.DisconnectRepeats)
	case c.CookiePeriod < 100*time.Millisecond || c.CookiePeriod > 10*time.Minute:
		return bad("CookiePeriod %v not in [100ms, 10m]", c.CookiePeriod)
	case c.HandshakeRetry < 10*time.Millisecond || c.HandshakeRetry > 10*time.Second:
		return bad("HandshakeRetry %v not in [10ms, 10s]", c.HandshakeRetry)
	case c.HandshakeRetryMax < c.HandshakeRetry || c.HandshakeRetryMax > 10*time.Second:
		return bad("HandshakeRetryMax %v not in [HandshakeRetry %v, 10s]", c.HandshakeRetryMax, c.HandshakeRetry)
	case c.HandshakeTimeout < 10*time.Millisecond || c.HandshakeTimeout > time.Hour:
		return bad("HandshakeTimeout %v not in [10ms, 1h]", c.HandshakeTimeout)
	case !(c.HandshakeRate > 0 && c.HandshakeRate <= 1e6):
		return bad("HandshakeRate %v not in (0, 1e6]", c.HandshakeRate)
	case c.HandshakeBurst < 1 || c.HandshakeBurst > 1e6:
		return bad("HandshakeBurst %d not in [1, 1e6]", c.HandshakeBurst)
	case !(c.GlobalHandshakeRate > 0 && c.GlobalHandshakeRate <= 1e9):
		return bad("GlobalHandshakeRate %v not in (0, 1e9]", c.GlobalHandshakeRate)
	case c.GlobalHandshakeBurst < 1 || c.GlobalHandshakeBurst > 1e9:
		return bad("GlobalHandshakeBurst %d not in [1, 1e9]", c.GlobalHandshakeBurst)
	case c.RateLimitSlots < 16 || c.RateLimitSlots > 1<<20 || c.RateLimitSlots&(c.RateLimitSlots-1) != 0:
		return bad("RateLimitSlots %d not a power of two in [16, 1<<20]", c.RateLimitSlots)
	case c.MaxDatagramsPerPoll < 64 || c.MaxDatagramsPerPoll > 1<<20:
		return bad("MaxDatagramsPerPoll %d not in [64, 1<<20]", c.MaxDatagramsPerPoll)
	case c.PeerDatagramsPerPoll < 32 || c.PeerDatagramsPerPoll > c.MaxDatagramsPerPoll:
		return bad("PeerDatagramsPerPoll %d not in [32, MaxDatagramsPerPoll %d]", c.PeerDatagramsPerPoll, c.MaxDatagramsPerPoll)
	case c.StatsInterval < time.Millisecond || c.StatsInterval > time.Hour:
		return bad("StatsInterval %v not in [1ms, 1h]", c.StatsInterval)
	case c.OutboxMessages < 1 || c.OutboxMessages > 1<<20:
		return bad("OutboxMessages %d not in [1, 1<<20]", c.OutboxMessages)
	case c.OutboxBytes < 1<<10 || c.OutboxBytes > 1<<30:
		return bad("OutboxBytes %d not in [1 KiB, 1 GiB]", c.OutboxBytes)
	case c.Cipher > seal.ChaCha20Poly1305:
		return bad("Cipher %d is neither seal.AES128GCM (0) nor seal.ChaCha20Poly1305 (1)", uint8(c.Cipher))
	case c.PrivateKey != nil && c.PrivateKey.Curve() != ecdh.X25519():
		return bad("PrivateKey on %v, want an X25519 key", c.PrivateKey.Curve())
	case c.ServerKey != nil && c.ServerKey.Curve() != ecdh.X25519():
		return bad("ServerKey on %v, want an X25519 key", c.ServerKey.Curve())
	case c.Tokens.Required && c.Tokens.Verifier == nil:
		return bad("Tokens.Required without a Tokens.Verifier")
	case c.Token != nil && (len(c.Token.Sealed) < token.MinSealedLen || len(c.Token.Sealed) > token.MaxSealedLen):
		return bad("Token.Sealed is %d bytes, want %d to %d", len(c.Token.Sealed), token.MinSealedLen, token.MaxSealedLen)
	}
	if err := c.Tokens.Guard.Validate(); err != nil {
		return fmt.Errorf("%w: Tokens.Guard: %w", ErrInvalidConfig, err)
	}
	return nil
}

// sharedLimits are the channel limits both ends of a session must share
// (see the Config field docs: a receiver sized below its sender drops what
// the sender believes delivered). A server announces its own in Accept; a
// client adopts them (adoptLimits).
type sharedLimits struct {
	MTU              int
	MaxMessageSize   int
	ReliableBytes    int
	MaxPartial       int
	ReliableWindow   int
	SequencedStreams int
	OrderedStreams   int
}

// limitsOf returns the shared limits of c, defaults applied.
func limitsOf(c Config) sharedLimits {
	c = c.WithDefaults()
	return sharedLimits{
		MTU:              c.MTU,
		MaxMessageSize:   c.MaxMessageSize,
		ReliableBytes:    c.ReliableBytes,
		MaxPartial:       c.MaxPartial,
		ReliableWindow:   c.ReliableWindow,
		SequencedStreams: c.SequencedStreams,
		OrderedStreams:   c.OrderedStreams,
	}
}

// announce writes l into a's limit fields. l comes from a validated
// config, so every value fits its field (EndpointConfig.Validate bounds
// the two that Config does not).
func (l sharedLimits) announce(a *wire.AcceptBody) {
	a.MTU = uint16(l.MTU)
	a.MaxMessage = uint32(l.MaxMessageSize)
	a.ReliableBytes = uint32(l.ReliableBytes)
	a.MaxPartial = uint32(l.MaxPartial)
	a.ReliableWindow = uint16(l.ReliableWindow)
	a.SequencedStreams = uint16(l.SequencedStreams)
	a.OrderedStreams = uint8(l.OrderedStreams)
}

// limitsFromAccept returns the limits an Accept announces.
func limitsFromAccept(a *wire.AcceptBody) sharedLimits {
	return sharedLimits{
		MTU:              int(a.MTU),
		MaxMessageSize:   int(a.MaxMessage),
		ReliableBytes:    int(a.ReliableBytes),
		MaxPartial:       int(a.MaxPartial),
		ReliableWindow:   int(a.ReliableWindow),
		SequencedStreams: int(a.SequencedStreams),
		OrderedStreams:   int(a.OrderedStreams),
	}
}

// String lists the limits as "MTU 1200, MaxMessageSize 296812, …".
func (l sharedLimits) String() string {
	return fmt.Sprintf("MTU %d, MaxMessageSize %d, ReliableBytes %d, MaxPartial %d, ReliableWindow %d, SequencedStreams %d, OrderedStreams %d",
		l.MTU, l.MaxMessageSize, l.ReliableBytes, l.MaxPartial, l.ReliableWindow, l.SequencedStreams, l.OrderedStreams)
}

// check reports whether l is a limit set some valid server config has: an
// error wrapping ErrInvalidConfig naming the first field out of range.
func (l sharedLimits) check() error {
	c := Config{
		MTU:              l.MTU,
		MaxMessageSize:   l.MaxMessageSize,
		ReliableBytes:    l.ReliableBytes,
		MaxPartial:       l.MaxPartial,
		ReliableWindow:   l.ReliableWindow,
		SequencedStreams: l.SequencedStreams,
		OrderedStreams:   l.OrderedStreams,
	}
	// A zero would mean "default" to Validate; on the wire it is a value,
	// and no valid config has it.
	for _, f := range [...]struct {
		name string
		v    int
	}{{"MTU", l.MTU}, {"MaxMessageSize", l.MaxMessageSize}, {"ReliableBytes", l.ReliableBytes},
		{"MaxPartial", l.MaxPartial}, {"ReliableWindow", l.ReliableWindow},
		{"SequencedStreams", l.SequencedStreams}, {"OrderedStreams", l.OrderedStreams}} {
		if f.v == 0 {
			return fmt.Errorf("%w: %s 0", ErrInvalidConfig, f.name)
		}
	}
	return c.Validate()
}

// adoptLimits returns the channel config a client with config mine (as
// given, zero fields unresolved) uses under a server that announced l
// (checked): every shared limit mine left at zero takes the server's
// value, one mine set must equal it, and the rest of mine gets its
// defaults from the adopted limits — so a field derived from the MTU or
// the max message (UnreliableBytes) is derived from the server's, not
// from this client's default MTU. The result has defaults applied. An
// error wraps ErrIncompatible and names each conflicting field with both
// numbers, or wraps the Validate error of a field of mine that is out of
// range under the server's limits.
func adoptLimits(mine Config, l sharedLimits) (Config, error) {
	c := mine
	var conflicts []string
	take := func(name string, v *int, server int) {
		if *v != 0 && *v != server {
			conflicts = append(conflicts, fmt.Sprintf("%s %d here, %d on the server", name, *v, server))
		}
		*v = server
	}
	take("MTU", &c.MTU, l.MTU)
	take("MaxMessageSize", &c.MaxMessageSize, l.MaxMessageSize)
	take("ReliableBytes", &c.ReliableBytes, l.ReliableBytes)
	take("MaxPartial", &c.MaxPartial, l.MaxPartial)
	take("ReliableWindow", &c.ReliableWindow, l.ReliableWindow)
	take("SequencedStreams", &c.SequencedStreams, l.SequencedStreams)
	take("OrderedStreams", &c.OrderedStreams, l.OrderedStreams)
	if len(conflicts) > 0 {
		return Config{}, fmt.Errorf("%w: %s (both ends must share them; leave them 0 to take the server's)",
			ErrIncompatible, strings.Join(conflicts, ", "))
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%w: under the server's MTU %d and MaxMessageSize %d: %w",
			ErrIncompatible, l.MTU, l.MaxMessageSize, err)
	}
	return c.WithDefaults(), nil
}
