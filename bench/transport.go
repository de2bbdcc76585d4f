package bench

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Transport names.
const (
	// Tickwire is tickwire's transport: two Endpoints on UDP sockets, each
	// driven by its own 1 ms Poll/Flush loop, messages on reliable-ordered
	// stream 1.
	Tickwire = "tickwire"
	// KCP is kcp-go in fast mode: NoDelay(1, 10, 2, 1), window 128/128,
	// no FEC, no encryption.
	KCP = "kcp"
	// KCPDefault is kcp-go in its normal mode: NoDelay(0, 40, 0, 0),
	// otherwise as KCP.
	KCPDefault = "kcp-default"
	// Raw is a plain net.UDPConn, one system call per datagram sent or
	// received and no protocol: the floor of the pps profile, which is the
	// only profile it runs (it has no reliable channel to echo or bulk on).
	Raw = "raw"
)

// ErrUnknownTransport is returned for a transport name not in Transports.
var ErrUnknownTransport = errors.New("bench: unknown transport")

// Transports lists the transport names, in report order.
var Transports = []string{Tickwire, KCP, KCPDefault, Raw}

// ErrNoReliable is returned by the raw transport's Open: it has no
// reliable channel, so it runs only the pps profile.
var ErrNoReliable = errors.New("bench: raw transport has no reliable channel (pps only)")

// rawTransport is Raw as a Transport: it opens no Pair.
type rawTransport struct{}

func (rawTransport) Name() string { return Raw }

// Open implements Transport; it returns ErrNoReliable.
func (rawTransport) Open(PairConfig) (Pair, error) { return nil, ErrNoReliable }

// PairConfig is what a Transport needs to open a client/server pair.
type PairConfig struct {
	// MTU is the largest datagram either end sends (UDP payload).
	MTU int
	// Via is called with the server's address once it listens, and
	// returns the address the client must send to (a Relay's).
	Via func(server netip.AddrPort) (netip.AddrPort, error)
	// OnEcho receives every message the server echoed back, on a single
	// goroutine of the pair's. p is valid only during the call.
	OnEcho func(p []byte)
	// ConnectTimeout bounds the wait for the client's session.
	ConnectTimeout time.Duration
	// MaxInFlight bounds the datagrams in flight (0: the transport's
	// default): for tickwire, both channels' transport.Config.Ack.MaxInFlight
	// (the span of unacked datagram seqs, default 64); for kcp, both
	// sessions' send and receive windows in packets (default KCPWindow).
	MaxInFlight int
}

// Pair is an open client/server pair whose server echoes every message
// back on the same reliable-ordered channel.
type Pair interface {
	// Send queues p (copied) for the server, reliable and ordered. It is
	// called from one goroutine at a time.
	Send(p []byte) error
	// Close stops the pair and waits for its goroutines; after it returns
	// OnEcho is not called again.
	Close() error
}

// Transport opens Pairs of one implementation.
type Transport interface {
	// Name is one of Transports.
	Name() string
	// Open starts a server, calls cfg.Via, connects a client through the
	// returned address and returns once the client can send.
	Open(cfg PairConfig) (Pair, error)
}

// NewTransport returns the Transport called name.
func NewTransport(name string) (Transport, error) {
	switch name {
	case Tickwire:
		return tickwireTransport{}, nil
	case KCP:
		return kcpTransport{name: KCP, nodelay: [4]int{1, 10, 2, 1}}, nil
	case KCPDefault:
		return kcpTransport{name: KCPDefault, nodelay: [4]int{0, 40, 0, 0}}, nil
	case Raw:
		return rawTransport{}, nil
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
