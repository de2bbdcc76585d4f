// Package sockettest is the conformance suite every socket.Conn must pass:
// the batched UDP socket (opened by udp.Open or taken over by
// udp.FromConn), the plain UDP socket, the gnet engine, the net.PacketConn
// adapter (package pconn) and the simulated link run the same checks
// (scenario S-A5), including the buffer-ownership rule of scenario S-A4.
//
// A test calls Run with a factory that returns two connected conns:
//
//	func TestConformance(t *testing.T) {
//		sockettest.Run(t, func(t *testing.T) (a, b socket.Conn) {
//			a, b = newMyConn(t), newMyConn(t)
//			return a, b
//		})
//	}
//
// # What the factory must return
//
// Two open conns, a and b, such that a datagram written by either to the
// other's LocalAddr is delivered to the other, and the receiver sees it
// coming from the sender's LocalAddr. The link between them must not lose,
// duplicate or (unless Options.Unordered) reorder datagrams, and must
// deliver without anything else happening: a simulated link with an
// injected clock must be configured with no delay, or advance its clock by
// itself, because the suite only waits in real time. The factory should
// register cleanup with t.Cleanup; the suite closes both conns as well, so
// Close must tolerate being called twice.
//
// # What the suite checks
//
// Each check is a subtest with a fresh pair; every wait is bounded by
// Options.Timeout and every subtest sends at most a few hundred datagrams.
// Every message a check reads must come back with Age set to 0 or more
// (the suite offers it at -1): a read that leaves a stale Age, or reports
// a negative one, fails. The suite does not check Age's value, which
// depends on timing.
// No check has more than about 150 KB in flight, so the default socket
// buffers of an unloaded Linux machine never drop a datagram.
//
//   - RoundTrip: a → b → a, with the source addresses each side sees.
//   - Batch64: one WriteBatch of 64 distinct datagrams of mixed sizes
//     (runs of equal sizes, so a GSO path coalesces some) arrives complete,
//     byte for byte, in order.
//   - OneSlotReads: the same 64 read back one message per ReadBatch.
//   - LargeBatch: a WriteBatch of 100 messages (beyond
//     socket.IdealBatchSize) sends all 100, read with 100 slots.
//   - TooLarge: a batch [small, limit, limit+1, small] sends 2 and fails
//     with socket.ErrTooLarge, in an error message that says limit+1 and
//     limit; exactly the first two arrive. The limit is the conn's
//     MaxDatagramSize() if it has that method, else socket.MaxDatagramSize.
//   - InvalidMessages: N beyond len(Buf) or negative fails WriteBatch at
//     its index with socket.ErrInvalidMessage, saying N and len(Buf); a
//     zero destination address with socket.ErrInvalidAddr; never a panic.
//   - Truncation: a datagram longer than the reader's buffer arrives cut to
//     len(Buf), and the next datagram is unaffected.
//   - ZeroLength: a zero-length datagram is legal: WriteBatch sends it and
//     the reader gets a message with N == 0 from the sender's address.
//   - EmptyBatch: ReadBatch, TryReadBatch and WriteBatch of no messages
//     return (0, nil) at once.
//   - TryReadIdle: TryReadBatch returns (0, nil) when nothing is queued,
//     and finds a datagram once one is sent.
//   - BufferReuseSend (S-A4): overwriting buffers right after WriteBatch
//     returns never changes the bytes delivered.
//   - BufferReuseRecv (S-A4): buffers handed to an earlier ReadBatch are
//     never written by later reads.
//   - ConcurrentReadWrite: one goroutine writes while another reads, on
//     both conns (run it under -race).
//   - CloseUnblocksRead: Close makes a blocked ReadBatch return the closed
//     error (errors.Is holds for socket.ErrClosed and net.ErrClosed)
//     within the timeout.
//   - ClosedCalls: after Close, ReadBatch, TryReadBatch, WriteBatch and
//     (for a socket.Waiter) Wait return the closed error; a second Close
//     returns nil or such an error.
//
// When either conn of a pair is a socket.Waiter (the suite opens one pair
// to find out), three more checks run on it, the other conn sending:
//
//   - WaitWake: a Wake before Wait makes it return at once; a Wake from
//     another goroutine ends a blocked Wait; Wait(0) and a short timeout
//     return by themselves.
//   - WaitData: a datagram queued before Wait, or arriving while it is
//     blocked, ends it, and is then read intact (with
//     Options.WaitIgnoresData, Wait need only return at its timeout).
//   - WaitClosed: Close ends a blocked Wait with the closed error, and
//     later Waits return it at once.
//
// A check that needs a call blocked (a ReadBatch or Wait that Close, Wake
// or a datagram must end) acts only once the goroutine dump shows the
// call parked, so the checks do not depend on how long blocking takes.
package sockettest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

// PairFunc returns two open conns that can reach each other (see the
// package documentation for what the link between them must do).
type PairFunc func(t *testing.T) (a, b socket.Conn)

// Options adjusts the suite to an implementation.
type Options struct {
	// Timeout bounds every wait for a datagram or for a blocked call to
	// return. Default 5 s. It is a failure bound, not an expected latency:
	// a correct implementation finishes each subtest far sooner.
	Timeout time.Duration

	// Unordered accepts datagrams from one WriteBatch arriving in another
	// order. Set it only for an implementation documented to reorder; UDP
	// over loopback does not.
	Unordered bool

	// WaitIgnoresData is for a socket.Waiter whose Wait does not wake for
	// an arriving datagram, only for Wake and its timeout (the UDP socket
	// outside Linux): the WaitData check then only requires Wait to return
	// within its own timeout.
	WaitIgnoresData bool
}

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 5 * time.Second

// Run runs the conformance suite with default options.
func Run(t *testing.T, newPair PairFunc) {
	t.Helper()
	RunOptions(t, newPair, Options{})
}

// RunOptions runs the conformance suite, each check as a subtest of t with
// a fresh pair from newPair.
func RunOptions(t *testing.T, newPair PairFunc, opts Options) {
	t.Helper()
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	checks := []struct {
		name string
		fn   func(*testing.T, *pair)
	}{
		{"RoundTrip", testRoundTrip},
		{"Batch64", testBatch64},
		{"OneSlotReads", testOneSlotReads},
		{"LargeBatch", testLargeBatch},
		{"TooLarge", testTooLarge},
		{"InvalidMessages", testInvalidMessages},
		{"Truncation", testTruncation},
		{"ZeroLength", testZeroLength},
		{"EmptyBatch", testEmptyBatch},
		{"TryReadIdle", testTryReadIdle},
		{"BufferReuseSend", testBufferReuseSend},
		{"BufferReuseRecv", testBufferReuseRecv},
		{"ConcurrentReadWrite", testConcurrentReadWrite},
		{"CloseUnblocksRead", testCloseUnblocksRead},
		{"ClosedCalls", testClosedCalls},
	}
	if hasWaiter(t, newPair) {
		checks = append(checks, []struct {
			name string
			fn   func(*testing.T, *pair)
		}{
			{"WaitWake", testWaitWake},
			{"WaitData", testWaitData},
			{"WaitClosed", testWaitClosed},
		}...)
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			a, b := newPair(t)
			if a == nil || b == nil {
				t.Fatal("factory returned a nil conn")
			}
			t.Cleanup(func() {
				a.Close()
				b.Close()
			})
			c.fn(t, &pair{a: a, b: b, opts: opts})
		})
	}
}

// hasWaiter opens one pair to learn whether either conn is a
// socket.Waiter, which adds the Wait checks.
func hasWaiter(t *testing.T, newPair PairFunc) bool {
	t.Helper()
	var ok bool
	t.Run("probe", func(t *testing.T) {
		a, b := newPair(t)
		if a == nil || b == nil {
			t.Fatal("factory returned a nil conn")
		}
		_, wa := a.(socket.Waiter)
		_, wb := b.(socket.Waiter)
		ok = wa || wb
		a.Close()
		b.Close()
	})
	return ok
}

// pair is one subtest's conns and options.
type pair struct {
	a, b socket.Conn
	opts Options
}

// datagram is a received datagram, copied out of the read buffer.
type datagram struct {
	data []byte
	addr netip.AddrPort
}

// payload returns deterministic bytes for datagram i of a test: the index
// in the first bytes, then a pattern that differs per index and offset.
func payload(seed byte, i, size int) []byte {
	p := make([]byte, size)
	for j := range p {
		p[j] = byte(i*131+j*7) ^ seed
	}
	if size >= 2 {
		p[0], p[1] = byte(i>>8), byte(i)
	}
	return p
}

// msgsTo wraps payloads as messages to dst, each in its own buffer.
func msgsTo(dst netip.AddrPort, payloads [][]byte) []socket.Message {
	msgs := make([]socket.Message, len(payloads))
	for i, p := range payloads {
		msgs[i] = socket.Message{Buf: slices.Clone(p), N: len(p), Addr: dst}
	}
	return msgs
}

// writeAll sends msgs in one WriteBatch and fails unless all were sent.
func writeAll(t *testing.T, c socket.Conn, msgs []socket.Message) {
	t.Helper()
	n, err := c.WriteBatch(msgs)
	if err != nil || n != len(msgs) {
		t.Fatalf("WriteBatch(%d msgs) = %d, %v; want %d, nil", len(msgs), n, err, len(msgs))
	}
}

// recvN reads until n datagrams have arrived at c, offering slots
// messages of bufSize bytes per ReadBatch. If they do not all arrive within
// the timeout, it closes c (to unblock the reader) and fails.
func (p *pair) recvN(t *testing.T, c socket.Conn, n, slots, bufSize int) []datagram {
	t.Helper()
	return p.recvNProgress(t, c, n, slots, bufSize, nil)
}

// recvNProgress is recvN calling progress, if not nil, with the running
// count after every ReadBatch.
func (p *pair) recvNProgress(t *testing.T, c socket.Conn, n, slots, bufSize int, progress func(int)) []datagram {
	t.Helper()
	type result struct {
		got []datagram
		err error
	}
	done := make(chan result, 1)
	go func() {
		msgs := make([]socket.Message, slots)
		for i := range msgs {
			msgs[i].Buf = make([]byte, bufSize)
		}
		var got []datagram
		for len(got) < n {
			for i := range msgs {
				msgs[i].Age = -1 // a read must set it
			}
			k, err := c.ReadBatch(msgs)
			if err != nil {
				done <- result{got, err}
				return
			}
			if k < 1 || k > len(msgs) {
				done <- result{got, fmt.Errorf("ReadBatch returned n=%d with %d slots", k, len(msgs))}
				return
			}
			for _, m := range msgs[:k] {
				if m.N < 0 || m.N > len(m.Buf) {
					done <- result{got, fmt.Errorf("ReadBatch set N=%d with len(Buf)=%d", m.N, len(m.Buf))}
					return
				}
				if m.Age < 0 {
					done <- result{got, fmt.Errorf("ReadBatch left Age=%v; want it set to 0 or more", m.Age)}
					return
				}
				got = append(got, datagram{slices.Clone(m.Buf[:m.N]), m.Addr})
			}
			if progress != nil {
				progress(len(got))
			}
		}
		done <- result{got, nil}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(r.got), n, r.err)
		}
		if len(r.got) != n {
			t.Fatalf("received %d datagrams, want %d", len(r.got), n)
		}
		return r.got
	case <-time.After(p.opts.Timeout):
		closeAndWait(t, c, done, p.opts.Timeout)
		t.Fatalf("%d datagrams did not arrive within %v", n, p.opts.Timeout)
		return nil
	}
}

// expectQuiet fails if a datagram is queued at c (TryReadBatch must say so
// at once, without waiting).
func expectQuiet(t *testing.T, c socket.Conn, why string) {
	t.Helper()
	msgs := []socket.Message{{Buf: make([]byte, 2048)}}
	n, err := c.TryReadBatch(msgs)
	if err != nil || n != 0 {
		t.Fatalf("%s: TryReadBatch = %d, %v; want 0, nil", why, n, err)
	}
}

// checkDatagrams compares received datagrams with the payloads sent from
// src, in order unless the options allow reordering.
func (p *pair) checkDatagrams(t *testing.T, got []datagram, want [][]byte, src netip.AddrPort) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("received %d datagrams, want %d", len(got), len(want))
	}
	for i, d := range got {
		if d.addr != src {
			t.Fatalf("datagram %d from %v, want %v", i, d.addr, src)
		}
	}
	if p.opts.Unordered {
		g := make([][]byte, len(got))
		for i, d := range got {
			g[i] = d.data
		}
		w := slices.Clone(want)
		slices.SortFunc(g, bytes.Compare)
		slices.SortFunc(w, bytes.Compare)
		for i := range g {
			if !bytes.Equal(g[i], w[i]) {
				t.Fatalf("received datagrams differ from those sent (sorted index %d: %d bytes vs %d)", i, len(g[i]), len(w[i]))
			}
		}
		return
	}
	for i, d := range got {
		if !bytes.Equal(d.data, want[i]) {
			t.Fatalf("datagram %d: got %d bytes %x…, want %d bytes %x…", i, len(d.data), head(d.data), len(want[i]), head(want[i]))
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 8)] }

// batch64Payloads are 64 datagrams in runs a GSO path can coalesce (equal
// sizes, a shorter last one) mixed with sizes that vary every datagram.
func batch64Payloads(seed byte) [][]byte {
	ps := make([][]byte, 64)
	for i := range ps {
		var size int
		switch {
		case i < 24:
			size = 1200
		case i < 39:
			size = 500
		case i == 39:
			size = 321
		default:
			size = 2 + (i*97)%1190
		}
		ps[i] = payload(seed, i, size)
	}
	return ps
}

func testRoundTrip(t *testing.T, p *pair) {
	ping := payload(1, 0, 100)
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), [][]byte{ping}))
	got := p.recvN(t, p.b, 1, 4, 2048)
	p.checkDatagrams(t, got, [][]byte{ping}, p.a.LocalAddr())

	// b replies to the address it saw, as a server does.
	pong := payload(2, 1, 200)
	writeAll(t, p.b, msgsTo(got[0].addr, [][]byte{pong}))
	back := p.recvN(t, p.a, 1, 4, 2048)
	p.checkDatagrams(t, back, [][]byte{pong}, p.b.LocalAddr())
}

func testBatch64(t *testing.T, p *pair) {
	want := batch64Payloads(3)
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), want))
	got := p.recvN(t, p.b, len(want), socket.IdealBatchSize, 2048)
	p.checkDatagrams(t, got, want, p.a.LocalAddr())
}

func testOneSlotReads(t *testing.T, p *pair) {
	want := batch64Payloads(4)
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), want))
	got := p.recvN(t, p.b, len(want), 1, 2048)
	p.checkDatagrams(t, got, want, p.a.LocalAddr())
}

func testLargeBatch(t *testing.T, p *pair) {
	want := make([][]byte, 100)
	for i := range want {
		want[i] = payload(5, i, 64+i%3)
	}
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), want))
	got := p.recvN(t, p.b, len(want), 100, 2048)
	p.checkDatagrams(t, got, want, p.a.LocalAddr())
}

// limitOf returns c's datagram limit.
func limitOf(c socket.Conn) int {
	if m, ok := c.(socket.MaxDatagramSizer); ok {
		return m.MaxDatagramSize()
	}
	return socket.MaxDatagramSize
}

func testTooLarge(t *testing.T, p *pair) {
	limit := limitOf(p.a)
	if limit < 1 || limit > socket.MaxDatagramSize {
		t.Fatalf("MaxDatagramSize() = %d, outside [1, %d]", limit, socket.MaxDatagramSize)
	}
	small, full := payload(6, 0, min(16, limit)), payload(6, 1, limit)
	msgs := msgsTo(p.b.LocalAddr(), [][]byte{small, full, payload(6, 2, limit+1), payload(6, 3, 8)})
	n, err := p.a.WriteBatch(msgs)
	if n != 2 || !errors.Is(err, socket.ErrTooLarge) {
		t.Fatalf("WriteBatch([small, limit %d, limit+1, small]) = %d, %v; want 2, an error wrapping socket.ErrTooLarge", limit, n, err)
	}
	requireNumbers(t, err, strconv.Itoa(limit+1), strconv.Itoa(limit))
	// The oversize message and the one after it were not sent: after the
	// first two, the next datagram to arrive is a marker sent now.
	marker := payload(7, 9, 5)
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), [][]byte{marker}))
	got := p.recvN(t, p.b, 3, 1, limit+1)
	p.checkDatagrams(t, got, [][]byte{small, full, marker}, p.a.LocalAddr())

	// An oversize first message sends nothing.
	n, err = p.a.WriteBatch(msgsTo(p.b.LocalAddr(), [][]byte{payload(6, 4, limit+1)}))
	if n != 0 || !errors.Is(err, socket.ErrTooLarge) {
		t.Fatalf("WriteBatch([limit+1]) = %d, %v; want 0, socket.ErrTooLarge", n, err)
	}
}

func testInvalidMessages(t *testing.T, p *pair) {
	dst := p.b.LocalAddr()
	good := payload(8, 0, 10)
	for _, bad := range []struct {
		name    string
		msg     socket.Message
		want    error
		numbers []string // the error message must say them
	}{
		{"N beyond len(Buf)", socket.Message{Buf: make([]byte, 37), N: 41, Addr: dst}, socket.ErrInvalidMessage, []string{"41", "37"}},
		{"negative N", socket.Message{Buf: make([]byte, 37), N: -3, Addr: dst}, socket.ErrInvalidMessage, []string{"-3", "37"}},
		{"zero Addr", socket.Message{Buf: make([]byte, 4), N: 4}, socket.ErrInvalidAddr, nil},
	} {
		msgs := append(msgsTo(dst, [][]byte{good}), bad.msg)
		n, err := p.a.WriteBatch(msgs)
		if n != 1 || !errors.Is(err, bad.want) {
			t.Fatalf("%s: WriteBatch([good, bad]) = %d, %v; want 1 and an error wrapping %v", bad.name, n, err, bad.want)
		}
		requireNumbers(t, err, bad.numbers...)
	}
	got := p.recvN(t, p.b, 3, 4, 64)
	p.checkDatagrams(t, got, [][]byte{good, good, good}, p.a.LocalAddr())
}

// requireNumbers fails unless err's message contains each of numbers (the
// size and the limit of a refused message), as decimal text.
func requireNumbers(t *testing.T, err error, numbers ...string) {
	t.Helper()
	for _, num := range numbers {
		if !strings.Contains(err.Error(), num) {
			t.Errorf("error %q does not say %s", err, num)
		}
	}
}

func testTruncation(t *testing.T, p *pair) {
	long, short := payload(9, 0, 100), payload(9, 1, 5)
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), [][]byte{long, short}))
	got := p.recvN(t, p.b, 2, 2, 10)
	p.checkDatagrams(t, got, [][]byte{long[:10], short}, p.a.LocalAddr())
}

func testZeroLength(t *testing.T, p *pair) {
	after := payload(10, 1, 30)
	msgs := []socket.Message{
		{Buf: make([]byte, 16), N: 0, Addr: p.b.LocalAddr()},
		{Buf: nil, N: 0, Addr: p.b.LocalAddr()},
		{Buf: slices.Clone(after), N: len(after), Addr: p.b.LocalAddr()},
	}
	writeAll(t, p.a, msgs)
	got := p.recvN(t, p.b, 3, 4, 64)
	p.checkDatagrams(t, got, [][]byte{{}, {}, after}, p.a.LocalAddr())
}

// within runs fn and fails if it does not return within the timeout
// (closing c to unblock it).
func (p *pair) within(t *testing.T, c socket.Conn, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(p.opts.Timeout):
		closeAndWait(t, c, done, p.opts.Timeout)
		t.Fatalf("%s did not return within %v", what, p.opts.Timeout)
	}
}

// closeAndWait closes c to unblock a goroutine stuck in one of its calls
// and waits, boundedly, for the goroutine to signal on done.
func closeAndWait[T any](t *testing.T, c socket.Conn, done <-chan T, timeout time.Duration) {
	t.Helper()
	c.Close()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Errorf("a call on the conn did not return within %v of Close", timeout)
	}
}

func testEmptyBatch(t *testing.T, p *pair) {
	var rn, tn, wn int
	var rerr, terr, werr error
	p.within(t, p.b, "ReadBatch(nil)", func() { rn, rerr = p.b.ReadBatch(nil) })
	p.within(t, p.b, "TryReadBatch(nil)", func() { tn, terr = p.b.TryReadBatch(nil) })
	p.within(t, p.a, "WriteBatch(nil)", func() { wn, werr = p.a.WriteBatch(nil) })
	if rn != 0 || rerr != nil || tn != 0 || terr != nil || wn != 0 || werr != nil {
		t.Fatalf("empty batches: ReadBatch %d, %v; TryReadBatch %d, %v; WriteBatch %d, %v; want 0, nil each",
			rn, rerr, tn, terr, wn, werr)
	}
}

func testTryReadIdle(t *testing.T, p *pair) {
	expectQuiet(t, p.b, "fresh conn")
	want := payload(11, 0, 50)
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), [][]byte{want}))
	msgs := make([]socket.Message, 4)
	for i := range msgs {
		msgs[i].Buf = make([]byte, 2048)
	}
	deadline := time.Now().Add(p.opts.Timeout)
	for {
		n, err := p.b.TryReadBatch(msgs)
		if err != nil {
			t.Fatalf("TryReadBatch: %v", err)
		}
		if n == 1 {
			p.checkDatagrams(t, []datagram{{msgs[0].Buf[:msgs[0].N], msgs[0].Addr}}, [][]byte{want}, p.a.LocalAddr())
			break
		}
		if n != 0 {
			t.Fatalf("TryReadBatch = %d after sending 1 datagram", n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("TryReadBatch found nothing within %v", p.opts.Timeout)
		}
		time.Sleep(time.Millisecond)
	}
	expectQuiet(t, p.b, "after draining")
}

// S-A4: the sender's buffers are the caller's again as soon as WriteBatch
// returns.
func testBufferReuseSend(t *testing.T, p *pair) {
	dst := p.b.LocalAddr()
	var want [][]byte

	// One buffer reused for 32 single-message batches.
	buf := make([]byte, 256)
	for i := range 32 {
		w := payload(12, i, 100+i)
		copy(buf, w)
		writeAll(t, p.a, []socket.Message{{Buf: buf, N: len(w), Addr: dst}})
		for j := range buf {
			buf[j] = 0xEE
		}
		want = append(want, w)
	}
	// A 48-message batch over one backing array, overwritten at once.
	backing := make([]byte, 48*300)
	msgs := make([]socket.Message, 48)
	for i := range msgs {
		w := payload(13, i, 300) // equal sizes: a GSO path coalesces them
		b := backing[i*300 : (i+1)*300]
		copy(b, w)
		msgs[i] = socket.Message{Buf: b, N: len(w), Addr: dst}
		want = append(want, w)
	}
	writeAll(t, p.a, msgs)
	for j := range backing {
		backing[j] = 0xDD
	}
	got := p.recvN(t, p.b, len(want), socket.IdealBatchSize, 2048)
	p.checkDatagrams(t, got, want, p.a.LocalAddr())
}

// S-A4: a reader's buffers are never written after ReadBatch returns.
func testBufferReuseRecv(t *testing.T, p *pair) {
	want := batch64Payloads(14)
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), want[:32]))

	// First read: whatever arrives first, into bufsA.
	var first []socket.Message
	p.within(t, p.b, "ReadBatch", func() {
		msgs := make([]socket.Message, 8)
		for i := range msgs {
			msgs[i].Buf = make([]byte, 2048)
		}
		n, err := p.b.ReadBatch(msgs)
		if err == nil {
			first = msgs[:n]
		}
	})
	if len(first) == 0 {
		t.Fatal("first ReadBatch returned nothing")
	}
	snap := make([][]byte, len(first))
	for i, m := range first {
		snap[i] = slices.Clone(m.Buf)
	}
	// Everything else goes through other buffers.
	writeAll(t, p.a, msgsTo(p.b.LocalAddr(), want[32:]))
	rest := p.recvN(t, p.b, len(want)-len(first), socket.IdealBatchSize, 2048)
	for i, m := range first {
		if !bytes.Equal(m.Buf, snap[i]) {
			t.Fatalf("buffer %d of the first ReadBatch changed after it returned", i)
		}
	}
	got := make([]datagram, 0, len(want))
	for _, m := range first {
		got = append(got, datagram{m.Buf[:m.N], m.Addr})
	}
	p.checkDatagrams(t, append(got, rest...), want, p.a.LocalAddr())
}

// One goroutine writes while another reads, on both conns: b echoes what
// it reads back to its source. The writer stays at most one window ahead
// of the echoes a has read, so no socket buffer has to hold more than
// window datagrams however the goroutines are scheduled.
func testConcurrentReadWrite(t *testing.T, p *pair) {
	const total, perBatch, window = 256, 16, 64
	var wg sync.WaitGroup
	echoErr := make(chan error, 1)
	wg.Add(1)
	go func() { // b: echo until closed
		defer wg.Done()
		msgs := make([]socket.Message, perBatch)
		for i := range msgs {
			msgs[i].Buf = make([]byte, 2048)
		}
		for {
			n, err := p.b.ReadBatch(msgs)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					echoErr <- err
				}
				return
			}
			if _, err := p.b.WriteBatch(msgs[:n]); err != nil {
				echoErr <- err
				return
			}
		}
	}()
	want := make([][]byte, total)
	for i := range want {
		want[i] = payload(15, i, 20+i%200)
	}
	var echoed atomic.Int64
	kick := make(chan struct{}, 1)
	stop := make(chan struct{})
	writeErr := make(chan error, 1)
	wg.Add(1)
	go func() { // a: writer
		defer wg.Done()
		for i := 0; i < total; i += perBatch {
			for int64(i+perBatch)-echoed.Load() > window {
				select {
				case <-kick:
				case <-stop:
					return
				}
			}
			msgs := msgsTo(p.b.LocalAddr(), want[i:i+perBatch])
			if n, err := p.a.WriteBatch(msgs); err != nil || n != len(msgs) {
				writeErr <- fmt.Errorf("WriteBatch = %d, %v", n, err)
				return
			}
		}
	}()
	got := p.recvNProgress(t, p.a, total, perBatch, 2048, func(n int) { // a: reader
		echoed.Store(int64(n))
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	close(stop)
	p.b.Close()
	waited := make(chan struct{})
	go func() {
		wg.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(p.opts.Timeout):
		t.Fatalf("echo or writer goroutine still blocked %v after Close", p.opts.Timeout)
	}
	select {
	case err := <-echoErr:
		t.Fatalf("echo: %v", err)
	case err := <-writeErr:
		t.Fatalf("writer: %v", err)
	default:
	}
	p.checkDatagrams(t, got, want, p.b.LocalAddr())
}

// call is one call expected to block, run through its methods so that
// untilBlocked can find it in the goroutine dump: "entered" says the
// method has started, so a frame no longer in the dump means it returned.
type call struct{ entered chan struct{} }

func newCall() *call { return &call{entered: make(chan struct{})} }

// read is a ReadBatch on an idle conn; it returns the error ReadBatch
// gave, or one saying it returned datagrams.
func (k *call) read(c socket.Conn) error {
	close(k.entered)
	msgs := []socket.Message{{Buf: make([]byte, 2048)}}
	n, err := c.ReadBatch(msgs)
	if err == nil {
		err = fmt.Errorf("ReadBatch returned %d datagrams on an idle conn", n)
	}
	return err
}

// wait is w.Wait(timeout).
func (k *call) wait(w socket.Waiter, timeout time.Duration) error {
	close(k.entered)
	return w.Wait(timeout)
}

// untilBlocked returns once the goroutine running k's method frame
// ("read" or "wait") is blocked — parked in a channel operation, a lock,
// the netpoller or a system call, whatever the implementation blocks in —
// or has returned; so a check acts on a blocked call without guessing how
// long blocking takes. It returns an error after timeout, and is safe
// from any goroutine.
func (k *call) untilBlocked(frame string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	select {
	case <-k.entered:
	case <-time.After(timeout):
		return fmt.Errorf("the call to %s did not start within %v", frame, timeout)
	}
	buf := make([]byte, 1<<20)
	for {
		found, blocked := blockedState(buf, "sockettest.(*call)."+frame)
		if !found || blocked {
			return nil // blocked, or it returned: the caller's checks see how
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still running, not blocked, after %v", frame, timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// blockedState reports whether a goroutine is running frame, and whether
// one that is is blocked, from a goroutine dump taken into buf.
func blockedState(buf []byte, frame string) (found, blocked bool) {
	n := runtime.Stack(buf, true)
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(g, module+frame+"(") {
			continue
		}
		found = true
		// "goroutine 7 [select]:", "[IO wait, 2 minutes]", "[sync.Cond.Wait]"…
		if !strings.Contains(header, "[running") && !strings.Contains(header, "[runnable") {
			return true, true
		}
	}
	return found, false
}

// module prefixes the functions of this package in a goroutine dump.
const module = "github.com/tickwire/tickwire/transport/socket/"

// isClosed reports whether err is the closed error of package socket: it
// wraps socket.ErrClosed, and through it net.ErrClosed.
func isClosed(err error) bool {
	return errors.Is(err, socket.ErrClosed) && errors.Is(err, net.ErrClosed)
}

func testCloseUnblocksRead(t *testing.T, p *pair) {
	k := newCall()
	done := make(chan error, 1)
	go func() { done <- k.read(p.b) }()
	if err := k.untilBlocked("read", p.opts.Timeout); err != nil {
		t.Fatal(err)
	}
	if err := p.b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !isClosed(err) {
			t.Fatalf("blocked ReadBatch returned %v; want an error wrapping socket.ErrClosed and net.ErrClosed", err)
		}
	case <-time.After(p.opts.Timeout):
		t.Fatalf("blocked ReadBatch did not return within %v of Close", p.opts.Timeout)
	}
}

func testClosedCalls(t *testing.T, p *pair) {
	if err := p.a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	msgs := []socket.Message{{Buf: make([]byte, 64), N: 8, Addr: p.b.LocalAddr()}}
	const want = "an error wrapping socket.ErrClosed and net.ErrClosed"
	p.within(t, p.a, "ReadBatch after Close", func() {
		if n, err := p.a.ReadBatch(msgs); n != 0 || !isClosed(err) {
			t.Errorf("ReadBatch after Close = %d, %v; want 0, %s", n, err, want)
		}
	})
	if n, err := p.a.TryReadBatch(msgs); n != 0 || !isClosed(err) {
		t.Errorf("TryReadBatch after Close = %d, %v; want 0, %s", n, err, want)
	}
	msgs[0].N = 8
	if n, err := p.a.WriteBatch(msgs); n != 0 || !isClosed(err) {
		t.Errorf("WriteBatch after Close = %d, %v; want 0, %s", n, err, want)
	}
	if w, ok := p.a.(socket.Waiter); ok {
		p.within(t, p.a, "Wait after Close", func() {
			if err := w.Wait(p.opts.Timeout); !isClosed(err) {
				t.Errorf("Wait after Close = %v; want %s", err, want)
			}
		})
		w.Wake() // harmless after Close
	}
	if err := p.a.Close(); err != nil && !isClosed(err) {
		t.Errorf("second Close = %v; want nil or %s", err, want)
	}
}

// waiterPair returns the conn of p that is a socket.Waiter (b if both
// are) and the other one, which sends to it.
func waiterPair(t *testing.T, p *pair) (socket.Waiter, socket.Conn, socket.Conn) {
	t.Helper()
	if w, ok := p.b.(socket.Waiter); ok {
		return w, p.b, p.a
	}
	if w, ok := p.a.(socket.Waiter); ok {
		return w, p.a, p.b
	}
	t.Fatal("neither conn of this pair is a socket.Waiter, though the probe pair had one")
	return nil, nil, nil
}

// waitReturns runs w.Wait(long) as k and fails unless it returns nil
// within the suite's timeout (closing c to unblock it otherwise). long is
// longer than the suite's timeout, so only the event under test can end
// it.
func (p *pair) waitReturns(t *testing.T, w socket.Waiter, c socket.Conn, k *call, what string) {
	t.Helper()
	var err error
	p.within(t, c, what, func() { err = k.wait(w, 2*p.opts.Timeout) })
	if err != nil {
		t.Fatalf("%s: Wait = %v, want nil", what, err)
	}
}

// WaitWake: a Wake made before Wait makes it return at once; one made
// from another goroutine ends a blocked Wait; Wait(0) and a short timeout
// return by themselves.
func testWaitWake(t *testing.T, p *pair) {
	w, c, _ := waiterPair(t, p)
	w.Wake()
	p.waitReturns(t, w, c, newCall(), "Wait after Wake")
	woken := make(chan error, 1)
	k := newCall()
	go func() {
		// Wake once the Wait is blocked (a Wake before it would be kept
		// for it, and test that case again).
		err := k.untilBlocked("wait", p.opts.Timeout)
		w.Wake()
		woken <- err
	}()
	p.waitReturns(t, w, c, k, "Wait ended by Wake from another goroutine")
	if err := <-woken; err != nil {
		t.Fatal(err)
	}
	p.within(t, c, "Wait(0)", func() {
		if err := w.Wait(0); err != nil {
			t.Errorf("Wait(0) = %v", err)
		}
	})
	p.within(t, c, "Wait(5ms)", func() {
		if err := w.Wait(5 * time.Millisecond); err != nil {
			t.Errorf("Wait(5ms) = %v", err)
		}
	})
}

// WaitData: a datagram that is queued, or arrives while Wait blocks, ends
// the Wait (unless Options.WaitIgnoresData), and is then readable.
func testWaitData(t *testing.T, p *pair) {
	w, c, sender := waiterPair(t, p)
	if p.opts.WaitIgnoresData {
		writeAll(t, sender, msgsTo(c.LocalAddr(), [][]byte{payload(20, 0, 40)}))
		p.within(t, c, "Wait(10ms) with a datagram queued", func() {
			if err := w.Wait(10 * time.Millisecond); err != nil {
				t.Errorf("Wait = %v", err)
			}
		})
		p.recvN(t, c, 1, 1, 2048)
		return
	}
	// Queued before Wait: the datagram is read after the Wait, so Wait
	// must not have consumed it.
	first := payload(20, 0, 40)
	writeAll(t, sender, msgsTo(c.LocalAddr(), [][]byte{first}))
	p.waitReturns(t, w, c, newCall(), "Wait with a datagram sent")
	got := p.recvN(t, c, 1, 1, 2048)
	p.checkDatagrams(t, got, [][]byte{first}, sender.LocalAddr())

	// Arriving during the Wait.
	second := payload(20, 1, 60)
	sent := make(chan error, 1)
	k := newCall()
	go func() {
		// Send once the Wait is blocked.
		err := k.untilBlocked("wait", p.opts.Timeout)
		if n, werr := sender.WriteBatch(msgsTo(c.LocalAddr(), [][]byte{second})); n != 1 || werr != nil {
			err = fmt.Errorf("WriteBatch = %d, %v", n, werr)
		}
		sent <- err
	}()
	p.waitReturns(t, w, c, k, "Wait for an arriving datagram")
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	got = p.recvN(t, c, 1, 1, 2048)
	p.checkDatagrams(t, got, [][]byte{second}, sender.LocalAddr())
}

// WaitClosed: Close ends a blocked Wait with the closed error, and later
// Waits return it at once.
func testWaitClosed(t *testing.T, p *pair) {
	w, c, _ := waiterPair(t, p)
	done := make(chan error, 1)
	k := newCall()
	go func() { done <- k.wait(w, 2*p.opts.Timeout) }()
	if err := k.untilBlocked("wait", p.opts.Timeout); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !isClosed(err) {
			t.Fatalf("Wait ended by Close = %v; want an error wrapping socket.ErrClosed and net.ErrClosed", err)
		}
	case <-time.After(p.opts.Timeout):
		t.Fatalf("a blocked Wait did not return within %v of Close", p.opts.Timeout)
	}
	if err := w.Wait(time.Millisecond); !isClosed(err) {
		t.Fatalf("Wait after Close = %v; want the closed error", err)
	}
}
