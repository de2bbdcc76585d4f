package udp_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// fill returns a deterministic payload for datagram i to destination d.
func fill(d, i, size int) []byte {
	p := make([]byte, size)
	for j := range p {
		p[j] = byte(d*61 + i*13 + j*3)
	}
	return p
}

// expect reads from c until len(want) datagrams arrived (slots per
// ReadBatch, bufSize bytes each), checking each against want[i] cut to
// bufSize and the source address.
func expect(t *testing.T, c *udp.Conn, src netip.AddrPort, want [][]byte, slots, bufSize int) {
	t.Helper()
	msgs := make([]socket.Message, slots)
	for i := range msgs {
		msgs[i].Buf = make([]byte, bufSize)
	}
	deadline := time.Now().Add(5 * time.Second)
	got := 0
	for got < len(want) {
		n, err := c.TryReadBatch(msgs)
		if err != nil {
			t.Fatalf("TryReadBatch: %v", err)
		}
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%v: %d of %d datagrams arrived", c.LocalAddr(), got, len(want))
			}
			time.Sleep(time.Millisecond)
			continue
		}
		for _, m := range msgs[:n] {
			if got == len(want) {
				t.Fatalf("%v: more than %d datagrams arrived", c.LocalAddr(), len(want))
			}
			w := want[got]
			w = w[:min(len(w), bufSize)]
			if m.Addr != src || !bytes.Equal(m.Buf[:m.N], w) {
				t.Fatalf("%v: datagram %d: %d bytes from %v, want %d bytes from %v (bytes equal: %v)",
					c.LocalAddr(), got, m.N, m.Addr, len(w), src, bytes.Equal(m.Buf[:m.N], w))
			}
			got++
		}
	}
}

// mixedBatch is a batch to two destinations exercising every GSO
// grouping rule: runs of equal sizes, a shorter last segment, a larger
// datagram ending a run, interleaved destinations, zero-length datagrams,
// a run longer than 64 segments and a run longer than 64 KiB.
func mixedBatch(b, c netip.AddrPort) (msgs []socket.Message, toB, toC [][]byte) {
	type run struct {
		to    int // 0 → b, 1 → c
		size  int
		count int
	}
	runs := []run{
		{0, 1200, 5}, {0, 700, 1}, // run with a shorter last
		{1, 1200, 3}, {0, 1200, 2}, // interleaved destinations
		{1, 100, 1}, {0, 0, 1}, {0, 1200, 1}, // zero-length breaks a run
		{0, 1000, 2}, {0, 1100, 1}, {0, 1000, 2}, // a larger one cannot join
		{1, 64, 70},   // beyond 64 segments
		{0, 1400, 60}, // beyond 64 KiB
		{1, 1, 3},     // one-byte segments
	}
	counts := [2]int{}
	for _, r := range runs {
		for range r.count {
			p := fill(r.to, counts[r.to], r.size)
			counts[r.to]++
			dst := b
			if r.to == 0 {
				toB = append(toB, p)
			} else {
				dst = c
				toC = append(toC, p)
			}
			msgs = append(msgs, socket.Message{Buf: p, N: len(p), Addr: dst})
		}
	}
	return msgs, toB, toC
}

// TestGSOSplitsAtReceiver sends a mixed batch from a GSO socket to two
// receivers, one with GRO and one without, and checks every datagram
// arrives whole, in order, at the right one. Where the kernel lacks GSO the
// same batch must arrive through the fallback, with no GSO sends counted.
func TestGSOSplitsAtReceiver(t *testing.T) {
	for _, gro := range []bool{true, false} {
		t.Run(fmt.Sprintf("GRO=%v", gro), func(t *testing.T) {
			a := open(t, lo4, udp.Config{SendBuffer: 1 << 20})
			rcfg := udp.Config{DisableGRO: !gro, RecvBuffer: 1 << 20}
			b, c := open(t, lo4, rcfg), open(t, lo4, rcfg)
			msgs, toB, toC := mixedBatch(b.LocalAddr(), c.LocalAddr())
			n, err := a.WriteBatch(msgs)
			if n != len(msgs) || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(msgs))
			}
			expect(t, b, a.LocalAddr(), toB, socket.IdealBatchSize, 2048)
			expect(t, c, a.LocalAddr(), toC, socket.IdealBatchSize, 2048)

			s := a.Stats()
			t.Logf("kernel GSO %v; sender %+v", s.GSO, s)
			t.Logf("receiver b: %+v", b.Stats())
			if s.DatagramsOut != uint64(len(msgs)) {
				t.Fatalf("DatagramsOut = %d, want %d", s.DatagramsOut, len(msgs))
			}
			if s.GSO {
				// Ten groups coalesce: eight runs, the 64-byte run and
				// the 1400-byte run split in two each by the segment and
				// size caps.
				if s.GSOSends != 10 {
					t.Fatalf("GSO live but %d GSO sends, want 10", s.GSOSends)
				}
			} else if s.GSOSends != 0 {
				t.Fatalf("GSO off but %d GSO sends counted", s.GSOSends)
			}
			bs := b.Stats()
			if gro && bs.GRO && s.GSO && bs.GROReceives == 0 {
				t.Fatalf("GRO and GSO live but no coalesced receive counted: %+v", bs)
			}
			if !gro && bs.GROReceives != 0 {
				t.Fatalf("GRO disabled but %d coalesced receives counted", bs.GROReceives)
			}
		})
	}
}

// TestGROCarryover: a coalesced receive holds more datagrams than the
// reader offers slots, and segments longer than the reader's buffers. The
// socket hands them out over several reads, each cut and counted.
func TestGROCarryover(t *testing.T) {
	a := open(t, lo4, udp.Config{})
	b := open(t, lo4, udp.Config{RecvBuffer: 1 << 20})
	if !a.Features().GSO || !b.Features().GRO {
		t.Skipf("kernel without GSO (%v) or GRO (%v): no coalesced receives to split; the plain receive is tested everywhere",
			a.Features().GSO, b.Features().GRO)
	}
	const count, size, room = 40, 1000, 600
	want := make([][]byte, count)
	msgs := make([]socket.Message, count)
	for i := range msgs {
		want[i] = fill(0, i, size)
		msgs[i] = socket.Message{Buf: want[i], N: size, Addr: b.LocalAddr()}
	}
	if n, err := a.WriteBatch(msgs); n != count || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	expect(t, b, a.LocalAddr(), want, 3, room)
	s := b.Stats()
	if s.GROReceives == 0 || s.Truncated != count || s.DatagramsIn != count || s.BytesIn != count*room {
		t.Fatalf("receiver stats %+v: want ≥1 coalesced receive, %d truncated and in, %d bytes", s, count, count*room)
	}
	// Fewer syscalls than reads: most reads were served from the arena.
	if s.RecvSyscalls >= count/3 {
		t.Fatalf("%d receive syscalls for %d datagrams read 3 at a time", s.RecvSyscalls, count)
	}
}
