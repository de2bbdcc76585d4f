package udp

import "sync/atomic"

// Features says which kernel paths a socket is using. GSO can turn off
// after open, when the kernel refuses a GSO send and a datagram of it then
// goes out alone (see the package documentation); the others are fixed at
// open.
type Features struct {
	// BatchRecv: reads issue one recvmmsg for up to BatchSize datagrams.
	// False for the plain socket (one recvmsg per datagram).
	BatchRecv bool
	// BatchSend: writes issue one sendmmsg for up to BatchSize datagrams.
	// False for the plain socket (one sendmsg per datagram).
	BatchSend bool
	// GSO: consecutive same-size datagrams to one address leave as one
	// UDP_SEGMENT send that the kernel (or NIC) splits.
	GSO bool
	// GRO: UDP_GRO is set, so the kernel may hand up several datagrams of
	// one flow as one buffer, which the socket splits.
	GRO bool
	// Timestamps: SO_TIMESTAMPNS is set (Linux, unless
	// Config.DisableTimestamps), so reads report socket.Message.Age from
	// the kernel's arrival stamp. False means Age is always 0.
	Timestamps bool
}

// Stats is a snapshot of a socket's counters and live features. Counters
// only grow. Reading them is cheap (a handful of atomic loads) and safe
// from any goroutine, concurrently with reads and writes.
type Stats struct {
	Features

	// DatagramsIn and BytesIn count datagrams handed to callers by
	// ReadBatch and TryReadBatch and their payload bytes (after truncation).
	DatagramsIn, BytesIn uint64
	// DatagramsOut and BytesOut count datagrams accepted by the kernel in
	// WriteBatch and their payload bytes.
	DatagramsOut, BytesOut uint64
	// RecvSyscalls and SendSyscalls count receive and send system calls
	// issued, including those that found nothing to read or a full send
	// buffer (EAGAIN) and those that failed.
	RecvSyscalls, SendSyscalls uint64
	// WaitSyscalls counts the system calls Wait issued (Linux: arming the
	// timer, epoll_wait, draining the eventfd and timerfd; 0 elsewhere).
	// A Wait for the deadline the timer is armed for already (a loop
	// woken early, waiting for the same NextDeadline again) arms nothing.
	WaitSyscalls uint64
	// Truncated counts received datagrams longer than the caller's buffer;
	// each was delivered cut to len(Buf).
	Truncated uint64
	// OversizeRejected counts WriteBatch messages refused with
	// socket.ErrTooLarge.
	OversizeRejected uint64
	// GSOSends counts UDP_SEGMENT sends, each carrying two or more
	// datagrams.
	GSOSends uint64
	// GSOFallbacks counts UDP_SEGMENT sends the kernel refused (EIO, EINVAL
	// or EMSGSIZE) because of GSO itself: each was resent one datagram per
	// message, and GSO was turned off or kept to smaller segments.
	GSOFallbacks uint64
	// GROReceives counts received buffers that the kernel had coalesced
	// from two or more datagrams.
	GROReceives uint64

	// RecvBufferBytes and SendBufferBytes are SO_RCVBUF and SO_SNDBUF as
	// the kernel reported them at open (0 where the platform cannot say).
	RecvBufferBytes, SendBufferBytes int
}

// recvCounters are updated by the reading goroutine only.
type recvCounters struct {
	datagrams, bytes, syscalls, truncated, groReceives atomic.Uint64
}

// sendCounters are updated by the writing goroutine only.
type sendCounters struct {
	datagrams, bytes, syscalls, oversize, gsoSends, gsoFallbacks atomic.Uint64
}

// counters is the shared bookkeeping of both implementations. The padding
// keeps a reader and a writer on two cores off each other's cache line.
type counters struct {
	recv recvCounters
	_    [64]byte
	send sendCounters
}

// fill copies the counters into s.
func (c *counters) fill(s *Stats) {
	s.DatagramsIn = c.recv.datagrams.Load()
	s.BytesIn = c.recv.bytes.Load()
	s.RecvSyscalls = c.recv.syscalls.Load()
	s.Truncated = c.recv.truncated.Load()
	s.GROReceives = c.recv.groReceives.Load()
	s.DatagramsOut = c.send.datagrams.Load()
	s.BytesOut = c.send.bytes.Load()
	s.SendSyscalls = c.send.syscalls.Load()
	s.OversizeRejected = c.send.oversize.Load()
	s.GSOSends = c.send.gsoSends.Load()
	s.GSOFallbacks = c.send.gsoFallbacks.Load()
}
