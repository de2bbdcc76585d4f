// Package gnetudp is tickwire's server datagram engine: a socket.Conn whose
// receive side runs on the epoll event loops of github.com/panjf2000/gnet/v2,
// one SO_REUSEPORT socket per loop, feeding bounded queues that the tick
// loop drains without system calls.
//
// Open starts the engine on an address; ReadBatch, TryReadBatch and
// WriteBatch move datagrams in batches like every socket.Conn; Close stops
// it. It passes the conformance suite in package sockettest (S-A5),
// against another engine and against a client on the batched UDP socket.
// It is implemented on Linux; elsewhere Open returns an error wrapping
// errors.ErrUnsupported.
//
// # Threading model
//
// gnet runs Config.EventLoops event loops (default: one per CPU), each a
// goroutine that blocks its OS thread in epoll_wait on its own socket. All
// the sockets are bound to one address with SO_REUSEPORT, and the kernel
// picks the socket for each datagram by a hash of its source and
// destination, so one peer's datagrams always go to the same socket and
// event loop, and different peers spread over the loops.
//
// When a socket is readable, gnet reads one datagram (recvfrom) and calls
// the engine's OnTraffic on that loop's goroutine. OnTraffic copies the
// datagram into the loop's queue, then, unless Config.DisableDrain is set,
// drains the socket with non-blocking recvmmsg calls straight into the
// queue's free slots (up to 4 calls of 64). It never waits: a datagram
// that finds the queue full is dropped and counted in Stats.QueueDrops.
// OnTraffic reads the monotonic clock once and dates every datagram it
// queues with it; a read sets each socket.Message.Age to its own clock
// read (one per read that finds data) less that stamp: how long the
// datagram sat in the queue. The time in the kernel's socket buffer before
// the loop woke is not counted; the loop wakes as a datagram arrives,
// unless it is busy draining another burst.
//
// Each queue is a single-producer, single-consumer ring: the producer is
// its event loop, the consumer the goroutine that reads. One goroutine at a
// time may read (ReadBatch or TryReadBatch: they share the consumer side and
// must not run at the same time) while another writes (WriteBatch). A read
// takes from the queues round-robin. A ReadBatch that finds them empty
// parks on a channel until an event loop queues something (one atomic load
// per wake-up when nobody is parked, a channel send when somebody is) or
// Close. TryReadBatch looks at the queues in memory and makes no system
// call: polling an idle engine costs about 15 ns, against 1.7 µs for the
// batched UDP socket's recvmmsg that finds nothing (BenchmarkTryReadIdle).
//
// WriteBatch runs on the caller's goroutine, on a duplicate of the first
// event loop's descriptor; the event loops are not involved. Close, Stats,
// Features, LocalAddr and MaxDatagramSize are safe from any goroutine.
//
// An open engine has EventLoops + 2 goroutines: the event loops, gnet's
// ticker (parked; its first tick tells Open that every socket is bound) and
// one parked in gnet.Run. Close wakes a parked reader with an error
// wrapping socket.ErrClosed and net.ErrClosed, stops gnet and returns once gnet.Run has
// returned: the event loops and the ticker have exited, the last goroutine
// is ending.
//
// # Read paths: gnet's, and draining
//
// gnet's UDP path handles one datagram per event-loop wake-up: an
// epoll_wait, a recvfrom, a getsockopt(SO_PROTOCOL) that x/sys's Recvfrom
// issues to decode the source address, and five heap allocations (448
// bytes: gnet's per-datagram connection object, the source address three
// times over). With draining on (the default), that cost is paid once per
// wake-up and the rest of what the socket holds comes in with one recvmmsg
// per 64 datagrams, written by the kernel straight into the queue: no
// allocation, no extra copy. Under load a wake-up took 14–20 datagrams in
// the benchmarks (medians), so gnet's allocations fall from 5 per datagram
// to about 0.3.
//
// Draining is the default because it measured 4.3 times the throughput of
// gnet's path alone (BenchmarkLoopback, below: 449k against 105k datagrams
// per second at 64 bytes, 435k against 101k at 1200), level with the
// batched UDP socket. Without it the engine moves about half what the
// plain UDP socket does, which receives a datagram in one system call and
// no allocation. What draining costs is fairness inside a loop: a loop
// takes up to 257 datagrams from its socket before it returns to gnet's
// task queue. UDP sockets are level-triggered in gnet's epoll set, so what
// draining leaves (past 257, or past a full queue) wakes the loop again at
// once.
//
// # Write path
//
// WriteBatch sends with one sendmmsg per 64 messages, straight from the
// caller's buffers (no copy). gnet itself has no server-initiated UDP send:
// its Conn.SendTo, usable only with a Conn from OnTraffic, issues one
// sendto per datagram. Behind a draining receiver that keeps up, sendmmsg
// moved 2.2 times as many datagrams per second as per-datagram sendto
// (BenchmarkLoopback/gnet-drain against gnet-drain-sendto: 449k against
// 206k at 64 bytes, 435k against 190k at 1200), and it needs no net.Addr
// per message. Behind gnet's read path, which is the bottleneck there, the
// write path hardly matters (sendto measured about 10% ahead, pacing the
// datagrams to the one-per-wake-up reader). There is no UDP GSO: a game
// server's datagrams go to many peers, and GSO only coalesces runs to one
// address.
//
// A full socket send buffer (EAGAIN) makes WriteBatch wait for writability
// in poll(2), in slices of 50 ms so that it notices Close.
//
// # Buffer ownership and memory
//
// Every buffer in a batch belongs to the caller. WriteBatch points the
// kernel at the caller's buffers for the duration of the system call and
// clears those pointers before returning. Reads copy each datagram from its
// queue slot into the caller's Buf; no caller buffer is written after the
// call that was given it returns.
//
// The queues are allocated at Open: EventLoops × QueueLen slots of
// MaxDatagramSize bytes (rounded up to 64), 1024 × 1472 B ≈ 1.5 MiB per
// loop by default. A datagram longer than MaxDatagramSize is cut to it on
// arrival; one longer than the reader's Buf is cut to len(Buf); both are
// counted in Stats.Truncated. Zero-length datagrams are legal both ways.
//
// The engine's steady state allocates nothing: WriteBatch, ReadBatch and
// TryReadBatch (TestNoAllocs). What does allocate is gnet's read, five
// objects per wake-up, on the event loops.
//
// # Cost per datagram
//
// BenchmarkLoopback here and in package transport/socket/udp moves
// datagrams between two conns of one kind over 127.0.0.1: a sender
// goroutine writes batches of 64, a reader calls ReadBatch with 64 slots.
// ns/op is the cost of one datagram on both sides together, kernel and
// event loops included. Medians of the five runs of one invocation of
// `go test -run '^$' -bench . -benchmem -count 5 ./transport/socket/...`
// on a 2-vCPU VM (Linux 6.18) shared with other work; allocations include
// gnet's, on the event loops:
//
//	BenchmarkLoopback/…                   64 B datagrams         1200 B datagrams       allocs/datagram
//	udp: plain                            4.3 µs  (231k pkt/s)   4.5 µs  (224k pkt/s)   0
//	gnet-sendto: gnet's read and write    8.5 µs  (117k pkt/s)   8.9 µs  (112k pkt/s)   5
//	gnet: gnet's read, sendmmsg           9.5 µs  (105k pkt/s)   9.9 µs  (101k pkt/s)   5
//	gnet-drain-sendto: drain, sendto      4.8 µs  (206k pkt/s)   5.3 µs  (190k pkt/s)   1.3
//	gnet-drain: drain, sendmmsg (default) 2.2 µs  (449k pkt/s)   2.3 µs  (435k pkt/s)   0.26
//	udp: batched (no GSO/GRO)             2.3 µs  (433k pkt/s)   2.2 µs  (455k pkt/s)   0
//
// The batched UDP socket with GSO and GRO moves 1–5.6M datagrams per
// second on loopback; the engine has no equivalent. Runs vary by up to 2×
// with the machine's load (an earlier run on a busier machine measured
// every row about twice as slow, and draining at 6 times gnet's path); the
// ratios hold: draining ≈ batched ≫ plain > gnet's path.
//
// # Choosing between gnetudp and transport/socket/udp
//
// Choose the batched UDP socket (package udp) by default: it costs the
// same per datagram as the draining engine without GSO and GRO, and 2–10
// times less with them; it starts no goroutine, allocates nothing on any
// path, receives datagrams of any size, and serves clients too.
//
// Choose the engine for a server whose receive work should not wait for its
// tick loop, or should spread over cores:
//
//   - the event loops empty the kernel's socket buffers as datagrams arrive,
//     whatever the tick loop is doing, so a burst during a long tick lands
//     in the queues (and, past them, in Stats.QueueDrops, counted) rather
//     than overflowing the socket buffer, which the kernel drops silently;
//   - the tick loop's reads are memory copies with no system call;
//   - with many peers, SO_REUSEPORT spreads receiving over EventLoops
//     sockets and cores.
//
// Its costs: EventLoops OS threads, a copy per received datagram, the queue
// memory, gnet's allocations per wake-up, datagrams limited to
// MaxDatagramSize, and gnet's process-wide state. On Linux, importing
// gnet starts, at package init, a worker pool (ants) with two goroutines
// for the life of the process, one waking every 500 ms. gnet also has
// one process-wide logger, which Open replaces with Config.Logger.
//
// # Addresses and ports
//
// An IPv4 laddr opens IPv4 sockets; an IPv6 one IPv6-only sockets, dual
// stack for [::], where IPv4 peers appear (and may be addressed) as plain
// IPv4 addresses. gnet binds each event loop's socket to the address it was
// given, so with port 0 each would get a port of its own; Open therefore
// reserves a port first, binding a socket without SO_REUSEPORT (so that the
// kernel picks a port no other socket has), sets SO_REUSEPORT on it, starts
// gnet on that port and closes the reservation once every loop's socket
// has joined. A fixed port is shared, as SO_REUSEPORT allows, with any
// socket of the same user bound to it with SO_REUSEPORT.
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package gnetudp
