package soak

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// end is one side of a channel pair over the simulated network: the
// channel, its simulated socket, and the sink that batches its datagrams.
// Its buffers are allocated once and reused.
type end struct {
	ch     *transport.Channel
	conn   *simlink.Conn
	remote netip.AddrPort
	secret uint64
	bufs   [][]byte
	out    []socket.Message
	in     []socket.Message
	// foreign counts datagrams whose session header did not match.
	foreign uint64
}

// Buffer implements transport.Sink.
func (e *end) Buffer() []byte {
	if len(e.out) == len(e.bufs) {
		e.bufs = append(e.bufs, make([]byte, 0, transport.MaxMTU))
	}
	return e.bufs[len(e.out)][:0]
}

// Commit implements transport.Sink.
func (e *end) Commit(d []byte) {
	e.out = append(e.out, socket.Message{Buf: d, N: len(d), Addr: e.remote})
}

// receive hands every datagram due to the channel.
func (e *end) receive(now time.Duration) error {
	for {
		n, err := e.conn.TryReadBatch(e.in)
		if err != nil {
			return err
		}
		for _, m := range e.in[:n] {
			b := m.Buf[:m.N]
			h, k, err := wire.ParseSessionHeader(b)
			if err != nil || h.Secret != e.secret {
				e.foreign++
				continue
			}
			_ = e.ch.ReceiveAged(now, m.Age, b[k:]) // malformed datagrams are counted in the channel's stats
		}
		if n < len(e.in) {
			return nil
		}
	}
}

// flush packs what the channel has queued and writes it to the link.
func (e *end) flush(now time.Duration) error {
	e.ch.Flush(now, e)
	if len(e.out) > 0 {
		if _, err := e.conn.WriteBatch(e.out); err != nil {
			return err
		}
		e.out = e.out[:0]
	}
	return nil
}

// pair joins two channels over n: a is at 10.0.i.1, b at 10.0.i.2, both
// with cfg; ha and hb are their handlers.
func pair(n *simlink.Network, i byte, cfg transport.Config, ha, hb transport.Handler) (a, b *end, err error) {
	aAddr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, i, 1}), 1000)
	bAddr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, i, 2}), 2000)
	secret := 0x50A4 + uint64(i)
	mk := func(addr, remote netip.AddrPort, first wire.Seq, h transport.Handler) (*end, error) {
		conn, err := n.Listen(addr)
		if err != nil {
			return nil, fmt.Errorf("soak: listen %v: %w", addr, err)
		}
		e := &end{conn: conn, remote: remote, secret: secret}
		if e.ch, err = transport.NewChannel(cfg, h, first, secret); err != nil {
			return nil, fmt.Errorf("soak: channel: %w", err)
		}
		e.in = make([]socket.Message, socket.IdealBatchSize)
		for k := range e.in {
			e.in[k].Buf = make([]byte, transport.MaxMTU)
		}
		return e, nil
	}
	if a, err = mk(aAddr, bAddr, wire.Seq(100+int(i)*7), ha); err != nil {
		return nil, nil, err
	}
	if b, err = mk(bAddr, aAddr, wire.Seq(900+int(i)*13), hb); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}
