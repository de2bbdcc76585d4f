// Package simlink is a deterministic in-process datagram network with a
// virtual clock: the simulated link every tickwire protocol test runs on,
// and the impairment model the bench suite's UDP relay reuses.
//
// # Pieces
//
// [Model] is the impairment model of one direction of a link, usable on its
// own: given a datagram's size and the time it is sent, [Model.Decide]
// returns a [Verdict] — dropped, with a [DropReason], or delivered once or
// twice at given times — and counts what it did in [Stats]. A UDP relay
// keeps one Model per direction, feeds it time since its start, and
// forwards or drops accordingly.
//
// [Network] connects endpoints ([Conn], bound with [Network.Listen] to
// virtual addresses such as 127.0.0.1:9000) through per-direction links,
// each with its own Model. A link's [LinkConfig] comes from
// [Network.SetDefaultLink] unless [Network.SetLink] or [Network.SetPair]
// configured that direction. Conn implements [socket.Conn] exactly, so
// protocol code cannot tell it from the UDP socket. Nothing touches the
// real network.
//
// # What each knob models, and its cost
//
// A datagram passes these stages in order (see [LinkConfig] for ranges):
//
//   - MTU: larger datagrams are refused; WriteBatch returns
//     [socket.ErrTooLarge]. Free.
//   - Bandwidth and QueueLimit: a bottleneck that serialises datagrams one
//     after another at Bandwidth bytes/s (a burst is spread out in time and
//     queues behind earlier traffic), dropping a datagram that would push
//     the backlog above QueueLimit bytes. One ring entry per queued
//     datagram.
//   - Loss and BurstLen: independent loss with probability Loss, or, with
//     BurstLen > 1, a Gilbert–Elliott two-state chain whose stationary loss
//     rate is Loss and whose loss runs are geometric with mean BurstLen.
//     One random draw per datagram.
//   - Delay and Jitter: one-way delay, uniform in [Delay−Jitter,
//     Delay+Jitter] clamped at 0. Reordering is a consequence of jitter and
//     there is no separate knob: with Jitter 0 a link is FIFO. One random
//     draw per copy when Jitter > 0.
//   - Duplicate: a second copy, with its own jitter, with probability
//     Duplicate. One random draw per datagram, plus a copy of the bytes.
//
// In the Network, every datagram also costs one copy of its bytes into a
// recycled buffer and a push and pop on a binary heap of in-flight copies:
// O(log n) for n in flight, and no allocation in steady state.
//
// # Determinism
//
// Same seed and same sequence of calls ⇒ same result, byte for byte:
// the same datagrams lost, duplicated and delivered, in the same order, at
// the same virtual times (scenario S-A1). There is no wall clock and no
// global random source: time is a [time.Duration] that moves only when the
// caller calls [Network.Advance], [Network.AdvanceTo], [Network.Drain] or
// [Network.RunTicks], and randomness comes from math/rand/v2 PCG streams
// seeded from the network seed and the two addresses of each link (each
// impairment has its own stream, so changing Duplicate does not change which
// datagrams are lost). In-flight copies are ordered by (delivery time,
// insertion sequence), so ties break in send order. A copy due at the
// current time (zero delay, uncapped link) becomes readable during
// WriteBatch itself.
//
// The contract covers the order of calls into the Network. Calls from
// several goroutines are safe, but their interleaving is the caller's to
// make deterministic; a lock-step test (write, advance, read on one
// goroutine) is deterministic by construction. [Network.SetTrace] records
// every send, drop and delivery, for comparing runs and for deriving loss
// runs and latencies.
//
// # Threading
//
// The package starts no goroutine: time moves only when the test says so.
// Every method is safe for concurrent use (one mutex guards a Network and
// its endpoints). A [Conn.ReadBatch] on an empty queue blocks until another
// goroutine advances time far enough, sends with zero delay, or closes the
// Conn; Close makes it return socket.Closed("read", …), which satisfies
// errors.Is for socket.ErrClosed and net.ErrClosed. A test that blocks in ReadBatch must therefore advance the
// clock from another goroutine (or use zero delay, or TryReadBatch).
//
// # Buffer ownership
//
// As [socket.Conn] requires: WriteBatch copies each message's Buf[:N]
// before it returns, so the caller may overwrite its buffer at once
// (S-A4); the copy lives in a pooled buffer owned by the Network until it
// is read or dropped. ReadBatch copies into the caller's Buf and keeps no
// reference to it. A datagram longer than the caller's Buf is truncated and
// counted in [ConnStats.Truncated].
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package simlink
