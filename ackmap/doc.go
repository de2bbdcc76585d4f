// Package ackmap is tickwire's sequence bookkeeping: which of our datagrams
// did the peer get, what does that confirm, and how long does a round trip
// take.
//
// Every datagram a channel sends carries a 16-bit seq, plus an ack header
// describing what it has received from the peer: the newest seq received and
// 32 bits for the 32 seqs before it. Two types keep the two halves:
//
//   - RecvHistory records incoming seqs and produces the ack header to
//     piggy-back; it also says whether an incoming seq is fresh, a duplicate
//     or too old to judge.
//   - SendTracker hands out seqs and turns incoming ack headers, the passage
//     of time and in-flight pressure into verdicts: every seq sent resolves
//     exactly once, acked or lost, and never changes its mind. Loss is
//     judged RACK-style, by a packet threshold and a time threshold behind
//     the newest acked seq, both of which rise when a later ack shows a
//     loss verdict was only reordering, and fall back slowly; a time-out
//     resolves what no ack ever will. Ack-only datagrams take a seq with
//     no verdict (Skip): they widen the span of seqs, bounded by SpanLimit,
//     but not the MaxInFlight bound on pending ones.
//
// A send that went out as N datagrams (a fragmented message) is one pending
// record owning N seqs. The receiver reassembles all-or-nothing, so the
// record is confirmed only when every one of its seqs is acked; the first
// loss abandons it, even if sibling seqs were acked before or after. Records
// carry an opaque caller tag (an action-stream frame end, a message id).
//
// SeqBuffer is the generic ring underneath: indexed by seq & mask and tagged
// with the seq, so a stale lookup after wrap misses. RTT is an RFC 6298
// estimator with minimum, latest and jitter; SendTracker feeds it one
// sample per seq acked.
//
// # Cost and ownership
//
// Nothing here allocates per datagram: rings are sized at construction,
// records come from a slab that only grows past its previous peak, and
// verdicts are appended to a caller-owned []Event that the caller reuses.
// Time is a time.Duration on a caller-supplied monotonic clock; the package
// never reads the wall clock. None of the types is safe for concurrent use;
// a channel's bookkeeping belongs to one goroutine.
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package ackmap
