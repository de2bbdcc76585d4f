// Package transport moves game messages between peers over UDP: per-datagram
// acknowledgement, loss and RTT detection, fragmentation, unreliable,
// sequenced and reliable streams, record sends with all-or-nothing verdicts,
// and encrypted, authenticated connections with a stateless handshake, an
// X25519 key exchange and resume.
//
// # Pieces
//
// [Endpoint] is what an application embeds: a server ([Listen]) or a client
// ([Dial]) over one [socket.Conn] — the batched UDP socket in
// transport/socket/udp, the gnet engine, or the deterministic simulated
// network in transport/simlink for tests. It runs the handshake (the client
// pins the server's key: EndpointConfig.ServerKey, Endpoint.PublicKey),
// seals every session datagram with transport/seal and opens every one it
// receives before anything touches a channel, keeps
// one [Channel] per [Peer], reaps idle peers and resumes sessions. Its
// [EndpointHandler] receives lifecycle events and messages.
//
// [Channel] is the protocol state for one peer, with no I/O of its own: Send
// methods queue messages (copying them), Flush packs what is due into
// datagrams for a [Sink], Receive takes one datagram ([Channel.ReceiveAged] with the
// time it waited in the socket, when the socket tells: socket.Message.Age). A
// Channel can be used without an Endpoint, for instance over a transport the
// application already has.
//
// # Threading
//
// One goroutine drives an Endpoint and all of its channels: its loop calls
// Poll (read and dispatch what arrived), then the game logic, then Flush
// (send what is due). Both loop styles are valid, and the two ends need
// not match: fixed-rate (Poll, logic, Flush, sleep until the next tick —
// a message waits up to a tick at each end) or event-driven (Poll, Flush,
// then [Endpoint.Wait], which returns when a datagram arrives or another
// goroutine calls Wake — Flush on every wake-up). Every timer is a
// duration on the clock passed in, never a count of calls, so the cadence
// changes latency, never behaviour. [Run] is that loop, either style, with
// context cancellation and an orderly shutdown; [DialContext] runs a
// client's handshake to its end, bounded by HandshakeTimeout and a
// context. There is no goroutine per peer and no lock on the per-datagram
// path; handler methods run on the driving goroutine, inside Poll and
// Flush.
//
// Exactly three Endpoint methods are safe from other goroutines:
// [Endpoint.Send], which copies a message into a bounded outbox that the
// next Flush drains into the peer's channel (and wakes the loop);
// [Endpoint.Wake]; and [Endpoint.Now]. Everything else — Peer, Channel,
// Stats, Disconnect, Close — belongs to the driving goroutine. Only
// [Endpoint.Publish]'s expvar snapshot is read elsewhere, through a copy
// taken under a mutex.
//
// On the UDP socket Wait is an epoll set of the socket's own (socket,
// eventfd, timerfd) parked in the Go netpoller; it allocates nothing. An
// idle event-driven loop costs only its longest sleep's wake-ups.
//
// # Lifecycle and errors
//
// EndpointConfig.Logger, if set, receives connects, suspends, resumes,
// disconnects with their reason, rejects, handshake time-outs, stalls and
// socket errors as log/slog records — never one per datagram. Errors are
// sentinels matched with errors.Is and carry the numbers in their
// message; once an endpoint or its socket is closed, its methods return
// errors matching both ErrClosed and net.ErrClosed, and a handshake that
// ran out of time is a *HandshakeTimeoutError whose Timeout() reports
// true, as a net.Error's does.
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
