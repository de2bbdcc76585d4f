// Package bench measures tickwire against kcp-go and quic-go on the same
// impaired link and the same traffic, on one machine.
//
// # Pieces
//
// [Relay] is the link conditioner: a UDP relay on loopback that forwards
// datagrams between a client and a target, passing each direction through
// its own [simlink.Model] — the impairment model the simulated network in
// transport/simlink uses, so there is one implementation of loss, delay,
// jitter and duplication. Delayed datagrams wait in a heap and are released
// by one goroutine per direction.
//
// [Transport] is one peer — a named configuration of one implementation:
// "tickwire"; kcp-go as "kcp-fast" (its latency setup, for echo and
// actions), "kcp-bulk" (its throughput setup, for pps and bulk) and
// "kcp-default"; quic-go as "quic" (one stream), "quic-streams" (a stream
// per message) and "quic-dgram" (RFC 9221 datagrams, unreliable) — as
// two halves: a server that echoes every reliable message back, and a
// client that sends them and receives the echoes. [Run] puts both halves in
// one process with a Relay between them; [Serve] and [RunClient] run one
// half each, so the same traffic can cross real processes and machines
// (`tickwire server`, `tickwire client`, with `tickwire relay` between if
// wanted). A profile drives the halves and measures them into a [Result],
// which [WriteTable], [WriteJSON] and [WriteMarkdown] report (and package
// bench/chart draws as SVG charts); a latency profile summarises its HDR
// histogram with latencyOf, into percentiles and a CDF
// ([Result.LatencyCDF]):
//
//   - [ProfileEcho]: reliable messages at a fixed rate, echoed back,
//     through the Relay; round-trip latency.
//   - [ProfilePPS]: small unreliable messages one way, as fast as the
//     transport takes them, for a fixed time; messages and datagrams per
//     second. [Raw] (plain UDP, one system call per datagram) is its floor;
//     tickwire runs it unreliable and reliable; kcp, which has no
//     unreliable mode, carries reliable messages.
//   - [ProfileBulk]: a one-way reliable-ordered transfer in [BulkChunk]
//     messages, each checked for order and CRC-32C; MB/s.
//   - [ProfileLoad] (not in the default suite): many tickwire clients in
//     one process against one server at 60 Hz, direct at 0 % loss; the
//     server's µs per peer-tick, echo round trip and heap per peer.
//   - [ProfileActions] (not in the default suite): the rollback action
//     stream — Peers clients send one input per frame at 60 Hz to one
//     rollback.Server, each client through its own Relay; one-way latency
//     from sampling an input to the server applying it, and a check that
//     every input is applied exactly once. Tickwire runs the real stack
//     (ServerLinks and predicting Clients over Endpoints); kcp carries the
//     same inputs to the same server over kcp-go sessions.
//
// Pps and bulk connect the ends directly, not through the Relay, at 0 %
// loss: the relay forwards one datagram per system call on one goroutine
// per direction, so it could not go faster than the raw floor and would
// measure itself. The tickwire pair of these profiles Polls and Flushes
// both ends in lockstep on one goroutine, without sleeping (see
// twOneWay): a Flush sends at most 32 datagrams, so throughput scales with
// the Flush rate.
//
// # Measurement
//
// Each row runs alone: rows are run one after the other so that they do not
// disturb each other's latency. CPU seconds are process-wide
// (getrusage(RUSAGE_SELF), user + system) over the row, so they include
// the relay and the profile's own goroutines, the same for every
// transport; allocations are the process-wide runtime.MemStats.Mallocs
// delta over the row, divided by the messages sent (pps and bulk include
// the pair's setup in the delta); peak RSS is the
// process's high-water mark so far (getrusage Maxrss), which never goes
// down from one row to the next. Wire bytes are the UDP payload bytes both
// ends handed to the relay (IP and UDP headers not included).
//
// Every profile turns its latency histogram into percentiles and a CDF the
// same way (latencyOf). In Run every socket is bound to 127.0.0.1, and
// every run is bounded in time and message count. Across processes
// (RunClient) the figures are the client process's; see RunClient for what
// each field then means.
package bench
