// Package pconn adapts any net.PacketConn to socket.Conn, so that a socket
// the user already has — a tunnel, a userspace network stack, a relay, a
// test double — can carry a tickwire endpoint. For a kernel UDP socket
// (*net.UDPConn) use udp.FromConn instead: it keeps the batched
// recvmmsg/sendmmsg path, where this adapter makes one call per datagram.
//
//	pc, _ := net.ListenPacket("udp", ":4000") // or any net.PacketConn
//	conn, err := pconn.New(pc, pconn.Config{})
//	ep, err := transport.Listen(conn, transport.EndpointConfig{}, handler)
//
// # How it works
//
// net.PacketConn has no way to read without waiting (a deadline in the
// past fails the read before it looks for data), which socket.Conn's
// TryReadBatch and Waiter need. So the adapter reads on a goroutine of its
// own, (*Conn).receive: one ReadFrom per datagram into a ring of
// Config.QueueLen fixed slots allocated by New, handing each filled slot
// to the reader over a channel. ReadBatch, TryReadBatch and Wait take from
// the ring; Wait wakes as soon as a datagram is queued. WriteBatch calls
// WriteTo once per datagram on the caller's goroutine.
//
// When the ring is full the goroutine stops reading until the reader
// frees a slot, so a slow reader leaves datagrams queued (or dropped) in
// the layer below, as a UDP socket's buffer would; the adapter itself
// never drops one. A read error other than the conn being closed is
// handed to the next read call, once, and the goroutine reads on after
// the reader has taken it, so a failing conn cannot make it spin.
//
// Because the ring holds datagrams until the reader comes, a read sets
// each Message.Age to how long its datagram sat there: the receiving
// goroutine reads the monotonic clock as each ReadFrom returns, the reader
// once per read call. The time a datagram spent in the layer below before
// the goroutine read it (none while a slot is free and ReadFrom is
// waiting; more once the ring is full) is not counted: the adapter cannot
// see it.
//
// # Buffer ownership
//
// Every buffer in a batch belongs to the caller. ReadBatch and
// TryReadBatch copy each datagram from its slot into the caller's buffer
// and keep no reference to it. WriteBatch passes the caller's buffer to
// WriteTo and keeps nothing after it returns; the PacketConn must not keep
// it either (the io.Writer rule; the conformance suite's BufferReuseSend
// check catches a conn that does).
//
// # Cost
//
// Per datagram received: the PacketConn's ReadFrom, one copy out of the
// slot, and four channel operations between the two goroutines. Per
// datagram sent: the PacketConn's WriteTo. Allocation depends on the conn:
//
//   - A conn with ReadFromUDPAddrPort and WriteToUDPAddrPort (as
//     *net.UDPConn has) is used through those methods, and the adapter's
//     steady state allocates nothing (TestNoAllocs).
//   - Any other conn is used through ReadFrom and WriteTo, which speak
//     net.Addr. The adapter converts a *net.UDPAddr source without
//     allocating and keeps one *net.UDPAddr per destination (for up to 1024
//     destinations), so what it costs beyond that is what the conn's
//     ReadFrom allocates to return its net.Addr: the standard library's
//     UDP ReadFrom allocates two objects per datagram, the *net.UDPAddr
//     and its IP (TestAllocsGeneric). A source address that is not a
//     *net.UDPAddr is parsed from its String(), which allocates the
//     string.
//
// BenchmarkLoopback measures both over 127.0.0.1, against the UDP
// socket's plain path with the same sockettest.Pump.
//
// # Addresses
//
// socket.Message speaks netip.AddrPort. The conn's LocalAddr and the
// sources ReadFrom returns must be *net.UDPAddr or print as "ip:port"; New
// refuses a local address that does not (socket.ErrInvalidAddr), and a
// datagram from such a source is dropped and counted in
// Stats.Unaddressable. WriteTo is given a *net.UDPAddr.
//
// # Closing
//
// Close closes the PacketConn — whose Close, by net.PacketConn's contract,
// unblocks the goroutine's ReadFrom — and waits for the goroutine to
// return. After Close every I/O method returns socket.Closed(op, …), which
// wraps socket.ErrClosed and net.ErrClosed; so does a read once the
// PacketConn was closed by someone else.
package pconn
