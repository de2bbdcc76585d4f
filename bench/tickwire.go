package bench

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// TickInterval is the period of the tickwire pair's network loops: each
// side Polls and Flushes once per tick.
const TickInterval = time.Millisecond

// echoStream is the reliable-ordered stream the bench uses.
const echoStream = 1

type tickwireTransport struct{}

func (tickwireTransport) Name() string { return Tickwire }

// tickwirePair runs a server and a client Endpoint, each on its own
// goroutine with its own 1 ms loop.
type tickwirePair struct {
	onEcho    func([]byte)
	start     time.Time
	connected atomic.Bool
	stop      chan struct{}
	wg        sync.WaitGroup

	mu      sync.Mutex
	pending [][]byte // queued by Send, taken by the client loop
	spare   [][]byte // recycled buffers
}

// Open implements Transport.
func (tickwireTransport) Open(cfg PairConfig) (Pair, error) {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	ecfg := transport.EndpointConfig{Channel: transport.Config{MTU: cfg.MTU}}
	ecfg.Channel.Ack.MaxInFlight = cfg.MaxInFlight
	serverSock, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		return nil, fmt.Errorf("bench: tickwire server socket: %w", err)
	}
	server, err := transport.Listen(serverSock, ecfg, tickwireEcho{})
	if err != nil {
		serverSock.Close()
		return nil, err
	}
	via, err := cfg.Via(serverSock.LocalAddr())
	if err != nil {
		server.Close()
		return nil, err
	}
	clientSock, err := udp.Open(loopback, udp.Config{})
	if err != nil {
		server.Close()
		return nil, fmt.Errorf("bench: tickwire client socket: %w", err)
	}
	p := &tickwirePair{onEcho: cfg.OnEcho, start: time.Now(), stop: make(chan struct{})}
	client, err := transport.Dial(clientSock, via, ecfg, tickwireClient{p: p}, 0)
	if err != nil {
		server.Close()
		clientSock.Close()
		return nil, err
	}
	p.wg.Add(2)
	go p.loop(server, nil)
	go p.loop(client, p.drain)

	deadline := time.Now().Add(cfg.ConnectTimeout)
	for !p.connected.Load() {
		if time.Now().After(deadline) {
			p.Close()
			return nil, fmt.Errorf("bench: tickwire client not connected after %v", cfg.ConnectTimeout)
		}
		time.Sleep(time.Millisecond)
	}
	return p, nil
}

// loop drives one endpoint: before (client only), Poll, Flush, every
// TickInterval on an absolute schedule, until stop; then it closes e.
func (p *tickwirePair) loop(e *transport.Endpoint, before func(*transport.Endpoint)) {
	defer p.wg.Done()
	defer e.Close()
	next := time.Since(p.start)
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		now := time.Since(p.start)
		if before != nil {
			before(e)
		}
		if err := e.Poll(now); errors.Is(err, transport.ErrClosed) {
			return
		}
		if err := e.Flush(now); errors.Is(err, transport.ErrClosed) {
			return
		}
		next += TickInterval
		if d := next - time.Since(p.start); d > 0 {
			time.Sleep(d)
		} else {
			next = time.Since(p.start) // fell behind: do not burst to catch up
		}
	}
}

// drain hands the messages queued by Send to the client's channel.
func (p *tickwirePair) drain(e *transport.Endpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) == 0 {
		return
	}
	ch := e.Remote().Channel()
	for _, b := range p.pending {
		// A refused send (ErrQueueFull) is never echoed, so the row
		// reports delivered < sent.
		ch.SendReliable(echoStream, b) // copies b
		p.spare = append(p.spare, b[:0])
	}
	clear(p.pending)
	p.pending = p.pending[:0]
}

// Send implements Pair.
func (p *tickwirePair) Send(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var buf []byte
	if n := len(p.spare); n > 0 {
		buf, p.spare = p.spare[n-1], p.spare[:n-1]
	}
	p.pending = append(p.pending, append(buf, b...))
	return nil
}

// Close implements Pair.
func (p *tickwirePair) Close() error {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
	return nil
}

// tickwireClient is the client's handler.
type tickwireClient struct {
	transport.NopHandler
	p *tickwirePair
}

func (c tickwireClient) OnConnect(*transport.Peer) { c.p.connected.Store(true) }

func (c tickwireClient) OnMessage(_ *transport.Peer, m transport.Message) { c.p.onEcho(m.Payload) }

// tickwireEcho is the server's handler: it echoes every message on its
// stream.
type tickwireEcho struct{ transport.NopHandler }

func (tickwireEcho) OnMessage(p *transport.Peer, m transport.Message) {
	p.Channel().SendReliable(m.Stream, m.Payload) // copies m.Payload
}
