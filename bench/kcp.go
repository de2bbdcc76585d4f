package bench

import (
	"fmt"
	"net"
	"sync"

	kcp "github.com/xtaci/kcp-go/v5"
)

// KCPWindow is the send and receive window (packets) of both kcp modes.
const KCPWindow = 128

// kcpTransport opens kcp-go pairs in one NoDelay mode.
type kcpTransport struct {
	name    string
	nodelay [4]int // nodelay, interval ms, resend, nc
}

func (t kcpTransport) Name() string { return t.name }

// configure applies the mode to one session (client or server): the
// NoDelay mode, send and receive windows of window packets (0: KCPWindow)
// and the MTU.
func (t kcpTransport) configure(s *kcp.UDPSession, mtu, window int) error {
	if window == 0 {
		window = KCPWindow
	}
	s.SetNoDelay(t.nodelay[0], t.nodelay[1], t.nodelay[2], t.nodelay[3])
	s.SetWindowSize(window, window)
	if !s.SetMtu(mtu) {
		return fmt.Errorf("bench: kcp refuses MTU %d", mtu)
	}
	return nil
}

// kcpPair is a kcp-go listener with an echoing session and a client
// session with a reading goroutine.
type kcpPair struct {
	l      *kcp.Listener
	client *kcp.UDPSession
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	sessions []*kcp.UDPSession // accepted, closed by Close
}

// Open implements Transport.
func (t kcpTransport) Open(cfg PairConfig) (Pair, error) {
	l, err := kcp.ListenWithOptions("127.0.0.1:0", nil, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("bench: kcp listen: %w", err)
	}
	p := &kcpPair{l: l}
	server := l.Addr().(*net.UDPAddr).AddrPort()
	via, err := cfg.Via(server)
	if err != nil {
		l.Close()
		return nil, err
	}
	p.wg.Add(1)
	go p.accept(t, cfg.MTU, cfg.MaxInFlight)

	c, err := kcp.DialWithOptions(via.String(), nil, 0, 0)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("bench: kcp dial: %w", err)
	}
	if err := t.configure(c, cfg.MTU, cfg.MaxInFlight); err != nil {
		c.Close()
		p.Close()
		return nil, err
	}
	p.client = c
	p.wg.Add(1)
	go p.read(cfg.OnEcho)
	return p, nil
}

// accept echoes every accepted session until the listener closes.
func (p *kcpPair) accept(t kcpTransport, mtu, window int) {
	defer p.wg.Done()
	for {
		s, err := p.l.AcceptKCP()
		if err != nil {
			return
		}
		_ = t.configure(s, mtu, window) // the client's MTU was accepted already
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			s.Close()
			return
		}
		p.sessions = append(p.sessions, s)
		p.wg.Add(1)
		p.mu.Unlock()
		go p.echo(s)
	}
}

// echo writes every message s reads back to it.
func (p *kcpPair) echo(s *kcp.UDPSession) {
	defer p.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, err := s.Read(buf)
		if err != nil {
			return
		}
		if _, err := s.Write(buf[:n]); err != nil {
			return
		}
	}
}

// read hands every message the client reads to onEcho.
func (p *kcpPair) read(onEcho func([]byte)) {
	defer p.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, err := p.client.Read(buf)
		if err != nil {
			return
		}
		onEcho(buf[:n])
	}
}

// Send implements Pair. kcp's session is in message mode: one Write is
// one message.
func (p *kcpPair) Send(b []byte) error {
	_, err := p.client.Write(b)
	return err
}

// Close implements Pair.
func (p *kcpPair) Close() error {
	if p.client != nil {
		p.client.Close()
	}
	p.l.Close()
	p.mu.Lock()
	p.closed = true
	for _, s := range p.sessions {
		s.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}
