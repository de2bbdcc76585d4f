package gnetudp

import "sync/atomic"

// Features says which paths an engine is using. They are fixed at open.
type Features struct {
	// DrainRecv: after gnet reads one datagram for a wake-up, the event
	// loop drains its socket with non-blocking recvmmsg calls into its
	// queue. False: gnet's path alone, one recvfrom per wake-up.
	DrainRecv bool
	// BatchSend: WriteBatch issues one sendmmsg for up to 64 datagrams.
	// False only on the per-datagram sendto path the benchmarks measure
	// gnet's own UDP write path with.
	BatchSend bool
}

// Stats is a snapshot of an engine's counters. Counters only grow.
// Reading them is cheap (a few atomic loads per event loop) and safe from
// any goroutine, concurrently with reads, writes and the event loops.
type Stats struct {
	Features

	// EventLoops is the number of gnet event loops (and sockets), and
	// QueueLen the capacity of each one's queue, in datagrams.
	EventLoops, QueueLen int

	// DatagramsIn and BytesIn count datagrams handed to callers by
	// ReadBatch and TryReadBatch and their payload bytes (after
	// truncation).
	DatagramsIn, BytesIn uint64
	// DatagramsOut and BytesOut count datagrams accepted by the kernel in
	// WriteBatch and their payload bytes.
	DatagramsOut, BytesOut uint64

	// Received counts datagrams the event loops queued; ReceivedBytes
	// their payload bytes (after any cut to MaxDatagramSize). A datagram
	// dropped on a full queue counts in QueueDrops instead.
	Received, ReceivedBytes uint64
	// QueueDrops counts received datagrams dropped because their event
	// loop's queue was full (the reader was not keeping up).
	QueueDrops uint64
	// Queued is the number of datagrams waiting in the queues now.
	Queued int
	// Truncated counts datagrams delivered cut short: longer than
	// MaxDatagramSize when they arrived, or than the caller's buffer.
	Truncated uint64
	// OversizeRejected counts WriteBatch messages refused with
	// socket.ErrTooLarge.
	OversizeRejected uint64

	// Wakeups counts OnTraffic calls: event-loop wake-ups that found a
	// datagram. Each costs gnet one epoll_wait and one recvfrom.
	Wakeups uint64
	// RecvSyscalls counts receive system calls: two per wake-up for gnet's
	// read (recvfrom, and the getsockopt(SO_PROTOCOL) x/sys's Recvfrom
	// issues to decode the source address) plus the recvmmsg calls of
	// draining. gnet's epoll_wait calls (at least one per wake-up) are not
	// included.
	RecvSyscalls uint64
	// SendSyscalls counts sendmmsg (or sendto) and poll calls issued by
	// WriteBatch, including those that met a full send buffer.
	SendSyscalls uint64

	// RecvBufferBytes and SendBufferBytes are SO_RCVBUF and SO_SNDBUF of
	// the first event loop's socket as the kernel reported them at open.
	RecvBufferBytes, SendBufferBytes int
}

// DatagramsPerWakeup is (Received + QueueDrops) / Wakeups: how many
// datagrams an event-loop wake-up takes from the kernel. gnet's path alone gives 1; draining more
// under load.
func (s Stats) DatagramsPerWakeup() float64 {
	if s.Wakeups == 0 {
		return 0
	}
	return float64(s.Received+s.QueueDrops) / float64(s.Wakeups)
}

// readCounters are updated by the reading goroutine only.
type readCounters struct {
	datagrams, bytes, truncated atomic.Uint64
}

// writeCounters are updated by the writing goroutine only.
type writeCounters struct {
	datagrams, bytes, syscalls, oversize atomic.Uint64
}
