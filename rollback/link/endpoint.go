package link

import (
	"fmt"
	"time"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/wire"
)

// ServerLinks runs the action stream over a transport.Endpoint on the
// server: it is the endpoint's EndpointHandler, creates a ServerLink for
// each client the endpoint admits (with the client's endpoint peer id as
// its rollback peer id — the endpoint never hands out 254 or 255; on the
// highest ordered stream of its channel unless LinkConfig.Stream says
// otherwise), routes
// each peer's messages and record verdicts to its link, and closes the link
// when the session ends. Suspended sessions keep their link: a resumed
// client carries on where its stream stopped.
//
// Tick order: Endpoint.Poll, Server.Tick, ServerLinks.Flush, Endpoint.Flush,
// all on the endpoint's goroutine. Messages the links do not handle go to
// LinkConfig.OnOther. Per-peer state is the link's; routing allocates
// nothing.
type ServerLinks[S rollback.State] struct {
	srv   *rollback.Server[S]
	repl  *rollback.Replicator
	cfg   LinkConfig
	snaps rollback.SnapshotSource
	links [rollback.MaxPeerID + 1]*ServerLink[S]
	peers [rollback.MaxPeerID + 1]*transport.Peer
	err   error
}

// NewServerLinks returns the handler for a server endpoint. snaps, if not
// nil, makes every new client join with a snapshot (ServerLink.SetSnapshots
// and RequestSnapshot); without it clients must start from the initial
// state (frame 0) and the stream starts at frame 1.
func NewServerLinks[S rollback.State](srv *rollback.Server[S], repl *rollback.Replicator, cfg LinkConfig, snaps rollback.SnapshotSource) *ServerLinks[S] {
	return &ServerLinks[S]{srv: srv, repl: repl, cfg: cfg, snaps: snaps}
}

// Link returns the link of peer id, or nil.
func (h *ServerLinks[S]) Link(id uint8) *ServerLink[S] {
	if rollback.Sender(id) > rollback.MaxPeerID {
		return nil
	}
	return h.links[id]
}

// Err returns the first error met creating a link (the admitted client then
// has no action stream), or nil.
func (h *ServerLinks[S]) Err() error { return h.err }

// OnConnect creates the new client's link; an error (Err) leaves the
// client without one: a LinkConfig.Stream beyond the channel's
// OrderedStreams, say.
func (h *ServerLinks[S]) OnConnect(p *transport.Peer) {
	id := p.ID()
	if rollback.Sender(id) > rollback.MaxPeerID {
		return // the endpoint never admits one; refuse it here too
	}
	l, err := NewServerLink(h.srv, h.repl, rollback.Sender(id), 0, h.cfg)
	if err == nil {
		err = l.out.bind(p.Channel().Config().OrderedStreams)
		if err != nil {
			l.Close()
		}
	}
	if err != nil {
		if h.err == nil {
			h.err = err
		}
		return
	}
	if h.snaps != nil {
		l.SetSnapshots(h.snaps)
		l.RequestSnapshot()
	}
	h.links[id], h.peers[id] = l, p
}

// OnSuspend keeps the link: the session may resume.
func (h *ServerLinks[S]) OnSuspend(*transport.Peer, wire.DisconnectReason) {}

// OnResume keeps the link: the stream carries on.
func (h *ServerLinks[S]) OnResume(*transport.Peer) {}

// OnDisconnect closes the peer's link.
func (h *ServerLinks[S]) OnDisconnect(p *transport.Peer, reason wire.DisconnectReason) {
	id := p.ID()
	if rollback.Sender(id) > rollback.MaxPeerID || h.links[id] == nil {
		return
	}
	h.links[id].OnDisconnect(reason)
	h.links[id].Close()
	h.links[id], h.peers[id] = nil, nil
}

// OnMessage hands a message to the peer's link.
func (h *ServerLinks[S]) OnMessage(p *transport.Peer, m transport.Message) {
	if id := p.ID(); rollback.Sender(id) <= rollback.MaxPeerID && h.links[id] != nil {
		h.links[id].OnMessage(m)
	}
}

// OnRecord hands a slice's verdict to the peer's link.
func (h *ServerLinks[S]) OnRecord(p *transport.Peer, tag uint64, confirmed bool) {
	if id := p.ID(); rollback.Sender(id) <= rollback.MaxPeerID && h.links[id] != nil {
		h.links[id].OnRecord(tag, confirmed)
	}
}

// Flush runs every connected client's link for this tick (ServerLink.Flush
// on the peer's channel). Call it after Server.Tick and before
// Endpoint.Flush. It returns the first link error; the others still run.
func (h *ServerLinks[S]) Flush() error {
	var first error
	for id, l := range h.links {
		p := h.peers[id]
		if l == nil || p.State() != transport.PeerConnected {
			continue
		}
		if err := l.Flush(p.Channel()); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ClientLinks runs the action stream over a transport.Endpoint on the
// client: it is the endpoint's EndpointHandler and builds the ClientLink
// once the server's Accept says which peer id this client is (the rollback
// client must know its own id to predict), through newLink; a link whose
// LinkConfig.Stream is left zero takes the highest ordered stream of the
// channel (the server's links do the same). Loop: Endpoint.Poll(now),
// ClientLinks.Tick(now) (the frame from the link's clock, Client.Tick,
// ClientLinks.Flush), Endpoint.Flush(now).
type ClientLinks[S rollback.State] struct {
	newLink func(id rollback.Sender) (*ClientLink[S], error)
	link    *ClientLink[S]
	peer    *transport.Peer
	err     error
}

// NewClientLinks returns the handler for a client endpoint; newLink builds
// the client's world, Client and ClientLink for peer id (called once, on
// connect; a resumed session keeps them).
func NewClientLinks[S rollback.State](newLink func(id rollback.Sender) (*ClientLink[S], error)) *ClientLinks[S] {
	return &ClientLinks[S]{newLink: newLink}
}

// Link returns the client's link, or nil before the session is connected.
func (h *ClientLinks[S]) Link() *ClientLink[S] { return h.link }

// Err returns the error newLink returned, if any.
func (h *ClientLinks[S]) Err() error { return h.err }

// OnConnect builds the link for the peer id the server assigned.
func (h *ClientLinks[S]) OnConnect(p *transport.Peer) {
	h.peer = p
	if h.link != nil {
		return
	}
	l, err := h.newLink(rollback.Sender(p.ID()))
	if err == nil && l == nil {
		err = fmt.Errorf("%w: ClientLinks' newLink returned no link for peer %d", rollback.ErrInvalidConfig, p.ID())
	}
	if err == nil {
		err = l.out.bind(p.Channel().Config().OrderedStreams)
	}
	if err != nil {
		h.err = err
		return
	}
	h.link = l
}

// OnSuspend keeps the link: the session may resume.
func (h *ClientLinks[S]) OnSuspend(*transport.Peer, wire.DisconnectReason) {}

// OnResume keeps the link.
func (h *ClientLinks[S]) OnResume(*transport.Peer) {}

// OnDisconnect reports the reason to the link.
func (h *ClientLinks[S]) OnDisconnect(_ *transport.Peer, reason wire.DisconnectReason) {
	if h.link != nil {
		h.link.OnDisconnect(reason)
	}
}

// OnMessage hands a message to the link.
func (h *ClientLinks[S]) OnMessage(_ *transport.Peer, m transport.Message) {
	if h.link != nil {
		h.link.OnMessage(m)
	}
}

// OnRecord hands a verdict to the link (the client sends no records).
func (h *ClientLinks[S]) OnRecord(_ *transport.Peer, tag uint64, confirmed bool) {
	if h.link != nil {
		h.link.OnRecord(tag, confirmed)
	}
}

// Tick runs the client for local time now (ClientLink.Tick on the
// server's channel) while the session is connected; ticked reports that
// the client simulated a new frame. Call it once per loop turn, after
// Endpoint.Poll(now) and before Endpoint.Flush(now). Errors: newLink's
// (Err) and ClientLink.Tick's.
func (h *ClientLinks[S]) Tick(now time.Duration) (ticked bool, err error) {
	if h.err != nil {
		return false, h.err
	}
	if h.link == nil || h.peer == nil || h.peer.State() != transport.PeerConnected {
		return false, nil
	}
	return h.link.Tick(now, h.peer.Channel())
}

// Flush runs the link for this tick (ClientLink.Flush on the server's
// channel) while the session is connected: Tick calls it; a loop that
// runs Client.Tick itself calls it after Client.Tick and before
// Endpoint.Flush.
func (h *ClientLinks[S]) Flush() error {
	if h.link == nil || h.peer == nil || h.peer.State() != transport.PeerConnected {
		return nil
	}
	return h.link.Flush(h.peer.Channel())
}
