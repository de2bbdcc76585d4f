package bench

import (
	"context"
	"crypto/ecdh"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport/token"
)

// ClientScenario is an echo row run from this process against a Server in
// another (`tickwire client`). Zero fields take the Default values, as in
// Scenario.
type ClientScenario struct {
	// Addr is where the client sends: the Server's address, or a Relay's
	// in front of it (required).
	Addr      netip.AddrPort
	Transport string  // Tickwire (the default), KCPFast, KCPDefault or a quic peer: the server's
	Count     int     // messages sent
	Rate      float64 // messages per second
	Size      int     // message bytes, [MinSize, MaxSize]
	// MTU is the client's largest datagram. A tickwire client adopts the
	// server's MTU in the handshake instead; a kcp client sends with it.
	MTU int
	// Drain bounds the wait for outstanding echoes after the last send.
	Drain time.Duration
	// ConnectTimeout bounds the wait for the server's first answer
	// (tickwire: the handshake; kcp: a probe message echoed back).
	// Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ServerKey is the tickwire server's X25519 public key
	// (Server.PublicKey, or what `tickwire server` prints), which the
	// client pins (required for tickwire; ignored by the others).
	ServerKey *ecdh.PublicKey
	// Token is a tickwire client's connect token
	// (transport.EndpointConfig.Token; `tickwire client --token`): with
	// one, ServerKey is optional. The other transports ignore it.
	Token *token.Token
	// ServerCert is the quic server's certificate, PEM
	// (Server.Certificate), which the client verifies the server against
	// (required for a quic transport; ignored by the others).
	ServerCert []byte
}

// ErrServerKey is wrapped when a tickwire client has no server public key
// to pin (ClientScenario.ServerKey).
var ErrServerKey = errors.New("bench: no tickwire server public key")

// scenario returns the Scenario form of s, defaults applied.
func (s ClientScenario) scenario() Scenario {
	if s.Transport == "" {
		s.Transport = Tickwire
	}
	return Scenario{
		Profile: ProfileEcho, Transport: s.Transport,
		Count: s.Count, Rate: s.Rate, Size: s.Size, MTU: s.MTU, Drain: s.Drain,
	}.withDefaults()
}

// Validate reports the first field of s (defaults applied) out of range,
// with an error wrapping ErrScenario or ErrUnknownTransport.
func (s ClientScenario) Validate() error {
	switch {
	case !s.Addr.IsValid() || s.Addr.Port() == 0:
		return fmt.Errorf("%w: address %v: want an address and a port", ErrScenario, s.Addr)
	case s.ConnectTimeout < 0:
		return fmt.Errorf("%w: connect timeout %v negative", ErrScenario, s.ConnectTimeout)
	case (s.Transport == Tickwire || s.Transport == "") && s.ServerKey == nil && s.Token == nil:
		return fmt.Errorf("%w: transport tickwire needs it (ClientScenario.ServerKey, `tickwire client --server-key`) or a connect token (ClientScenario.Token)", ErrServerKey)
	case peers[s.Transport].family == "quic" && len(s.ServerCert) == 0:
		return fmt.Errorf("%w: transport %q needs the server's certificate to verify it against", ErrCertificate, s.Transport)
	}
	return s.scenario().Validate()
}

// RunClient runs the echo profile against the server at s.Addr, in
// another process or on another machine, exactly as Run does in one
// process: the same message generator and checks, the same HDR histogram
// of round trips, the same client half and Result. It returns an error
// for an invalid scenario, and one wrapping ErrConnectTimeout when the
// server does not answer within s.ConnectTimeout; a row that loses
// messages yields a Result that Failed. Cancelling ctx stops connecting
// or sending early.
//
// What the Result means here:
//   - Link is the zero LinkResult (Burst 0, which Run never reports): the
//     link is whatever sits between the processes — loopback, a network,
//     a `tickwire relay` — and the client does not know it.
//   - WireBytes are the UDP payload bytes the client's socket sent and
//     received (IP/UDP headers not included), handshake or probe and
//     closing frames included. Tickwire: the socket's own counters.
//     Kcp: kcp-go's process-wide counters (kcp.DefaultSnmp InBytes +
//     OutBytes) since the client was dialled, which are the client's
//     alone in a process that runs no other kcp session. Quic: quic-go's
//     ConnectionStats BytesSent + BytesReceived. Run, by contrast,
//     counts what both ends sent into the relay, so the two differ by what
//     the link lost or duplicated on the way to the client.
//   - CPUSeconds, AllocsPerMsg and PeakRSSBytes are the client process's
//     (process-wide, as in Run): the server's cost is not in them.
//   - Latency is the round trip through whatever link, plus each end's
//     reaction time: microseconds for tickwire's event-driven loops (on
//     Linux; elsewhere up to TickInterval) and kcp-go's reader goroutines.
//
// The tickwire client ends its session in order when the row ends (a
// Disconnect on a few ticks), so the server frees its slot at once.
func RunClient(ctx context.Context, s ClientScenario) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	sc := s.scenario()
	timeout := s.ConnectTimeout
	if timeout == 0 {
		timeout = DefaultConnectTimeout
	}
	t, _ := NewTransport(sc.Transport)
	res := Result{Transport: t.Name(), Profile: ProfileEcho, LatencyKind: RTT}
	open := func(onEcho func([]byte)) (clientHalf, error) {
		return t.dial(ctx, dialConfig{server: s.Addr, mtu: sc.MTU, onEcho: onEcho, connectTimeout: timeout, remote: true, serverCert: s.ServerCert, serverKey: s.ServerKey, token: s.Token})
	}
	wire := func(c clientHalf) int64 { return c.wireBytes() }
	if err := unsupported(sc); err != nil {
		return Result{}, err
	}
	res.Delivery, res.Config = sc.Delivery, peerConfig(sc)
	res.Config.Settings["path"] = "across processes: whatever sits between this client and the server"
	return echoRow(ctx, sc, res, open, wire)
}
