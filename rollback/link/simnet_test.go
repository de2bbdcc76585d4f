package link

import (
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

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

const tick60 = time.Second / 60
