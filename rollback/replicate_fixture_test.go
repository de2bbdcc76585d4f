package rollback

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// This file holds the replication tests' fixtures: a recording
// StreamTarget, a log filler, a slow reference slice encoder (the oracle
// for packs), and a rig joining transport.Channels over the simulated link.

const tick60 = time.Second / 60

// recTarget is a StreamTarget that records every confirmed frame and checks
// they come in order. own are the local peer's "unconfirmed inputs".
type recTarget struct {
	tb      testing.TB
	peer    Sender
	ready   bool
	frames  map[uint32][]Record
	last    uint32 // newest frame confirmed
	started bool
	full    uint32 // Confirm refuses frames above this with ErrTooFarAhead (0: never)
	own     []Input
	noCopy  bool // keep nothing (benchmarks)
	count   int
}

func newRecTarget(tb testing.TB, peer Sender) *recTarget {
	return &recTarget{tb: tb, peer: peer, ready: true, frames: map[uint32][]Record{}}
}

func (t *recTarget) Peer() Sender { return t.peer }
func (t *recTarget) Ready() bool  { return t.ready }
func (t *recTarget) PendingInputs(dst []Input) []Input {
	return append(dst, t.own...)
}

func (t *recTarget) Confirm(f uint32, recs []Record) error {
	if t.full != 0 && f > t.full {
		return ErrTooFarAhead
	}
	if t.started && f != t.last+1 {
		t.tb.Fatalf("frame %d confirmed after %d", f, t.last)
	}
	t.started, t.last = true, f
	t.count++
	if t.noCopy {
		return nil
	}
	cp := make([]Record, len(recs))
	for i, r := range recs {
		r.Payload = bytes.Clone(r.Payload)
		cp[i] = r
	}
	t.frames[f] = cp
	return nil
}

// logRecords returns frame f's records as peer p is owed them: every
// record but p's own and those filter rejects.
func logRecords(tb testing.TB, l *ActionLog, f uint32, p Sender, filter ScopeFilter) []Record {
	tb.Helper()
	v := mustFrame(tb, l, f)
	var out []Record
	for i := range v.Len() {
		r := v.Record(i)
		if r.Sender == p || (filter != nil && !filter.Relevant(p, r)) {
			continue
		}
		r.Payload = bytes.Clone(r.Payload)
		r.PriorLen = 0
		out = append(out, r)
	}
	return out
}

func sameRecords(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Sender != b[i].Sender || a[i].Type != b[i].Type || a[i].Entity != b[i].Entity || !bytes.Equal(a[i].Payload, b[i].Payload) {
			return false
		}
	}
	return true
}

// oracleSlice encodes the slice of frames [first, last] for p the slow,
// obvious way: header, then for every frame with records its gap, count
// and records.
func oracleSlice(tb testing.TB, l *ActionLog, p Sender, filter ScopeFilter, first, last uint32) []byte {
	tb.Helper()
	var body []byte
	entries := 0
	prev := int64(first) - 1
	for f := first; ; f++ {
		recs := logRecords(tb, l, f, p, filter)
		if len(recs) > 0 {
			body = wire.AppendUvarint(body, uint64(int64(f)-prev-1))
			body = wire.AppendUvarint(body, uint64(len(recs)))
			for _, r := range recs {
				body = wire.AppendActionRecord(body, wire.ActionRecord{Sender: uint8(r.Sender), Type: uint16(r.Type), Entity: uint64(r.Entity), Payload: r.Payload})
			}
			entries++
			prev = int64(f)
		}
		if f == last {
			break
		}
	}
	h := wire.AppendActionSliceHeader(nil, wire.ActionSliceHeader{FirstFrame: first, Frames: int(last-first) + 1, Entries: entries})
	return append(h, body...)
}

// fillFrame begins frame f on w's log, executes the actions act gives, and
// closes it.
func fillFrame(tb testing.TB, w *world, f uint32, act func()) {
	tb.Helper()
	w.begin(tb, f)
	act()
	w.close(tb)
}

// chanEnd is one side of a channel over the simulated link: the channel,
// its socket, and the sink that batches its datagrams.
type chanEnd struct {
	tb     testing.TB
	ch     *transport.Channel
	conn   *simlink.Conn
	remote netip.AddrPort
	secret uint64
	bufs   [][]byte
	out    []socket.Message
	in     []socket.Message
}

func (e *chanEnd) Buffer() []byte {
	if len(e.out) == len(e.bufs) {
		e.bufs = append(e.bufs, make([]byte, 0, transport.MaxMTU))
	}
	return e.bufs[len(e.out)][:0]
}

func (e *chanEnd) Commit(d []byte) {
	e.out = append(e.out, socket.Message{Buf: d, N: len(d), Addr: e.remote})
}

func (e *chanEnd) receive(now time.Duration, tick uint64) {
	for {
		n, err := e.conn.TryReadBatch(e.in)
		if err != nil {
			e.tb.Fatal(err)
		}
		for _, m := range e.in[:n] {
			b := m.Buf[:m.N]
			h, k, err := wire.ParseSessionHeader(b)
			if err != nil || h.Secret != e.secret {
				e.tb.Fatal("foreign datagram on the rig")
			}
			_ = e.ch.Receive(now, b[k:])
		}
		if n < len(e.in) {
			return
		}
	}
}

func (e *chanEnd) flush(now time.Duration, tick uint64) {
	e.ch.Flush(now, e)
	if len(e.out) > 0 {
		if _, err := e.conn.WriteBatch(e.out); err != nil {
			e.tb.Fatal(err)
		}
		e.out = e.out[:0]
	}
}

// simNet is a simulated network with lock-step ticks of 1/60 s.
type simNet struct {
	tb   testing.TB
	net  *simlink.Network
	now  time.Duration
	tick uint64
}

func newSimNet(tb testing.TB, seed uint64, link simlink.LinkConfig) *simNet {
	tb.Helper()
	n := simlink.New(seed)
	if link.MTU == 0 {
		link.MTU = transport.MaxMTU
	}
	if err := n.SetDefaultLink(link); err != nil {
		tb.Fatal(err)
	}
	return &simNet{tb: tb, net: n}
}

// sim returns sim(delay ms, jitter ms, loss %).
func sim(delay, jitter int, loss float64) simlink.LinkConfig {
	return simlink.LinkConfig{Delay: time.Duration(delay) * time.Millisecond, Jitter: time.Duration(jitter) * time.Millisecond, Loss: loss / 100}
}

// pair joins two channels (index i picks distinct addresses) whose
// handlers are hs (server side) and hc (client side).
func (s *simNet) pair(i int, cfg transport.Config, hs, hc transport.Handler) (srv, cli *chanEnd) {
	s.tb.Helper()
	sAddr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, 1}), uint16(1000+i))
	cAddr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}), 2000)
	secret := uint64(0x5EC2E7 + i)
	mk := func(addr, remote netip.AddrPort, first wire.Seq, h transport.Handler) *chanEnd {
		conn, err := s.net.Listen(addr)
		if err != nil {
			s.tb.Fatal(err)
		}
		e := &chanEnd{tb: s.tb, conn: conn, remote: remote, secret: secret}
		if e.ch, err = transport.NewChannel(cfg, h, first, secret); err != nil {
			s.tb.Fatal(err)
		}
		e.in = make([]socket.Message, socket.IdealBatchSize)
		for k := range e.in {
			e.in[k].Buf = make([]byte, transport.MaxMTU)
		}
		return e
	}
	return mk(sAddr, cAddr, wire.Seq(100+i*7), hs), mk(cAddr, sAddr, wire.Seq(900+i*13), hc)
}

// advance moves the clock one tick.
func (s *simNet) advance() {
	s.tick++
	s.now += tick60
	s.net.AdvanceTo(s.now)
}

// cut sets the link between the i-th pair's addresses, both ways.
func (s *simNet) setPair(srv, cli *chanEnd, link simlink.LinkConfig) {
	s.tb.Helper()
	if link.MTU == 0 {
		link.MTU = transport.MaxMTU
	}
	if err := s.net.SetPair(srv.conn.LocalAddr(), cli.conn.LocalAddr(), link); err != nil {
		s.tb.Fatal(err)
	}
}
