package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
)

// KCPWindow is the send and receive window (packets) of kcp-fast and
// kcp-default.
const KCPWindow = 128

// KCPBulkWindow is the send and receive window (packets) of kcp-bulk, as
// in kcp-go's own throughput tests.
const KCPBulkWindow = 1024

// kcpOverhead is the kcp segment header (IKCP_OVERHEAD): the MSS of a
// session without FEC or encryption is its MTU minus this.
const kcpOverhead = 24

// kcpIdleTimeout is how long a kcp server session may echo nothing before
// the server closes it: kcp has no close handshake, so a client that went
// away is only noticed by its silence. A session is closed at the first
// sweep (every kcpIdleTimeout) that finds it echoed nothing since the
// previous one: after 1 to 2 × kcpIdleTimeout of silence.
const kcpIdleTimeout = 30 * time.Second

// kcpProbe is the message a client half sends to a server in another
// process (dialConfig.remote) before any other, and waits to see echoed:
// kcp has no handshake, so this is how the client learns the server is
// there. Its length is below MinSize, so it is no echo profile message.
var kcpProbe = []byte("tickwire probe")

// kcpTransport runs kcp-go in one configuration.
type kcpTransport struct {
	name       string
	nodelay    [4]int // nodelay, interval ms, resend, nc
	window     int    // send and receive window, packets
	stream     bool   // stream mode: writes merged into MSS-sized segments
	writeDelay bool   // SetWriteDelay: flush at the next update, not per Write
}

func (t kcpTransport) Name() string { return t.name }

// configure applies the configuration to one session (client or server):
// the NoDelay mode, send and receive windows of window packets (0: the
// configuration's), stream mode, write delay and the MTU.
func (t kcpTransport) configure(s *kcp.UDPSession, mtu, window int) error {
	if window == 0 {
		window = t.window
	}
	s.SetNoDelay(t.nodelay[0], t.nodelay[1], t.nodelay[2], t.nodelay[3])
	s.SetWindowSize(window, window)
	// kcp-go marks SetStreamMode "Deprecated: toggles the stream mode
	// on/off" without naming a replacement; it is the only way to stream
	// mode, and kcp-go's own throughput tests call it.
	//lint:ignore SA1019 no replacement exists (see above)
	s.SetStreamMode(t.stream)
	s.SetWriteDelay(t.writeDelay)
	if !s.SetMtu(mtu) {
		return fmt.Errorf("bench: kcp refuses MTU %d", mtu)
	}
	return nil
}

// fits returns nil if a message of size bytes reaches the other end as
// one message at mtu, or an error wrapping ErrNotSupported: in message
// mode kcp-go's Write splits anything above the MSS (mtu minus the
// 24-byte segment header) into separate messages (sess.go,
// writeBuffersLocked), so the receiver could not tell where a larger
// message ends. Stream mode carries any size (the bench frames it).
func (t kcpTransport) fits(size, mtu int) error {
	if mss := mtu - kcpOverhead; !t.stream && size > mss {
		return fmt.Errorf("%w at --mtu %d: %s is in message mode, and kcp-go's Write splits a %d B message above its %d B MSS into separate messages", ErrNotSupported, mtu, t.name, size, mss)
	}
	return nil
}

// settings returns the configuration as Result.Config settings, with the
// window a row used (0: the configuration's) and its MTU.
func (t kcpTransport) settings(mtu, window int) map[string]string {
	if window == 0 {
		window = t.window
	}
	mode := "message"
	if t.stream {
		mode = "stream"
	}
	return map[string]string{
		"implementation": "github.com/xtaci/kcp-go/v5 " + kcpVersion,
		"nodelay":        fmt.Sprintf("NoDelay(%d, %d, %d, %d)", t.nodelay[0], t.nodelay[1], t.nodelay[2], t.nodelay[3]),
		"window":         fmt.Sprintf("%d/%d packets (send/receive)", window, window),
		"mode":           mode,
		"write_delay":    fmt.Sprint(t.writeDelay),
		"mtu":            fmt.Sprintf("%d (SetMtu; MSS %d)", mtu, mtu-kcpOverhead),
		"fec":            "none (dataShards 0, parityShards 0)",
		"crypt":          "none",
		"ack_nodelay":    "false (kcp-go default)",
	}
}

// kcpServer is the server half: a kcp-go listener, one echoing goroutine
// per accepted session (any number of them), and a sweeper that closes
// idle sessions.
type kcpServer struct {
	t      kcpTransport
	mtu    int
	window int // 0: KCPWindow
	l      *kcp.Listener
	wg     sync.WaitGroup
	stop   chan struct{}
	echoed atomic.Uint64

	mu       sync.Mutex
	closed   bool
	accepted uint64
	sessions map[*kcp.UDPSession]*atomic.Uint64 // live, with their echo counts
}

// listen implements Transport.
func (t kcpTransport) listen(cfg listenConfig) (serverHalf, error) {
	l, err := kcp.ListenWithOptions(cfg.addr.String(), nil, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("bench: kcp listen: %w", err)
	}
	s := &kcpServer{t: t, mtu: cfg.mtu, window: cfg.maxInFlight, l: l, stop: make(chan struct{}), sessions: map[*kcp.UDPSession]*atomic.Uint64{}}
	s.wg.Add(2)
	go s.accept()
	go s.sweep()
	return s, nil
}

// accept echoes every accepted session until the listener closes.
func (s *kcpServer) accept() {
	defer s.wg.Done()
	for {
		sess, err := s.l.AcceptKCP()
		if err != nil {
			return
		}
		_ = s.t.configure(sess, s.mtu, s.window) // the client's MTU was accepted already
		n := new(atomic.Uint64)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			sess.Close()
			return
		}
		s.sessions[sess] = n
		s.accepted++
		s.wg.Add(1)
		s.mu.Unlock()
		go s.echo(sess, n)
	}
}

// echo writes every message sess reads back to it, counting them in n,
// until sess is closed.
func (s *kcpServer) echo(sess *kcp.UDPSession, n *atomic.Uint64) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		sess.Close()
	}()
	buf := make([]byte, maxDatagram)
	for {
		k, err := sess.Read(buf)
		if err != nil {
			return
		}
		if _, err := sess.Write(buf[:k]); err != nil {
			return
		}
		n.Add(1)
		s.echoed.Add(1)
	}
}

// sweep closes, every kcpIdleTimeout, the sessions that echoed nothing
// since the previous sweep, until stop.
func (s *kcpServer) sweep() {
	defer s.wg.Done()
	t := time.NewTicker(kcpIdleTimeout)
	defer t.Stop()
	last := map[*kcp.UDPSession]uint64{}
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		var idle []*kcp.UDPSession
		s.mu.Lock()
		for sess, n := range s.sessions {
			k := n.Load()
			if prev, ok := last[sess]; ok && prev == k {
				idle = append(idle, sess)
			}
			last[sess] = k
		}
		for sess := range last {
			if _, ok := s.sessions[sess]; !ok {
				delete(last, sess)
			}
		}
		s.mu.Unlock()
		for _, sess := range idle {
			sess.Close() // its echo goroutine removes it
		}
	}
}

func (s *kcpServer) addr() netip.AddrPort { return s.l.Addr().(*net.UDPAddr).AddrPort() }

func (s *kcpServer) stats() ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ServerStats{Sessions: s.accepted, Echoed: s.echoed.Load()}
}

func (s *kcpServer) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.l.Close()
	for sess := range s.sessions {
		sess.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// kcpClient is the client half: a kcp-go session and a reading goroutine.
type kcpClient struct {
	s      *kcp.UDPSession
	wg     sync.WaitGroup
	bytes0 uint64 // kcp.DefaultSnmp InBytes+OutBytes at dial
}

// snmpBytes returns kcp-go's process-wide UDP payload byte counters, in
// and out.
func snmpBytes() uint64 {
	s := kcp.DefaultSnmp.Copy()
	return s.InBytes + s.OutBytes
}

// dial implements Transport. With cfg.remote it sends kcpProbe and returns
// once its echo is back (bounded by cfg.connectTimeout); otherwise it
// returns at once, as kcp has no handshake.
func (t kcpTransport) dial(ctx context.Context, cfg dialConfig) (clientHalf, error) {
	c := &kcpClient{bytes0: snmpBytes()}
	s, err := kcp.DialWithOptions(cfg.server.String(), nil, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("bench: kcp dial: %w", err)
	}
	if err := t.configure(s, cfg.mtu, cfg.maxInFlight); err != nil {
		s.Close()
		return nil, err
	}
	c.s = s
	var probed chan []byte
	if cfg.remote {
		probed = make(chan []byte, 1)
		if _, err := s.Write(kcpProbe); err != nil {
			s.Close()
			return nil, fmt.Errorf("bench: kcp probe: %w", err)
		}
	}
	c.wg.Add(1)
	go c.read(cfg.onEcho, probed)
	if probed == nil {
		return c, nil
	}
	timer := time.NewTimer(cfg.connectTimeout)
	defer timer.Stop()
	select {
	case p, ok := <-probed:
		if ok && bytes.Equal(p, kcpProbe) {
			return c, nil
		}
		c.Close()
		if !ok {
			return nil, fmt.Errorf("bench: kcp: %v closed before answering", cfg.server)
		}
		return nil, fmt.Errorf("bench: kcp: %v answered %q to the probe, not its echo", cfg.server, p)
	case <-ctx.Done():
		c.Close()
		return nil, fmt.Errorf("bench: kcp: connecting to %v: %w", cfg.server, ctx.Err())
	case <-timer.C:
		c.Close()
		return nil, fmt.Errorf("%w: kcp: no echo of the probe from %v after %v", ErrConnectTimeout, cfg.server, cfg.connectTimeout)
	}
}

// read hands every message the client reads to onEcho; if probed is not
// nil, the first message (the probe's echo) goes to it instead, a copy.
func (c *kcpClient) read(onEcho func([]byte), probed chan<- []byte) {
	defer c.wg.Done()
	if probed != nil {
		defer func() {
			if probed != nil {
				close(probed)
			}
		}()
	}
	buf := make([]byte, maxDatagram)
	for {
		n, err := c.s.Read(buf)
		if err != nil {
			return
		}
		if probed != nil {
			probed <- bytes.Clone(buf[:n])
			probed = nil
			continue
		}
		onEcho(buf[:n])
	}
}

// Send implements clientHalf. kcp's session is in message mode: one Write
// is one message.
func (c *kcpClient) Send(b []byte) error {
	_, err := c.s.Write(b)
	return err
}

// Close implements clientHalf.
func (c *kcpClient) Close() error {
	c.s.Close()
	c.wg.Wait()
	return nil
}

// wireBytes implements clientHalf: kcp-go counts UDP payload bytes per
// process only, so this is everything kcp sent and received in the
// process since dial — the client's alone in a process that runs nothing
// else over kcp.
func (c *kcpClient) wireBytes() int64 { return int64(snmpBytes() - c.bytes0) }
