package bench

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
)

// Relay errors.
var (
	// ErrNotLoopback is returned by NewRelay for an address that is not a
	// loopback address, unless RelayConfig.AllowNonLoopback: the bench
	// never touches a real network.
	ErrNotLoopback = errors.New("bench: address is not loopback")
	// ErrRelayConfig is wrapped by NewRelay for a config out of range.
	ErrRelayConfig = errors.New("bench: invalid relay config")
)

// DefaultMaxHeld is RelayConfig.MaxHeld's default.
const DefaultMaxHeld = 8192

// maxDatagram is the largest datagram the relay reads.
const maxDatagram = 65535

// Direction names one direction through a Relay.
type Direction uint8

const (
	// Up is client → target.
	Up Direction = iota
	// Down is target → client.
	Down
)

// String returns "up" or "down".
func (d Direction) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// Decision is one datagram's fate at the model boundary, as a Relay's
// RelayConfig.Log sees it.
type Decision struct {
	Dir     Direction       // the direction the datagram travels
	Index   uint64          // 0-based index of the datagram in its direction
	Now     time.Duration   // time since the relay started, as given to Decide
	Size    int             // datagram bytes
	Verdict simlink.Verdict // the model's answer
}

// RelayConfig configures a Relay. The zero value of each field but Target
// means its default.
type RelayConfig struct {
	// Listen is the client-facing address. Default 127.0.0.1:0; must be
	// a loopback address unless AllowNonLoopback.
	Listen netip.AddrPort
	// Target is where the relay forwards the client's datagrams
	// (required; loopback unless AllowNonLoopback). Replies from Target go
	// back to the client — the most recent source seen on Listen.
	Target netip.AddrPort
	// AllowNonLoopback lets Listen and Target be any address, so that the
	// relay can sit between machines (`tickwire relay` sets it). Default
	// false: NewRelay refuses a non-loopback address with ErrNotLoopback,
	// which keeps tests and the in-process bench off real networks. With a
	// non-loopback Target the upstream socket binds the unspecified
	// address of Target's family, port 0; with a loopback one, Target's
	// address, as always.
	AllowNonLoopback bool
	// Up and Down are the impairments of each direction.
	Up, Down simlink.LinkConfig
	// Seed seeds the up model; the down model gets a seed derived from it.
	// Two relays with the same seed and the same datagram sequence make the
	// same drop and duplicate decisions.
	Seed uint64
	// MaxHeld caps the datagram copies waiting for their delivery time, per
	// direction; a copy beyond it is dropped and counted (Overflow).
	// Default DefaultMaxHeld; range [1, 1<<20].
	MaxHeld int
	// Log, if set, is called for every datagram offered to a model, under
	// that direction's lock, on the direction's reading goroutine. It must
	// not block or call the Relay.
	Log func(Decision)
}

// DirStats counts what a Relay did in one direction.
type DirStats struct {
	// Received and ReceivedBytes count the datagrams read (offered to the
	// model): the wire traffic the sender produced.
	Received, ReceivedBytes uint64
	// Forwarded and ForwardedBytes count the copies written onward,
	// duplicates included.
	Forwarded, ForwardedBytes uint64
	// Overflow counts copies dropped because MaxHeld were waiting.
	Overflow uint64
	// WriteErrors counts copies the socket refused.
	WriteErrors uint64
	// Foreign counts datagrams from an unexpected source (down direction
	// only: not from Target), discarded before the model.
	Foreign uint64
	// Model is the direction's model's own counters (losses by reason,
	// duplicates).
	Model simlink.Stats
}

// RelayStats is a snapshot of both directions' counters.
type RelayStats struct {
	Up, Down DirStats
}

// WireBytes returns the bytes both ends sent into the relay.
func (s RelayStats) WireBytes() uint64 { return s.Up.ReceivedBytes + s.Down.ReceivedBytes }

// Relay is a link conditioner: a UDP relay on loopback (or, with
// RelayConfig.AllowNonLoopback, between machines) between one client and
// one target. Each direction runs every datagram through its own
// simlink.Model fed with the time since the relay started; surviving
// copies wait in a heap until their delivery time and are written by one
// releasing goroutine per direction (plus one reading goroutine per
// direction). Methods are safe for concurrent use.
type Relay struct {
	cfg    RelayConfig
	client *net.UDPConn // facing the client: Listen
	server *net.UDPConn // facing the target
	start  time.Time
	up     *direction
	down   *direction

	mu         sync.Mutex
	clientAddr netip.AddrPort

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// NewRelay starts a relay. Close it to stop its goroutines.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if !cfg.Listen.IsValid() {
		cfg.Listen = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
	}
	if cfg.MaxHeld == 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	if cfg.MaxHeld < 1 || cfg.MaxHeld > 1<<20 {
		return nil, fmt.Errorf("%w: MaxHeld %d not in [1, %d]", ErrRelayConfig, cfg.MaxHeld, 1<<20)
	}
	for _, a := range []netip.AddrPort{cfg.Listen, cfg.Target} {
		if !a.Addr().IsLoopback() && !cfg.AllowNonLoopback {
			return nil, fmt.Errorf("%w: %v", ErrNotLoopback, a)
		}
	}
	cfg.Target = netip.AddrPortFrom(cfg.Target.Addr().Unmap(), cfg.Target.Port())
	if !cfg.Target.IsValid() || cfg.Target.Port() == 0 {
		return nil, fmt.Errorf("%w: Target %v has no port", ErrRelayConfig, cfg.Target)
	}
	up, err := newDirection(Up, cfg.Up, cfg.Seed, cfg.MaxHeld, cfg.Log)
	if err != nil {
		return nil, err
	}
	down, err := newDirection(Down, cfg.Down, downSeed(cfg.Seed), cfg.MaxHeld, cfg.Log)
	if err != nil {
		return nil, err
	}
	client, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		return nil, fmt.Errorf("bench: relay listen: %w", err)
	}
	local, network := netip.AddrPortFrom(cfg.Target.Addr(), 0), "udp"
	if !cfg.Target.Addr().IsLoopback() {
		// One family, so that replies come from Target as written, not
		// IPv4-mapped.
		local, network = netip.AddrPortFrom(netip.IPv6Unspecified(), 0), "udp6"
		if cfg.Target.Addr().Is4() {
			local, network = netip.AddrPortFrom(netip.IPv4Unspecified(), 0), "udp4"
		}
	}
	server, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(local))
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("bench: relay upstream socket: %w", err)
	}
	for _, c := range []*net.UDPConn{client, server} {
		// Best effort: a loopback burst must not overflow the kernel's
		// buffers and add loss the model did not decide.
		_ = c.SetReadBuffer(4 << 20)
		_ = c.SetWriteBuffer(4 << 20)
	}
	r := &Relay{cfg: cfg, client: client, server: server, start: time.Now(), up: up, down: down, stop: make(chan struct{})}
	r.wg.Add(4)
	go r.readUp()
	go r.readDown()
	go r.release(r.up, r.server, func() netip.AddrPort { return r.cfg.Target })
	go r.release(r.down, r.client, r.client0)
	return r, nil
}

// downSeed derives the down model's seed from the relay's seed.
func downSeed(seed uint64) uint64 { return seed ^ 0x646f776e646f776e }

// Addr returns the address clients send to.
func (r *Relay) Addr() netip.AddrPort { return r.client.LocalAddr().(*net.UDPAddr).AddrPort() }

// Stats returns a snapshot of the relay's counters.
func (r *Relay) Stats() RelayStats { return RelayStats{Up: r.up.snapshot(), Down: r.down.snapshot()} }

// Close stops the relay and waits for its goroutines. Datagrams still held
// are discarded. It is safe to call more than once.
func (r *Relay) Close() error {
	r.once.Do(func() {
		close(r.stop)
		r.client.Close()
		r.server.Close()
		r.wg.Wait()
	})
	return nil
}

func (r *Relay) now() time.Duration { return time.Since(r.start) }

func (r *Relay) client0() netip.AddrPort {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clientAddr
}

// readUp reads the client's datagrams into the up direction.
func (r *Relay) readUp() {
	defer r.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := r.client.ReadFromUDPAddrPort(buf)
		if err != nil {
			if r.stopped(err) {
				return
			}
			continue
		}
		r.mu.Lock()
		r.clientAddr = from
		r.mu.Unlock()
		r.up.offer(r.now(), buf[:n])
	}
}

// readDown reads the target's datagrams into the down direction.
func (r *Relay) readDown() {
	defer r.wg.Done()
	buf := make([]byte, maxDatagram)
	target := r.cfg.Target
	for {
		n, from, err := r.server.ReadFromUDPAddrPort(buf)
		if err != nil {
			if r.stopped(err) {
				return
			}
			continue
		}
		if from != target {
			r.down.foreign()
			continue
		}
		r.down.offer(r.now(), buf[:n])
	}
}

// stopped reports whether a read error means the relay is closing.
func (r *Relay) stopped(err error) bool {
	select {
	case <-r.stop:
		return true
	default:
	}
	return errors.Is(err, net.ErrClosed)
}

// release writes d's datagrams out of c to dst() once they are due.
func (r *Relay) release(d *direction, c *net.UDPConn, dst func() netip.AddrPort) {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		buf, wait, ok := d.next(r.now())
		if ok {
			_, err := c.WriteToUDPAddrPort(buf, dst())
			d.sent(buf, err)
			continue
		}
		if wait < 0 {
			wait = time.Hour
		}
		timer.Reset(wait)
		select {
		case <-r.stop:
			return
		case <-d.wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}
