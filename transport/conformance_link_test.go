package transport

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
)

// This file is the conformance harness's link model: the socket each side
// of a run owns, on top of simlink. simlink supplies the path (loss,
// Gilbert–Elliott bursts, delay, jitter and the reordering it causes,
// duplication, a bandwidth cap with a queue); the socket adds what a host
// adds and simlink does not model: a bounded kernel receive buffer that
// keeps filling while the application is paused (and drops when full), and
// a NAT rebinding — the socket's public address changes under a live
// session, so the peer's datagrams to the old address vanish and ours
// arrive from an address the peer does not know.

// confRxBuffer is the kernel receive buffer of every harness socket, in
// payload bytes: about Linux's default rmem (212,992 bytes of skb truesize
// holds roughly this much UDP payload at 1,200-byte datagrams).
const confRxBuffer = 256 << 10

// confRecent is how far back a socket remembers its sends, for the check
// that no datagram stays pending long after the link healed.
const confRecent = 5 * time.Second

// confSock is one side's socket: a socket.Conn over a simlink.Conn with a
// bounded receive buffer and a rebindable public address. It is driven on
// the run's goroutine only: pump moves what the network delivered into the
// receive buffer (the kernel receives while the application is paused);
// TryReadBatch hands it to the application.
type confSock struct {
	net   *simlink.Network
	conn  *simlink.Conn
	local netip.AddrPort // the address the application bound: a NAT hides the public one
	clock *time.Duration

	rx      []confDatagram // received, not yet read, oldest first from rxHead
	rxHead  int
	rxBytes int
	rxDrops uint64 // datagrams dropped because the receive buffer was full
	rxMax   int    // high-water mark of rxBytes
	free    [][]byte
	pumpIn  []socket.Message

	sends     []time.Duration // send times, oldest first from sendsHead; those older than confRecent are trimmed
	sendsHead int
	sent      uint64
	rebinds   int
}

type confDatagram struct {
	buf  []byte
	addr netip.AddrPort
	at   time.Duration // when it arrived
}

var _ socket.Conn = (*confSock)(nil)

func newConfSock(n *simlink.Network, addr netip.AddrPort, clock *time.Duration) (*confSock, error) {
	c, err := n.Listen(addr)
	if err != nil {
		return nil, err
	}
	s := &confSock{net: n, conn: c, local: addr, clock: clock}
	s.pumpIn = make([]socket.Message, socket.IdealBatchSize)
	for i := range s.pumpIn {
		s.pumpIn[i].Buf = make([]byte, MaxMTU+1)
	}
	return s, nil
}

// public returns the address the peer sees.
func (s *confSock) public() netip.AddrPort { return s.conn.LocalAddr() }

// pump moves every datagram the network has delivered into the receive
// buffer, dropping those that do not fit, and returns how many it kept.
func (s *confSock) pump() int {
	kept := 0
	for {
		n, err := s.conn.TryReadBatch(s.pumpIn)
		if err != nil || n == 0 {
			return kept
		}
		for _, m := range s.pumpIn[:n] {
			if s.rxBytes+m.N > confRxBuffer {
				s.rxDrops++
				continue
			}
			var b []byte
			if k := len(s.free); k > 0 {
				b, s.free = s.free[k-1][:0], s.free[:k-1]
			}
			s.rx = append(s.rx, confDatagram{buf: append(b, m.Buf[:m.N]...), addr: m.Addr, at: *s.clock - m.Age})
			s.rxBytes += m.N
			s.rxMax = max(s.rxMax, s.rxBytes)
			kept++
		}
	}
}

// TryReadBatch hands out received datagrams, oldest first.
func (s *confSock) TryReadBatch(msgs []socket.Message) (int, error) {
	k := 0
	for k < len(msgs) && s.rxHead < len(s.rx) {
		d := &s.rx[s.rxHead]
		m := &msgs[k]
		m.N = copy(m.Buf, d.buf)
		m.Addr = d.addr
		m.Age = *s.clock - d.at
		s.rxBytes -= len(d.buf)
		s.free = append(s.free, d.buf)
		*d = confDatagram{}
		s.rxHead++
		k++
	}
	if s.rxHead == len(s.rx) {
		s.rx, s.rxHead = s.rx[:0], 0
	}
	return k, nil
}

// errConfBlockingRead: the harness runs on virtual time and one goroutine,
// so a blocking read could never be woken. Nothing in the transport calls
// it (Endpoint.Poll uses TryReadBatch).
var errConfBlockingRead = errors.New("conformance: blocking ReadBatch on a virtual-time socket")

// ReadBatch is refused: see errConfBlockingRead.
func (s *confSock) ReadBatch(msgs []socket.Message) (int, error) {
	if n, _ := s.TryReadBatch(msgs); n > 0 {
		return n, nil
	}
	return 0, errConfBlockingRead
}

// WriteBatch sends through the current binding and remembers when.
func (s *confSock) WriteBatch(msgs []socket.Message) (int, error) {
	n, err := s.conn.WriteBatch(msgs)
	now := *s.clock
	for range n {
		s.sends = append(s.sends, now)
	}
	s.sent += uint64(n)
	for s.sendsHead < len(s.sends) && now-s.sends[s.sendsHead] > confRecent {
		s.sendsHead++
	}
	if s.sendsHead > len(s.sends)/2 {
		s.sends = append(s.sends[:0], s.sends[s.sendsHead:]...)
		s.sendsHead = 0
	}
	return n, err
}

// sentWithin counts the datagrams sent in the last d (d ≤ confRecent).
func (s *confSock) sentWithin(d time.Duration) int {
	now := *s.clock
	n := 0
	for i := len(s.sends) - 1; i >= s.sendsHead && now-s.sends[i] <= d; i-- {
		n++
	}
	return n
}

// LocalAddr returns the address the application bound, which a NAT
// rebinding does not change.
func (s *confSock) LocalAddr() netip.AddrPort { return s.local }

// Close closes the current binding.
func (s *confSock) Close() error { return s.conn.Close() }

// rebind moves the socket's public address to addr, as a NAT that dropped
// its mapping and made a new one: the old binding is closed (datagrams in
// flight to it are lost), and what the socket sends from now on comes from
// addr. The receive buffer keeps what already arrived.
func (s *confSock) rebind(addr netip.AddrPort) error {
	c, err := s.net.Listen(addr)
	if err != nil {
		return err
	}
	if err := s.conn.Close(); err != nil {
		return err
	}
	s.conn = c
	s.rebinds++
	return nil
}

// healed returns the link after the heal: the same propagation delay,
// nothing else (no loss, jitter, duplication or bandwidth cap).
func healed(l simlink.LinkConfig) simlink.LinkConfig {
	return simlink.LinkConfig{Delay: l.Delay, MTU: l.MTU}
}

// linkString is a compact form of a link config for the scenario line.
func linkString(l simlink.LinkConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "delay=%v", l.Delay.Round(time.Millisecond))
	if l.Jitter > 0 {
		fmt.Fprintf(&b, " jitter=%v", l.Jitter.Round(time.Millisecond))
	}
	if l.Loss > 0 {
		fmt.Fprintf(&b, " loss=%.1f%%", 100*l.Loss)
		if l.BurstLen > 1 {
			fmt.Fprintf(&b, "/GE%.1f", l.BurstLen)
		}
	}
	if l.Duplicate > 0 {
		fmt.Fprintf(&b, " dup=%.1f%%", 100*l.Duplicate)
	}
	if l.Bandwidth > 0 {
		fmt.Fprintf(&b, " bw=%dKB/s queue=%dKB", l.Bandwidth>>10, l.QueueLimit>>10)
	}
	return b.String()
}
