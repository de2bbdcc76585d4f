package transport

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// The handshake (docs/WIRE.md §9):
//
//	client                                   server
//	ConnectRequest (64 B)            ──▶  rate limit; no state; cookie
//	                                 ◀──  Challenge (29 B) | Reject (10 B)
//	ConnectResponse (64 B, cookie)   ──▶  rate limit; verify cookie: address
//	                                      proven; admission; session state
//	                                 ◀──  Accept (53 B) | Reject (10 B)
//	[Disconnect, incompatible]       ──▶  the session is freed at once
//
// Before the cookie verifies, every reply is smaller than the datagram that
// caused it (replyUnproven enforces it), so the server cannot be used to
// amplify traffic toward a spoofed source (S-E3).
//
// The Accept announces the channel limits both ends must share
// (sharedLimits). A client that cannot honour them answers, instead of
// using the session, with a session datagram holding one Disconnect frame
// (wire.DisconnectIncompatible, or wire.DisconnectProtocolError for limits
// no valid config has), sent DisconnectRepeats times at once (WIRE.md
// §9.7).

// ---- Server ----

// onConnectRequest answers a ConnectRequest with a Challenge (or a Reject)
// and keeps nothing: the cookie in the Challenge is the only record of it.
func (e *Endpoint) onConnectRequest(now time.Duration, addr netip.AddrPort, b []byte) {
	r, _, err := wire.ParseConnectRequest(b)
	if err != nil && !errors.Is(err, wire.ErrVersion) {
		e.malformed(err)
		return
	}
	if !e.allow(now, addr) {
		return
	}
	if err != nil { // a foreign version: Version and Nonce are set
		e.stats.ForeignVersion++
		e.reject(addr, len(b), r.Nonce, wire.RejectVersionMismatch)
		return
	}
	e.stats.ConnectRequests++
	if !r.Resume && e.stopped {
		e.reject(addr, len(b), r.Nonce, wire.RejectShuttingDown)
		return
	}
	if !r.Resume && e.ids.inUse() >= e.cfg.MaxPeers {
		e.reject(addr, len(b), r.Nonce, wire.RejectServerFull) // S-E5, early
		return
	}
	c, err := e.cookies.make(now, addr, r.Nonce)
	if err != nil {
		e.stats.RandomFailures++
		return
	}
	if e.replyUnproven(addr, len(b), wire.AppendChallenge(e.buffer(), wire.Challenge{Nonce: r.Nonce, Cookie: c})) {
		e.stats.Challenges++
	}
}

// onConnectResponse verifies the echoed cookie — the address is proven
// from then on — and admits, resumes or refuses.
func (e *Endpoint) onConnectResponse(now time.Duration, addr netip.AddrPort, b []byte) {
	r, _, err := wire.ParseConnectResponse(b)
	if err != nil && !errors.Is(err, wire.ErrVersion) {
		e.malformed(err)
		return
	}
	if !e.allow(now, addr) {
		return
	}
	if err != nil {
		e.stats.ForeignVersion++
		e.reject(addr, len(b), r.Nonce, wire.RejectVersionMismatch)
		return
	}
	e.stats.ConnectResponses++

	// A repeated ConnectResponse of the handshake that created (or last
	// resumed) the session at this address: its Accept was lost. Send the
	// same Accept again and create nothing. The address was proven when
	// the session was made, and only the client knows the nonce.
	if p := e.byAddr[addr]; p != nil && p.state == PeerConnected && p.nonce == r.Nonce {
		e.push(addr, append(e.buffer(), p.accept[:]...))
		e.stats.AcceptResends++
		return
	}

	switch v, err := e.cookies.verify(now, addr, r.Nonce, r.Cookie); {
	case err != nil:
		e.stats.RandomFailures++
		return
	case v == cookieExpired:
		e.stats.ExpiredCookie++
		e.reject(addr, len(b), r.Nonce, wire.RejectBadCookie)
		return
	case v != cookieOK:
		e.stats.BadCookie++
		e.reject(addr, len(b), r.Nonce, wire.RejectBadCookie)
		return
	}
	// The client receives at addr.
	if r.Resume {
		e.resumeSession(now, addr, &r)
		return
	}
	e.admit(now, addr, &r)
}

// admit creates a session for a proven address: admission checks first
// (peer limit, then a peer id in 0..253), state only after both passed
// (S-E4, S-E5).
func (e *Endpoint) admit(now time.Duration, addr netip.AddrPort, r *wire.ConnectResponse) {
	if old := e.byAddr[addr]; old != nil {
		// A new handshake from the address of a live session: the client
		// restarted on the same port. The old session is dead.
		e.stats.Superseded++
		e.end(old, wire.DisconnectSuperseded)
	}
	if e.stopped {
		// A handshake that got its Challenge before StopAccepting.
		e.rejectProven(addr, r.Nonce, wire.RejectShuttingDown)
		return
	}
	if e.ids.inUse() >= e.cfg.MaxPeers {
		e.rejectProven(addr, r.Nonce, wire.RejectServerFull)
		return
	}
	id, err := e.ids.alloc()
	if err != nil {
		e.rejectProven(addr, r.Nonce, wire.RejectInvalidPeerID)
		return
	}
	secret, err1 := e.randUint64()
	first, err2 := e.randUint64()
	token, err3 := e.tokens.mint(e.cfg.Rand)
	if err1 != nil || err2 != nil || err3 != nil {
		e.ids.free(id)
		e.stats.RandomFailures++
		return
	}
	p := &Peer{ep: e, id: id, addr: addr, state: PeerConnected, token: token, nonce: r.Nonce, lastRx: now}
	p.setSecret(secret)
	ch, err := NewChannel(e.cfg.Channel, (*peerEvents)(p), wire.Seq(first), secret)
	if err != nil { // the config was validated at Listen
		e.ids.free(id)
		e.rejectProven(addr, r.Nonce, wire.RejectUnspecified)
		return
	}
	p.ch = ch
	e.peers[id] = p
	e.byAddr[addr] = p
	e.sendAccept(p)
	e.stats.Connects++
	e.logPeer(slog.LevelInfo, "transport: peer connected", p)
	e.h.OnConnect(p)
}

// resumeSession moves the session named by the presented token to addr
// with a fresh secret and token (S-E7). The token is looked up by a
// constant-time scan of the sessions; a token matching none is refused
// as expired if this server minted it (its session ended) and as unknown
// otherwise. The token a resume replaced still names its session until the
// client sends a datagram under the new secret: a client whose Accept was
// lost retries with it — with a new nonce, perhaps from a new address — and
// gets that resume's secret and token again, not a refusal that would end
// its session.
func (e *Endpoint) resumeSession(now time.Duration, addr netip.AddrPort, r *wire.ConnectResponse) {
	var p *Peer
	retry := false
	for i := range e.peers {
		q := e.peers[i]
		if q == nil || q.state != PeerConnected && q.state != PeerSuspended {
			continue
		}
		cur := subtle.ConstantTimeCompare(q.token[:], r.Token[:])
		prev := subtle.ConstantTimeCompare(q.prevToken[:], r.Token[:])
		if cur == 1 || prev == 1 && q.prevLive {
			p, retry = q, cur != 1
		}
	}
	if p != nil && retry {
		e.moveSession(p, addr)
		p.nonce, p.state, p.lastRx = r.Nonce, PeerConnected, now
		e.sendAccept(p)
		e.stats.AcceptResends++
		return
	}
	if p == nil {
		reason := wire.RejectUnknownToken
		if e.tokens.genuine(&r.Token) {
			reason = wire.RejectExpiredToken
		}
		e.rejectProven(addr, r.Nonce, reason)
		return
	}
	secret, err1 := e.randUint64()
	token, err2 := e.tokens.mint(e.cfg.Rand)
	if err1 != nil || err2 != nil {
		e.stats.RandomFailures++
		return
	}
	e.moveSession(p, addr)
	p.prevToken, p.prevLive = p.token, true
	p.state, p.nonce, p.token, p.lastRx = PeerConnected, r.Nonce, token, now
	p.remote = false
	p.setSecret(secret)
	e.sendAccept(p)
	e.stats.Resumes++
	e.logPeer(slog.LevelInfo, "transport: peer resumed", p)
	e.h.OnResume(p)
}

// moveSession makes addr p's address, ending any other session there.
func (e *Endpoint) moveSession(p *Peer, addr netip.AddrPort) {
	if q := e.byAddr[addr]; q != nil && q != p {
		e.stats.Superseded++
		e.end(q, wire.DisconnectSuperseded)
	}
	if e.byAddr[p.addr] == p {
		delete(e.byAddr, p.addr)
	}
	p.addr = addr
	e.byAddr[addr] = p
}

// sendAccept encodes p's Accept (kept for re-sending) and sends it. The
// limits it announces are those of p's channel: exactly what the server's
// end of the session assumes.
func (e *Endpoint) sendAccept(p *Peer) {
	a := wire.Accept{
		Nonce:  p.nonce,
		PeerID: p.id,
		Secret: binary.LittleEndian.Uint64(p.secret[:]),
		Token:  p.token,
	}
	limitsOf(p.ch.Config()).announce(&a)
	wire.AppendAccept(p.accept[:0], a)
	e.push(p.addr, append(e.buffer(), p.accept[:]...))
	e.stats.Accepts++
}

// allow applies the handshake rate limits, counting refusals. A refused
// datagram gets no reply: a reply would let spoofed floods reflect off the
// server, and clients re-send on their own schedule.
func (e *Endpoint) allow(now time.Duration, addr netip.AddrPort) bool {
	switch e.limiter.allow(now, addr) {
	case rateSource:
		e.stats.RateLimited++
		return false
	case rateGlobal:
		e.stats.RateLimitedGlobal++
		return false
	}
	return true
}

// reject sends a Reject (10 bytes) for a request of reqLen bytes.
func (e *Endpoint) reject(addr netip.AddrPort, reqLen int, nonce uint64, reason wire.RejectReason) {
	if e.replyUnproven(addr, reqLen, wire.AppendReject(e.buffer(), wire.Reject{Nonce: nonce, Reason: reason})) {
		e.stats.Rejects[rejectIndex(reason)]++
	}
}

// rejectProven rejects a handshake whose cookie verified — the address is
// proven, so this is one real client's attempt, not a flood, and it is
// logged.
func (e *Endpoint) rejectProven(addr netip.AddrPort, nonce uint64, reason wire.RejectReason) {
	if e.log != nil {
		e.log.LogAttrs(context.Background(), slog.LevelInfo, "transport: handshake rejected",
			slog.String("addr", addr.String()), slog.String("reason", reason.String()))
	}
	e.reject(addr, wire.ConnectResponseLen, nonce, reason)
}

// rejectIndex is r's slot in EndpointStats.Rejects: unnamed reasons count
// under 0.
func rejectIndex(r wire.RejectReason) int {
	if int(r) < rejectReasons {
		return int(r)
	}
	return 0
}

// replyUnproven queues reply, a buffer from e.buffer(), to addr only if it
// is no larger than the request that caused it: the anti-amplification
// rule for addresses that have not proven themselves (S-E3). Every reply
// the server makes fits by construction (29 or 10 bytes for 64); the check
// makes that a guarantee rather than an accident of sizes.
func (e *Endpoint) replyUnproven(addr netip.AddrPort, reqLen int, reply []byte) bool {
	if len(reply) > reqLen {
		e.stats.ReplySuppressed++
		return false
	}
	e.push(addr, reply)
	return true
}

// ---- Client ----

// dialPhase is where a client's handshake is.
type dialPhase uint8

const (
	dialIdle     dialPhase = iota
	dialRequest            // sending ConnectRequest, awaiting Challenge
	dialResponse           // sending ConnectResponse, awaiting Accept
)

// dialState is a client's handshake in progress (a first connection or a
// resume).
type dialState struct {
	phase    dialPhase
	resume   bool
	nonce    uint64
	cookie   wire.Cookie
	start    time.Duration // when the handshake began (Dial's now); its deadline is start + HandshakeTimeout
	next     time.Duration // when the next (re-)send is due
	interval time.Duration // current back-off interval
	sent     int           // datagrams sent by this handshake
	heard    bool          // a Challenge arrived
}

// startDial begins a handshake with a fresh nonce; the first datagram goes
// out at the next Flush.
func (e *Endpoint) startDial(now time.Duration, resume bool) error {
	nonce, err := e.randUint64()
	if err != nil {
		return err
	}
	e.dial = dialState{phase: dialRequest, resume: resume, nonce: nonce, start: now, next: now, interval: e.cfg.HandshakeRetry}
	return nil
}

// dialExpired reports whether a first connection's handshake has run out
// of time at now (a resume is bounded by the session's horizon instead).
func (e *Endpoint) dialExpired(now time.Duration) bool {
	d := &e.dial
	return !d.resume && now-d.start >= e.cfg.HandshakeTimeout
}

// clientTick runs a client's per-tick handshake work: the automatic
// suspension of a silent session, and handshake (re-)sends on a back-off
// schedule bounded in time by HandshakeTimeout (first connection) or by
// the session's horizon (resume).
func (e *Endpoint) clientTick(now time.Duration) {
	if p := e.remote; p != nil && p.state == PeerConnected && e.cfg.ResumeAfter != NoResume &&
		now-p.lastRx >= e.cfg.ResumeAfter {
		e.suspendAndResume(now, p)
	}
	d := &e.dial
	if d.phase == dialIdle {
		return
	}
	if e.dialExpired(now) {
		d.phase = dialIdle
		te := &HandshakeTimeoutError{Server: e.server, After: now - d.start, Limit: e.cfg.HandshakeTimeout,
			Datagrams: d.sent, Challenged: d.heard}
		e.err = te
		if e.log != nil {
			e.log.LogAttrs(context.Background(), slog.LevelWarn, "transport: handshake timed out",
				slog.String("server", e.server.String()), slog.Duration("after", te.After),
				slog.Int("datagrams", te.Datagrams), slog.Bool("challenged", te.Challenged))
		}
		return
	}
	if now < d.next {
		return
	}
	e.sendDial(now)
}

// sendDial sends the current handshake datagram and schedules its re-send.
func (e *Endpoint) sendDial(now time.Duration) {
	d := &e.dial
	var tok wire.Token
	if d.resume && e.remote != nil {
		tok = e.remote.token
	}
	b := e.buffer()
	if d.phase == dialRequest {
		b = wire.AppendConnectRequest(b, wire.ConnectRequest{Version: wire.ProtocolVersion, Nonce: d.nonce, Resume: d.resume, Token: tok})
	} else {
		b = wire.AppendConnectResponse(b, wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: d.nonce, Resume: d.resume, Token: tok, Cookie: d.cookie})
	}
	e.push(e.server, b)
	d.sent++
	e.stats.HandshakeSends++
	d.next = now + d.interval
	d.interval = min(2*d.interval, e.cfg.HandshakeRetryMax)
}

// fromServer reports whether a handshake reply came from the server,
// counting it as stray if not.
func (e *Endpoint) fromServer(addr netip.AddrPort) bool {
	if addr != e.server {
		e.stats.StrayReplies++
		return false
	}
	return true
}

// onChallenge stores the cookie and answers with a ConnectResponse at once.
func (e *Endpoint) onChallenge(now time.Duration, addr netip.AddrPort, b []byte) {
	if !e.fromServer(addr) {
		return
	}
	c, _, err := wire.ParseChallenge(b)
	if err != nil {
		e.malformed(err)
		return
	}
	d := &e.dial
	if d.phase != dialRequest || c.Nonce != d.nonce {
		e.stats.StrayReplies++
		return
	}
	d.cookie, d.phase, d.interval, d.heard = c.Cookie, dialResponse, e.cfg.HandshakeRetry, true
	if e.dialExpired(now) {
		return // out of time: the next Flush reports the time-out
	}
	e.sendDial(now)
}

// onAccept completes the handshake: a new session (OnConnect) or a resumed
// one (OnResume). The client adopts the limits the Accept announces
// (adoptLimits); one it cannot honour it refuses on the wire (refuseAccept)
// and reports through Err: ErrIncompatible for a conflict with its own
// config, ErrProtocol for limits no valid config has.
func (e *Endpoint) onAccept(now time.Duration, addr netip.AddrPort, b []byte) {
	if !e.fromServer(addr) {
		return
	}
	a, _, err := wire.ParseAccept(b)
	if err != nil {
		e.malformed(err)
		return
	}
	d := &e.dial
	if d.phase != dialResponse || a.Nonce != d.nonce {
		e.stats.StrayReplies++ // a duplicate, or forged by someone without the nonce
		return
	}
	d.phase = dialIdle
	l := limitsFromAccept(&a)
	if d.resume {
		e.onResumeAccept(now, &a, l)
		return
	}
	if err := l.check(); err != nil {
		e.stats.Malformed[MalformedLimit]++
		e.refuseAccept(&a, wire.DisconnectProtocolError)
		e.err = fmt.Errorf("%w: Accept from %v announces limits no valid config has (%v): %w", ErrProtocol, e.server, l, err)
		e.logDialErr(e.err)
		return
	}
	ccfg, err := adoptLimits(e.ownChannel, l)
	if err != nil {
		e.stats.AcceptsRefused++
		e.refuseAccept(&a, wire.DisconnectIncompatible)
		e.err = err
		e.logDialErr(e.err)
		return
	}
	first, err := e.randUint64()
	if err != nil {
		e.refuseAccept(&a, wire.DisconnectUnspecified)
		e.err = err
		return
	}
	p := &Peer{ep: e, id: a.PeerID, addr: e.server, state: PeerConnected, token: a.Token, nonce: a.Nonce, lastRx: now}
	p.setSecret(a.Secret)
	ch, err := NewChannel(ccfg, (*peerEvents)(p), wire.Seq(first), a.Secret)
	if err != nil { // adoptLimits validated ccfg
		e.stats.AcceptsRefused++
		e.refuseAccept(&a, wire.DisconnectIncompatible)
		e.err = fmt.Errorf("%w: %w", ErrIncompatible, err)
		return
	}
	p.ch = ch
	e.cfg.Channel = ccfg
	e.remote = p
	e.byAddr[p.addr] = p
	e.stats.Connects++
	e.logPeer(slog.LevelInfo, "transport: connected", p, slog.Duration("handshake", now-d.start), slog.Int("datagrams", d.sent))
	e.h.OnConnect(p)
}

// logDialErr logs why a client's handshake or resume failed.
func (e *Endpoint) logDialErr(err error) {
	if e.log != nil {
		e.log.LogAttrs(context.Background(), slog.LevelWarn, "transport: handshake failed",
			slog.String("server", e.server.String()), slog.Any("err", err))
	}
}

// onResumeAccept completes a resume: the session keeps its channel, which
// must be what the server's Accept describes (the server resumed the
// same session, so it announces the same limits). A mismatch ends the
// session on both sides: the channel, re-keyed to the new secret, sends
// the server a Disconnect with wire.DisconnectProtocolError.
func (e *Endpoint) onResumeAccept(now time.Duration, a *wire.Accept, l sharedLimits) {
	p := e.remote
	var bad error
	switch have := limitsOf(p.ch.Config()); {
	case a.PeerID != p.id:
		bad = fmt.Errorf("%w: resume Accept for peer %d, session is peer %d", ErrProtocol, a.PeerID, p.id)
	case l != have:
		bad = fmt.Errorf("%w: resume Accept announces %v; the session has %v", ErrProtocol, l, have)
	}
	if e.byAddr[p.addr] == p {
		delete(e.byAddr, p.addr)
	}
	p.setSecret(a.Secret)
	if bad != nil {
		e.err = bad
		e.logDialErr(bad)
		for range e.cfg.DisconnectRepeats { // each Flush carries one copy
			p.ch.Disconnect(wire.DisconnectProtocolError)
			e.flushPeer(now, p)
		}
		e.end(p, wire.DisconnectProtocolError)
		return
	}
	p.token, p.nonce, p.state, p.lastRx, p.remote = a.Token, a.Nonce, PeerConnected, now, false
	e.byAddr[p.addr] = p
	// Speak under the new secret at the next Flush (a standalone ack if
	// nothing else goes): the server honours the replaced token until it
	// hears from us, so the sooner it does, the shorter that window.
	p.ch.ackDirty = true
	e.stats.Resumes++
	e.logPeer(slog.LevelInfo, "transport: session resumed", p)
	e.h.OnResume(p)
}

// refuseAccept tells the server, inside the session a's Accept created,
// that this client will not use it: a session datagram (a's secret, a
// channel header with seq 0 and no ack — the client has sent nothing in
// the session, so any seq is its first — and one Disconnect frame with
// reason; WIRE.md §9.7), queued DisconnectRepeats times for the Poll that read the Accept
// to write — at once, since an application whose Flush reports the error
// may stop calling it. The server frees the session when the first copy
// arrives; the rest are dropped there as duplicates or as strays. It
// costs one send buffer per copy and no state.
func (e *Endpoint) refuseAccept(a *wire.Accept, reason wire.DisconnectReason) {
	for range e.cfg.DisconnectRepeats {
		b := wire.AppendSessionHeader(e.buffer(), wire.SessionHeader{Secret: a.Secret})
		b = wire.AppendChannelHeader(b, wire.ChannelHeader{Seq: 0, NoAck: true})
		b = wire.AppendDisconnectFrame(b, wire.DisconnectFrame{Reason: reason})
		e.push(e.server, b)
	}
}

// onReject handles the server's refusal of the current handshake. A
// stale cookie restarts the handshake; a rate limit waits for the next
// re-send; any other reason ends it (and a resumed session with it).
func (e *Endpoint) onReject(now time.Duration, addr netip.AddrPort, b []byte) {
	if !e.fromServer(addr) {
		return
	}
	r, _, err := wire.ParseReject(b)
	if err != nil {
		e.malformed(err)
		return
	}
	d := &e.dial
	if d.phase == dialIdle || r.Nonce != d.nonce {
		e.stats.StrayReplies++
		return
	}
	e.stats.Rejects[rejectIndex(r.Reason)]++
	switch r.Reason {
	case wire.RejectBadCookie:
		sent, start := d.sent, d.start
		if err := e.startDial(now, d.resume); err != nil {
			e.err = err
			return
		}
		d.sent, d.start = sent, start // the deadline stands
		return
	case wire.RejectRateLimited:
		return
	}
	d.phase = dialIdle
	e.err = &RejectError{Reason: r.Reason}
	e.logDialErr(e.err)
	if d.resume && e.remote != nil && e.remote.state != PeerClosed && e.remote.state != PeerClosing {
		e.end(e.remote, e.remote.why)
	}
}
