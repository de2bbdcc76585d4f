package simlink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

const ms = time.Millisecond

// addr returns the virtual address 127.0.0.host:port.
func addr(host byte, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, host}), port)
}

func listen(t testing.TB, n *Network, a netip.AddrPort) *Conn {
	t.Helper()
	c, err := n.Listen(a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pair returns a network with the given default link and two endpoints,
// 127.0.0.1:1000 and 127.0.0.2:2000.
func pair(t testing.TB, seed uint64, cfg LinkConfig) (*Network, *Conn, *Conn) {
	t.Helper()
	n := New(seed)
	if err := n.SetDefaultLink(cfg); err != nil {
		t.Fatal(err)
	}
	return n, listen(t, n, addr(1, 1000)), listen(t, n, addr(2, 2000))
}

// sendSeq sends one datagram carrying seq (8 bytes, little-endian) padded to
// size bytes.
func sendSeq(t testing.TB, c *Conn, dst netip.AddrPort, seq uint64, size int) {
	t.Helper()
	buf := make([]byte, size)
	binary.LittleEndian.PutUint64(buf, seq)
	if _, err := c.WriteBatch([]socket.Message{{Buf: buf, N: size, Addr: dst}}); err != nil {
		t.Fatal(err)
	}
}

// received is one datagram read by a test.
type received struct {
	at   time.Duration
	from netip.AddrPort
	data string
}

// readBufs is the batch readAll reads into, allocated once (tests that
// read run one at a time; the mutex keeps that honest).
var readBufs = struct {
	sync.Mutex
	msgs []socket.Message
}{msgs: make([]socket.Message, socket.IdealBatchSize)}

func init() {
	for i := range readBufs.msgs {
		readBufs.msgs[i].Buf = make([]byte, socket.MaxDatagramSize)
	}
}

// readAll drains every due datagram from c with TryReadBatch.
func readAll(t testing.TB, n *Network, c *Conn) []received {
	t.Helper()
	readBufs.Lock()
	defer readBufs.Unlock()
	var out []received
	msgs := readBufs.msgs
	for {
		k, err := c.TryReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:k] {
			out = append(out, received{n.Now(), m.Addr, string(m.Buf[:m.N])})
		}
		if k < len(msgs) {
			return out
		}
	}
}

func seqOf(r received) uint64 { return binary.LittleEndian.Uint64([]byte(r.data)) }

// scenarioLog runs a two-way exchange over an impaired link (every knob on)
// and returns the full log: every trace event and every datagram read, with
// its time, source and bytes.
func scenarioLog(t *testing.T, seed uint64) []string {
	n, a, b := pair(t, seed, LinkConfig{
		Delay: 30 * ms, Jitter: 10 * ms, Loss: 0.1, BurstLen: 2,
		Duplicate: 0.1, Bandwidth: 200_000, QueueLimit: 8000,
	})
	var log []string
	n.SetTrace(func(e Event) { log = append(log, e.String()) })
	seq := uint64(0)
	n.RunTicks(ms, 2000, func(now time.Duration) bool {
		for i := range 1 + int(now/ms)%3 {
			seq++
			sendSeq(t, a, b.LocalAddr(), seq, 100+i*300)
			sendSeq(t, b, a.LocalAddr(), seq<<32, 60)
		}
		for _, c := range []*Conn{a, b} {
			for _, r := range readAll(t, n, c) {
				log = append(log, fmt.Sprintf("%v read %v<-%v %x", r.at, c.LocalAddr(), r.from, r.data))
			}
		}
		return true
	})
	n.Drain()
	return log
}

// TestDeterminism is S-A1: the same seed and the same calls give an
// identical log of sends, drops and deliveries (and identical bytes read)
// on two runs; a different seed gives a different log.
func TestDeterminism(t *testing.T) {
	first, second := scenarioLog(t, 42), scenarioLog(t, 42)
	if len(first) < 1000 {
		t.Fatalf("log too short to mean anything: %d entries", len(first))
	}
	if !slices.Equal(first, second) {
		for i := range min(len(first), len(second)) {
			if first[i] != second[i] {
				t.Fatalf("same seed, logs differ at entry %d:\n%s\n%s", i, first[i], second[i])
			}
		}
		t.Fatalf("same seed, logs of %d and %d entries", len(first), len(second))
	}
	if other := scenarioLog(t, 43); slices.Equal(first, other) {
		t.Fatal("different seeds, identical logs")
	}
	// The log exercised every impairment.
	joined := fmt.Sprint(first)
	for _, want := range []string{"burst-loss", "queue", " dup", "deliver", "read"} {
		if !bytes.Contains([]byte(joined), []byte(want)) {
			t.Errorf("log has no %q entry", want)
		}
	}
}

// TestLinkSeedsIndependent: a link's decisions depend on the seed and its
// own addresses, not on which other links exist or carried traffic first.
func TestLinkSeedsIndependent(t *testing.T) {
	cfg := LinkConfig{Delay: 10 * ms, Jitter: 5 * ms, Loss: 0.3}
	run := func(withOther bool) []uint64 {
		n, a, b := pair(t, 9, cfg)
		if withOther {
			c := listen(t, n, addr(3, 3000))
			for i := range 500 {
				sendSeq(t, c, b.LocalAddr(), uint64(i), 50)
			}
		}
		for i := range 500 {
			sendSeq(t, a, b.LocalAddr(), uint64(i), 50)
		}
		n.Drain()
		var out []uint64
		for _, r := range readAll(t, n, b) {
			if r.from == a.LocalAddr() {
				out = append(out, seqOf(r))
			}
		}
		return out
	}
	if x, y := run(false), run(true); !slices.Equal(x, y) {
		t.Fatal("traffic on another link changed this link's decisions")
	}
}

// TestNoReorderWithoutJitter is S-A2: with jitter 0 the link is FIFO, over
// 10,000 datagrams sent at irregular times, with loss and a bandwidth cap.
func TestNoReorderWithoutJitter(t *testing.T) {
	for _, cfg := range []LinkConfig{
		{Delay: 30 * ms},
		{Delay: 30 * ms, Loss: 0.05},
		{Delay: 5 * ms, Bandwidth: 500_000, Loss: 0.1, BurstLen: 3},
	} {
		n, a, b := pair(t, 1, cfg)
		var got []uint64
		seq := uint64(0)
		for tick := 0; seq < 10_000; tick++ {
			for range min(uint64(tick%4), 10_000-seq) { // 0 to 3 datagrams per tick
				sendSeq(t, a, b.LocalAddr(), seq, 200)
				seq++
			}
			n.Advance(time.Duration(1+tick%3) * ms / 2)
			for _, r := range readAll(t, n, b) {
				got = append(got, seqOf(r))
			}
		}
		n.Drain()
		for _, r := range readAll(t, n, b) {
			got = append(got, seqOf(r))
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("%+v: seq %d delivered after %d", cfg, got[i], got[i-1])
			}
		}
		if cfg.Loss == 0 && len(got) != 10_000 {
			t.Fatalf("%+v: %d of 10000 delivered on a lossless link", cfg, len(got))
		}
	}
}

// TestJitterReorders is S-A2: jitter > 0 reorders, and the reordering is
// the same on every run with the same seed.
func TestJitterReorders(t *testing.T) {
	run := func() ([]uint64, int) {
		n, a, b := pair(t, 77, LinkConfig{Delay: 30 * ms, Jitter: 10 * ms})
		var got []uint64
		for i := range 2000 {
			sendSeq(t, a, b.LocalAddr(), uint64(i), 64)
			n.Advance(ms)
			for _, r := range readAll(t, n, b) {
				got = append(got, seqOf(r))
			}
		}
		n.Drain()
		for _, r := range readAll(t, n, b) {
			got = append(got, seqOf(r))
		}
		inversions := 0
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				inversions++
			}
		}
		return got, inversions
	}
	order1, inv1 := run()
	order2, inv2 := run()
	if len(order1) != 2000 {
		t.Fatalf("%d of 2000 delivered on a lossless link", len(order1))
	}
	if inv1 == 0 {
		t.Fatal("jitter of ±10 ms at 1 ms spacing never reordered")
	}
	if inv1 != inv2 || !slices.Equal(order1, order2) {
		t.Fatalf("reordering differs between runs with the same seed (%d vs %d inversions)", inv1, inv2)
	}
	sorted := slices.Sorted(slices.Values(order1))
	for i, s := range sorted {
		if s != uint64(i) {
			t.Fatalf("datagram %d lost or duplicated on a clean link", i)
		}
	}
}

// TestDuplication is S-A2: duplication delivers the same bytes twice, each
// copy with its own jitter.
func TestDuplication(t *testing.T) {
	n, a, b := pair(t, 5, LinkConfig{Delay: 20 * ms, Jitter: 5 * ms, Duplicate: 1})
	payloads := map[string]int{}
	for i := range 500 {
		buf := make([]byte, 2+i%300)
		for j := range buf {
			buf[j] = byte(i*31 + j)
		}
		binary.LittleEndian.PutUint16(buf, uint16(i))
		payloads[string(buf)] = 0
		if _, err := a.WriteBatch([]socket.Message{{Buf: buf, N: len(buf), Addr: b.LocalAddr()}}); err != nil {
			t.Fatal(err)
		}
	}
	var deliveries []Event
	n.SetTrace(func(e Event) { deliveries = append(deliveries, e) })
	n.Drain()
	for _, r := range readAll(t, n, b) {
		if _, ok := payloads[r.data]; !ok {
			t.Fatalf("delivered bytes %x were never sent", r.data)
		}
		payloads[r.data]++
	}
	for p, k := range payloads {
		if k != 2 {
			t.Fatalf("payload %x delivered %d times, want 2", p[:2], k)
		}
	}
	apart := 0
	at := map[uint64]time.Duration{}
	for _, e := range deliveries {
		if prev, ok := at[e.ID]; ok && prev != e.At {
			apart++
		}
		at[e.ID] = e.At
	}
	if apart == 0 {
		t.Fatal("duplicates never drew their own jitter")
	}
	if s := n.LinkStats(a.LocalAddr(), b.LocalAddr()); s.Duplicated != 500 || s.Delivered != 1000 {
		t.Fatalf("link stats %+v", s)
	}

	// At 10 % the rate is measured within ±1 %.
	n, a, b = pair(t, 6, LinkConfig{Duplicate: 0.1})
	for i := range 100_000 {
		sendSeq(t, a, b.LocalAddr(), uint64(i), 8)
		if i%1000 == 999 {
			readAll(t, n, b)
		}
	}
	s := n.LinkStats(a.LocalAddr(), b.LocalAddr())
	if rate := float64(s.Duplicated) / float64(s.Sent); math.Abs(rate-0.1) > 0.01 {
		t.Fatalf("duplicate rate %.4f, want 0.10 ± 0.01", rate)
	}
	if cs := b.Stats(); cs.Received != s.Delivered {
		t.Fatalf("endpoint received %d, link delivered %d", cs.Received, s.Delivered)
	}
}

// TestBurstLossFromDeliveryLog is S-A3 end to end: the loss runs derived
// from the sequence numbers that arrive match the configured Loss (±1 %
// absolute) and BurstLen (±10 %) over 200,000 datagrams, and agree with the
// link's counters.
func TestBurstLossFromDeliveryLog(t *testing.T) {
	const total = 200_000
	cfg := LinkConfig{Delay: 10 * ms, Loss: 0.1, BurstLen: 3}
	n, a, b := pair(t, 31, cfg)
	var got []uint64
	for i := range total {
		sendSeq(t, a, b.LocalAddr(), uint64(i), 16)
		if i%100 == 99 {
			n.Advance(ms)
			for _, r := range readAll(t, n, b) {
				got = append(got, seqOf(r))
			}
		}
	}
	n.Drain()
	for _, r := range readAll(t, n, b) {
		got = append(got, seqOf(r))
	}
	lost, runs := 0, 0
	next := uint64(0)
	for _, s := range got {
		if s < next {
			t.Fatalf("seq %d out of order on a jitter-free link", s)
		}
		if gap := int(s - next); gap > 0 {
			lost += gap
			runs++
		}
		next = s + 1
	}
	if gap := int(total - next); gap > 0 {
		lost += gap
		runs++
	}
	rate, mean := float64(lost)/total, float64(lost)/float64(runs)
	t.Logf("from the delivery log: loss %.4f, mean run %.3f", rate, mean)
	if math.Abs(rate-cfg.Loss) > 0.01 || math.Abs(mean-cfg.BurstLen) > 0.1*cfg.BurstLen {
		t.Fatalf("loss %.4f, mean run %.3f; want %.2f ± 0.01 and %.1f ± 10 %%", rate, mean, cfg.Loss, cfg.BurstLen)
	}
	s := n.LinkStats(a.LocalAddr(), b.LocalAddr())
	if s.BurstLoss != uint64(lost) || s.LossRuns != uint64(runs) {
		t.Fatalf("counters %+v; log shows %d lost in %d runs", s, lost, runs)
	}
}

// TestIndependentLossNetwork: the Network's loss rate is within ±1 % of
// the setting over 100,000 datagrams.
func TestIndependentLossNetwork(t *testing.T) {
	n, a, b := pair(t, 8, LinkConfig{Loss: 0.15})
	for i := range 100_000 {
		sendSeq(t, a, b.LocalAddr(), uint64(i), 8)
		if i%1000 == 999 {
			readAll(t, n, b)
		}
	}
	readAll(t, n, b)
	rate := 1 - float64(b.Stats().Received)/100_000
	if math.Abs(rate-0.15) > 0.01 {
		t.Fatalf("loss rate %.4f, want 0.15 ± 0.01", rate)
	}
	if s := n.LinkStats(a.LocalAddr(), b.LocalAddr()); s.RandomLoss+b.Stats().Received != 100_000 {
		t.Fatalf("link stats %+v do not add up with %d received", s, b.Stats().Received)
	}
}

// TestBufferOwnership is S-A4: overwriting the caller's buffers right after
// WriteBatch never changes the bytes delivered; reading keeps no reference
// to the reader's buffers either.
func TestBufferOwnership(t *testing.T) {
	for _, cfg := range []LinkConfig{{}, {Delay: 15 * ms, Jitter: 5 * ms, Duplicate: 0.5}} {
		n, a, b := pair(t, 3, cfg)
		msgs := make([]socket.Message, socket.IdealBatchSize)
		var want []string
		for i := range msgs {
			buf := bytes.Repeat([]byte{byte(i)}, 100+i)
			msgs[i] = socket.Message{Buf: buf, N: len(buf), Addr: b.LocalAddr()}
			want = append(want, string(buf))
		}
		if k, err := a.WriteBatch(msgs); k != len(msgs) || err != nil {
			t.Fatalf("WriteBatch: %d, %v", k, err)
		}
		for i := range msgs {
			for j := range msgs[i].Buf {
				msgs[i].Buf[j] = 0xff
			}
		}
		n.Drain()
		rd := make([]socket.Message, 2*socket.IdealBatchSize)
		for i := range rd {
			rd[i].Buf = make([]byte, socket.MaxDatagramSize)
		}
		k, err := b.TryReadBatch(rd)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, m := range rd[:k] {
			got[string(m.Buf[:m.N])] = true
			clear(m.Buf) // the network must not see this
		}
		for i, w := range want {
			if !got[w] {
				t.Fatalf("%+v: message %d delivered altered or not at all", cfg, i)
			}
		}
		// Recycled buffers carry fresh bytes on the next round.
		sendSeq(t, a, b.LocalAddr(), 0xabcdef, 100)
		n.Drain()
		if r := readAll(t, n, b); len(r) == 0 || seqOf(r[0]) != 0xabcdef {
			t.Fatalf("%+v: second round read %v", cfg, r)
		}
	}
}

// TestBandwidthDeliveryTimes: on a capped link delivery times follow the
// serialisation delay, and queue-limit drops are counted.
func TestBandwidthDeliveryTimes(t *testing.T) {
	n, a, b := pair(t, 1, LinkConfig{Delay: 10 * ms, Bandwidth: 1_000_000, QueueLimit: 5000})
	msgs := make([]socket.Message, 8)
	for i := range msgs {
		buf := make([]byte, 1000)
		buf[0] = byte(i)
		msgs[i] = socket.Message{Buf: buf, N: 1000, Addr: b.LocalAddr()}
	}
	if k, err := a.WriteBatch(msgs); k != 8 || err != nil {
		t.Fatalf("WriteBatch: %d, %v", k, err)
	}
	// 1000 bytes at 1 MB/s = 1 ms each; 5 fit in the queue, 3 are dropped.
	for i := range 5 {
		due, ok := n.NextDue()
		if want := time.Duration(11+i) * ms; !ok || due != want {
			t.Fatalf("datagram %d due at %v (%v), want %v", i, due, ok, want)
		}
		n.AdvanceTo(due - 1)
		if r := readAll(t, n, b); len(r) != 0 {
			t.Fatalf("datagram %d readable before it is due", i)
		}
		n.AdvanceTo(due)
		r := readAll(t, n, b)
		if len(r) != 1 || r[0].data[0] != byte(i) || r[0].at != due {
			t.Fatalf("at %v read %v, want datagram %d", due, r, i)
		}
	}
	if _, ok := n.NextDue(); ok {
		t.Fatal("datagrams in flight after the queue drained")
	}
	s := n.LinkStats(a.LocalAddr(), b.LocalAddr())
	if s.QueueDrops != 3 || s.Delivered != 5 || s.MaxBacklog != 5000 {
		t.Fatalf("link stats %+v: want 3 queue drops, 5 delivered, max backlog 5000", s)
	}
	// The reverse direction is a separate link: untouched.
	if s := n.LinkStats(b.LocalAddr(), a.LocalAddr()); s.Sent != 0 {
		t.Fatalf("reverse link stats %+v", s)
	}
}

// TestOversize: a datagram above the MTU fails WriteBatch with
// socket.ErrTooLarge; the messages before it were sent.
func TestOversize(t *testing.T) {
	n, a, b := pair(t, 1, LinkConfig{})
	big := make([]byte, DefaultMTU+1)
	msgs := []socket.Message{
		{Buf: big, N: DefaultMTU, Addr: b.LocalAddr()},
		{Buf: big, N: DefaultMTU + 1, Addr: b.LocalAddr()},
		{Buf: big, N: 1, Addr: b.LocalAddr()},
	}
	k, err := a.WriteBatch(msgs)
	if k != 1 || !errors.Is(err, socket.ErrTooLarge) {
		t.Fatalf("WriteBatch: %d, %v; want 1 and socket.ErrTooLarge", k, err)
	}
	if r := readAll(t, n, b); len(r) != 1 || len(r[0].data) != DefaultMTU {
		t.Fatalf("read %d datagrams", len(r))
	}
	if s := a.Stats(); s.TooLarge != 1 || s.Sent != 1 {
		t.Fatalf("endpoint stats %+v", s)
	}

	// A per-link MTU applies to that direction only, and also to a
	// destination that is not bound yet.
	c := addr(3, 3000)
	if err := n.SetLink(a.LocalAddr(), c, LinkConfig{MTU: 576}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteBatch([]socket.Message{{Buf: big, N: 577, Addr: c}}); !errors.Is(err, socket.ErrTooLarge) {
		t.Fatalf("577 bytes on a 576-byte link: %v", err)
	}
	if _, err := a.WriteBatch([]socket.Message{{Buf: big, N: 577, Addr: b.LocalAddr()}}); err != nil {
		t.Fatalf("577 bytes on the default link: %v", err)
	}
	if got := n.Link(a.LocalAddr(), c).MTU; got != 576 {
		t.Fatalf("Link().MTU = %d", got)
	}
	if got := n.Link(a.LocalAddr(), addr(9, 9)).MTU; got != DefaultMTU {
		t.Fatalf("default Link().MTU = %d", got)
	}
	if got := a.MaxDatagramSize(); got != DefaultMTU {
		t.Fatalf("MaxDatagramSize() = %d, want %d", got, DefaultMTU)
	}
	if err := n.SetDefaultLink(LinkConfig{MTU: 1200}); err != nil {
		t.Fatal(err)
	}
	if got := a.MaxDatagramSize(); got != 1200 {
		t.Fatalf("MaxDatagramSize() = %d after SetDefaultLink(MTU 1200)", got)
	}
}

// TestInvalidMessages: malformed messages are refused with an error and
// nothing after them is sent.
func TestInvalidMessages(t *testing.T) {
	n, a, b := pair(t, 1, LinkConfig{})
	buf := make([]byte, 10)
	for _, tc := range []struct {
		msg  socket.Message
		kind error
	}{
		{socket.Message{Buf: buf, N: 11, Addr: b.LocalAddr()}, socket.ErrInvalidMessage},
		{socket.Message{Buf: buf, N: -1, Addr: b.LocalAddr()}, socket.ErrInvalidMessage},
		{socket.Message{Buf: buf, N: 1}, socket.ErrInvalidAddr},
		{socket.Message{Buf: buf, N: 1, Addr: netip.MustParseAddrPort("0.0.0.0:1")}, socket.ErrInvalidAddr},
		{socket.Message{Buf: buf, N: 1, Addr: addr(2, 0)}, socket.ErrInvalidAddr},
	} {
		k, err := a.WriteBatch([]socket.Message{tc.msg, {Buf: buf, N: 1, Addr: b.LocalAddr()}})
		if k != 0 || !errors.Is(err, tc.kind) {
			t.Errorf("%+v: %d, %v; want 0 and %v", tc.msg, k, err, tc.kind)
		}
	}
	if s := n.Stats(); s.Sent != 0 {
		t.Fatalf("network stats %+v after refused messages", s)
	}
	// An empty datagram is valid.
	if k, err := a.WriteBatch([]socket.Message{{Addr: b.LocalAddr()}}); k != 1 || err != nil {
		t.Fatalf("empty datagram: %d, %v", k, err)
	}
	if r := readAll(t, n, b); len(r) != 1 || r[0].data != "" {
		t.Fatalf("empty datagram read as %v", r)
	}
}

// TestUnknownDestination: a datagram to an address with no endpoint is
// dropped and counted, at send or on arrival after the endpoint closed.
func TestUnknownDestination(t *testing.T) {
	n, a, b := pair(t, 1, LinkConfig{Delay: 5 * ms})
	var drops []Event
	n.SetTrace(func(e Event) {
		if e.Kind == EventDrop {
			drops = append(drops, e)
		}
	})
	sendSeq(t, a, addr(9, 9999), 1, 10)
	if s := n.Stats(); s.NoEndpoint != 1 || s.InFlight != 0 || s.Sent != 1 {
		t.Fatalf("after send to nowhere: %+v", s)
	}
	if s := a.Stats(); s.Sent != 1 {
		t.Fatalf("sender stats %+v: a datagram to nowhere is still sent", s)
	}

	sendSeq(t, a, b.LocalAddr(), 2, 10)
	b.Close()
	n.Advance(5 * ms)
	if s := n.Stats(); s.NoEndpoint != 2 || s.Delivered != 0 {
		t.Fatalf("after arrival at a closed endpoint: %+v", s)
	}
	if len(drops) != 2 || drops[0].Reason != DropNoEndpoint || drops[1].At != 5*ms {
		t.Fatalf("drop events %v", drops)
	}

	// An address bound again receives what arrives after it binds, even
	// if the datagram was sent to an earlier endpoint on that address.
	b2 := listen(t, n, b.LocalAddr())
	sendSeq(t, a, b.LocalAddr(), 3, 10)
	b2.Close()
	b3 := listen(t, n, b.LocalAddr())
	n.Advance(5 * ms)
	if r := readAll(t, n, b3); len(r) != 1 || seqOf(r[0]) != 3 {
		t.Fatalf("rebound endpoint read %v", r)
	}
}

// waitBlocked waits, bounded in time, until c has a ReadBatch blocked in
// its wait loop.
func waitBlocked(t *testing.T, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.net.mu.Lock()
		w := c.waiting
		c.net.mu.Unlock()
		if w > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("ReadBatch never blocked")
		}
		runtime.Gosched()
	}
}

type readResult struct {
	n   int
	err error
}

func blockingRead(c *Conn, buf []byte) <-chan readResult {
	done := make(chan readResult, 1)
	go func() {
		msgs := []socket.Message{{Buf: buf}}
		k, err := c.ReadBatch(msgs)
		done <- readResult{k, err}
	}()
	return done
}

func await(t *testing.T, done <-chan readResult) readResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("ReadBatch still blocked after 10 s")
		return readResult{}
	}
}

// TestCloseUnblocksRead: Close wakes a blocked ReadBatch with an error
// satisfying errors.Is(err, net.ErrClosed); every later call fails the same
// way, and Close may be repeated.
func TestCloseUnblocksRead(t *testing.T) {
	_, a, b := pair(t, 1, LinkConfig{})
	done := blockingRead(b, make([]byte, 100))
	waitBlocked(t, b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if r := await(t, done); r.n != 0 || !errors.Is(r.err, net.ErrClosed) {
		t.Fatalf("blocked ReadBatch after Close: %d, %v", r.n, r.err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	msgs := []socket.Message{{Buf: make([]byte, 10), N: 1, Addr: a.LocalAddr()}}
	for name, call := range map[string]func([]socket.Message) (int, error){
		"ReadBatch": b.ReadBatch, "TryReadBatch": b.TryReadBatch, "WriteBatch": b.WriteBatch,
	} {
		if _, err := call(msgs); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
		if _, err := call(nil); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s(nil) after Close: %v", name, err)
		}
	}
}

// TestAdvanceWakesRead: a ReadBatch blocked on an empty queue returns once
// another goroutine advances the clock to the datagram's delivery time, and
// not before.
func TestAdvanceWakesRead(t *testing.T) {
	n, a, b := pair(t, 1, LinkConfig{Delay: 20 * ms})
	sendSeq(t, a, b.LocalAddr(), 42, 8)
	buf := make([]byte, 100)
	done := blockingRead(b, buf)
	waitBlocked(t, b)
	n.Advance(19 * ms) // not due yet: the reader stays blocked
	select {
	case r := <-done:
		t.Fatalf("ReadBatch returned %v before the datagram was due", r)
	default:
	}
	n.Advance(ms)
	if r := await(t, done); r.n != 1 || r.err != nil || binary.LittleEndian.Uint64(buf) != 42 {
		t.Fatalf("ReadBatch: %+v, payload %x", r, buf[:8])
	}

	// With zero delay, a send from another goroutine wakes the reader
	// without any clock movement.
	n2, c, d := pair(t, 1, LinkConfig{})
	done = blockingRead(d, buf)
	waitBlocked(t, d)
	go func() {
		out := make([]byte, 8)
		binary.LittleEndian.PutUint64(out, 7)
		if _, err := c.WriteBatch([]socket.Message{{Buf: out, N: 8, Addr: d.LocalAddr()}}); err != nil {
			t.Error(err)
		}
	}()
	if r := await(t, done); r.n != 1 || r.err != nil || binary.LittleEndian.Uint64(buf) != 7 {
		t.Fatalf("ReadBatch: %+v", r)
	}
	if n2.Now() != 0 {
		t.Fatal("clock moved by itself")
	}
}

// TestTruncation: a datagram longer than the reader's buffer is truncated
// and counted.
func TestTruncation(t *testing.T) {
	_, a, b := pair(t, 1, LinkConfig{})
	sendSeq(t, a, b.LocalAddr(), 0x0102030405060708, 100)
	msgs := []socket.Message{{Buf: make([]byte, 4)}}
	if k, err := b.TryReadBatch(msgs); k != 1 || err != nil || msgs[0].N != 4 || msgs[0].Addr != a.LocalAddr() {
		t.Fatalf("TryReadBatch: %d, %v, %+v", k, err, msgs[0])
	}
	if s := b.Stats(); s.Truncated != 1 || s.ReceivedBytes != 4 || s.Queued != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestListen(t *testing.T) {
	n := New(1)
	a := listen(t, n, addr(1, 5000))
	if _, err := n.Listen(addr(1, 5000)); !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("second Listen on the same address: %v", err)
	}
	// An IPv4-mapped address names the same endpoint.
	if _, err := n.Listen(netip.MustParseAddrPort("[::ffff:127.0.0.1]:5000")); !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("mapped address: %v", err)
	}
	for _, bad := range []netip.AddrPort{{}, netip.MustParseAddrPort("0.0.0.0:1"), netip.MustParseAddrPort("[::]:1")} {
		if _, err := n.Listen(bad); !errors.Is(err, socket.ErrInvalidAddr) {
			t.Errorf("Listen(%v): %v", bad, err)
		}
	}
	// Port 0 picks ephemeral ports in order, skipping bound ones.
	listen(t, n, addr(1, firstEphemeralPort+1))
	e1 := listen(t, n, addr(1, 0))
	e2 := listen(t, n, addr(1, 0))
	if e1.LocalAddr().Port() != firstEphemeralPort || e2.LocalAddr().Port() != firstEphemeralPort+2 {
		t.Fatalf("ephemeral ports %v, %v", e1.LocalAddr(), e2.LocalAddr())
	}
	if a.Network() != n {
		t.Fatal("Conn.Network")
	}
	// A closed endpoint's address can be bound again.
	a.Close()
	listen(t, n, addr(1, 5000))
	// IPv6 works too.
	v6 := listen(t, n, netip.MustParseAddrPort("[::1]:7"))
	sendSeq(t, v6, v6.LocalAddr(), 1, 8)
	if r := readAll(t, n, v6); len(r) != 1 || r[0].from != v6.LocalAddr() {
		t.Fatalf("IPv6 self-send: %v", r)
	}
}

// TestClock: Advance, AdvanceTo, NextDue, Drain and RunTicks move virtual
// time only forward, and only when called.
func TestClock(t *testing.T) {
	n, a, b := pair(t, 1, LinkConfig{Delay: 7 * ms})
	if _, ok := n.NextDue(); ok {
		t.Fatal("NextDue on an idle network")
	}
	if got := n.Drain(); got != 0 {
		t.Fatalf("Drain on an idle network moved time to %v", got)
	}
	sendSeq(t, a, b.LocalAddr(), 1, 8)
	n.Advance(3 * ms)
	sendSeq(t, a, b.LocalAddr(), 2, 8)
	if due, ok := n.NextDue(); !ok || due != 7*ms {
		t.Fatalf("NextDue = %v, %v", due, ok)
	}
	if got := n.Drain(); got != 10*ms || n.Now() != 10*ms {
		t.Fatalf("Drain = %v", got)
	}
	if r := readAll(t, n, b); len(r) != 2 {
		t.Fatalf("after Drain read %d", len(r))
	}
	n.AdvanceTo(10 * ms) // no-op
	for name, f := range map[string]func(){
		"Advance(-1)":     func() { n.Advance(-1) },
		"AdvanceTo(past)": func() { n.AdvanceTo(time.Millisecond) },
		"RunTicks(0)":     func() { n.RunTicks(0, 1, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}

	var seen []time.Duration
	done := n.RunTicks(ms, 10, func(now time.Duration) bool {
		seen = append(seen, now)
		return len(seen) < 4
	})
	if done != 3 || !slices.Equal(seen, []time.Duration{10 * ms, 11 * ms, 12 * ms, 13 * ms}) || n.Now() != 13*ms {
		t.Fatalf("RunTicks: %d ticks, saw %v, now %v", done, seen, n.Now())
	}
	if done := n.RunTicks(ms, 5, nil); done != 5 || n.Now() != 18*ms {
		t.Fatalf("RunTicks(nil): %d, now %v", done, n.Now())
	}
}

// TestSetDefaultLinkAppliesToExisting: the default reaches links that
// already carried traffic, but not explicitly configured ones.
func TestSetDefaultLinkAppliesToExisting(t *testing.T) {
	n, a, b := pair(t, 1, LinkConfig{})
	sendSeq(t, a, b.LocalAddr(), 1, 8)
	sendSeq(t, b, a.LocalAddr(), 1, 8)
	if err := n.SetLink(b.LocalAddr(), a.LocalAddr(), LinkConfig{Delay: ms}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDefaultLink(LinkConfig{Loss: 1}); err != nil {
		t.Fatal(err)
	}
	sendSeq(t, a, b.LocalAddr(), 2, 8)
	sendSeq(t, b, a.LocalAddr(), 2, 8)
	n.Drain()
	if r := readAll(t, n, b); len(r) != 1 {
		t.Fatalf("a→b after the default became Loss 1: read %d, want 1", len(r))
	}
	if r := readAll(t, n, a); len(r) != 2 {
		t.Fatalf("b→a (explicit link): read %d, want 2", len(r))
	}
	if err := n.SetPair(a.LocalAddr(), b.LocalAddr(), LinkConfig{Jitter: ms}); err != nil {
		t.Fatal(err)
	}
	if n.Link(a.LocalAddr(), b.LocalAddr()).Jitter != ms || n.Link(b.LocalAddr(), a.LocalAddr()).Jitter != ms {
		t.Fatal("SetPair did not configure both directions")
	}
}

// TestNoAllocs: the steady-state write, advance, read cycle allocates
// nothing, on a clean link and on a fully impaired one.
func TestNoAllocs(t *testing.T) {
	for _, cfg := range []LinkConfig{
		{},
		{Delay: 20 * ms, Jitter: 5 * ms, Loss: 0.1, BurstLen: 2, Duplicate: 0.1, Bandwidth: 10 << 20, QueueLimit: 1 << 20},
	} {
		n, a, b := pair(t, 1, cfg)
		out := make([]socket.Message, socket.IdealBatchSize)
		for i := range out {
			out[i] = socket.Message{Buf: make([]byte, 1200), N: 1200, Addr: b.LocalAddr()}
		}
		in := make([]socket.Message, socket.IdealBatchSize)
		for i := range in {
			in[i].Buf = make([]byte, 1500)
		}
		step := func() {
			if _, err := a.WriteBatch(out); err != nil {
				t.Fatal(err)
			}
			n.Advance(ms)
			for {
				k, err := b.TryReadBatch(in)
				if err != nil {
					t.Fatal(err)
				}
				if k < len(in) {
					break
				}
			}
		}
		for range 200 { // warm the pools, rings and heap
			step()
		}
		if allocs := testing.AllocsPerRun(500, step); allocs != 0 {
			t.Errorf("%+v: %.2f allocations per batch of 64", cfg, allocs)
		}
	}
}

func TestEventString(t *testing.T) {
	e := Event{Kind: EventDrop, At: ms, ID: 3, Src: addr(1, 1), Dst: addr(2, 2), Size: 9, Reason: DropQueue}
	if got, want := e.String(), "1ms drop #3 127.0.0.1:1→127.0.0.2:2 9B queue"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	e = Event{Kind: EventDeliver, At: ms, ID: 3, Src: addr(1, 1), Dst: addr(2, 2), Size: 9, Copy: 1}
	if got, want := e.String(), "1ms deliver #3 127.0.0.1:1→127.0.0.2:2 9B dup"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if EventKind(0).String() != "EventKind(0)" || EventSend.String() != "send" {
		t.Fatal("EventKind.String")
	}
}

// TestReadAge: a read reports how long each datagram had waited in the
// socket since the network delivered it (Message.Age), and a batch reused
// for a later read carries no stale age.
func TestReadAge(t *testing.T) {
	n := New(1)
	if err := n.SetDefaultLink(LinkConfig{Delay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	a := listen(t, n, netip.MustParseAddrPort("127.0.0.1:1"))
	b := listen(t, n, netip.MustParseAddrPort("127.0.0.1:2"))
	sendSeq(t, a, b.LocalAddr(), 1, 8) // arrives at 10 ms
	n.AdvanceTo(4 * time.Millisecond)
	sendSeq(t, a, b.LocalAddr(), 2, 8) // arrives at 14 ms
	n.AdvanceTo(17 * time.Millisecond)
	msgs := []socket.Message{{Buf: make([]byte, 64)}, {Buf: make([]byte, 64)}}
	if k, err := b.TryReadBatch(msgs); err != nil || k != 2 {
		t.Fatalf("read %d datagrams (%v), want 2", k, err)
	}
	if msgs[0].Age != 7*time.Millisecond || msgs[1].Age != 3*time.Millisecond {
		t.Errorf("ages %v and %v read at 17 ms, want 7ms and 3ms (delivered at 10 and 14 ms)", msgs[0].Age, msgs[1].Age)
	}
	sendSeq(t, a, b.LocalAddr(), 3, 8)
	n.AdvanceTo(27 * time.Millisecond)
	if k, _ := b.TryReadBatch(msgs); k != 1 || msgs[0].Age != 0 {
		t.Errorf("read %d, age %v at once on delivery, want 1 and 0", k, msgs[0].Age)
	}
}
