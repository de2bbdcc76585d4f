package transport

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/transport/token"
	"github.com/tickwire/tickwire/wire"
)

// EndpointHandler receives an Endpoint's peer lifecycle events and
// deliveries. Every method is called on the endpoint's goroutine, from
// inside Poll or Flush, never concurrently. A method may call the peer's
// Channel Send methods (what it sends goes out on the next Flush) and
// Endpoint.Disconnect; it must not call Poll, Flush or Close.
//
// A session's events come in this order: OnConnect; then any number of
// OnSuspend and OnResume (an OnResume may come without an OnSuspend: a
// live session that moved or was re-keyed); then at most one OnDisconnect,
// after which the *Peer is dead and, on a server, its id may be given to a
// new peer.
// Embed NopHandler to implement only some of them.
type EndpointHandler interface {
	// OnConnect reports a new session: on a server, a client was admitted
	// (its Accept is on its way); on a client, the server's Accept
	// arrived and p is the server, with p.ID() this client's own peer id.
	OnConnect(p *Peer)

	// OnSuspend reports a session that stopped carrying traffic but may
	// come back. On a server: p was silent for IdleTimeout and is held for
	// ResumeGrace (reason wire.DisconnectTimeout). On a client: the server
	// was silent for ResumeAfter, or timed this client out, and the client
	// is resuming. Messages sent meanwhile stay queued in p's Channel.
	OnSuspend(p *Peer, reason wire.DisconnectReason)

	// OnResume reports that a suspended session continues — or, on a
	// server, that a live one moved: p.Addr() may be new. Peer id, channel
	// and streams are those of before; reliable streams resume where they
	// stopped, exactly once.
	OnResume(p *Peer)

	// OnDisconnect reports the end of a session, for good: an orderly
	// Disconnect from either side (its reason), an idle time-out with no
	// resume (wire.DisconnectTimeout, also when a suspended session's
	// grace ends or a resume is refused), or a session replaced by a new
	// one from the same address (wire.DisconnectSuperseded).
	OnDisconnect(p *Peer, reason wire.DisconnectReason)

	// OnMessage delivers one message from p. m.Payload aliases a receive
	// buffer and is valid only during the call: copy what you keep.
	OnMessage(p *Peer, m Message)

	// OnRecord reports the verdict of a SendRecord on p's channel (see
	// Handler.OnRecord).
	OnRecord(p *Peer, tag uint64, confirmed bool)
}

// NopHandler implements EndpointHandler with methods that do nothing.
// Embed it in a handler that needs only some events.
type NopHandler struct{}

// OnConnect does nothing.
func (NopHandler) OnConnect(*Peer) {}

// OnSuspend does nothing.
func (NopHandler) OnSuspend(*Peer, wire.DisconnectReason) {}

// OnResume does nothing.
func (NopHandler) OnResume(*Peer) {}

// OnDisconnect does nothing.
func (NopHandler) OnDisconnect(*Peer, wire.DisconnectReason) {}

// OnMessage does nothing.
func (NopHandler) OnMessage(*Peer, Message) {}

// OnRecord does nothing.
func (NopHandler) OnRecord(*Peer, uint64, bool) {}

// PeerState is where a session is in its life.
type PeerState uint8

// The peer states.
const (
	// PeerConnected: the session carries traffic.
	PeerConnected PeerState = iota + 1
	// PeerSuspended: the session is silent and held for resumption.
	PeerSuspended
	// PeerClosing: an orderly Disconnect is being sent.
	PeerClosing
	// PeerClosed: the session has ended; the Peer is dead.
	PeerClosed
)

var peerStateNames = [...]string{
	PeerConnected: "connected",
	PeerSuspended: "suspended",
	PeerClosing:   "closing",
	PeerClosed:    "closed",
}

// String returns the state's name.
func (s PeerState) String() string {
	if s >= PeerConnected && s <= PeerClosed {
		return peerStateNames[s]
	}
	return fmt.Sprintf("PeerState(%d)", uint8(s))
}

// MarshalText encodes the state as its name (for expvar and JSON).
func (s PeerState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a state name written by MarshalText.
func (s *PeerState) UnmarshalText(b []byte) error {
	for v := PeerConnected; v <= PeerClosed; v++ {
		if string(b) == peerStateNames[v] {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("transport: unknown peer state %q", b)
}

// Peer is one session of an Endpoint: on a server, a connected client; on
// a client, the server. Its methods are cheap accessors, to be called on
// the endpoint's goroutine (like the Channel they expose). A Peer stays
// valid as a value after its session ends (State() == PeerClosed) but
// carries no more traffic.
type Peer struct {
	// The fields every datagram and every tick of the session read or
	// write come first (a server with hundreds of peers finds each cold at
	// every datagram; the size class, 448 bytes, puts every Peer on a
	// line; TestPeerLayout): the first line holds all a sealed datagram's
	// receive path reads and writes, the second the address a send needs
	// and the cleartext secret.
	ep     *Endpoint
	ch     *Channel
	sess   *seal.Session // seals and opens the datagrams; nil in InsecureCleartext
	lastRx time.Duration // last authenticated datagram
	// idle is this session's idle time-out when it is not the Endpoint's
	// IdleTimeout (0): a connect token's Timeout (Endpoint.idleTimeout).
	idle time.Duration
	// Session datagrams handled in the Poll numbered pollSeq (server).
	pollSeq  uint64
	pollUsed int
	id       uint8
	state    PeerState
	// remote: a Disconnect frame arrived; why holds its reason.
	remote bool
	// sealFailed: Seal refused a datagram (packet numbers exhausted); the
	// session ends at the next Flush.
	sealFailed bool
	// A session admitted with a connect token (server) whose token's
	// Binding the replay guard records at the client's first datagram
	// that opens (the token's client id and Binding are below).
	tokenPending bool
	// prevLive: prevToken (below) is still honoured.
	prevLive bool
	addr     netip.AddrPort
	// wireSecret is the cleartext session header's secret in
	// InsecureCleartext: secret's first 8 bytes.
	wireSecret [8]byte

	// secret is the session's master secret (seal.DeriveSecret of the last
	// handshake), from which sess was made.
	secret seal.Secret
	// prevSecret is the secret the last resume replaced, the one a
	// client that lost that resume's Accept still holds (see prevToken).
	prevSecret seal.Secret
	token      wire.Token
	// prevToken is the token the last resume replaced, still honoured
	// (prevLive) until a datagram under the new secret shows the client
	// got that resume's Accept: a client whose Accept was lost retries
	// with the token it has, perhaps from yet another address.
	prevToken wire.Token
	nonce     uint64 // nonce of the handshake that admitted or last resumed it
	accept    [wire.AcceptLen]byte
	horizon   time.Duration // suspended: end of the grace window
	repeats   int           // closing: Disconnect frames still to send
	why       wire.DisconnectReason
	wasLive   bool // closing from a connected state: frames worth sending
	// outboxBlocked: the drainOutbox round in which this peer's channel
	// was full; its later outbox messages wait for the next round.
	outboxBlocked uint64
	// A session admitted with a connect token (server): its client id,
	// and the token's Binding (tokenPending above).
	hasToken  bool
	clientID  uint64
	tokenBind token.Binding
	_         [48]byte // to 448 bytes, a size class and a multiple of 64
}

// ID returns the peer id, 0..253. On a client it is the id the server
// assigned to this client.
func (p *Peer) ID() uint8 { return p.id }

// Addr returns the peer's current address. A resume may change it.
func (p *Peer) Addr() netip.AddrPort { return p.addr }

// Channel returns the peer's channel, for its Send methods, PendingCount
// and Stats. Sends are flushed by the endpoint's Flush. Do not call its
// Flush or Receive: the endpoint does.
func (p *Peer) Channel() *Channel { return p.ch }

// State returns the session's state.
func (p *Peer) State() PeerState { return p.state }

// Stats returns a copy of the peer's channel counters.
func (p *Peer) Stats() ChannelStats { return p.ch.Stats() }

// LastReceived returns the endpoint time of the last datagram from the
// peer that passed the session check.
func (p *Peer) LastReceived() time.Duration { return p.lastRx }

// install gives p a new session secret and its seal.Session (nil in
// InsecureCleartext): the keys of every datagram from now on. The channel
// stamps the secret's first 8 bytes on cleartext datagrams. The replaced
// session's key updates are added to the endpoint's count.
func (e *Endpoint) install(p *Peer, secret *seal.Secret, sess *seal.Session) {
	e.retire(p)
	p.secret, p.sess = *secret, sess
	copy(p.wireSecret[:], secret[:8])
	if p.ch != nil {
		p.ch.SetSecret(binary.LittleEndian.Uint64(p.wireSecret[:]))
	}
}

// retire adds the key updates of p's seal.Session to the endpoint's
// counters before the session is replaced or ends.
func (e *Endpoint) retire(p *Peer) {
	if p.sess != nil {
		st := p.sess.Stats()
		e.stats.KeyUpdates += st.KeyUpdatesSent + st.KeyUpdatesReceived
		p.sess = nil
	}
}

// peerEvents adapts a Peer to the Channel's Handler, forwarding to the
// endpoint's EndpointHandler with the peer attached. It is the same memory
// as the Peer: converting costs nothing and allocates nothing.
type peerEvents Peer

func (h *peerEvents) OnMessage(m Message) {
	p := (*Peer)(h)
	if p.state == PeerConnected || p.state == PeerSuspended {
		p.ep.h.OnMessage(p, m)
	}
}

func (h *peerEvents) OnRecord(tag uint64, confirmed bool) {
	p := (*Peer)(h)
	p.ep.h.OnRecord(p, tag, confirmed)
}

// OnDisconnect notes the remote's Disconnect frame; the endpoint acts on it
// once Channel.Receive has returned.
func (h *peerEvents) OnDisconnect(reason wire.DisconnectReason) {
	p := (*Peer)(h)
	if !p.remote {
		p.remote, p.why = true, reason
	}
}

// idAllocator hands out peer ids 0..limit−1, lowest free first, from a
// bitmap. limit is at most 254: ids 254 and 255 are the action log's
// provenance markers (derived, local) and are never given to a peer — an
// allocation that would need one fails with ErrPeerID (S-E4). Not safe for
// concurrent use; allocates nothing.
type idAllocator struct {
	used  [4]uint64
	limit int
	n     int
}

func newIDAllocator(limit int) (idAllocator, error) {
	if limit < 1 || limit > MaxPeersLimit {
		return idAllocator{}, fmt.Errorf("%w: %d ids requested, ids are 0..%d", ErrPeerID, limit, wire.MaxPeerID)
	}
	return idAllocator{limit: limit}, nil
}

// alloc returns the lowest free id, or ErrPeerID when every id below the
// limit is taken.
func (a *idAllocator) alloc() (uint8, error) {
	for w := range a.used {
		free := ^a.used[w]
		if free == 0 {
			continue
		}
		id := w*64 + bits.TrailingZeros64(free)
		if id >= a.limit || id > int(wire.MaxPeerID) {
			break
		}
		a.used[w] |= 1 << (id & 63)
		a.n++
		return uint8(id), nil
	}
	return 0, fmt.Errorf("%w: all %d ids in use", ErrPeerID, a.limit)
}

// free returns id to the pool. Freeing a free id does nothing.
func (a *idAllocator) free(id uint8) {
	w, b := id>>6, uint64(1)<<(id&63)
	if a.used[w]&b != 0 {
		a.used[w] &^= b
		a.n--
	}
}

// inUse returns how many ids are allocated.
func (a *idAllocator) inUse() int { return a.n }
