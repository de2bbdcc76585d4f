package transport

import (
	"context"
	"crypto/ecdh"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// role is what an Endpoint is: a server (Listen) or a client (Dial).
type role uint8

const (
	roleServer role = iota + 1
	roleClient
)

// Endpoint is the connection layer over one socket: a server that admits
// clients (Listen) or a client of one server (Dial). It runs the handshake
// (stateless cookie, admission — a connect token and the application's
// hook, when configured —, an X25519 key exchange that authenticates
// the server to a client pinning its key or holding a token,
// Accept/Reject), seals every
// session datagram it sends and opens every one it receives before it
// reaches a Channel (docs/WIRE.md §9, §13), keeps one Channel per
// peer, reaps idle peers, disconnects in order, resumes sessions with a
// session token, and rate-limits handshakes.
//
// Threading: an Endpoint is driven by one goroutine — the loop, yours or
// Run's — that calls Poll (read and dispatch what arrived) and Flush (one
// round: handshake retries, time-outs, every peer's channel flushed into
// one batch of datagrams) and every other method. Nothing is locked on the
// datagram path and the endpoint starts no goroutine. Handler methods run
// on that goroutine, inside Poll and Flush. Exactly three methods are safe
// from other goroutines: Send (queue a message for the loop to send),
// Wake (end the loop's Wait) and Now (read the clock); besides them only
// the expvar snapshot of Publish is read elsewhere.
//
// Time is the caller's: every method that needs it takes now, a monotonic
// duration from any origin (a simulated clock in tests, time.Since(start)
// in production). Randomness comes from EndpointConfig.Rand.
//
// Memory: the endpoint owns IdealBatchSize receive buffers and as many send
// buffers, sized for the largest MTU, allocated once. A server holds per
// peer a Peer and its Channel, created only after the client proved its
// address; handshakes in progress cost it nothing (S-E3). Steady-state
// Poll and Flush allocate nothing (TestEndpointNoAllocs).
type Endpoint struct {
	cfg    EndpointConfig
	role   role
	conn   socket.Conn
	h      EndpointHandler
	closed bool
	log    *slog.Logger // nil: silent
	// stopped: a server that accepts no new sessions (StopAccepting).
	stopped bool
	fatal   error // the socket failed or was closed under us

	now     time.Duration
	pollSeq uint64        // Poll calls, for the per-peer budgets
	rxAge   time.Duration // socket.Message.Age of the datagram Poll is handling

	in       []socket.Message
	out      []socket.Message
	outBufs  [][]byte
	sink     Sink // (*endpointSink)(e), kept to avoid re-boxing per Flush
	sinkPeer *Peer

	// Sessions. byAddr holds connected and closing peers (a server's
	// suspended peers have no address); peers indexes a server's sessions
	// by id.
	byAddr map[netip.AddrPort]*Peer
	peers  [MaxPeersLimit]*Peer
	ids    idAllocator

	// keyUpdateInterval is the sessions' seal.Config.KeyUpdateInterval
	// (0: the default, 2^20); tests lower it to cross key updates.
	keyUpdateInterval uint64

	// Server secrets and limits. priv is the static X25519 key.
	priv    *ecdh.PrivateKey
	cookies *cookieJar
	tokens  *tokenMinter
	limiter *rateLimiter
	tok     *tokenServer // connect tokens (EndpointConfig.Tokens), nil: off

	// Client.
	server netip.AddrPort
	remote *Peer
	dial   dialState
	err    error // why the client has, and can get, no session
	// endReason is why the client's last session ended (OnDisconnect's).
	endReason wire.DisconnectReason
	// ownChannel is the client's Channel config as given, zero fields
	// unresolved: the Accept's limits fill them (adoptLimits), and the
	// defaults that depend on them are derived from the server's values.
	ownChannel Config

	// Wait and Wake: the socket's own when it is a socket.Waiter, else a
	// timer and a channel. waiter is replaced when Resume changes the
	// socket; Wake reads it from any goroutine.
	waiter    atomic.Pointer[waiterRef]
	drainer   drainer // the socket, when it is one; set with waiter
	woken     chan struct{}
	waitTimer *time.Timer

	outbox      outbox // Send's queue, drained by Flush
	outboxRound uint64 // drainOutbox calls, for Peer.outboxBlocked
	outboxLeft  int32  // messages the last drainOutbox left (back-pressure)

	// Whether a read or send error has been logged (the first of each
	// kind is; the rest are only counted).
	loggedReadErr, loggedSendErr bool

	rbuf    [8]byte
	stats   EndpointStats
	board   *statsBoard
	boardAt time.Duration
}

// Listen returns a server endpoint on conn. The endpoint owns conn from
// now on (Close closes it). h receives peer events and messages (nil
// means NopHandler). cfg is validated (EndpointConfig.Validate).
func Listen(conn socket.Conn, cfg EndpointConfig, h EndpointHandler) (*Endpoint, error) {
	e, err := newEndpoint(conn, cfg, h, roleServer)
	if err != nil {
		return nil, err
	}
	if e.ids, err = newIDAllocator(e.cfg.MaxPeers); err != nil {
		return nil, err
	}
	if e.tokens, err = newTokenMinter(e.cfg.Rand); err != nil {
		return nil, err
	}
	if e.limiter, err = newRateLimiter(e.cfg); err != nil {
		return nil, err
	}
	e.cookies = newCookieJar(e.cfg.CookiePeriod, e.cfg.Rand)
	if e.tok, err = newTokenServer(e.cfg.Tokens, conn.LocalAddr()); err != nil {
		return nil, err
	}
	if e.priv = e.cfg.PrivateKey; e.priv == nil {
		if e.priv, err = keyPair(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// PublicKey returns a server's static X25519 public key, the one its
// clients pin (EndpointConfig.ServerKey): EndpointConfig.PrivateKey's, or
// the key Listen generated. An in-process client passes it directly; a
// server in another process prints it or keeps its private key in a file.
// It is nil on a client.
func (e *Endpoint) PublicKey() *ecdh.PublicKey {
	if e.priv == nil {
		return nil
	}
	return e.priv.PublicKey()
}

// Dial returns a client endpoint on conn that connects to server: its
// first Flush (at or after now) sends a ConnectRequest, re-sent with
// back-off until a Challenge arrives, then a ConnectResponse until an
// Accept; once EndpointConfig.HandshakeTimeout has passed since now
// without one, it gives up with a *HandshakeTimeoutError. Dial itself
// does no I/O; DialContext runs the handshake to its end. On Accept the client adopts the channel limits
// the server announces (EndpointConfig.Channel says which, and how its own
// fields combine with them) and h.OnConnect reports the server's Peer. On
// failure Flush and Err return a *HandshakeTimeoutError (matching
// ErrHandshakeTimeout), a *RejectError, or —
// for an Accept this client cannot honour, which it refuses on the wire so
// the server frees the session at once — an error wrapping
// ErrIncompatible (or ErrProtocol for limits no valid config has). The
// endpoint owns conn from now on.
func Dial(conn socket.Conn, server netip.AddrPort, cfg EndpointConfig, h EndpointHandler, now time.Duration) (*Endpoint, error) {
	if !server.IsValid() || server.Port() == 0 {
		return nil, fmt.Errorf("%w: server address %v", ErrInvalidConfig, server)
	}
	if cfg.ServerKey == nil && !cfg.InsecureCleartext && cfg.Token == nil {
		return nil, fmt.Errorf("%w (dialing %v)", ErrNoServerKey, server)
	}
	e, err := newEndpoint(conn, cfg, h, roleClient)
	if err != nil {
		return nil, err
	}
	e.server = server
	e.now = now
	if err := e.startDial(now, false); err != nil {
		return nil, err
	}
	return e, nil
}

func newEndpoint(conn socket.Conn, cfg EndpointConfig, h EndpointHandler, r role) (*Endpoint, error) {
	if conn == nil {
		return nil, fmt.Errorf("%w: nil socket", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil {
		h = NopHandler{}
	}
	e := &Endpoint{
		cfg:        cfg.WithDefaults(),
		ownChannel: cfg.Channel,
		role:       r,
		conn:       conn,
		h:          h,
		byAddr:     make(map[netip.AddrPort]*Peer),
		woken:      make(chan struct{}, 1),
	}
	e.log = e.cfg.Logger
	e.setWaiter(conn)
	e.outbox.init(e.cfg.OutboxMessages, e.cfg.OutboxBytes)
	// One slab each for receive and send buffers. A receive buffer is one
	// byte longer than any valid datagram, to recognise oversize ones.
	const n = socket.IdealBatchSize
	inSlab := make([]byte, n*(MaxMTU+1))
	e.in = make([]socket.Message, n)
	for i := range e.in {
		e.in[i].Buf = inSlab[i*(MaxMTU+1) : (i+1)*(MaxMTU+1) : (i+1)*(MaxMTU+1)]
	}
	outSlab := make([]byte, n*MaxMTU)
	e.outBufs = make([][]byte, n)
	for i := range e.outBufs {
		e.outBufs[i] = outSlab[i*MaxMTU : i*MaxMTU : (i+1)*MaxMTU]
	}
	e.out = make([]socket.Message, 0, n)
	e.sink = (*endpointSink)(e)
	return e, nil
}

// drainer is a socket that can tell that a read emptied its receive
// queue (udp.Conn), sparing Poll the read that would find nothing.
type drainer interface{ Drained() bool }

// waiterRef boxes the socket's Waiter for the atomic pointer.
type waiterRef struct{ w socket.Waiter }

// setWaiter records conn's Waiter and drainer (nil if it is not one),
// once per socket: asserting to an interface on every Poll would call
// into the runtime, which now and then allocates to grow its cache.
func (e *Endpoint) setWaiter(conn socket.Conn) {
	w, _ := conn.(socket.Waiter)
	e.waiter.Store(&waiterRef{w: w})
	e.drainer, _ = conn.(drainer)
}

// Now reads the endpoint's clock (EndpointConfig.Clock). It is safe from
// any goroutine.
func (e *Endpoint) Now() time.Duration { return e.cfg.Clock() }

// clockStart is the origin of Now.
var clockStart = time.Now()

// Now returns the time since the package was initialised, read from the
// monotonic clock: the default EndpointConfig.Clock, so Run, DialContext
// and a loop of your own that passes Now() to Poll and Flush all see one
// time line. It never goes backwards and allocates nothing.
func Now() time.Duration { return time.Since(clockStart) }

// Config returns the endpoint's config with defaults applied. On a client
// whose handshake completed, Channel is the channel config it adopted from
// the server's Accept (EndpointConfig.Channel); before that, its own.
func (e *Endpoint) Config() EndpointConfig { return e.cfg }

// LocalAddr returns the socket's address.
func (e *Endpoint) LocalAddr() netip.AddrPort { return e.conn.LocalAddr() }

// IsServer reports whether the endpoint was made by Listen.
func (e *Endpoint) IsServer() bool { return e.role == roleServer }

// Err returns why a client has no session and will get none without a new
// Dial: ErrHandshakeTimeout, a *RejectError (also for a refused resume),
// or an error wrapping ErrIncompatible or ErrProtocol (the Accept's
// limits, with the numbers). It is nil on a server, while a client
// is connecting or connected, and after an ordinary disconnect (reported
// by OnDisconnect).
func (e *Endpoint) Err() error { return e.err }

// Poll reads every datagram waiting in the socket (at most
// EndpointConfig.MaxDatagramsPerPoll) in batches of socket.IdealBatchSize
// — until a read finds nothing, or one the socket reports emptied its
// queue (udp.Conn.Drained), which spares a read that would find nothing —
// and dispatches each: handshake messages to the handshake, session
// datagrams — after the source-address lookup and the AEAD open (or, in
// InsecureCleartext, the constant-time secret check) — to their peer's
// Channel, whose deliveries reach the handler before Poll
// returns. Handshake replies are written before it returns. Datagrams that
// fail a check are dropped and counted (Stats), never returned as errors.
// Poll returns an error wrapping ErrClosed (and so net.ErrClosed) once the
// endpoint or its socket is closed, or the socket's read error. now is the
// endpoint's clock.
func (e *Endpoint) Poll(now time.Duration) error {
	if e.closed {
		return ErrClosed
	}
	if e.fatal != nil {
		return e.fatal
	}
	e.now = now
	e.pollSeq++
	for read := 0; read < e.cfg.MaxDatagramsPerPoll; {
		batch := e.in[:min(len(e.in), e.cfg.MaxDatagramsPerPoll-read)]
		n, err := e.conn.TryReadBatch(batch)
		e.stats.Reads++
		if n == 0 {
			e.stats.EmptyReads++
		}
		if err != nil {
			e.writeOut()
			if errors.Is(err, net.ErrClosed) {
				return e.socketClosed("read", err)
			}
			e.logOnce(&e.loggedReadErr, "transport: socket read failed", err)
			return fmt.Errorf("transport: read from %v: %w", e.conn.LocalAddr(), err)
		}
		for i := range batch[:n] {
			m := &batch[i]
			e.rxAge = m.Age
			e.handle(now, m.Addr, m.Buf[:min(max(m.N, 0), len(m.Buf))])
		}
		e.rxAge = 0
		read += n
		// Only an empty read means the socket is drained, unless the
		// socket says so itself (udp.Conn.Drained): a socket may return
		// fewer than asked with more waiting (GRO hands out at most 16
		// coalesced buffers per read). A datagram that arrives after a
		// drained read wakes the next Wait at once, as after an empty one.
		if n == 0 {
			break
		}
		if e.drainer != nil && e.drainer.Drained() {
			break
		}
	}
	e.writeOut()
	return e.fatal
}

// Wait blocks the endpoint's goroutine until a datagram may be waiting
// for Poll, Wake is called, or d passes, whichever is first; then the
// caller Polls and Flushes. It lets a loop answer a datagram within
// microseconds instead of at its next fixed tick, and cost nothing while
// idle. The event-driven loop (Run with RunConfig.Tick 0 is this loop)
// waits until the endpoint's next deadline (NextDeadline), so it wakes
// only when a datagram arrives, Wake is called or a timer is due:
//
//	for {
//		ep.Poll(ep.Now())
//		ep.Flush(ep.Now()) // on every wake-up: Flush may run at any cadence
//		if at, ok := ep.NextDeadline(); ok {
//			if d := at - ep.Now(); d > 0 {
//				ep.Wait(min(d, time.Second))
//			}
//		}
//	}
//
// A loop that waits a fixed d (5 ms, say) is valid too, and so is a
// fixed-rate loop (Poll, game logic, Flush, sleep until the next tick);
// the protocol's timers are durations on now, so the cadence changes
// latency and wake-ups, never behaviour.
//
// A wake-up with nothing to read is allowed. When the socket is a
// socket.Waiter (the UDP socket: on Linux an epoll set of its own, parked
// in the Go netpoller; see udp.Conn.Wait) Wait sleeps on it; otherwise it
// sleeps for d or until Wake, not waking for datagrams (a loop over such a
// socket must poll: Run does every RunPollInterval). Each call counts in
// EndpointStats.Waits. It returns an error wrapping ErrClosed (and so
// net.ErrClosed) once the endpoint or its socket is closed. It allocates
// nothing (after its first call, on a socket that is not a Waiter).
func (e *Endpoint) Wait(d time.Duration) error {
	if e.closed {
		return ErrClosed
	}
	if e.fatal != nil {
		return e.fatal
	}
	e.stats.Waits++
	if w := e.waiter.Load().w; w != nil {
		if err := w.Wait(d); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return e.socketClosed("wait", err)
			}
			return fmt.Errorf("transport: wait on %v: %w", e.conn.LocalAddr(), err)
		}
		return nil
	}
	if e.waitTimer == nil {
		e.waitTimer = time.NewTimer(d)
	} else {
		e.waitTimer.Reset(d)
	}
	select {
	case <-e.woken:
		e.waitTimer.Stop()
	case <-e.waitTimer.C:
	}
	return nil
}

// NextDeadline returns the earliest time on the endpoint's clock
// (EndpointConfig.Clock, the now of Poll and Flush) at which Flush has
// something to do, and true; false only once the endpoint is closed. It
// is at or before the last Poll or Flush's now — due at once — when a
// message Send queued since the last Flush waits in the outbox (one the
// Flush kept back for a full channel waits for that channel's ack), or a
// channel has work left
// (a datagram received, a message queued, a Flush cut short by
// Config.MaxDatagramsPerFlush; see Channel.NextDeadline), or a session is
// being Disconnected (one copy of its Disconnect frame per Flush).
// Otherwise it is the earliest of every peer's channel deadline (ack,
// redundant copy, loss verdict, reassembly expiry, stall warning and
// time-out, keep-alive), its idle time-out (IdleTimeout after it was last
// heard), a suspended session's expiry, a client's handshake re-send and
// time-out and its ResumeAfter, and the stats refresh (Publish). A
// datagram arriving or a Send can only make it earlier: an event loop
// that Waits until it, or until woken, and then Polls and Flushes runs
// every timer of the endpoint on time and never wakes for nothing —
// Run's event-driven loop is this loop:
//
//	for {
//		ep.Poll(ep.Now())
//		ep.Flush(ep.Now())
//		if at, ok := ep.NextDeadline(); ok {
//			if d := at - ep.Now(); d > 0 {
//				ep.Wait(min(d, time.Second))
//			}
//		}
//	}
//
// Call it on the endpoint's goroutine, after Flush. Cost: O(peers +
// their unacked reliable messages), no allocation.
func (e *Endpoint) NextDeadline() (time.Duration, bool) {
	if e.closed {
		return 0, false
	}
	now := e.now
	if e.fatal != nil || e.outbox.n.Load() > e.outboxLeft {
		// A Send since the last Flush. What the last Flush left in the
		// outbox waits for its channel's room, which an ack makes (a
		// datagram: the channel is then due).
		return now, true
	}
	var dl deadline
	if e.board != nil {
		dl.add(e.boardAt + e.cfg.StatsInterval)
	}
	if e.role == roleClient {
		if d := &e.dial; d.phase != dialIdle {
			dl.add(d.next)
			if !d.resume {
				dl.add(d.start + e.cfg.HandshakeTimeout)
			}
		}
		if p := e.remote; p != nil && p.state == PeerConnected && e.cfg.ResumeAfter != NoResume {
			dl.add(p.lastRx + e.cfg.ResumeAfter)
		}
		if p := e.remote; p != nil && p.state != PeerClosed {
			e.peerDeadline(p, &dl)
		}
	} else {
		for i := range e.peers {
			if p := e.peers[i]; p != nil {
				e.peerDeadline(p, &dl)
			}
		}
	}
	if !dl.ok {
		// A server with no session: nothing is due until a datagram
		// arrives. The loop still needs a bound to sleep to.
		return now + time.Hour, true
	}
	return dl.at, true
}

// deadline is the earliest of the times added to it.
type deadline struct {
	at time.Duration
	ok bool
}

func (d *deadline) add(t time.Duration) {
	if !d.ok || t < d.at {
		d.at, d.ok = t, true
	}
}

// peerDeadline adds to dl the times at which tickPeer has work for p.
func (e *Endpoint) peerDeadline(p *Peer, dl *deadline) {
	switch p.state {
	case PeerConnected:
		dl.add(p.lastRx + e.idleTimeout(p))
		if t, ok := p.ch.NextDeadline(); ok {
			dl.add(t)
		}
	case PeerSuspended:
		dl.add(p.horizon)
		if e.role == roleClient {
			if t, ok := p.ch.NextDeadline(); ok {
				dl.add(t)
			}
		}
	case PeerClosing:
		dl.add(e.now)
	}
}

// Wake ends a Wait in progress, or makes the next one return at once. It
// is safe from any goroutine (with Send and Now, the only methods that
// are): another goroutine calls it after handing the endpoint's goroutine
// work so that it does not sleep until its next tick (Send calls it for
// you). It never blocks and allocates nothing.
func (e *Endpoint) Wake() {
	if w := e.waiter.Load().w; w != nil {
		w.Wake()
		return
	}
	select {
	case e.woken <- struct{}{}:
	default:
	}
}

// Flush runs one round at now: the messages other goroutines queued with
// Send move into their peers' channels; a client's handshake re-sends and
// time-outs; idle time-outs, orderly disconnects and grace expiries; and
// one Flush of every live peer's Channel, their datagrams gathered in one
// batch and written with WriteBatch (a full batch is written as soon as
// it fills). Call it after Poll, at any cadence: once per game tick, after
// every wake-up of an event loop (Wait), or both; every timer it runs is a
// duration on now, never a count of calls. It returns an error wrapping
// ErrClosed (and so net.ErrClosed) once the endpoint or its socket is
// closed, and on a client the error that ended its attempt to get a
// session (see Err). A datagram the socket refuses is skipped and counted
// (EndpointStats.SendErrors).
func (e *Endpoint) Flush(now time.Duration) error {
	if e.closed {
		return ErrClosed
	}
	if e.fatal != nil {
		return e.fatal
	}
	e.now = now
	e.stats.Ticks++
	e.drainOutbox()
	if e.role == roleClient {
		e.clientTick(now)
		if p := e.remote; p != nil && p.state != PeerClosed {
			e.tickPeer(now, p)
		}
	} else {
		for i := range e.peers {
			if p := e.peers[i]; p != nil {
				e.tickPeer(now, p)
			}
		}
	}
	e.writeOut()
	if e.board != nil && now-e.boardAt >= e.cfg.StatsInterval {
		e.refreshBoard(now)
	}
	if e.fatal != nil {
		return e.fatal
	}
	return e.err
}

// Close closes the endpoint and its socket. It sends nothing: for an
// orderly end, Disconnect each peer and Flush DisconnectRepeats times
// first (Run does, when its context ends). Handlers get no further
// events; messages still in the outbox are dropped (counted in
// EndpointStats.OutboxDropped); later calls to Poll, Flush and Wait return
// ErrClosed, which matches net.ErrClosed, as does Send's; to Close, nil.
// Call it on the endpoint's goroutine.
func (e *Endpoint) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	e.dial.phase = dialIdle
	e.stats.OutboxDropped += uint64(e.outbox.close())
	return e.conn.Close()
}

// socketClosed records that the socket was closed under the endpoint (op
// failed with err, which wraps net.ErrClosed) and returns the error every
// later call reports: ErrClosed, with the socket's error.
func (e *Endpoint) socketClosed(op string, err error) error {
	if e.fatal == nil {
		e.fatal = fmt.Errorf("%w: socket %v: %s: %w", ErrClosed, e.conn.LocalAddr(), op, err)
		if e.log != nil {
			e.log.LogAttrs(context.Background(), slog.LevelError, "transport: socket closed under the endpoint",
				slog.String("op", op), slog.Any("err", err))
		}
	}
	return e.fatal
}

// logOnce logs err at Warn the first time *done is false, then sets it.
func (e *Endpoint) logOnce(done *bool, msg string, err error) {
	if e.log == nil || *done {
		return
	}
	*done = true
	e.log.LogAttrs(context.Background(), slog.LevelWarn, msg, slog.Any("err", err),
		slog.String("note", "logged once; later ones are only counted"))
}

// StopAccepting makes a server refuse every new session from now on,
// with wire.RejectShuttingDown (the client's Dial fails with a
// *RejectError carrying it), while its sessions live on: they exchange
// messages, time out, resume after a suspension and disconnect as
// before. A server draining for shutdown or a restart calls it, tells its
// players, waits for their sessions to end (or Disconnects them), then
// Closes. It is not undone. On a client it does nothing. Cost: one flag.
func (e *Endpoint) StopAccepting() { e.stopped = true }

// Accepting reports whether a server still admits new sessions: false
// after StopAccepting (and always on a client).
func (e *Endpoint) Accepting() bool { return e.role == roleServer && !e.stopped && !e.closed }

// Disconnect ends p's session in order: its Channel sends a Disconnect frame
// with reason on each of the next DisconnectRepeats Flushes (against loss),
// and then the session is removed and OnDisconnect(p, reason) reported,
// from that last Flush; the other side reports the same reason. Datagrams
// from p meanwhile are authenticated and ignored. A server's suspended peer
// is removed at the next Flush, sending nothing. It returns ErrNoSession if
// p is not a live session of this endpoint.
func (e *Endpoint) Disconnect(p *Peer, reason wire.DisconnectReason) error {
	switch {
	case p == nil:
		return fmt.Errorf("%w: Disconnect of a nil peer", ErrNoSession)
	case p.ep != e:
		return fmt.Errorf("%w: Disconnect of peer %d at %v, a session of another endpoint", ErrNoSession, p.id, p.addr)
	case p.state == PeerClosed:
		return fmt.Errorf("%w: Disconnect of peer %d at %v, whose session has ended", ErrNoSession, p.id, p.addr)
	case p.state == PeerClosing:
		return nil
	}
	p.wasLive = !(e.role == roleServer && p.state == PeerSuspended)
	if e.role == roleClient {
		e.dial.phase = dialIdle
	}
	p.state, p.why, p.repeats = PeerClosing, reason, e.cfg.DisconnectRepeats
	return nil
}

// Resume (client) resumes the session with its token, keeping peer id,
// channel and streams (S-E7): over conn, which replaces the endpoint's
// socket (the old one is closed; the client's address changes), or over
// the current socket if conn is nil. The session is suspended — without an
// OnSuspend event — until the server's Accept (OnResume, with a fresh
// session secret) or a Reject (OnDisconnect, and Err returns the
// *RejectError: RejectExpiredToken once the server's grace has passed,
// RejectUnknownToken for a token it never issued; Dial again to start
// fresh). It returns ErrWrongRole on a server and ErrNoSession when there
// is no connected or suspended session to resume.
func (e *Endpoint) Resume(now time.Duration, conn socket.Conn) error {
	if e.role != roleClient {
		return fmt.Errorf("%w: Resume on a server (%v)", ErrWrongRole, e.conn.LocalAddr())
	}
	if e.closed {
		return ErrClosed
	}
	p := e.remote
	switch {
	case p == nil:
		return fmt.Errorf("%w: Resume before a session with %v was made", ErrNoSession, e.server)
	case p.state != PeerConnected && p.state != PeerSuspended:
		return fmt.Errorf("%w: Resume of the session with %v, which is %v", ErrNoSession, e.server, p.state)
	}
	if conn != nil && conn != e.conn {
		old := e.conn
		e.conn = conn
		e.setWaiter(conn)
		e.fatal = nil
		if err := old.Close(); err != nil {
			return fmt.Errorf("transport: closing the old socket: %w", err)
		}
	}
	e.now = now
	if p.state == PeerConnected {
		e.suspendClient(p, wire.DisconnectUnspecified)
	}
	return e.startDial(now, true)
}

// Peer returns the session with peer id id (live, suspended or closing),
// or nil. On a client it returns the server's peer if id is this client's
// id.
func (e *Endpoint) Peer(id uint8) *Peer {
	if e.role == roleClient {
		if p := e.remote; p != nil && p.id == id && p.state != PeerClosed {
			return p
		}
		return nil
	}
	if int(id) >= len(e.peers) {
		return nil
	}
	return e.peers[id]
}

// Remote returns a client's server peer (nil before the Accept, and on a
// server). It stays readable after the session ends.
func (e *Endpoint) Remote() *Peer { return e.remote }

// Peers appends every session (live, suspended or closing), by peer id,
// to dst and returns it.
func (e *Endpoint) Peers(dst []*Peer) []*Peer {
	for i := range e.peers {
		if p := e.peers[i]; p != nil {
			dst = append(dst, p)
		}
	}
	if p := e.remote; p != nil && p.state != PeerClosed {
		dst = append(dst, p)
	}
	return dst
}

// StateSize returns the number of per-peer state entries the endpoint
// holds: sessions live, closing or suspended. A server's handshakes in
// progress hold none — the cookie is the state — so a flood of
// ConnectRequests leaves it at 0 (S-E3). The rate limiter's table is
// fixed-size and allocated at Listen, not per source.
func (e *Endpoint) StateSize() int {
	n := 0
	for i := range e.peers {
		if e.peers[i] != nil {
			n++
		}
	}
	if p := e.remote; p != nil && p.state != PeerClosed {
		n++
	}
	return n
}

// Stats returns a copy of the endpoint's counters, with Peers and
// Suspended counted now.
func (e *Endpoint) Stats() EndpointStats {
	s := e.stats
	for i := range e.peers {
		if p := e.peers[i]; p != nil {
			s.count(p)
		}
	}
	if p := e.remote; p != nil && p.state != PeerClosed {
		s.count(p)
	}
	return s
}

func (s *EndpointStats) count(p *Peer) {
	if p.sess != nil {
		st := p.sess.Stats()
		s.KeyUpdates += st.KeyUpdatesSent + st.KeyUpdatesReceived
	}
	if p.state == PeerSuspended {
		s.Suspended++
	} else {
		s.Peers++
	}
}

// eachPeer calls fn for every session, by id.
func (e *Endpoint) eachPeer(fn func(*Peer)) {
	for i := range e.peers {
		if p := e.peers[i]; p != nil {
			fn(p)
		}
	}
	if p := e.remote; p != nil && p.state != PeerClosed {
		fn(p)
	}
}

// handle dispatches one received datagram.
func (e *Endpoint) handle(now time.Duration, addr netip.AddrPort, b []byte) {
	e.stats.DatagramsIn++
	e.stats.BytesIn += uint64(len(b))
	if len(b) == 0 {
		e.stats.malformed[MalformedEmpty]++
		return
	}
	if len(b) > MaxMTU {
		e.stats.malformed[MalformedOversize]++
		return
	}
	if b[0]&^1 == seal.KindPhase0 {
		e.onSealed(now, addr, b)
		return
	}
	kind := wire.PacketKind(b[0])
	if !kind.Valid() {
		e.stats.malformed[MalformedKind]++
		return
	}
	// Clients send requests and responses; servers send the rest. A kind
	// meant for the other role is unexpected here.
	toServer := kind == wire.KindConnectRequest || kind == wire.KindConnectResponse
	if kind != wire.KindSession && toServer != (e.role == roleServer) {
		e.stats.malformed[MalformedUnexpected]++
		return
	}
	switch kind {
	case wire.KindSession:
		e.onSession(now, addr, b)
	case wire.KindConnectRequest:
		e.onConnectRequest(now, addr, b)
	case wire.KindConnectResponse:
		e.onConnectResponse(now, addr, b)
	case wire.KindChallenge:
		e.onChallenge(now, addr, b)
	case wire.KindAccept:
		e.onAccept(now, addr, b)
	case wire.KindReject:
		e.onReject(now, addr, b)
	}
}

// onSealed authenticates and decrypts a sealed session datagram (WIRE.md
// §13) of the session at its source address — one AEAD open at most —
// before any byte of it reaches the channel (S-E2), then hands the
// plaintext to the channel. A refused datagram is counted by its reason
// (EndpointStats.SealDrops) and touches no channel state; a session past
// its cipher's integrity limit ends.
func (e *Endpoint) onSealed(now time.Duration, addr netip.AddrPort, b []byte) {
	p := e.byAddr[addr]
	if p == nil {
		e.stats.UnknownSource++
		return
	}
	if p.sess == nil {
		e.stats.sealDrops[SealDropCleartext]++
		return
	}
	plain, err := p.sess.Open(b)
	if err != nil {
		e.sealDrop(p, err)
		return
	}
	e.stats.Opened++
	e.onAuthentic(now, p, plain)
}

// sealDrop counts a datagram seal.Session.Open refused, and ends p's
// session once its cipher's integrity limit is reached.
func (e *Endpoint) sealDrop(p *Peer, err error) {
	var r SealDropReason
	switch err {
	case seal.ErrShort:
		r = SealDropShort
	case seal.ErrMalformed:
		r = SealDropMalformed
	case seal.ErrReplayed:
		r = SealDropReplayed
	case seal.ErrTooOld:
		r = SealDropTooOld
	case seal.ErrKeyPhase:
		r = SealDropKeyPhase
	case seal.ErrIntegrityLimit:
		r = SealDropIntegrityLimit
	default:
		r = SealDropAuth
	}
	e.stats.sealDrops[r]++
	if r == SealDropIntegrityLimit && p.state != PeerClosed && p.state != PeerClosing {
		e.logPeer(slog.LevelWarn, "transport: AEAD integrity limit reached; ending the session", p)
		e.end(p, wire.DisconnectProtocolError)
	}
}

// onSession authenticates a cleartext session datagram (InsecureCleartext)
// — a session at its source address, and that session's secret, compared
// in constant time — before any byte of it reaches the channel (S-E2),
// then hands it to the channel.
func (e *Endpoint) onSession(now time.Duration, addr netip.AddrPort, b []byte) {
	p := e.byAddr[addr]
	if p == nil {
		e.stats.UnknownSource++
		return
	}
	if p.sess != nil || !e.cfg.InsecureCleartext {
		e.stats.sealDrops[SealDropCleartext]++
		return
	}
	if len(b) < wire.SessionHeaderLen {
		e.stats.malformed[MalformedSessionHeader]++
		return
	}
	if subtle.ConstantTimeCompare(b[1:wire.SessionHeaderLen], p.wireSecret[:]) != 1 {
		e.stats.WrongSecret++
		return
	}
	e.onAuthentic(now, p, b[wire.SessionHeaderLen:])
}

// onAuthentic hands an authenticated datagram's channel header and frames
// to p's channel.
func (e *Endpoint) onAuthentic(now time.Duration, p *Peer, b []byte) {
	if p.tokenPending && !e.bindToken(p) {
		return
	}
	p.lastRx = now
	p.prevLive = false // the client has the current secret: its old token is spent
	if p.state == PeerClosing {
		return
	}
	if e.role == roleServer {
		if p.pollSeq != e.pollSeq {
			p.pollSeq, p.pollUsed = e.pollSeq, 0
		}
		if p.pollUsed >= e.cfg.PeerDatagramsPerPoll {
			e.stats.PeerOverBudget++
			return
		}
		p.pollUsed++
	}
	if err := p.ch.ReceiveAged(now, e.rxAge, b); err != nil {
		e.stats.malformed[MalformedChannel]++
	}
	if p.ch.AckDue() && p.state == PeerConnected {
		// The peer outruns our Flush rate: ack now, before its early
		// datagrams slide out of the 33-seq ack window unacked.
		e.sinkPeer = p
		p.ch.SendAck(now, e.sink)
		e.sinkPeer = nil
	}
	if p.remote {
		p.remote = false
		e.onRemoteDisconnect(now, p)
	}
}

// onRemoteDisconnect acts on a Disconnect frame from p. A client told it
// timed out suspends and resumes (the server holds its session for the
// grace window); anything else ends the session with the remote's reason.
func (e *Endpoint) onRemoteDisconnect(now time.Duration, p *Peer) {
	if p.state != PeerConnected && p.state != PeerSuspended {
		return
	}
	if e.role == roleClient && p.why == wire.DisconnectTimeout && e.cfg.ResumeAfter != NoResume {
		if p.state == PeerConnected {
			e.suspendAndResume(now, p)
		}
		return
	}
	e.end(p, p.why)
}

// idleTimeout is how long p may be silent before it times out: the
// Endpoint's IdleTimeout, or on a server the Timeout of the connect token
// that admitted p once the token is bound (a session still waiting to bind
// — an on-path copy of the token, a holder that never speaks — keeps
// IdleTimeout, so a copy cannot hold a slot for the token's hour).
func (e *Endpoint) idleTimeout(p *Peer) time.Duration {
	if p.idle > 0 && !p.tokenPending {
		return p.idle
	}
	return e.cfg.IdleTimeout
}

// tokenIdleTimeout is the idle time-out a connect token's Timeout asks
// for, within IdleTimeout's range [4×KeepAliveInterval, 1 h]; 0 (the
// Endpoint's own) for a token without one.
func tokenIdleTimeout(t time.Duration) time.Duration {
	if t <= 0 {
		return 0
	}
	return min(max(t, 4*KeepAliveInterval), time.Hour)
}

// tickPeer runs one tick of p's session.
func (e *Endpoint) tickPeer(now time.Duration, p *Peer) {
	if p.sealFailed {
		e.end(p, wire.DisconnectProtocolError)
		return
	}
	switch p.state {
	case PeerConnected:
		if now-p.lastRx >= e.idleTimeout(p) {
			e.timeout(now, p)
			return
		}
		e.flushPeer(now, p)
		if err := p.ch.Stalled(); err != nil {
			e.stats.Stalled++
			if e.log != nil {
				e.log.LogAttrs(context.Background(), slog.LevelWarn, "transport: session stalled; disconnecting",
					slog.Int("peer", int(p.id)), slog.String("addr", p.addr.String()), slog.Any("err", err))
			}
			_ = e.Disconnect(p, wire.DisconnectStalled)
		}
	case PeerSuspended:
		if now >= p.horizon {
			if e.role == roleServer {
				e.stats.Expired++
			}
			e.end(p, wire.DisconnectTimeout)
			return
		}
		if e.role == roleClient {
			e.flushPeer(now, p) // the path may still work: keep the channel going
		}
	case PeerClosing:
		if p.repeats > 0 && p.wasLive {
			p.ch.Disconnect(p.why)
			e.flushPeer(now, p)
			p.repeats--
		} else {
			p.repeats = 0
		}
		if p.repeats == 0 {
			e.end(p, p.why)
		}
	}
}

// timeout reaps a peer silent for IdleTimeout (S-E6): the peer is told,
// best effort, with a Disconnect frame; a server holds the session for
// ResumeGrace (OnSuspend), otherwise it ends (OnDisconnect).
func (e *Endpoint) timeout(now time.Duration, p *Peer) {
	e.stats.Timeouts++
	p.ch.Disconnect(wire.DisconnectTimeout)
	e.flushPeer(now, p)
	if e.role == roleServer && e.cfg.ResumeGrace != NoResume {
		delete(e.byAddr, p.addr)
		p.state, p.why = PeerSuspended, wire.DisconnectTimeout
		p.horizon = now + e.cfg.ResumeGrace
		e.stats.Suspends++
		e.logPeer(slog.LevelInfo, "transport: peer suspended", p, slog.String("reason", wire.DisconnectTimeout.String()),
			slog.Duration("grace", e.cfg.ResumeGrace))
		e.h.OnSuspend(p, wire.DisconnectTimeout)
		return
	}
	e.end(p, wire.DisconnectTimeout)
}

// suspendAndResume suspends a client's connected session (silent server,
// or the server said it timed us out) and starts resuming it on the
// current socket: OnSuspend, or — if the handshake cannot start (the
// random source failed) — the session's end, the error in Err.
func (e *Endpoint) suspendAndResume(now time.Duration, p *Peer) {
	e.suspendClient(p, wire.DisconnectTimeout)
	if err := e.startDial(now, true); err != nil {
		e.err = err
		e.end(p, wire.DisconnectTimeout)
		return
	}
	e.logPeer(slog.LevelInfo, "transport: session suspended; resuming", p, slog.String("reason", wire.DisconnectTimeout.String()))
	e.h.OnSuspend(p, wire.DisconnectTimeout)
}

// logPeer logs a lifecycle event of p, if there is a Logger.
func (e *Endpoint) logPeer(level slog.Level, msg string, p *Peer, attrs ...slog.Attr) {
	if e.log == nil {
		return
	}
	attrs = append(attrs, slog.Int("peer", int(p.id)), slog.String("addr", p.addr.String()))
	e.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// suspendClient marks a client's session suspended until the server's
// horizon: IdleTimeout (or its connect token's Timeout, if longer) plus
// ResumeGrace of silence. why is reported by
// OnDisconnect if the session never resumes.
func (e *Endpoint) suspendClient(p *Peer, why wire.DisconnectReason) {
	p.state, p.why = PeerSuspended, why
	// The server holds a token session for the token's Timeout: the client
	// tries to resume at least that long too.
	idle := e.idleTimeout(p)
	if t := e.cfg.Token; t != nil {
		idle = max(idle, tokenIdleTimeout(t.Timeout))
	}
	p.horizon = p.lastRx + idle + max(e.cfg.ResumeGrace, 0)
	e.stats.Suspends++
}

// end removes p's session for good and reports OnDisconnect(p, reason).
func (e *Endpoint) end(p *Peer, reason wire.DisconnectReason) {
	if e.byAddr[p.addr] == p {
		delete(e.byAddr, p.addr)
	}
	p.state = PeerClosed
	e.retire(p)
	if e.role == roleServer {
		if e.peers[p.id] == p {
			e.peers[p.id] = nil
			e.ids.free(p.id)
		}
	} else {
		e.dial.phase = dialIdle
		e.endReason = reason
	}
	if int(reason) < disconnectReasons {
		e.stats.disconnects[reason]++
	} else {
		e.stats.disconnects[0]++
	}
	e.logPeer(slog.LevelInfo, "transport: peer disconnected", p, slog.String("reason", reason.String()))
	e.h.OnDisconnect(p, reason)
}

// flushPeer runs one Flush of p's channel into the endpoint's batch.
func (e *Endpoint) flushPeer(now time.Duration, p *Peer) {
	e.sinkPeer = p
	p.ch.Flush(now, e.sink)
	e.sinkPeer = nil
}

// sealTrace, when set (by tests), sees the secret, the side and the
// session of every datagram an endpoint sealed, just after Seal: the
// session's SendGeneration and NextPacketNumber−1 name the key and nonce
// it used.
var sealTrace func(secret *seal.Secret, server bool, s *seal.Session)

// endpointSink is the Endpoint as its channels' Sink: datagrams go into the
// endpoint's send batch, addressed to the peer being flushed. It is the
// same memory as the Endpoint (no allocation to convert).
type endpointSink Endpoint

// Buffer returns the next send buffer, writing the batch first if full.
func (s *endpointSink) Buffer() []byte {
	e := (*Endpoint)(s)
	if len(e.out) == cap(e.out) {
		e.writeOut()
	}
	return e.outBufs[len(e.out)][:0]
}

// Commit queues a channel's datagram for the peer being flushed, sealed
// in place under the peer's current keys (the channel left room for the
// header and the tag), or as the channel stamped it with the peer's
// cleartext secret (InsecureCleartext; a resume replaces it through
// Channel.SetSecret while the channel lives on). A datagram Seal refuses
// — packet numbers exhausted after 2^62 — is not sent, and the session
// ends at the next Flush.
func (s *endpointSink) Commit(d []byte) {
	e := (*Endpoint)(s)
	p := e.sinkPeer
	if p.sess != nil {
		var err error
		if d, err = p.sess.Seal(d); err != nil {
			p.sealFailed = true
			return
		}
		e.stats.Sealed++
		if sealTrace != nil {
			sealTrace(&p.secret, e.role == roleServer, p.sess)
		}
	}
	e.out = append(e.out, socket.Message{Buf: d, N: len(d), Addr: p.addr})
}

// buffer returns an empty send buffer for a handshake message.
func (e *Endpoint) buffer() []byte { return (*endpointSink)(e).Buffer() }

// push queues b, a buffer from buffer(), for addr.
func (e *Endpoint) push(addr netip.AddrPort, b []byte) {
	e.out = append(e.out, socket.Message{Buf: b, N: len(b), Addr: addr})
}

// writeOut writes the send batch. A datagram the socket refuses is skipped
// and counted; a closed socket is fatal.
func (e *Endpoint) writeOut() {
	msgs := e.out
	for len(msgs) > 0 {
		n, err := e.conn.WriteBatch(msgs)
		n = min(max(n, 0), len(msgs))
		for i := range msgs[:n] {
			e.stats.DatagramsOut++
			e.stats.BytesOut += uint64(msgs[i].N)
		}
		if err == nil {
			break
		}
		if errors.Is(err, net.ErrClosed) {
			e.socketClosed("write", err)
			break
		}
		e.stats.SendErrors++
		e.logOnce(&e.loggedSendErr, "transport: socket refused a datagram", err)
		if n >= len(msgs) {
			break
		}
		msgs = msgs[n+1:]
	}
	clear(e.out)
	e.out = e.out[:0]
}

// randUint64 reads 8 bytes from the configured random source.
func (e *Endpoint) randUint64() (uint64, error) {
	if _, err := io.ReadFull(e.cfg.Rand, e.rbuf[:]); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrRandom, err)
	}
	return binary.LittleEndian.Uint64(e.rbuf[:]), nil
}

// malformed counts a handshake decode error by reason.
func (e *Endpoint) malformed(err error) {
	switch {
	case errors.Is(err, wire.ErrShort):
		e.stats.malformed[MalformedShort]++
	case errors.Is(err, wire.ErrTooLarge):
		e.stats.malformed[MalformedLimit]++
	default:
		e.stats.malformed[MalformedEncoding]++
	}
}
