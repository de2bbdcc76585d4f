package bench

import (
	"context"
	"crypto/ecdh"
	"fmt"
	"net/netip"
	"sync"

	"github.com/tickwire/tickwire/transport"
)

// ServerConfig configures Serve. The zero value of each field means its
// default.
type ServerConfig struct {
	// Transport is Tickwire (the default), KCPFast, KCPDefault, QUIC,
	// QUICStreams or QUICDatagram (any quic name: the quic server serves
	// every quic mode, by ALPN).
	Transport string
	// Listen is the address to serve on. Default 127.0.0.1:0 (port 0:
	// the system picks one; Server.Addr tells which). Any address may be
	// given: a server is meant to be reached from other processes and
	// machines.
	Listen netip.AddrPort
	// MTU is the largest datagram the server sends (UDP payload). Default
	// DefaultMTU; range [576, 1472]. A tickwire client adopts the server's
	// MTU in the handshake; kcp sessions are configured with it.
	MTU int
	// PrivateKey is a tickwire server's static X25519 key
	// (transport.EndpointConfig.PrivateKey). Default: a fresh one,
	// which Server.PublicKey returns for the clients to pin.
	PrivateKey *ecdh.PrivateKey
	// Tokens is a tickwire server's connect-token admission
	// (transport.EndpointConfig.Tokens; `tickwire server --token-key`).
	// Zero: off. The other transports ignore it.
	Tokens transport.TokenConfig
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.Transport == "" {
		c.Transport = Tickwire
	}
	if !c.Listen.IsValid() {
		c.Listen = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	return c
}

// Validate reports the first field of c (defaults applied) out of range,
// with an error wrapping ErrScenario, ErrUnknownTransport or ErrNoReliable.
func (c ServerConfig) Validate() error {
	c = c.withDefaults()
	if _, err := NewTransport(c.Transport); err != nil {
		return err
	}
	if c.Transport == Raw {
		return ErrNoReliable
	}
	if !Runs(c.Transport, ProfileEcho) {
		return fmt.Errorf("%w: transport %q does not run the echo profile", ErrScenario, c.Transport)
	}
	if c.MTU < 576 || c.MTU > 1472 {
		return fmt.Errorf("%w: mtu %d not in [576, 1472]", ErrScenario, c.MTU)
	}
	return nil
}

// ServerStats counts what a Server did.
type ServerStats struct {
	// Sessions counts the clients accepted since Serve (tickwire: sessions
	// connected; kcp: sessions accepted, one per client conversation).
	Sessions uint64
	// Echoed counts the messages echoed back.
	Echoed uint64
}

// Server is the server half of the echo profile running on its own: what
// `tickwire server` runs for clients in other processes (RunClient). It
// echoes every reliable message back on the same stream to its sender.
//
// The tickwire server is one Endpoint on a batched UDP socket holding up
// to transport.MaxPeersLimit sessions (default handshake rate limits),
// Polled and Flushed on one goroutine whenever a datagram arrives and
// whenever its next deadline is due (Endpoint.Wait, Endpoint.NextDeadline); a session ends
// when its client Disconnects, or after the Endpoint's idle timeout and
// resume grace. The kcp server is a kcp-go listener in the transport's
// mode with one goroutine per session, any number of them; kcp has no
// close handshake, so a session that echoes nothing for 30 to 60 s is
// closed. Either costs one goroutine per tick loop or session, and no
// allocation per message beyond the transport's own. Methods are safe for
// concurrent use.
type Server struct {
	name string
	half serverHalf
	stop func() bool // unregisters the context's AfterFunc
	once sync.Once
	err  error // the half's close error, set once
}

// Serve starts a server; it serves until Close, or until ctx is done
// (which closes it the same way).
func Serve(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t, _ := NewTransport(cfg.Transport)
	half, err := t.listen(listenConfig{addr: cfg.Listen, mtu: cfg.MTU, privateKey: cfg.PrivateKey, tokens: cfg.Tokens})
	if err != nil {
		return nil, err
	}
	s := &Server{name: t.Name(), half: half}
	s.stop = context.AfterFunc(ctx, func() { s.shutdown() })
	return s, nil
}

// Addr returns the address the server is bound to.
func (s *Server) Addr() netip.AddrPort { return s.half.addr() }

// Certificate returns the certificate a quic server presents, PEM (a
// client verifies the server against it: ClientScenario.ServerCert), or
// nil for the other transports.
func (s *Server) Certificate() []byte {
	if q, ok := s.half.(*quicServer); ok {
		return q.certPEM()
	}
	return nil
}

// PublicKey returns a tickwire server's static X25519 public key, which
// its clients pin (ClientScenario.ServerKey), or nil for the other
// transports.
func (s *Server) PublicKey() *ecdh.PublicKey { return serverKeyOf(s.half) }

// Transport returns the server's transport name.
func (s *Server) Transport() string { return s.name }

// Stats returns the server's counters so far.
func (s *Server) Stats() ServerStats { return s.half.stats() }

// Close stops the server, ending every session without notice, and waits
// for its goroutines. It is safe to call more than once.
func (s *Server) Close() error {
	s.stop()
	return s.shutdown()
}

// shutdown closes the half once; later calls wait for the first.
func (s *Server) shutdown() error {
	s.once.Do(func() { s.err = s.half.close() })
	return s.err
}
