package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// Defaults of RunConfig.
const (
	DefaultRunMaxWait = time.Second
	DefaultRunDrain   = time.Second
)

// RunPollInterval is how often an event-driven loop (Run, DialContext)
// polls a socket that is not a socket.Waiter — one that cannot wake the
// loop when a datagram arrives (simlink, the gnet backend) — however far
// away the endpoint's next deadline is.
const RunPollInterval = 5 * time.Millisecond

// RunConfig configures Run. The zero value is an event-driven loop with
// the defaults; Validate reports the first field out of range.
type RunConfig struct {
	// Tick, if positive, makes the loop fixed-rate: every Tick (on the
	// endpoint's clock) it Polls, calls OnTick and Flushes, and sleeps in
	// between; a datagram waits for the next tick, and so does a message
	// from Endpoint.Send. A loop that falls more than a tick behind skips
	// the missed ticks rather than running them back to back. 0 (the
	// default) makes it event-driven: Poll, OnTick, Flush, then sleep
	// (Endpoint.Wait) until the endpoint's next deadline
	// (Endpoint.NextDeadline: an ack, a redundant copy, a loss verdict, a
	// keep-alive, a time-out…) or until a datagram arrives or Wake or Send
	// is called, so a datagram or a Send is answered within microseconds
	// and an idle loop wakes only when a timer is due. Range 0 or
	// [100 µs, 1 s].
	Tick time.Duration

	// MaxWait (event-driven) bounds one sleep of the loop: it wakes at the
	// endpoint's next deadline or after MaxWait, whichever is first. Every
	// protocol timer is a deadline, so MaxWait is only a safety net; on a
	// socket that is not a socket.Waiter (it cannot wake the loop for a
	// datagram) the loop also polls every RunPollInterval. Default 1 s;
	// range [100 µs, 1 s].
	MaxWait time.Duration

	// OnTick, if set, runs on the loop's goroutine every round, after Poll
	// (whose deliveries reached the handler) and before Flush (which sends
	// what it queued), with the round's time: the place for game logic
	// that uses Peers and Channels directly. An event-driven loop runs
	// rounds only when something arrives or is due, so logic that must
	// run at a fixed rate wants Tick (or Wakes the endpoint itself).
	OnTick func(now time.Duration)

	// Drain bounds the orderly shutdown when the context ends: for up to
	// Drain the loop keeps running so that queued and unacknowledged
	// reliable messages get through, then it disconnects every session
	// (EndpointConfig.DisconnectRepeats more rounds) and closes the
	// endpoint. Default 1 s; range [1 ms, 1 min].
	Drain time.Duration
}

// WithDefaults returns c with every zero field replaced by its default: the
// config Run runs with.
func (c RunConfig) WithDefaults() RunConfig {
	if c.MaxWait == 0 {
		c.MaxWait = DefaultRunMaxWait
	}
	if c.Drain == 0 {
		c.Drain = DefaultRunDrain
	}
	return c
}

// Validate reports the first field out of range, after defaults, as an
// error wrapping ErrInvalidConfig.
func (c RunConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Tick != 0 && (c.Tick < 100*time.Microsecond || c.Tick > time.Second):
		return fmt.Errorf("%w: RunConfig.Tick %v not 0 or in [100µs, 1s]", ErrInvalidConfig, c.Tick)
	case c.MaxWait < 100*time.Microsecond || c.MaxWait > time.Second:
		return fmt.Errorf("%w: RunConfig.MaxWait %v not in [100µs, 1s]", ErrInvalidConfig, c.MaxWait)
	case c.Drain < time.Millisecond || c.Drain > time.Minute:
		return fmt.Errorf("%w: RunConfig.Drain %v not in [1ms, 1m]", ErrInvalidConfig, c.Drain)
	}
	return nil
}

// Run drives e on the calling goroutine until ctx ends or e fails: the
// loop (fixed-rate or event-driven, RunConfig.Tick) that calls Poll,
// cfg.OnTick and Flush with the endpoint's clock (EndpointConfig.Clock).
// Start it with go; from then on e belongs to that goroutine: handler
// methods and OnTick run on it, and other goroutines may only call
// e.Send, e.Wake and e.Now. Run closes e before it returns.
//
// When ctx ends, Run shuts down in order — a server stops accepting
// (StopAccepting); queued and unacknowledged reliable messages get up to
// RunConfig.Drain to go through; every session is Disconnected
// (wire.DisconnectShutdown from a server, wire.DisconnectClosed from a
// client) and its Disconnect frame sent DisconnectRepeats times; the
// socket is closed — and returns nil. Otherwise it returns the error that
// stopped it, with e closed: the socket's (wrapping ErrClosed if the
// socket was closed under it), a client's handshake failure (see
// Endpoint.Err), or, for a client whose session ended, an error wrapping
// ErrNoSession with the reason; an invalid cfg is an error wrapping
// ErrInvalidConfig, and so is a Clock reading earlier than the time e was
// last driven with (pass the clock you drove it with). The endpoint
// could already be connected (DialContext) or still dialing (Dial).
//
// Cost: the rounds themselves (allocation-free in steady state), one
// timer in a fixed-rate loop, and one context.AfterFunc registration. An
// event-driven loop runs a round only when a datagram arrives, Send or
// Wake is called, or the endpoint's next deadline comes
// (Endpoint.NextDeadline): an idle connected pair makes about 6 rounds a
// second per side (keep-alives and their acks), not 200 (a fixed 5 ms
// timer), and the shutdown's drain waits the same way.
func Run(ctx context.Context, e *Endpoint, cfg RunConfig) error {
	if err := cfg.Validate(); err != nil {
		e.Close()
		return err
	}
	cfg = cfg.WithDefaults()
	if now := e.Now(); now < e.now {
		e.Close()
		return fmt.Errorf("%w: the endpoint's Clock reads %v, behind the %v it was last driven with",
			ErrInvalidConfig, now, e.now)
	}
	stop := context.AfterFunc(ctx, e.Wake)
	defer stop()
	var timer *time.Timer
	if cfg.Tick > 0 {
		timer = time.NewTimer(time.Hour)
		defer timer.Stop()
	}
	next := e.Now()
	for {
		if ctx.Err() != nil {
			return e.shutdown(cfg)
		}
		if err := e.round(e.Now(), cfg.OnTick); err != nil {
			e.Close()
			return err
		}
		if err := e.sessionOver(); err != nil {
			e.Close()
			return err
		}
		if cfg.Tick == 0 {
			if err := e.waitDue(cfg.MaxWait); err != nil {
				e.Close()
				return err
			}
			continue
		}
		next += cfg.Tick
		d := next - e.Now()
		if d <= 0 {
			if d < -cfg.Tick {
				next = e.Now() // far behind: skip the missed ticks
			}
			continue
		}
		timer.Reset(d)
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
	}
}

// waitDue sleeps until the endpoint's next deadline, at most limit (and
// at most RunPollInterval on a socket that cannot wake for a datagram), or
// until a datagram or a Wake; it returns at once when something is due.
func (e *Endpoint) waitDue(limit time.Duration) error {
	if e.waiter.Load().w == nil {
		limit = min(limit, RunPollInterval)
	}
	if at, ok := e.NextDeadline(); ok {
		d := at - e.Now()
		if d <= 0 {
			e.stats.DueRounds++
			return nil
		}
		limit = min(limit, d)
	}
	if limit <= 0 {
		return nil
	}
	return e.Wait(limit)
}

// round is one Poll, onTick, Flush.
func (e *Endpoint) round(now time.Duration, onTick func(time.Duration)) error {
	if err := e.Poll(now); err != nil {
		return err
	}
	if onTick != nil {
		onTick(now)
	}
	return e.Flush(now)
}

// sessionOver returns, for a client with no session and no handshake in
// progress, why: an error wrapping ErrNoSession with the reason its
// session ended. It is nil on a server and while a client has or is
// getting a session.
func (e *Endpoint) sessionOver() error {
	if e.role != roleClient || e.dial.phase != dialIdle {
		return nil
	}
	p := e.remote
	if p == nil || p.state != PeerClosed {
		return nil
	}
	if e.err != nil {
		return e.err
	}
	return fmt.Errorf("%w: the session with %v ended: %v", ErrNoSession, e.server, e.endReason)
}

// shutdown is Run's orderly end (see Run).
func (e *Endpoint) shutdown(cfg RunConfig) error {
	// The drain sleeps until something is due (at most a tick in a
	// fixed-rate loop); the Disconnect copies are spaced by a tick, or by
	// RunPollInterval in an event-driven loop.
	pace, spacing := cfg.MaxWait, RunPollInterval
	if cfg.Tick > 0 {
		pace, spacing = cfg.Tick, cfg.Tick
	}
	start := e.Now()
	e.StopAccepting()
	// Let what is queued and unacknowledged get through, within the bound.
	for e.Now()-start < cfg.Drain && !e.quiet() {
		if err := e.round(e.Now(), cfg.OnTick); err != nil {
			return e.shutdownFailed(err)
		}
		if err := e.waitDue(min(pace, cfg.Drain-(e.Now()-start))); err != nil {
			return e.shutdownFailed(err)
		}
	}
	drained := e.quiet()
	reason := wire.DisconnectShutdown
	if e.role == roleClient {
		reason = wire.DisconnectClosed
	}
	for i := range e.peers {
		if p := e.peers[i]; p != nil {
			_ = e.Disconnect(p, reason)
		}
	}
	if p := e.remote; p != nil && p.state != PeerClosed {
		_ = e.Disconnect(p, reason)
	}
	// Each Flush carries one copy of every Disconnect frame; the session
	// ends at the last one.
	for i := 0; i <= e.cfg.DisconnectRepeats && e.StateSize() > 0; i++ {
		if err := e.round(e.Now(), nil); err != nil {
			return e.shutdownFailed(err)
		}
		if e.StateSize() > 0 {
			if err := e.Wait(spacing); err != nil {
				return e.shutdownFailed(err)
			}
		}
	}
	if e.log != nil {
		e.log.LogAttrs(context.Background(), slog.LevelInfo, "transport: run loop stopped",
			slog.Duration("shutdown", e.Now()-start), slog.Bool("drained", drained),
			slog.Int("sessions_left", e.StateSize()))
	}
	return e.Close()
}

// shutdownFailed ends a shutdown that the socket cut short: the context
// ended, so Run still returns nil, with the endpoint closed.
func (e *Endpoint) shutdownFailed(err error) error {
	if e.log != nil {
		e.log.LogAttrs(context.Background(), slog.LevelWarn, "transport: shutdown cut short", slog.Any("err", err))
	}
	e.Close()
	return nil
}

// quiet reports whether nothing sendable waits: the outbox is empty and no
// connected session holds an unacknowledged reliable message.
func (e *Endpoint) quiet() bool {
	if e.outbox.n.Load() != 0 {
		return false
	}
	idle := true
	e.eachPeer(func(p *Peer) {
		if p.state == PeerConnected && !p.ch.reliableIdle() {
			idle = false
		}
	})
	return idle
}

// DialContext dials server over conn (see Dial) and runs the handshake
// on the calling goroutine — Poll, Flush, and Wait until the next re-send
// is due or a datagram arrives — until the session is up, the handshake
// fails, EndpointConfig.HandshakeTimeout passes, or ctx ends. It returns
// the connected endpoint, ready for Run (or a loop of your own using
// EndpointConfig.Clock, which DialContext used), with OnConnect already
// reported to h on this goroutine.
//
// DialContext owns conn: on failure the endpoint and conn are closed and
// the error is a *HandshakeTimeoutError (matching ErrHandshakeTimeout,
// Timeout() true), a *RejectError, an error wrapping ErrIncompatible or
// ErrProtocol, the socket's error, or — when ctx ends first — an error
// wrapping ctx.Err() (so errors.Is(err, context.Canceled) or
// context.DeadlineExceeded holds) whose Timeout() reports true for a
// deadline, as a net.Error does. A dead server fails in HandshakeTimeout
// (default 5 s) or at ctx's deadline, whichever is first.
func DialContext(ctx context.Context, conn socket.Conn, server netip.AddrPort, cfg EndpointConfig, h EndpointHandler) (*Endpoint, error) {
	clock := cfg.Clock
	if clock == nil {
		clock = Now
	}
	e, err := Dial(conn, server, cfg, h, clock())
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, err
	}
	stop := context.AfterFunc(ctx, e.Wake)
	defer stop()
	for {
		if err := ctx.Err(); err != nil {
			d := e.dial
			e.Close()
			return nil, &contextError{
				msg: fmt.Sprintf("transport: dial %v: %v after %v (HandshakeTimeout %v); %d handshake datagrams sent",
					server, err, e.Now()-d.start, e.cfg.HandshakeTimeout, d.sent),
				err: err,
			}
		}
		now := e.Now()
		err := e.Poll(now)
		if err == nil {
			err = e.Flush(now)
		}
		if err != nil {
			e.Close()
			return nil, err
		}
		if p := e.remote; p != nil && p.state == PeerConnected {
			return e, nil
		}
		if err := e.sessionOver(); err != nil {
			// The session was made and ended at once (the server
			// disconnected it before this loop saw it connected).
			e.Close()
			return nil, err
		}
		// Sleep until the next re-send or the deadline; a socket that
		// cannot wake for datagrams is polled every RunPollInterval, and
		// so is a session ending before it was returned.
		wait := RunPollInterval
		if e.dial.phase != dialIdle {
			wait = min(e.dial.next, e.dial.start+e.cfg.HandshakeTimeout) - e.Now()
			if e.waiter.Load().w == nil {
				wait = min(wait, RunPollInterval)
			}
		}
		if wait > 0 {
			if err := e.Wait(wait); err != nil {
				e.Close()
				return nil, err
			}
		}
	}
}
