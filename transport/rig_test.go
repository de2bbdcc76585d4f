package transport

import (
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// This file is the test rig for channels: two Channels joined by a
// simulated link, stepped in lock-step ticks on one goroutine, so every
// test is deterministic from its seed.

const tick60 = time.Second / 60

type got struct {
	Delivery Delivery
	Stream   uint8
	ID       wire.Seq
	Payload  string
}

// end is one side of the rig: a channel, its simulated socket, and
// everything its handler saw.
type end struct {
	t      testing.TB
	ch     *Channel
	conn   *simlink.Conn
	remote netip.AddrPort
	secret uint64

	got        []got
	confirmed  map[uint64]int
	abandoned  map[uint64]int
	disconnect []wire.DisconnectReason
	keep       bool // keep copies of payloads in got (tests that check content)
	onMessage  func(Message)

	bufs  [][]byte
	out   []socket.Message
	in    []socket.Message
	wrong int // datagrams whose session header did not match
}

func (e *end) OnMessage(m Message) {
	if e.onMessage != nil {
		e.onMessage(m)
	}
	g := got{Delivery: m.Delivery, Stream: m.Stream, ID: m.ID}
	if e.keep {
		g.Payload = string(m.Payload)
	}
	e.got = append(e.got, g)
}

func (e *end) OnRecord(tag uint64, confirmed bool) {
	if confirmed {
		e.confirmed[tag]++
	} else {
		e.abandoned[tag]++
	}
}

func (e *end) OnDisconnect(r wire.DisconnectReason) { e.disconnect = append(e.disconnect, r) }

// Buffer and Commit make end the channel's Sink: datagrams collect in a
// batch written to the simulated socket after Flush.
func (e *end) Buffer() []byte {
	if len(e.out) == len(e.bufs) {
		e.bufs = append(e.bufs, make([]byte, 0, MaxMTU))
	}
	return e.bufs[len(e.out)][:0]
}

func (e *end) Commit(d []byte) {
	e.out = append(e.out, socket.Message{Buf: d, N: len(d), Addr: e.remote})
}

// step delivers every datagram due, then flushes the channel.
func (e *end) step(now time.Duration, tick uint64) {
	e.receive(now, tick)
	e.flush(now, tick)
}

func (e *end) receive(now time.Duration, tick uint64) {
	for {
		n, err := e.conn.TryReadBatch(e.in)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, m := range e.in[:n] {
			b := m.Buf[:m.N]
			h, k, err := wire.ParseSessionHeader(b)
			if err != nil || h.Secret != e.secret {
				e.wrong++
				continue
			}
			e.ch.ReceiveAged(now, m.Age, b[k:])
		}
		if n < len(e.in) {
			return
		}
	}
}

func (e *end) flush(now time.Duration, tick uint64) {
	e.ch.Flush(now, e)
	if len(e.out) > 0 {
		if _, err := e.conn.WriteBatch(e.out); err != nil {
			e.t.Fatal(err)
		}
		e.out = e.out[:0]
	}
}

type rig struct {
	t    testing.TB
	net  *simlink.Network
	a, b *end
	now  time.Duration
	tick uint64
}

// newRig joins two channels with cfg over a link with the given impairment
// in both directions.
func newRig(t testing.TB, seed uint64, cfg Config, link simlink.LinkConfig) *rig {
	t.Helper()
	n := simlink.New(seed)
	if link.MTU == 0 {
		link.MTU = MaxMTU
	}
	if err := n.SetDefaultLink(link); err != nil {
		t.Fatal(err)
	}
	aAddr := netip.MustParseAddrPort("127.0.0.1:1000")
	bAddr := netip.MustParseAddrPort("127.0.0.2:2000")
	mk := func(addr, remote netip.AddrPort, first wire.Seq, secret uint64) *end {
		conn, err := n.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		e := &end{t: t, conn: conn, remote: remote, secret: secret, confirmed: map[uint64]int{}, abandoned: map[uint64]int{}}
		e.ch, err = NewChannel(cfg, e, first, secret)
		if err != nil {
			t.Fatal(err)
		}
		e.in = make([]socket.Message, socket.IdealBatchSize)
		for i := range e.in {
			e.in[i].Buf = make([]byte, MaxMTU)
		}
		return e
	}
	r := &rig{t: t, net: n}
	// One session, one secret: both directions carry it.
	r.a = mk(aAddr, bAddr, wire.Seq(seed*31), 0x5EC2E7+seed)
	r.b = mk(bAddr, aAddr, wire.Seq(seed*77), 0x5EC2E7+seed)
	return r
}

// run steps both ends for n ticks of 1/60 s.
func (r *rig) run(n int) {
	for range n {
		r.tick++
		r.a.step(r.now, r.tick)
		r.b.step(r.now, r.tick)
		r.now += tick60
		r.net.AdvanceTo(r.now)
	}
}

// settle runs until both channels have nothing pending (or fails after
// max ticks).
func (r *rig) settle(max int) {
	r.t.Helper()
	for i := 0; i < max; i++ {
		if r.a.ch.PendingCount() == 0 && r.b.ch.PendingCount() == 0 && r.a.ch.reliableIdle() && r.b.ch.reliableIdle() {
			return
		}
		r.run(1)
	}
	r.t.Fatalf("not settled after %d ticks: pending a=%d b=%d", max, r.a.ch.PendingCount(), r.b.ch.PendingCount())
}
