package bench

import (
	"context"
	"crypto/ecdh"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
	"github.com/tickwire/tickwire/wire"
)

// TickInterval is the period of the bench's fixed-rate tickwire loops
// (the actions profile's, and a client's goodbye).
const TickInterval = time.Millisecond

// WaitTick bounds how long the echo halves' event-driven loops sleep
// between rounds. They Poll and Flush whenever a datagram arrives or Send
// hands the client a message (Endpoint.Wait and Wake), and otherwise sleep
// until the endpoint's next deadline (Endpoint.NextDeadline: a redundant
// copy, a retransmission, a keep-alive), so on Linux the bound is only a
// safety net. Off Linux, where the UDP socket's Wait does not wake for
// datagrams, the loops also wake every TickInterval.
const WaitTick = time.Second

// loopTick is the longest the echo loops sleep on this platform.
func loopTick() time.Duration {
	if runtime.GOOS == "linux" {
		return WaitTick
	}
	return TickInterval
}

// echoStream is the reliable-ordered stream the bench uses.
const echoStream = 1

type tickwireTransport struct{}

func (tickwireTransport) Name() string { return Tickwire }

// tickLoop drives e on the calling goroutine until stop is closed or e
// is: before (if set), Poll and Flush, then Wait until the endpoint's next
// deadline (at most loopTick), a datagram or a Wake. Both halves run it,
// each on its own goroutine, so a message is answered within microseconds
// of arriving, as kcp-go's reader goroutines answer, and an idle loop
// wakes only when a timer of the endpoint is due.
func tickLoop(e *transport.Endpoint, start time.Time, stop <-chan struct{}, before func(*transport.Endpoint)) {
	bound := loopTick()
	for {
		select {
		case <-stop:
			return
		default:
		}
		now := time.Since(start)
		if before != nil {
			before(e)
		}
		if err := e.Poll(now); errors.Is(err, transport.ErrClosed) {
			return
		}
		if err := e.Flush(now); errors.Is(err, transport.ErrClosed) {
			return
		}
		wait := bound
		if at, ok := e.NextDeadline(); ok {
			wait = min(wait, at-time.Since(start)) // the deadline is on the clock Poll and Flush were given
		}
		if wait <= 0 {
			continue // something is due already
		}
		if err := e.Wait(wait); errors.Is(err, transport.ErrClosed) {
			return
		}
	}
}

// tickwireServer is the server half: one Endpoint on a batched UDP
// socket, for up to transport.MaxPeersLimit clients, on its own
// event-driven loop goroutine (tickLoop).
type tickwireServer struct {
	sock *udp.Conn
	h    *tickwireEcho
	key  *ecdh.PublicKey // the endpoint's, for clients to pin
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// listen implements Transport.
func (tickwireTransport) listen(cfg listenConfig) (serverHalf, error) {
	sock, err := udp.Open(cfg.addr, udp.Config{})
	if err != nil {
		return nil, fmt.Errorf("bench: tickwire server socket: %w", err)
	}
	s := &tickwireServer{sock: sock, h: &tickwireEcho{}, stop: make(chan struct{}), done: make(chan struct{})}
	ecfg := transport.EndpointConfig{Channel: transport.Config{MTU: cfg.mtu, RedundancyInterval: cfg.redundancyInterval, Redundancy: cfg.redundancy}, MaxPeers: transport.MaxPeersLimit}
	ecfg.Channel.Ack.MaxInFlight = cfg.maxInFlight
	ecfg.PrivateKey = cfg.privateKey
	ecfg.Tokens = cfg.tokens
	ep, err := transport.Listen(sock, ecfg, s.h)
	if err != nil {
		sock.Close()
		return nil, err
	}
	s.key = ep.PublicKey()
	go s.serve(ep)
	return s, nil
}

// serve is the server's goroutine.
func (s *tickwireServer) serve(ep *transport.Endpoint) {
	defer close(s.done)
	defer ep.Close()
	tickLoop(ep, time.Now(), s.stop, nil)
	for _, p := range ep.Peers(nil) {
		s.h.count(p)
	}
}

// redundantBytes returns the redundant-copy bytes the server sent, once
// it is closed.
func (s *tickwireServer) redundantBytes() int64 { return s.h.redundant.Load() }

func (s *tickwireServer) addr() netip.AddrPort { return s.sock.LocalAddr() }

func (s *tickwireServer) stats() ServerStats {
	return ServerStats{Sessions: s.h.sessions.Load(), Echoed: s.h.echoed.Load()}
}

func (s *tickwireServer) close() error {
	s.once.Do(func() { close(s.stop); s.sock.Wake() })
	<-s.done
	return nil
}

// tickwireEcho is the server's handler: it echoes every message on its
// stream, and counts sessions and echoes (atomics: read from any
// goroutine; the load profile's server does not read them).
type tickwireEcho struct {
	transport.NopHandler
	sessions, echoed atomic.Uint64
	// redundant sums the redundant-copy bytes of every session that
	// ended (counted once each, on the loop goroutine): read it after
	// the server closed.
	redundant atomic.Int64
	counted   map[*transport.Peer]bool
}

// count adds p's redundant bytes to h.redundant, once per session.
func (h *tickwireEcho) count(p *transport.Peer) {
	if h.counted == nil {
		h.counted = map[*transport.Peer]bool{}
	}
	if !h.counted[p] {
		h.counted[p] = true
		h.redundant.Add(int64(p.Channel().Stats().RedundantBytes))
	}
}

func (h *tickwireEcho) OnDisconnect(p *transport.Peer, _ wire.DisconnectReason) { h.count(p) }

func (h *tickwireEcho) OnConnect(*transport.Peer) { h.sessions.Add(1) }

func (h *tickwireEcho) OnMessage(p *transport.Peer, m transport.Message) {
	if _, err := p.Channel().SendReliable(m.Stream, m.Payload); err == nil { // copies m.Payload
		h.echoed.Add(1)
	}
}

// tickwireClient is the client half: one Endpoint on a batched UDP socket
// on its own event-driven loop goroutine (tickLoop). Send queues messages
// under a mutex and wakes the loop, which hands them to the channel and
// flushes at once.
type tickwireClient struct {
	sock      *udp.Conn
	ep        *transport.Endpoint
	onEcho    func([]byte)
	start     time.Time
	remote    bool
	connected atomic.Bool
	redundant atomic.Int64 // redundant-copy bytes sent, set when the loop ends
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once

	mu      sync.Mutex
	err     error    // why the client has no session (Endpoint.Err), once set
	pending [][]byte // queued by Send, taken by the loop
	spare   [][]byte // recycled buffers
}

// dial implements Transport.
func (tickwireTransport) dial(ctx context.Context, cfg dialConfig) (clientHalf, error) {
	sock, err := udp.Open(clientBind(cfg.server), udp.Config{})
	if err != nil {
		return nil, fmt.Errorf("bench: tickwire client socket: %w", err)
	}
	c := &tickwireClient{sock: sock, onEcho: cfg.onEcho, start: time.Now(), remote: cfg.remote,
		stop: make(chan struct{}), done: make(chan struct{})}
	ecfg := transport.EndpointConfig{Channel: transport.Config{MTU: cfg.mtu, RedundancyInterval: cfg.redundancyInterval, Redundancy: cfg.redundancy}, ServerKey: cfg.serverKey, Token: cfg.token}
	ecfg.Channel.Ack.MaxInFlight = cfg.maxInFlight
	c.ep, err = transport.Dial(sock, cfg.server, ecfg, tickwireClientHandler{c: c}, 0)
	if err != nil {
		sock.Close()
		return nil, err
	}
	go c.run()

	deadline := time.Now().Add(cfg.connectTimeout)
	for !c.connected.Load() {
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		switch {
		case err != nil:
			c.Close()
			return nil, fmt.Errorf("bench: tickwire: no session with %v: %w", cfg.server, err)
		case ctx.Err() != nil:
			c.Close()
			return nil, fmt.Errorf("bench: tickwire: connecting to %v: %w", cfg.server, ctx.Err())
		case time.Now().After(deadline):
			c.Close()
			return nil, fmt.Errorf("%w: tickwire: no session with %v after %v", ErrConnectTimeout, cfg.server, cfg.connectTimeout)
		}
		time.Sleep(time.Millisecond)
	}
	return c, nil
}

// run is the client's goroutine.
func (c *tickwireClient) run() {
	defer close(c.done)
	defer c.ep.Close()
	tickLoop(c.ep, c.start, c.stop, c.before)
	if c.remote {
		c.goodbye()
	}
	if p := c.ep.Remote(); p != nil {
		c.redundant.Store(int64(p.Channel().Stats().RedundantBytes))
	}
}

// redundantBytes returns the redundant-copy bytes the client sent, once
// it is closed.
func (c *tickwireClient) redundantBytes() int64 { return c.redundant.Load() }

// goodbye ends the session in order: a Disconnect frame on each of the
// next DisconnectRepeats ticks, then the session is gone on both sides.
func (c *tickwireClient) goodbye() {
	p := c.ep.Remote()
	if p == nil || c.ep.Disconnect(p, wire.DisconnectClosed) != nil {
		return
	}
	for range c.ep.Config().DisconnectRepeats + 1 {
		now := time.Since(c.start)
		if c.ep.Poll(now) != nil || c.ep.Flush(now) != nil {
			return
		}
		time.Sleep(TickInterval)
	}
}

// before runs at the start of each tick: it notes why the client has no
// session, if it has none for good, and hands the messages queued by Send
// to the channel.
func (c *tickwireClient) before(e *transport.Endpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = e.Err()
	}
	if len(c.pending) == 0 {
		return
	}
	ch := e.Remote().Channel()
	for _, b := range c.pending {
		// A refused send (ErrQueueFull) is never echoed, so the row
		// reports delivered < sent.
		ch.SendReliable(echoStream, b) // copies b
		c.spare = append(c.spare, b[:0])
	}
	clear(c.pending)
	c.pending = c.pending[:0]
}

// Send implements clientHalf.
func (c *tickwireClient) Send(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var buf []byte
	if n := len(c.spare); n > 0 {
		buf, c.spare = c.spare[n-1], c.spare[:n-1]
	}
	c.pending = append(c.pending, append(buf, b...))
	c.ep.Wake()
	return nil
}

// Close implements clientHalf.
func (c *tickwireClient) Close() error {
	c.once.Do(func() { close(c.stop); c.ep.Wake() })
	<-c.done
	return nil
}

// wireBytes implements clientHalf: the socket's payload bytes, both ways.
func (c *tickwireClient) wireBytes() int64 {
	st := c.sock.Stats()
	return int64(st.BytesIn + st.BytesOut)
}

// tickwireClientHandler is the client's handler.
type tickwireClientHandler struct {
	transport.NopHandler
	c *tickwireClient
}

func (h tickwireClientHandler) OnConnect(*transport.Peer) { h.c.connected.Store(true) }

func (h tickwireClientHandler) OnMessage(_ *transport.Peer, m transport.Message) {
	h.c.onEcho(m.Payload)
}
