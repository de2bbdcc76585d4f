package udp

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickwire/tickwire/internal/sockaddr"
	"github.com/tickwire/tickwire/transport/socket"
)

var lo4 = netip.MustParseAddrPort("127.0.0.1:0")

func openBatchT(t *testing.T, cfg Config) *batchConn {
	t.Helper()
	uc, err := listen(lo4, cfg)
	if err != nil {
		t.Fatal(err)
	}
	im, err := openBatch(uc, cfg.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := im.(*batchConn)
	if !ok {
		t.Fatalf("openBatch returned %T: recvmmsg/sendmmsg unavailable", im)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sendRun writes count datagrams of size bytes from c to dst and checks
// they all arrive at rx.
func sendRun(t *testing.T, c, rx *batchConn, count, size int) {
	t.Helper()
	msgs := make([]socket.Message, count)
	for i := range msgs {
		b := make([]byte, size)
		b[0], b[1] = byte(i), byte(size)
		msgs[i] = socket.Message{Buf: b, N: size, Addr: rx.LocalAddr()}
	}
	if n, err := c.WriteBatch(msgs); n != count || err != nil {
		t.Fatalf("WriteBatch(%d × %d B) = %d, %v", count, size, n, err)
	}
	in := make([]socket.Message, 8)
	for i := range in {
		in[i].Buf = make([]byte, size+1)
	}
	deadline := time.Now().Add(5 * time.Second)
	for got := 0; got < count; {
		n, err := rx.TryReadBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in[:n] {
			if m.N != size || m.Buf[0] != byte(got) || m.Buf[1] != byte(size) {
				t.Fatalf("datagram %d: %d bytes, header %x", got, m.N, m.Buf[:2])
			}
			got++
		}
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d datagrams arrived", got, count)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// setNoCheck sets SO_NO_CHECK, with which the kernel refuses every GSO
// send with EINVAL: a real refusal to exercise the fallback on loopback.
func setNoCheck(t *testing.T, c *batchConn) {
	t.Helper()
	var serr error
	if err := c.rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1)
	}); err != nil || serr != nil {
		t.Fatalf("SO_NO_CHECK: %v %v", err, serr)
	}
}

// TestGSOFallbackSmallSegments: the kernel refuses a GSO send of
// MTU-safe segments, so the socket turns GSO off and resends the batch one
// datagram per message; nothing is lost or duplicated.
func TestGSOFallbackSmallSegments(t *testing.T) {
	c, rx := openBatchT(t, Config{}), openBatchT(t, Config{})
	if !c.features().GSO {
		t.Skipf("kernel without UDP GSO: the fallback is the only path, covered by every other test")
	}
	setNoCheck(t, c)
	sendRun(t, c, rx, 20, 1200)
	var s Stats
	c.stats(&s)
	if s.GSO || s.GSOFallbacks != 1 || s.GSOSends != 0 || s.DatagramsOut != 20 {
		t.Fatalf("after a refused GSO send: %+v; want GSO off, 1 fallback, 0 GSO sends, 20 out", s)
	}
	sendRun(t, c, rx, 20, 1200) // GSO stays off: no second refusal
	c.stats(&s)
	if s.GSOFallbacks != 1 || s.DatagramsOut != 40 {
		t.Fatalf("second batch: %+v", s)
	}
}

// TestGSOFallbackLargeSegments: a refused GSO send of segments above the
// MTU-safe size only stops coalescing segments that large.
func TestGSOFallbackLargeSegments(t *testing.T) {
	c, rx := openBatchT(t, Config{}), openBatchT(t, Config{})
	if !c.features().GSO {
		t.Skipf("kernel without UDP GSO: the fallback is the only path, covered by every other test")
	}
	setNoCheck(t, c)
	sendRun(t, c, rx, 10, 2000)
	var s Stats
	c.stats(&s)
	if !s.GSO || s.GSOFallbacks != 1 || c.w.segLimit != 1999 {
		t.Fatalf("after a refused 2000-byte GSO send: %+v, segLimit %d; want GSO on, 1 fallback, limit 1999", s, c.w.segLimit)
	}
	sendRun(t, c, rx, 10, 2000) // no longer coalesced: no refusal
	sendRun(t, c, rx, 10, 1200) // safe size refused: GSO off
	c.stats(&s)
	if s.GSO || s.GSOFallbacks != 2 || s.DatagramsOut != 30 {
		t.Fatalf("after a refused 1200-byte GSO send: %+v; want GSO off, 2 fallbacks, 30 out", s)
	}
}

// TestGSORefusalErrno checks the verdict for each errno on a coalesced
// header (EIO cannot be provoked on loopback).
func TestGSORefusalErrno(t *testing.T) {
	for _, tc := range []struct {
		errno    unix.Errno
		size     int
		refusal  bool
		gsoAfter bool
		limit    int
	}{
		{unix.EIO, 1200, true, false, gsoMaxBytes},
		{unix.EIO, 3000, true, false, gsoMaxBytes},
		{unix.EINVAL, 1200, true, false, gsoMaxBytes},
		{unix.EMSGSIZE, 3000, true, true, 2999},
		{unix.ECONNREFUSED, 1200, false, true, gsoMaxBytes},
		{unix.EPERM, 1200, false, true, gsoMaxBytes},
	} {
		c := openBatchT(t, Config{})
		c.gso.Store(true)
		msgs := make([]socket.Message, 3)
		for i := range msgs {
			msgs[i] = socket.Message{Buf: make([]byte, tc.size), N: tc.size, Addr: lo4}
		}
		nh, nm, gsoSends, err := c.build(msgs, 0)
		if nh != 1 || nm != 3 || gsoSends != 1 || err != nil {
			t.Fatalf("build = %d, %d, %d, %v; want one GSO header", nh, nm, gsoSends, err)
		}
		c.w.errno = tc.errno
		s, ok := c.gsoRefusal(0)
		if ok != tc.refusal {
			t.Fatalf("%v at %d B: refusal %v, want %v", tc.errno, tc.size, ok, tc.refusal)
		}
		if ok {
			c.blameGSO(s)
		}
		if c.gso.Load() != tc.gsoAfter || c.w.segLimit != tc.limit {
			t.Fatalf("%v at %d B: GSO after %v, limit %d; want %v, %d", tc.errno, tc.size, c.gso.Load(), c.w.segLimit, tc.gsoAfter, tc.limit)
		}
	}
}

// TestGSORefusalBlamedOnDestination: a destination the kernel rejects
// (port 0: EINVAL) fails a GSO send exactly as a GSO refusal does. The
// socket must resend to find out, report the error at the first message to
// that destination, and keep GSO on.
func TestGSORefusalBlamedOnDestination(t *testing.T) {
	c, rx := openBatchT(t, Config{}), openBatchT(t, Config{})
	if !c.features().GSO {
		t.Skipf("kernel without UDP GSO: nothing to misattribute")
	}
	bad := netip.AddrPortFrom(lo4.Addr(), 0)
	msgs := make([]socket.Message, 6)
	for i := range msgs {
		dst := rx.LocalAddr()
		if i >= 2 && i < 5 {
			dst = bad
		}
		msgs[i] = socket.Message{Buf: make([]byte, 500), N: 500, Addr: dst}
	}
	n, err := c.WriteBatch(msgs)
	if n != 2 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("WriteBatch = %d, %v; want 2, EINVAL", n, err)
	}
	var s Stats
	c.stats(&s)
	if !s.GSO || s.GSOFallbacks != 0 || s.DatagramsOut != 2 {
		t.Fatalf("stats %+v: want GSO still on, no fallback counted, 2 out", s)
	}
	drain := make([]socket.Message, 4)
	for i := range drain {
		drain[i].Buf = make([]byte, 600)
	}
	deadline := time.Now().Add(5 * time.Second)
	for got := 0; got < 2; {
		n, err := rx.TryReadBatch(drain)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the 2 datagrams before the bad destination: %d arrived, %v", got, err)
		}
		got += n
	}
	sendRun(t, c, rx, 10, 500) // and GSO still works
	c.stats(&s)
	if s.GSOSends < 2 {
		t.Fatalf("stats %+v: want GSO sends after the bad destination", s)
	}
}

// TestBuildGroups checks the GSO grouping rules header by header.
func TestBuildGroups(t *testing.T) {
	c := openBatchT(t, Config{BatchSize: 16})
	c.gso.Store(true)
	x, y := netip.MustParseAddrPort("127.0.0.1:9"), netip.MustParseAddrPort("127.0.0.1:10")
	type m struct {
		n   int
		dst netip.AddrPort
	}
	for _, tc := range []struct {
		name  string
		msgs  []m
		first []int // header boundaries
	}{
		{"equal run", []m{{100, x}, {100, x}, {100, x}}, []int{0, 3}},
		{"shorter last closes", []m{{100, x}, {50, x}, {50, x}}, []int{0, 2, 3}},
		{"longer starts new", []m{{100, x}, {200, x}, {200, x}}, []int{0, 1, 3}},
		{"destination change", []m{{100, x}, {100, y}, {100, y}, {100, x}}, []int{0, 1, 3, 4}},
		{"zero length alone", []m{{0, x}, {0, x}, {100, x}, {0, x}}, []int{0, 1, 2, 3, 4}},
		{"zero length cannot end a run", []m{{100, x}, {100, x}, {0, x}}, []int{0, 2, 3}},
		{"size cap", []m{{30000, x}, {30000, x}, {30000, x}}, []int{0, 2, 3}},
		{"chunk of 16", func() []m {
			r := make([]m, 20)
			for i := range r {
				r[i] = m{10, x}
			}
			return r
		}(), []int{0, 16}},
	} {
		msgs := make([]socket.Message, len(tc.msgs))
		for i, mm := range tc.msgs {
			msgs[i] = socket.Message{Buf: make([]byte, mm.n), N: mm.n, Addr: mm.dst}
		}
		nh, _, _, err := c.build(msgs, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.w.first[:nh+1]; !equalInts(got, tc.first) {
			t.Errorf("%s: header boundaries %v, want %v", tc.name, got, tc.first)
		}
	}
	// The first noCoalesce messages get a header each.
	run := make([]socket.Message, 5)
	for i := range run {
		run[i] = socket.Message{Buf: make([]byte, 9), N: 9, Addr: x}
	}
	if nh, _, _, _ := c.build(run, 3); !equalInts(c.w.first[:nh+1], []int{0, 1, 2, 3, 5}) {
		t.Errorf("noCoalesce 3: header boundaries %v, want [0 1 2 3 5]", c.w.first[:nh+1])
	}
	// Without GSO every message is its own header.
	c.gso.Store(false)
	msgs := []socket.Message{{Buf: make([]byte, 9), N: 9, Addr: x}, {Buf: make([]byte, 9), N: 9, Addr: x}}
	if nh, nm, g, _ := c.build(msgs, 0); nh != 2 || nm != 2 || g != 0 {
		t.Errorf("GSO off: %d headers, %d messages, %d GSO; want 2, 2, 0", nh, nm, g)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSockaddr round-trips addresses through the kernel's format for both
// socket families, without allocating.
func TestSockaddr(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		family  int
	}{
		{"127.0.0.1:7", "127.0.0.1:7", unix.AF_INET},
		{"[::ffff:127.0.0.1]:7", "127.0.0.1:7", unix.AF_INET},
		{"127.0.0.1:65535", "127.0.0.1:65535", unix.AF_INET6},
		{"[::1]:443", "[::1]:443", unix.AF_INET6},
		{"[fe80::1%3]:5", "[fe80::1%3]:5", unix.AF_INET6},
	} {
		var sa sockaddr.Raw
		ap := netip.MustParseAddrPort(tc.in)
		if _, err := putSockaddr(&sa, ap, tc.family); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got := sockaddr.AddrPort(&sa); got.String() != tc.out {
			t.Fatalf("%s on family %d: decoded %v, want %s", tc.in, tc.family, got, tc.out)
		}
	}
	var sa sockaddr.Raw
	if _, err := putSockaddr(&sa, netip.MustParseAddrPort("[::1]:1"), unix.AF_INET); !errors.Is(err, socket.ErrInvalidAddr) {
		t.Fatalf("IPv6 on an IPv4 socket: %v, want ErrInvalidAddr", err)
	}
	v4, v6 := netip.MustParseAddrPort("10.1.2.3:4"), netip.MustParseAddrPort("[2001:db8::1]:4")
	allocs := testing.AllocsPerRun(100, func() {
		putSockaddr(&sa, v4, unix.AF_INET)
		sockaddr.AddrPort(&sa)
		putSockaddr(&sa, v4, unix.AF_INET6)
		sockaddr.AddrPort(&sa)
		putSockaddr(&sa, v6, unix.AF_INET6)
		sockaddr.AddrPort(&sa)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations converting addresses", allocs)
	}
}
