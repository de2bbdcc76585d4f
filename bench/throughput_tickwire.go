package bench

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// twOneWay is a tickwire pair for one-way traffic (client to server),
// connected directly (no relay) on batched UDP sockets, and driven in
// lockstep by the caller's goroutine: each step Polls the server, Polls
// the client, Flushes the server, Flushes the client — as fast as the
// loop can, not every TickInterval, as transport's
// BenchmarkLoopbackReliable does.
//
// Why lockstep and no sleeping: a Flush sends at most
// MaxDatagramsPerFlush (32) datagrams, so throughput scales with the Flush
// rate; and the receiver must ack every burst before the next, because one
// ack header covers 33 seqs. Two free-running tight loops on their own
// goroutines break that: the sender Flushes several bursts between two of
// the receiver's acks, its datagrams age out of the ack window unacked,
// are declared lost and re-sent in bursts that age out again, and a
// reliable stream stalls at its first full window (measured: 256 of 2048
// chunks in 10 s). In lockstep the receiver reads each burst before the
// next is built. The pair thus uses one core, where raw uses two.
type twOneWay struct {
	start            time.Time
	srvSock, cliSock *udp.Conn
	server, client   *transport.Endpoint
	connected        bool
	received         int64 // messages the server handler saw
	deliver          func(transport.Message)
}

// openTwOneWay opens the pair and returns once the client is connected;
// deliver runs for every message the server receives, inside step.
func openTwOneWay(ctx context.Context, ch transport.Config, deliver func(transport.Message)) (*twOneWay, error) {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	ecfg := transport.EndpointConfig{Channel: ch}
	scfg := udp.Config{RecvBuffer: throughputSocketBuffer, SendBuffer: throughputSocketBuffer}
	p := &twOneWay{start: time.Now(), deliver: deliver}
	var err error
	if p.srvSock, err = udp.Open(loopback, scfg); err != nil {
		return nil, fmt.Errorf("server socket: %w", err)
	}
	if p.server, err = transport.Listen(p.srvSock, ecfg, twSink{p: p}); err != nil {
		p.srvSock.Close()
		return nil, err
	}
	if p.cliSock, err = udp.Open(loopback, scfg); err != nil {
		p.server.Close()
		return nil, fmt.Errorf("client socket: %w", err)
	}
	ccfg := ecfg
	ccfg.ServerKey = p.server.PublicKey()
	if p.client, err = transport.Dial(p.cliSock, p.srvSock.LocalAddr(), ccfg, twSource{p: p}, 0); err != nil {
		p.server.Close()
		p.cliSock.Close()
		return nil, err
	}
	deadline := time.Now().Add(DefaultConnectTimeout)
	for !p.connected {
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.close()
			return nil, fmt.Errorf("tickwire client not connected after %v", DefaultConnectTimeout)
		}
		if err := p.step(); err != nil {
			p.close()
			return nil, err
		}
		time.Sleep(100 * time.Microsecond)
	}
	return p, nil
}

// step Polls both ends, then Flushes both.
func (p *twOneWay) step() error {
	now := time.Since(p.start)
	if err := p.server.Poll(now); err != nil {
		return err
	}
	if err := p.client.Poll(now); err != nil {
		return err
	}
	if err := p.server.Flush(now); err != nil {
		return err
	}
	return p.client.Flush(now)
}

// close closes both endpoints.
func (p *twOneWay) close() {
	p.client.Close()
	p.server.Close()
}

// wireBytes are the UDP payload bytes both sockets sent.
func (p *twOneWay) wireBytes() int64 {
	return int64(p.srvSock.Stats().BytesOut + p.cliSock.Stats().BytesOut)
}

// twSink is the server's handler.
type twSink struct {
	transport.NopHandler
	p *twOneWay
}

func (h twSink) OnMessage(_ *transport.Peer, m transport.Message) {
	h.p.deliver(m)
	h.p.received++
}

// twSource is the client's handler.
type twSource struct {
	transport.NopHandler
	p *twOneWay
}

func (h twSource) OnConnect(*transport.Peer) { h.p.connected = true }

// tickwirePPS sends s.Size-byte messages for s.Duration: unreliable
// (SendUnreliable), or with s.Delivery Reliable on reliable-ordered
// stream 1 (SendReliable, the channel's default windows). The channel
// packs as many messages into each datagram as fit the MTU, as it does
// for a game; the row reports messages and datagrams per second. The
// unreliable queue is capped at one Flush's worth (32 datagrams) so that
// messages are not queued faster than they leave: each step the sender
// queues until ErrQueueFull (reliable: until the stream's window is
// full). A reliable row then steps on until everything sent arrived or
// s.Drain passes.
func tickwirePPS(ctx context.Context, s Scenario) (flow, error) {
	var lastAt time.Duration
	base := time.Now()
	cfg := transport.Config{
		MTU:             s.MTU,
		MaxMessageSize:  MaxSize,
		UnreliableBytes: transport.DefaultMaxDatagrams * s.MTU,
	}
	cfg.Ack.MaxInFlight = s.MaxInFlight
	reliable := s.Delivery == Reliable
	p, err := openTwOneWay(ctx, cfg, func(transport.Message) { lastAt = time.Since(base) })
	if err != nil {
		return flow{}, err
	}
	defer p.close()
	ch := p.client.Remote().Channel()
	msg := make([]byte, s.Size)
	dgrams0 := p.srvSock.Stats().DatagramsIn
	received0 := p.received
	sendStart := time.Since(base)
	var sent int64
	for ctx.Err() == nil && time.Since(base)-sendStart < s.Duration {
		if reliable {
			for {
				if _, err := ch.SendReliable(echoStream, msg); err != nil {
					break // ErrQueueFull: the window is full
				}
				sent++
			}
		} else {
			for ch.SendUnreliable(msg) == nil {
				sent++
			}
		}
		if err := p.step(); err != nil {
			return flow{}, err
		}
	}
	// Send what is still queued; stop once everything arrived, or (for
	// unreliable messages) once a few steps deliver nothing.
	for quiet, last, deadline := 0, int64(-1), time.Now().Add(s.Drain); (reliable || quiet < 8) && time.Now().Before(deadline) && p.received-received0 < sent; {
		if err := p.step(); err != nil {
			return flow{}, err
		}
		if p.received == last {
			quiet++
			time.Sleep(time.Millisecond)
		} else {
			quiet, last = 0, p.received
		}
	}
	return flow{
		sent: sent, delivered: p.received - received0,
		datagrams: int64(p.srvSock.Stats().DatagramsIn - dgrams0),
		wireBytes: p.wireBytes(), elapsed: lastAt - sendStart,
	}, nil
}

// tickwireBulk sends bulkChunks(s.Bytes) BulkChunk-byte messages on
// reliable-ordered stream 1 (each step: SendReliable until ErrQueueFull),
// for at most s.Duration, then steps on until the server has all it was
// sent or s.Drain passes. Default channel settings: a user streaming data
// gets a 256-message, 1 MiB reliable window per stream.
func tickwireBulk(ctx context.Context, s Scenario) (flow, error) {
	src := newBulkSource()
	sink := &bulkSink{src: src, start: time.Now()}
	cfg := transport.Config{MTU: s.MTU}
	cfg.Ack.MaxInFlight = s.MaxInFlight
	p, err := openTwOneWay(ctx, cfg, func(m transport.Message) { sink.onChunk(m.Payload) })
	if err != nil {
		return flow{}, err
	}
	defer p.close()
	ch := p.client.Remote().Channel()
	total := bulkChunks(s.Bytes)
	dgrams0 := p.srvSock.Stats().DatagramsIn
	sendStart := time.Since(sink.start)
	var sent int64
	for sent < total && ctx.Err() == nil && time.Since(sink.start)-sendStart < s.Duration {
		for sent < total {
			if _, err := ch.SendReliable(echoStream, src.chunk(sent)); err != nil {
				break // ErrQueueFull: the window is full
			}
			sent++
		}
		if err := p.step(); err != nil {
			return flow{}, err
		}
	}
	deadline := time.Now().Add(s.Drain)
	for sink.delivered.Load()+sink.bad.Load() < sent && time.Now().Before(deadline) && ctx.Err() == nil {
		if err := p.step(); err != nil {
			return flow{}, err
		}
	}
	return flow{
		sent: sent, delivered: sink.delivered.Load(),
		datagrams: int64(p.srvSock.Stats().DatagramsIn - dgrams0),
		wireBytes: p.wireBytes(), elapsed: time.Duration(sink.lastAt.Load()) - sendStart,
	}, nil
}
