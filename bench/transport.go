package bench

import (
	"context"
	"crypto/ecdh"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/token"
)

// Transport names: the peers, each a named configuration of one
// implementation. Which profiles a peer runs, and which of them it is
// placed in by a Suite, is in peers.
const (
	// Tickwire is tickwire's transport: two Endpoints on UDP sockets, each
	// driven by its own event-driven Poll/Flush loop (Endpoint.Wait until
	// Endpoint.NextDeadline), messages on reliable-ordered stream 1.
	Tickwire = "tickwire"
	// KCPFast is kcp-go in the setup its README calls fast mode, the one
	// for latency: NoDelay(1, 10, 2, 1), window 128/128, message mode
	// (one Write, one message), write delay off, no FEC, no encryption.
	// Its place is echo and actions.
	KCPFast = "kcp-fast"
	// KCP is KCPFast, under the Go name the bench's callers used before
	// the kcp peer was split in two; the string is "kcp-fast".
	KCP = KCPFast
	// KCPBulk is kcp-go as its own throughput tests set it up: stream
	// mode, window 1024/1024, write delay on (writes merged until the
	// next update), NoDelay(1, 10, 2, 1). Its place is pps and bulk.
	KCPBulk = "kcp-bulk"
	// KCPDefault is kcp-go in its normal mode: NoDelay(0, 40, 0, 0),
	// otherwise as KCPFast.
	KCPDefault = "kcp-default"
	// QUIC is quic-go with each echo message on one bidirectional stream,
	// length-prefixed (2 bytes, little-endian), and bulk on one stream.
	QUIC = "quic"
	// QUICStreams is quic-go with a new bidirectional stream per echo
	// message, its echo on the same stream.
	QUICStreams = "quic-streams"
	// QUICDatagram is quic-go with each echo message in an RFC 9221
	// DATAGRAM frame: unreliable, no retransmission by the application.
	QUICDatagram = "quic-dgram"
	// Raw is a plain net.UDPConn, one system call per datagram sent or
	// received and no protocol: the floor of the pps profile, which is the
	// only profile it runs (it has no reliable channel to echo or bulk on).
	Raw = "raw"
)

// ErrUnknownTransport is returned for a transport name not in Transports.
var ErrUnknownTransport = errors.New("bench: unknown transport")

// ErrNotSupported is wrapped by a row that cannot run at its settings
// (kcp-fast with a message above its MSS, quic below 1200-byte
// datagrams): Run reports it in Result.NotSupported rather than as a
// failure of the transport.
var ErrNotSupported = errors.New("not supported")

// Transports lists the transport names, in report order.
var Transports = []string{Tickwire, KCPFast, KCPBulk, KCPDefault, QUIC, QUICStreams, QUICDatagram, Raw}

// peer says what one transport name runs.
type peer struct {
	family string          // implementation: "tickwire", "kcp", "quic", "raw"
	runs   []string        // profiles Run accepts
	home   []string        // profiles a Suite places it in (see Suite.Scenarios)
	unrel  map[string]bool // profiles whose row is unreliable
}

var peers = map[string]peer{
	Tickwire:     {family: "tickwire", runs: []string{ProfileEcho, ProfilePPS, ProfileBulk, ProfileLoad, ProfileActions}, home: []string{ProfileEcho, ProfilePPS, ProfileBulk, ProfileLoad, ProfileActions}, unrel: map[string]bool{ProfilePPS: true}},
	KCPFast:      {family: "kcp", runs: []string{ProfileEcho, ProfileActions, ProfilePPS, ProfileBulk}, home: []string{ProfileEcho, ProfileActions}},
	KCPBulk:      {family: "kcp", runs: []string{ProfilePPS, ProfileBulk}, home: []string{ProfilePPS, ProfileBulk}},
	KCPDefault:   {family: "kcp", runs: []string{ProfileEcho, ProfileActions, ProfilePPS, ProfileBulk}, home: []string{ProfileEcho, ProfileActions}},
	QUIC:         {family: "quic", runs: []string{ProfileEcho, ProfileBulk}, home: []string{ProfileEcho, ProfileBulk}},
	QUICStreams:  {family: "quic", runs: []string{ProfileEcho}, home: []string{ProfileEcho}},
	QUICDatagram: {family: "quic", runs: []string{ProfileEcho}, home: []string{ProfileEcho}, unrel: map[string]bool{ProfileEcho: true}},
	Raw:          {family: "raw", runs: []string{ProfilePPS}, home: []string{ProfilePPS}, unrel: map[string]bool{ProfilePPS: true}},
}

// Runs reports whether transport runs profile (Run accepts the pair).
func Runs(transport, profile string) bool {
	return slices.Contains(peers[transport].runs, profile)
}

// Delivery kinds of a row.
const (
	Reliable   = "reliable"
	Unreliable = "unreliable"
)

// DeliveryOf returns the delivery a row of transport on profile
// promises by default: Unreliable for tickwire's and raw's pps and
// quic-dgram's echo, Reliable otherwise (kcp has no unreliable mode).
func DeliveryOf(transport, profile string) string {
	if peers[transport].unrel[profile] {
		return Unreliable
	}
	return Reliable
}

// ErrNoReliable is returned for the raw transport by everything but the
// pps profile: it has no reliable channel to echo or bulk on.
var ErrNoReliable = errors.New("bench: raw transport has no reliable channel (pps only)")

// rawTransport is Raw as a Transport: it has no echo halves.
type rawTransport struct{}

func (rawTransport) Name() string { return Raw }

func (rawTransport) listen(listenConfig) (serverHalf, error) { return nil, ErrNoReliable }

func (rawTransport) dial(context.Context, dialConfig) (clientHalf, error) { return nil, ErrNoReliable }

// Transport is one implementation's two halves of the echo profile: a
// server that echoes every reliable message back on the same stream, and
// a client that sends messages and receives the echoes. Run puts both in
// one process with a Relay between them; Serve and RunClient run one half
// each, in separate processes. The halves are the same code either way.
// The interface is sealed: NewTransport returns its only implementations.
type Transport interface {
	// Name is one of Transports.
	Name() string
	// listen starts a server half on cfg.addr.
	listen(cfg listenConfig) (serverHalf, error)
	// dial connects a client half to cfg.server and returns once it can
	// send, or fails with an error wrapping ErrConnectTimeout.
	dial(ctx context.Context, cfg dialConfig) (clientHalf, error)
}

// listenConfig is what a server half needs.
type listenConfig struct {
	addr netip.AddrPort // the socket's address; port 0 picks one
	mtu  int            // largest datagram sent (UDP payload)
	// maxInFlight bounds the datagrams in flight (0: the transport's
	// default): for tickwire, transport.Config.Ack.MaxInFlight (the span of
	// unacked datagram seqs, default 64); for kcp, the send and receive
	// windows in packets (default KCPWindow).
	maxInFlight int
	// privateKey is a tickwire server's static key (nil: a fresh one).
	privateKey *ecdh.PrivateKey
	// redundancyInterval is tickwire's Config.RedundancyInterval (0: the
	// default); the other transports ignore it. redundancy is its
	// Config.Redundancy.
	redundancyInterval time.Duration
	redundancy         transport.RedundancyMode
	// tokens is a tickwire server's connect-token admission (zero: off).
	tokens transport.TokenConfig
}

// dialConfig is what a client half needs.
type dialConfig struct {
	// server is the address the client sends to: a server half's, or a
	// Relay's in front of it.
	server      netip.AddrPort
	mtu         int // largest datagram sent (UDP payload)
	maxInFlight int // as listenConfig.maxInFlight
	// redundancyInterval and redundancy are as listenConfig's.
	redundancyInterval time.Duration
	redundancy         transport.RedundancyMode
	// onEcho receives every message echoed back, one call at a time (on
	// one goroutine of the client's; quic-streams, which reads each echo
	// on its stream's goroutine, serialises the calls with a mutex); p is
	// valid only during the call.
	onEcho func(p []byte)
	// connectTimeout bounds dial's wait for the session.
	connectTimeout time.Duration
	// serverKey is the tickwire server's X25519 public key, which the
	// client pins (transport.EndpointConfig.ServerKey): serverKeyOf of an
	// in-process server half, or ClientScenario.ServerKey. Other
	// transports ignore it.
	serverKey *ecdh.PublicKey
	// token is a tickwire client's connect token (nil: none). Other
	// transports ignore it.
	token *token.Token
	// serverCert is the quic server's certificate (PEM) the client
	// verifies it against; nil: the process's own (a server in the same
	// process). Other transports ignore it.
	serverCert []byte
	// remote says the server half is in another process, which may not be
	// there, and outlives this client: kcp, which has no handshake, proves
	// the server answers by a probe message echoed back before dial
	// returns; tickwire ends its session in order on Close (Disconnect,
	// sent on DisconnectRepeats ticks) so the server frees the slot at
	// once. In-process (Run) neither happens, so that the figures stay
	// those of the pair alone.
	remote bool
}

// serverHalf is a running echo server. Its methods are safe for
// concurrent use.
type serverHalf interface {
	// addr is the bound address.
	addr() netip.AddrPort
	// stats returns the counters so far.
	stats() ServerStats
	// close stops the server, closes every session and waits for the
	// server's goroutines.
	close() error
}

// serverKeyOf returns a tickwire server half's public key (nil for the
// other transports).
func serverKeyOf(s serverHalf) *ecdh.PublicKey {
	if t, ok := s.(*tickwireServer); ok {
		return t.key
	}
	return nil
}

// clientHalf is a connected echo client.
type clientHalf interface {
	// Send queues p (copied) for the server, reliable and ordered. It is
	// called from one goroutine at a time.
	Send(p []byte) error
	// Close stops the client and waits for its goroutines; after it
	// returns onEcho is not called again.
	Close() error
	// wireBytes returns the UDP payload bytes the client's socket sent
	// and received so far (kcp: the process-wide counters since dial).
	wireBytes() int64
}

// ErrConnectTimeout is wrapped by a client's connect when the server did
// not answer within the connect timeout.
var ErrConnectTimeout = errors.New("bench: no answer from the server")

// clientBind returns the address a client socket binds to for server:
// 127.0.0.1:0 (or [::1]:0) for a loopback server, the unspecified address
// of the server's family otherwise.
func clientBind(server netip.AddrPort) netip.AddrPort {
	a := server.Addr().Unmap()
	switch {
	case a.Is4() && a.IsLoopback():
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
	case a.IsLoopback():
		return netip.AddrPortFrom(netip.IPv6Loopback(), 0)
	case a.Is4():
		return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	return netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
}

// NewTransport returns the Transport called name.
func NewTransport(name string) (Transport, error) {
	switch name {
	case Tickwire:
		return tickwireTransport{}, nil
	case KCPFast:
		return kcpTransport{name: KCPFast, nodelay: [4]int{1, 10, 2, 1}, window: KCPWindow}, nil
	case KCPBulk:
		return kcpTransport{name: KCPBulk, nodelay: [4]int{1, 10, 2, 1}, window: KCPBulkWindow, stream: true, writeDelay: true}, nil
	case KCPDefault:
		return kcpTransport{name: KCPDefault, nodelay: [4]int{0, 40, 0, 0}, window: KCPWindow}, nil
	case QUIC:
		return quicTransport{name: QUIC, mode: quicOneStream}, nil
	case QUICStreams:
		return quicTransport{name: QUICStreams, mode: quicStreamPerMessage}, nil
	case QUICDatagram:
		return quicTransport{name: QUICDatagram, mode: quicDatagrams}, nil
	case Raw:
		return rawTransport{}, nil
	}
	if name == "kcp" {
		return nil, fmt.Errorf("%w: %q is now two peers, %q (echo, actions) and %q (pps, bulk)", ErrUnknownTransport, name, KCPFast, KCPBulk)
	}
	return nil, fmt.Errorf("%w: %q (want one of %v)", ErrUnknownTransport, name, Transports)
}

// transportRank orders transport names in reports.
func transportRank(name string) int {
	if i := slices.Index(Transports, name); i >= 0 {
		return i
	}
	return len(Transports)
}
