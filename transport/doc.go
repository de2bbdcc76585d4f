// Package transport moves game messages between peers over UDP: per-datagram
// acknowledgement, loss and RTT detection, fragmentation, unreliable,
// sequenced and reliable streams, record sends with all-or-nothing verdicts,
// and connections with a stateless handshake, session secrets and resume.
//
// # Pieces
//
// [Endpoint] is what an application embeds: a server ([Listen]) or a client
// ([Dial]) over one [socket.Conn] — the batched UDP socket in
// transport/socket/udp, the gnet engine, or the deterministic simulated
// network in transport/simlink for tests. It runs the handshake, checks the
// session secret of every datagram before anything touches a channel, keeps
// one [Channel] per [Peer], reaps idle peers and resumes sessions. Its
// [EndpointHandler] receives lifecycle events and messages.
//
// [Channel] is the protocol state for one peer, with no I/O of its own: Send
// methods queue messages (copying them), Flush packs what is due into
// datagrams for a [Sink], Receive takes one datagram. A Channel can be used without
// an Endpoint, for instance over a transport the application already has.
//
// # Threading
//
// One goroutine drives an Endpoint and all of its channels: the game's tick
// loop calls Poll (read and dispatch what arrived), then the game logic,
// then Flush (send what is due) — at a fixed rate or on every wake-up of an
// event loop, the two ends alike or not: every timer is a duration on the
// clock passed in, never a count of calls. There is no goroutine per peer
// and no lock on the per-datagram path; handler methods run on the driving goroutine,
// inside Poll and Flush. Only [Endpoint.Publish]'s expvar snapshot is read
// from other goroutines, through a copy taken under a mutex, and only
// [Endpoint.Wake] may be called from them.
//
// Between ticks the loop may sleep in [Endpoint.Wait], which returns when a
// datagram arrives, when another goroutine calls Wake (after handing the
// loop a message to send), or at the loop's next tick: a reply then leaves
// within microseconds instead of at the next tick, and an idle loop costs
// nothing. On the UDP socket Wait is an epoll set of the socket's own
// (socket, eventfd, timerfd) parked in the Go netpoller; it allocates
// nothing.
//
// # Buffer ownership
//
// Send methods copy the caller's payload before returning (scenario S-A4);
// the caller may reuse its buffer at once. A delivered [Message]'s Payload
// aliases a receive buffer and is valid only during the handler call: copy
// what you keep. The endpoint owns its receive and send buffers, allocated
// once; steady-state traffic allocates nothing (TestNoAllocs,
// TestEndpointNoAllocs).
//
// # Time
//
// Every method that needs the time takes now, a monotonic time.Duration
// from any origin — time.Since(start) in production, a virtual clock in
// tests — so protocol logic never reads the wall clock, and a test on the
// simulated link replays exactly from its seed.
//
// See docs/ARCHITECTURE.md for the layers, docs/WIRE.md for the bytes,
// docs/TUNING.md for the knobs and docs/SECURITY.md for the threat model.
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package transport
