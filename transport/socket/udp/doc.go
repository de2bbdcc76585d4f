// Package udp is tickwire's UDP socket: a socket.Conn that moves datagrams
// in batches, with recvmmsg/sendmmsg and UDP GSO/GRO on Linux, and with the
// standard library's one-datagram-per-call path everywhere else.
//
// # Two paths, one behaviour
//
// Open returns the best path for the platform:
//
//   - Linux: the batched socket. A *net.UDPConn is opened as usual and its
//     syscall.RawConn is used to issue recvmmsg and sendmmsg for up to
//     Config.BatchSize (default 64) datagrams per system call. Consecutive
//     datagrams to one address go out as one UDP_SEGMENT (GSO) send, and
//     with UDP_GRO set the kernel may hand several received datagrams up as
//     one buffer, which the socket splits.
//   - Other platforms: the plain socket.
//
// OpenPlain returns the plain socket on any platform: one
// ReadMsgUDPAddrPort or WriteToUDPAddrPort per datagram. It is the fallback
// and the floor the benchmarks compare against. The standard library has no
// non-blocking read, so the plain TryReadBatch (and ReadBatch after its
// first datagram) receives through the RawConn with recvmsg(MSG_DONTWAIT)
// on Unix, and after a FIONREAD check on Windows.
//
// Both pass the conformance suite in package sockettest; only cost and
// Stats differ.
//
// # Bringing your own socket
//
// FromConn wraps a *net.UDPConn the caller has bound itself (with socket
// options of its own, or inherited from a supervisor) and takes it over:
// the same best path as Open, batched on Linux through uc.SyscallConn,
// with the same probes and the same cost per datagram (BenchmarkLoopback's
// fromconn rows). The Conn then owns the socket, and closes it. For a
// net.PacketConn that is not a kernel UDP socket (a tunnel, a userspace
// stack, a test double) package transport/socket/pconn adapts it instead,
// at one call per datagram.
//
// # Threading model
//
// The socket starts no goroutines. One goroutine may read (ReadBatch or
// TryReadBatch: they share the receive state and must not run at the same
// time) while another writes (WriteBatch). Close, Stats, Features,
// LocalAddr and MaxDatagramSize are safe from any goroutine.
//
// A ReadBatch with nothing to read parks in the Go netpoller (the RawConn
// callback reports "not ready" on EAGAIN), so a blocked reader costs no
// thread, no spinning and no extra goroutine; Close wakes it with an error
// wrapping socket.ErrClosed and net.ErrClosed. A WriteBatch facing a full
// socket send buffer parks the same way until the socket is writable.
//
// # Buffer ownership
//
// Every buffer in a batch belongs to the caller. WriteBatch points the
// kernel at the caller's buffers for the duration of the system call (no
// copy on the way out, GSO included) and clears those pointers before
// returning. ReadBatch without GRO has the kernel write straight into the
// caller's buffers. With GRO live the kernel writes into a socket-owned
// arena of min(BatchSize, 16) receives of up to 64 KiB each (1 MiB by
// default) and each datagram is
// copied into a caller buffer; datagrams of a coalesced receive that did
// not fit the caller's batch stay in the arena and are handed out by the
// next read, before any new system call. A caller buffer is never written
// after the call that was given it returns.
//
// Each socket allocates its header, iovec and sockaddr arrays once at open;
// a steady-state ReadBatch or WriteBatch allocates nothing (TestNoAllocs),
// and source addresses are converted to netip.AddrPort without allocating
// (a scoped IPv6 link-local source is the exception: its zone, the numeric
// interface index, is a string).
//
// # Kernel features and fallback
//
// At open the batched socket probes, on its own descriptor:
//
//   - recvmmsg and sendmmsg, with empty vectors: ENOSYS (some sandboxes)
//     makes Open return the plain socket instead;
//   - GSO: getsockopt(UDP_SEGMENT) succeeds on kernels with UDP GSO (4.18+);
//   - GRO: setsockopt(UDP_GRO, 1) succeeds on kernels with UDP GRO (5.0+);
//   - receive timestamps: setsockopt(SO_TIMESTAMPNS_NEW, 1) (5.1+), else
//     SO_TIMESTAMPNS_OLD (any kernel in use); the plain socket on Linux
//     sets it too.
//
// Config.DisableGSO, DisableGRO and DisableTimestamps skip the probes.
// Features and Stats say which paths are live.
//
// GSO coalesces consecutive messages of one WriteBatch that go to the same
// Addr with the same size; the last of a run may be shorter. A run stops at
// 64 datagrams or 65507 bytes; zero-length datagrams always go alone. A
// GSO send the kernel refuses with EIO, EINVAL or EMSGSIZE is resent one
// datagram per message, in order, nothing lost or duplicated. Once the
// first of those is accepted alone the refusal is blamed on GSO: EIO (the
// device cannot segment) turns GSO off for the socket; EINVAL or EMSGSIZE
// stops coalescing segments of that size or more when the size exceeds
// 1232 bytes (a path MTU smaller than the segment), and turns GSO off when
// it does not. Each such event counts in Stats.GSOFallbacks. If the
// message is refused alone too, the destination was the problem: WriteBatch
// returns that error and GSO stays as it was.
//
// # Receive timestamps and Message.Age
//
// On Linux every read sets socket.Message.Age, how long the datagram had
// waited in the socket when the read returned it: the kernel stamps each
// datagram with CLOCK_REALTIME as it arrives (SO_TIMESTAMPNS), each
// receive header carries a control buffer for the stamp (and GRO's
// segment size), and the read subtracts the stamp from one time.Now taken
// when the receive returns. A GRO buffer's datagrams share its stamp, also
// those a later read hands out of the arena (they have waited longer by
// then). A stamp after the read, or more than a minute before it (a
// wall-clock step between the two), gives Age 0, as does a datagram
// without a stamp; Age is never negative. Some kernels switch stamping on
// lazily: the first datagrams after open may be stamped only when read,
// with an Age near 0. Config.DisableTimestamps turns it off (Age 0,
// Features.Timestamps false). On other platforms Age is 0.
//
// Its cost is small next to the system call: a clock read per datagram
// (per coalesced buffer with GRO) in the kernel, a 56-byte control buffer
// per receive header, and in the reader one time.Now per read call (about
// 40 ns, BenchmarkTimeNow) and about 10 ns of parsing per receive header
// (BenchmarkParseControl). BenchmarkLoopback moved as many datagrams with
// timestamps as without, within its noise: 12 interleaved runs of each
// put the geomean 2 % slower, no row significantly so in a rerun.
//
// Package gnetudp and package pconn report Age too, as the time a
// datagram sat in their own queues; simlink reports it exactly.
//
// # Cost per datagram
//
// BenchmarkLoopback moves datagrams between two sockets over 127.0.0.1, a
// sender goroutine writing batches of 64 and a reader calling ReadBatch;
// ns/op is the cost of one datagram on both sides together, kernel
// included. Medians of five runs on a 2-vCPU VM (Linux 6.18) shared with
// other work:
//
//	path                 64 B datagrams           1200 B datagrams
//	plain                ~8 µs    (~120k pkt/s)   ~9 µs    (~110k pkt/s)
//	batched              ~2.5 µs  (~390k pkt/s)   ~2.5 µs  (~400k pkt/s)
//	batched+GSO          ~0.6 µs  (~1.6M pkt/s)   ~1.4 µs  (~0.7M pkt/s)
//	batched+GSO+GRO      ~0.18 µs (~5.7M pkt/s)   ~0.5 µs  (~2.1M pkt/s)
//
// Single runs vary by a third with the machine's load; the ratios hold:
// batching gives 3–4× the plain loop, GSO 2–4× more, GRO on top of GSO
// about 3× more. Nearly all the time is kernel time in the system calls.
// The plain reader wakes for almost every datagram; the batched one takes
// 5–13 per recvmmsg and the writer 64 per sendmmsg. GSO moves one
// super-datagram through the stack per run of datagrams; GRO lets the
// receiving socket take it whole. GRO on a socket whose peers do not use
// GSO measured the same as without it in interleaved runs (the copy out of
// the arena is a few percent of a receive), so it is on by default.
//
// # Addresses and limits
//
// An IPv4 laddr opens an IPv4 socket; an IPv6 laddr an IPv6 one, dual stack
// for [::], where IPv4 peers appear (and may be addressed) as plain IPv4
// addresses. WriteBatch refuses a payload above Config.MaxDatagramSize
// (default socket.MaxDatagramSize) with socket.ErrTooLarge, after sending
// the messages before it. A received datagram longer than its buffer is cut
// to len(Buf) and counted in Stats.Truncated. Zero-length datagrams are
// legal both ways: they arrive as messages with N == 0.
//
// On Windows, TryReadBatch learns that data is queued from FIONREAD, which
// does not see a queued zero-length datagram until a longer one follows it
// (ReadBatch sees it at once).
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package udp
