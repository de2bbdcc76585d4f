package transport_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
	"github.com/tickwire/tickwire/wire"
)

// The Accept's limits over real loopback UDP (issue 9, item 4): a
// zero-config client joins servers at MTU 576, 1200 and 1472 and one with
// other windows, and reliable messages of every size class up to the
// negotiated maximum cross both ways; a client whose explicit config
// conflicts is refused cleanly and the server frees the session at once.
// Bounded: at most 20 s of wall time per server, normally well under 1 s.

// udpServers are the server channel configs of the loopback tests.
var udpServers = []struct {
	name string
	cfg  transport.Config
}{
	{"MTU 576", transport.Config{MTU: transport.MinMTU}},
	{"MTU 1200", transport.Config{}},
	{"MTU 1472", transport.Config{MTU: transport.MaxMTU}},
	{"MTU 1472, other windows", transport.Config{MTU: transport.MaxMTU, ReliableWindow: 1024, ReliableBytes: 4 << 20,
		MaxPartial: 16, OrderedStreams: 8, SequencedStreams: 2}},
}

// udpPeerLog is an EndpointHandler that keeps connects, disconnects and
// the reliable messages it got, checking each payload's pattern.
type udpPeerLog struct {
	transport.NopHandler
	t        *testing.T
	connects []*transport.Peer
	discs    []wire.DisconnectReason
	got      map[[2]uint32]int // (stream, seq) → deliveries
	next     map[uint8]uint32  // ordered stream → next seq expected
}

func newUDPPeerLog(t *testing.T) *udpPeerLog {
	return &udpPeerLog{t: t, got: map[[2]uint32]int{}, next: map[uint8]uint32{}}
}

func (l *udpPeerLog) OnConnect(p *transport.Peer) { l.connects = append(l.connects, p) }
func (l *udpPeerLog) OnDisconnect(_ *transport.Peer, why wire.DisconnectReason) {
	l.discs = append(l.discs, why)
}

func (l *udpPeerLog) OnMessage(_ *transport.Peer, m transport.Message) {
	stream, seq, ok := parseUDPPayload(m.Payload)
	if !ok || stream != m.Stream {
		l.t.Errorf("corrupt %d-byte message on stream %d", len(m.Payload), m.Stream)
		return
	}
	if m.Stream != 0 {
		if want := l.next[m.Stream]; seq != want {
			l.t.Errorf("stream %d: message %d, want %d", m.Stream, seq, want)
		}
		l.next[m.Stream] = seq + 1
	}
	l.got[[2]uint32{uint32(stream), seq}]++
}

// udpPayload is size bytes: stream, seq, then a pattern of both.
func udpPayload(stream uint8, seq uint32, size int) []byte {
	p := make([]byte, size)
	p[0] = stream
	binary.LittleEndian.PutUint32(p[1:], seq)
	for i := 5; i < size; i++ {
		p[i] = byte(i*7) ^ byte(seq) ^ stream
	}
	return p
}

func parseUDPPayload(p []byte) (uint8, uint32, bool) {
	if len(p) < 5 {
		return 0, 0, false
	}
	stream, seq := p[0], binary.LittleEndian.Uint32(p[1:])
	for i := 5; i < len(p); i++ {
		if p[i] != byte(i*7)^byte(seq)^stream {
			return 0, 0, false
		}
	}
	return stream, seq, true
}

// udpSizes returns one size of every class the channel treats differently,
// up to its MaxMessageSize.
func udpSizes(ch *transport.Channel) []int {
	c := ch.Config()
	single := ch.MaxSinglePayload(transport.Reliable)
	var sizes []int
	for _, s := range []int{5, c.RedundancyBytes, c.RedundancyBytes + 1, single, single + 1, 3 * single,
		c.MaxDatagramsPerFlush * single, c.MaxMessageSize - 1, c.MaxMessageSize} {
		if s >= 5 && s <= c.MaxMessageSize && !slices.Contains(sizes, s) {
			sizes = append(sizes, s)
		}
	}
	slices.Sort(sizes)
	return sizes
}

// udpPair is a server and a client over loopback UDP.
type udpPair struct {
	t          *testing.T
	start      time.Time
	srv, cl    *transport.Endpoint
	sLog, cLog *udpPeerLog
}

func newUDPPair(t *testing.T, srvCfg, clCfg transport.EndpointConfig) *udpPair {
	t.Helper()
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	ss, err := udp.Open(loop, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := udp.Open(loop, udp.Config{})
	if err != nil {
		ss.Close()
		t.Fatal(err)
	}
	p := &udpPair{t: t, start: time.Now(), sLog: newUDPPeerLog(t), cLog: newUDPPeerLog(t)}
	if p.srv, err = transport.Listen(ss, srvCfg, p.sLog); err != nil {
		ss.Close()
		cs.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { p.srv.Close() })
	clCfg.ServerKey = p.srv.PublicKey()
	if p.cl, err = transport.Dial(cs, ss.LocalAddr(), clCfg, p.cLog, 0); err != nil {
		cs.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cl.Close() })
	return p
}

// step polls and flushes both endpoints once.
func (p *udpPair) step() {
	now := time.Since(p.start)
	p.srv.Poll(now)
	p.cl.Poll(now)
	p.srv.Flush(now)
	p.cl.Flush(now)
	time.Sleep(200 * time.Microsecond)
}

// until steps until cond holds, failing after limit of wall time.
func (p *udpPair) until(limit time.Duration, what string, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: not reached in %v", what, limit)
		}
		p.step()
	}
}

// udpSender sends every size on each stream from a peer, retrying what a
// full window refuses.
type udpSender struct {
	t      *testing.T
	p      *transport.Peer
	plan   [][2]int // (stream, size)
	next   map[uint8]uint32
	total  int
	sizeOf map[[2]uint32]int
}

func newUDPSender(t *testing.T, p *transport.Peer, streams ...uint8) *udpSender {
	s := &udpSender{t: t, p: p, next: map[uint8]uint32{}, sizeOf: map[[2]uint32]int{}}
	for _, size := range udpSizes(p.Channel()) {
		for _, st := range streams {
			s.plan = append(s.plan, [2]int{int(st), size})
		}
	}
	s.total = len(s.plan)
	return s
}

func (s *udpSender) pump() {
	s.t.Helper()
	for len(s.plan) > 0 {
		st, size := uint8(s.plan[0][0]), s.plan[0][1]
		if _, err := s.p.Channel().SendReliable(st, udpPayload(st, s.next[st], size)); err != nil {
			if errors.Is(err, transport.ErrQueueFull) {
				return
			}
			s.t.Fatalf("SendReliable(%d, %d B): %v", st, size, err)
		}
		s.sizeOf[[2]uint32{uint32(st), s.next[st]}] = size
		s.next[st]++
		s.plan = s.plan[1:]
	}
}

// delivered reports whether log got every message s sent, and fails on a
// duplicate.
func (s *udpSender) delivered(log *udpPeerLog) bool {
	if len(s.plan) > 0 {
		return false
	}
	for k := range s.sizeOf {
		switch log.got[k] {
		case 0:
			return false
		case 1:
		default:
			s.t.Fatalf("message %v delivered %d times", k, log.got[k])
		}
	}
	return true
}

// sharedOf lists a channel config's limits both ends must share.
func sharedOf(c transport.Config) [7]int {
	return [7]int{c.MTU, c.MaxMessageSize, c.ReliableBytes, c.MaxPartial, c.ReliableWindow, c.SequencedStreams, c.OrderedStreams}
}

func TestZeroConfigClientOverUDP(t *testing.T) {
	for _, sc := range udpServers {
		t.Run(sc.name, func(t *testing.T) {
			p := newUDPPair(t, transport.EndpointConfig{Channel: sc.cfg}, transport.EndpointConfig{})
			p.until(5*time.Second, "connect", func() bool {
				r := p.cl.Remote()
				return r != nil && r.State() == transport.PeerConnected && len(p.sLog.connects) == 1
			})
			sp, cp := p.sLog.connects[0], p.cl.Remote()
			if sharedOf(cp.Channel().Config()) != sharedOf(sp.Channel().Config()) {
				t.Fatalf("client adopted %v, server has %v", sharedOf(cp.Channel().Config()), sharedOf(sp.Channel().Config()))
			}
			if p.cl.Config().Channel != cp.Channel().Config() {
				t.Fatal("client's Endpoint.Config().Channel is not its channel's config")
			}
			last := uint8(cp.Channel().Config().OrderedStreams)
			cs, ss := newUDPSender(t, cp, 0, last), newUDPSender(t, sp, 0, last)
			began := time.Now()
			p.until(20*time.Second, "every size both ways", func() bool {
				cs.pump()
				ss.pump()
				return cs.delivered(p.sLog) && ss.delivered(p.cLog)
			})
			t.Logf("%d messages each way, sizes %v, in %v", cs.total, udpSizes(cp.Channel()), time.Since(began).Round(time.Millisecond))
			if err := p.cl.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestIncompatibleClientOverUDP: a client that sets a shared limit to
// another value than the server's is refused with ErrIncompatible, the
// numbers in the message, and the server frees the session within a
// fraction of a second (its idle time-out is 10 s, its grace 30 s).
func TestIncompatibleClientOverUDP(t *testing.T) {
	p := newUDPPair(t, transport.EndpointConfig{Channel: transport.Config{MTU: transport.MaxMTU}},
		transport.EndpointConfig{Channel: transport.Config{ReliableWindow: 512}})
	p.until(5*time.Second, "client refuses", func() bool { return p.cl.Err() != nil })
	err := p.cl.Err()
	if !errors.Is(err, transport.ErrIncompatible) || !strings.Contains(err.Error(), "ReliableWindow 512 here, 256 on the server") {
		t.Fatalf("client error %v", err)
	}
	refused := time.Now()
	p.until(time.Second, "server frees the session", func() bool { return p.srv.StateSize() == 0 })
	t.Logf("server freed the session %v after the client refused", time.Since(refused).Round(time.Microsecond))
	if len(p.sLog.connects) != 1 || len(p.sLog.discs) != 1 || p.sLog.discs[0] != wire.DisconnectIncompatible {
		t.Fatalf("server: %d connects, disconnects %v", len(p.sLog.connects), p.sLog.discs)
	}
	if p.cl.Remote() != nil || len(p.cLog.connects) != 0 || p.cl.Stats().AcceptsRefused != 1 {
		t.Fatalf("client: remote %v, %d connects, %d refused", p.cl.Remote(), len(p.cLog.connects), p.cl.Stats().AcceptsRefused)
	}
}
