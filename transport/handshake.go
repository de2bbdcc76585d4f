package transport

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/token"
	"github.com/tickwire/tickwire/wire"
)

// The handshake (docs/WIRE.md §9):
//
//	client                                   server
//	ConnectRequest (64 B)            ──▶  rate limit; no state; cookie
//	                                 ◀──  Challenge (29 B) | Reject (10 B)
//	ConnectResponse (120 B, cookie,  ──▶  rate limit; verify cookie: address
//	  ephemeral key[, resume proof])      proven; admission; [proof]; X25519;
//	                                      session keys and state
//	                                 ◀──  Accept (109 B: ephemeral key,
//	                                      sealed body) | Reject (10 B)
//	client: X25519, opens the body   (only the pinned key's holder made it)
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
	if r.Cleartext != e.cfg.InsecureCleartext {
		e.reject(addr, len(b), r.Nonce, wire.RejectCleartext)
		return
	}
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
	r, n, err := wire.ParseConnectResponse(b)
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
	if r.Cleartext != e.cfg.InsecureCleartext {
		e.rejectProven(addr, r.Nonce, wire.RejectCleartext)
		return
	}
	raw := b[:n]
	if r.Resume { // a resume re-keys from the session's secret: no token
		e.resumeSession(now, addr, &r, raw)
		return
	}
	// Admission (admit.go): the token, then the application's hook, then
	// the key exchange and the session.
	tok, ok := e.checkToken(addr, &r)
	if !ok {
		return
	}
	if tok != nil {
		defer tok.Wipe()
	}
	if !e.admitHook(addr, r.Nonce, tok) {
		return
	}
	e.admit(now, addr, &r, raw, tok)
}

// admit creates a session for a proven address: admission checks first
// (peer limit, then a peer id in 0..253), state only after both passed
// (S-E4, S-E5).
//
// raw is the ConnectResponse as received, for the handshake transcript;
// tok the client's verified connect token, or nil: its key material
// enters the key exchange, and its Binding waits in the Peer for the
// client's first datagram.
func (e *Endpoint) admit(now time.Duration, addr netip.AddrPort, r *wire.ConnectResponse, raw []byte, tok *token.Private) {
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
	first, err2 := e.randUint64()
	token, err3 := e.tokens.mint(e.cfg.Rand)
	if err2 != nil || err3 != nil {
		e.ids.free(id)
		e.stats.RandomFailures++
		return
	}
	p := &Peer{ep: e, id: id, addr: addr, state: PeerConnected, token: token, nonce: r.Nonce, lastRx: now}
	ch, err := newChannel(e.cfg.Channel, (*peerEvents)(p), wire.Seq(first), 0, !e.cfg.InsecureCleartext)
	if err != nil { // the config was validated at Listen
		e.ids.free(id)
		e.rejectProven(addr, r.Nonce, wire.RejectUnspecified)
		return
	}
	p.ch = ch
	var km []byte
	if tok != nil {
		m := tok.KeyMaterial()
		km = m[:]
		p.hasToken, p.tokenPending, p.clientID, p.tokenBind = true, true, tok.ClientID, tok.Binding()
		p.idle = tokenIdleTimeout(tok.Timeout)
	}
	ok := e.serverKeys(p, addr, r, raw, nil, km)
	clear(km)
	if !ok {
		e.ids.free(id)
		return
	}
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
//
// Under encryption the client must also prove that it holds the session's
// secret (the current one, or the replaced one for a retry): r.Proof, a
// MAC over the ConnectResponse with its cookie, which binds it to the
// client's address. A token seen on the wire is therefore worthless
// without the secret. The resumed session gets new keys from the old
// secret and a fresh key exchange (serverKeys).
func (e *Endpoint) resumeSession(now time.Duration, addr netip.AddrPort, r *wire.ConnectResponse, raw []byte) {
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
	if p != nil {
		old := &p.secret
		if retry {
			old = &p.prevSecret
		}
		want := resumeProof(old, raw)
		if subtle.ConstantTimeCompare(want[:], r.Proof[:]) != 1 {
			e.stats.ResumeProofFailed++
			e.rejectProven(addr, r.Nonce, wire.RejectHandshake)
			return
		}
	}
	if p != nil && retry {
		// The client lost the last resume's Accept and holds the secret
		// that resume replaced: key the session from that one again.
		old := p.prevSecret
		if !e.serverKeys(p, addr, r, raw, &old, nil) {
			return
		}
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
	token, err := e.tokens.mint(e.cfg.Rand)
	if err != nil {
		e.stats.RandomFailures++
		return
	}
	old, oldToken := p.secret, p.token
	p.token = token
	if !e.serverKeys(p, addr, r, raw, &old, nil) {
		p.token = oldToken
		return
	}
	e.moveSession(p, addr)
	p.prevToken, p.prevLive, p.prevSecret = oldToken, true, old
	p.state, p.nonce, p.lastRx = PeerConnected, r.Nonce, now
	p.remote = false
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

// serverKeys runs the server's half of the key exchange (makeAccept) for
// the ConnectResponse r (raw: its bytes as received) and, on success,
// installs the session's new secret and seal.Session in p and keeps its
// Accept in p.accept for re-sending. The Accept body announces p's id,
// token and the limits of p's channel: exactly what the server's end of
// the session assumes. old is the secret of the session being resumed,
// nil for a new one; km a connect token's key material, nil without one.
// It runs only for an address whose cookie verified. On failure it counts
// and refuses (to addr), and p keeps its keys.
func (e *Endpoint) serverKeys(p *Peer, addr netip.AddrPort, r *wire.ConnectResponse, raw []byte, old *seal.Secret, km []byte) bool {
	body := wire.AcceptBody{PeerID: p.id, Token: p.token}
	limitsOf(p.ch.Config()).announce(&body)
	priv := e.priv
	if e.cfg.InsecureCleartext || r.Unpinned { // the client cannot compute es
		priv = nil
	}
	accept, secret, err := makeAccept(priv, r, raw, body, old, km)
	switch {
	case errors.Is(err, ErrRandom):
		e.stats.RandomFailures++
		return false
	case err != nil:
		e.stats.KeyExchangeFailed++
		e.rejectProven(addr, r.Nonce, wire.RejectHandshake)
		return false
	}
	var sess *seal.Session
	if !e.cfg.InsecureCleartext {
		if sess, err = seal.New(seal.Config{Suite: seal.Suite(r.Suite), KeyUpdateInterval: e.keyUpdateInterval}, seal.Server, &secret); err != nil {
			panic("transport: " + err.Error()) // the suite was checked by the parser
		}
	}
	p.accept = accept
	e.install(p, &secret, sess)
	return true
}

// makeAccept is the server's key exchange (handshake_keys.go): a fresh
// ephemeral key, 16 bytes of server randomness from crypto/rand, es with
// the static key priv (nil: InsecureCleartext or an unpinned token
// client, no es), ee, a connect token's key material km (nil: none), the
// session secret over the transcript of raw and the Accept's header, and
// the Accept with body sealed under the handshake key. It costs three
// X25519 operations (two without priv), about 150 µs, and allocates about
// 15 KiB. Its errors: ErrRandom, or the key exchange's (a low-order
// client key).
func makeAccept(priv *ecdh.PrivateKey, r *wire.ConnectResponse, raw []byte, body wire.AcceptBody, old *seal.Secret, km []byte) (accept [wire.AcceptLen]byte, secret seal.Secret, err error) {
	eph, err := keyPair()
	if err != nil {
		return accept, secret, err
	}
	var es []byte
	if priv != nil {
		if es, err = staticDH(priv, r.Ephemeral[:]); err != nil {
			return accept, secret, err
		}
	}
	ikm, err := handshakeIKM(eph, r.Ephemeral[:], es, old, km)
	if err != nil {
		return accept, secret, err
	}
	a := wire.Accept{Nonce: r.Nonce}
	copy(a.Ephemeral[:], eph.PublicKey().Bytes())
	if _, err := rand.Read(a.ServerRandom[:]); err != nil {
		return accept, secret, fmt.Errorf("%w: server random: %w", ErrRandom, err)
	}
	wire.AppendAccept(accept[:0], a)
	hdr := accept[:wire.AcceptHeaderLen]
	th := transcript(raw, hdr)
	if secret, err = seal.DeriveSecret(ikm, a.ServerRandom[:], th[:]); err != nil {
		panic("transport: " + err.Error()) // sizes are fixed: a broken invariant
	}
	var plain [wire.AcceptBodyLen]byte
	wire.AppendAcceptBody(plain[:0], body)
	if err := sealAcceptBody(&secret, hdr, plain[:], &a.Body); err != nil {
		panic("transport: " + err.Error())
	}
	copy(accept[wire.AcceptHeaderLen:], a.Body[:])
	return accept, secret, nil
}

// sendAccept sends p's Accept, encoded by serverKeys.
func (e *Endpoint) sendAccept(p *Peer) {
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
		if _, app := reason.AppCode(); !app { // counted as AdmitRefused
			e.stats.rejects[rejectIndex(reason)]++
		}
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
	// eph is this attempt's ephemeral X25519 key; resp the ConnectResponse
	// as sent (built once, when the Challenge arrives), which the
	// handshake transcript covers.
	eph     *ecdh.PrivateKey
	resp    [wire.MaxConnectResponseLen]byte
	respLen int // bytes of resp in use: 120, or 85 + the connect token's
}

// startDial begins a handshake with a fresh nonce; the first datagram goes
// out at the next Flush.
func (e *Endpoint) startDial(now time.Duration, resume bool) error {
	nonce, err := e.randUint64()
	if err != nil {
		return err
	}
	eph, err := keyPair()
	if err != nil {
		return err
	}
	e.dial = dialState{phase: dialRequest, resume: resume, nonce: nonce, start: now, next: now, interval: e.cfg.HandshakeRetry, eph: eph}
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
		b = wire.AppendConnectRequest(b, wire.ConnectRequest{Version: wire.ProtocolVersion, Nonce: d.nonce, Resume: d.resume,
			Cleartext: e.cfg.InsecureCleartext, Token: tok})
	} else {
		b = append(b, d.resp[:d.respLen]...)
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
	e.buildResponse()
	if e.dialExpired(now) {
		return // out of time: the next Flush reports the time-out
	}
	e.sendDial(now)
}

// buildResponse encodes the ConnectResponse of the current attempt into
// d.resp: the echoed cookie, the wanted cipher, the ephemeral key and,
// for a resume, the proof of the session's current secret, or, for a new
// session of a client with a connect token, the sealed token (and the
// unpinned flag if no server key is pinned).
func (e *Endpoint) buildResponse() {
	d := &e.dial
	r := wire.ConnectResponse{Version: wire.ProtocolVersion, Nonce: d.nonce, Resume: d.resume,
		Cleartext: e.cfg.InsecureCleartext, Cookie: d.cookie, Suite: uint8(e.cfg.Cipher)}
	if d.resume && e.remote != nil {
		r.Token = e.remote.token
	}
	if t := e.cfg.Token; t != nil && !d.resume {
		r.ConnectToken = t.Sealed
	}
	// Without a pinned key (a token client, new or resuming) es is left
	// out, and the server must know it.
	r.Unpinned = e.cfg.ServerKey == nil && !e.cfg.InsecureCleartext
	copy(r.Ephemeral[:], d.eph.PublicKey().Bytes())
	b := wire.AppendConnectResponse(d.resp[:0], r)
	d.respLen = len(b)
	if d.resume && e.remote != nil {
		proof := resumeProof(&e.remote.secret, b)
		copy(d.resp[wire.ConnectResponseProofOff:], proof[:])
	}
}

// clientKeys runs the client's half of the key exchange for Accept a (raw:
// its bytes as received) and opens its body. ok is false, and the Accept
// must be ignored, if the body does not authenticate: it was not made by
// the holder of the pinned server key, for this handshake.
func (e *Endpoint) clientKeys(a *wire.Accept, raw []byte) (secret seal.Secret, body [wire.AcceptBodyLen]byte, ok bool) {
	d := &e.dial
	var es []byte
	var err error
	if !e.cfg.InsecureCleartext && e.cfg.ServerKey != nil {
		if es, err = staticDH(d.eph, e.cfg.ServerKey.Bytes()); err != nil {
			return secret, body, false
		}
	}
	var old *seal.Secret
	var km []byte
	if d.resume && e.remote != nil {
		old = &e.remote.secret
	} else if t := e.cfg.Token; t != nil {
		m := t.KeyMaterial()
		km = m[:]
		defer clear(km)
	}
	ikm, err := handshakeIKM(d.eph, a.Ephemeral[:], es, old, km)
	if err != nil {
		e.stats.KeyExchangeFailed++
		return secret, body, false
	}
	th := transcript(d.resp[:d.respLen], raw[:wire.AcceptHeaderLen])
	if secret, err = seal.DeriveSecret(ikm, a.ServerRandom[:], th[:]); err != nil {
		return secret, body, false
	}
	return secret, body, openAcceptBody(&secret, raw[:wire.AcceptHeaderLen], &a.Body, &body)
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
	sa, _, err := wire.ParseAccept(b)
	if err != nil {
		e.malformed(err)
		return
	}
	d := &e.dial
	if d.phase != dialResponse || sa.Nonce != d.nonce {
		e.stats.StrayReplies++ // a duplicate, or forged by someone without the nonce
		return
	}
	secret, plain, ok := e.clientKeys(&sa, b)
	if !ok {
		e.stats.AcceptForged++ // not the pinned server's: keep waiting for its Accept
		return
	}
	a, _, err := wire.ParseAcceptBody(plain[:])
	if err != nil {
		e.malformed(err)
		return
	}
	d.phase = dialIdle
	var sess *seal.Session
	if !e.cfg.InsecureCleartext {
		if sess, err = seal.New(seal.Config{Suite: e.cfg.Cipher, KeyUpdateInterval: e.keyUpdateInterval}, seal.Client, &secret); err != nil {
			panic("transport: " + err.Error()) // Cipher was validated at Dial
		}
	}
	l := limitsFromAccept(&a)
	if d.resume {
		e.onResumeAccept(now, &a, l, &secret, sess)
		return
	}
	if err := l.check(); err != nil {
		e.stats.malformed[MalformedLimit]++
		e.refuseAccept(&secret, sess, wire.DisconnectProtocolError)
		e.err = fmt.Errorf("%w: Accept from %v announces limits no valid config has (%v): %w", ErrProtocol, e.server, l, err)
		e.logDialErr(e.err)
		return
	}
	ccfg, err := adoptLimits(e.ownChannel, l)
	if err != nil {
		e.stats.AcceptsRefused++
		e.refuseAccept(&secret, sess, wire.DisconnectIncompatible)
		e.err = err
		e.logDialErr(e.err)
		return
	}
	first, err := e.randUint64()
	if err != nil {
		e.refuseAccept(&secret, sess, wire.DisconnectUnspecified)
		e.err = err
		return
	}
	p := &Peer{ep: e, id: a.PeerID, addr: e.server, state: PeerConnected, token: a.Token, nonce: sa.Nonce, lastRx: now}
	ch, err := newChannel(ccfg, (*peerEvents)(p), wire.Seq(first), 0, !e.cfg.InsecureCleartext)
	if err != nil { // adoptLimits validated ccfg
		e.stats.AcceptsRefused++
		e.refuseAccept(&secret, sess, wire.DisconnectIncompatible)
		e.err = fmt.Errorf("%w: %w", ErrIncompatible, err)
		return
	}
	p.ch = ch
	e.install(p, &secret, sess)
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
func (e *Endpoint) onResumeAccept(now time.Duration, a *wire.AcceptBody, l sharedLimits, secret *seal.Secret, sess *seal.Session) {
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
	e.install(p, secret, sess)
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
	p.token, p.nonce, p.state, p.lastRx, p.remote = a.Token, e.dial.nonce, PeerConnected, now, false
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
func (e *Endpoint) refuseAccept(secret *seal.Secret, sess *seal.Session, reason wire.DisconnectReason) {
	for range e.cfg.DisconnectRepeats {
		b := e.buffer()
		if sess != nil {
			b = b[:sealHeaderLen]
		} else {
			b = wire.AppendSessionHeader(b, wire.SessionHeader{Secret: binary.LittleEndian.Uint64(secret[:8])})
		}
		b = wire.AppendChannelHeader(b, wire.ChannelHeader{Seq: 0, NoAck: true})
		b = wire.AppendDisconnectFrame(b, wire.DisconnectFrame{Reason: reason})
		if sess != nil {
			var err error
			if b, err = sess.Seal(b); err != nil {
				return // a fresh session has room and numbers: cannot happen
			}
			e.stats.Sealed++
			if sealTrace != nil {
				sealTrace(secret, false, sess)
			}
		}
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
	if code, app := r.Reason.AppCode(); app {
		e.stats.AdmitRefused++
		d.phase = dialIdle
		e.err = &RefusedError{Code: code}
		e.logDialErr(e.err)
		return
	}
	e.stats.rejects[rejectIndex(r.Reason)]++
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
	e.err = &RejectError{Reason: r.Reason, Detail: e.tokenDetail(r.Reason)}
	e.logDialErr(e.err)
	if d.resume && e.remote != nil && e.remote.state != PeerClosed && e.remote.state != PeerClosing {
		e.end(e.remote, e.remote.why)
	}
}
