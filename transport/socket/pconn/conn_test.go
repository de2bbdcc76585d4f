package pconn_test

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/pconn"
)

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []pconn.Config{{}, {MaxDatagramSize: 1, QueueLen: 1}, {MaxDatagramSize: socket.MaxDatagramSize, QueueLen: pconn.MaxQueueLen}} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", cfg, err)
		}
	}
	for _, cfg := range []pconn.Config{{MaxDatagramSize: -1}, {MaxDatagramSize: socket.MaxDatagramSize + 1}, {QueueLen: -1}, {QueueLen: pconn.MaxQueueLen + 1}} {
		err := cfg.Validate()
		if !errors.Is(err, pconn.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
		if _, err := pconn.New(fakeConn(), cfg); !errors.Is(err, pconn.ErrInvalidConfig) {
			t.Errorf("New with %+v = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := pconn.New(nil, pconn.Config{}); !errors.Is(err, pconn.ErrInvalidConfig) {
		t.Errorf("New(nil) = %v, want ErrInvalidConfig", err)
	}
}

// fake is a scripted net.PacketConn: ReadFrom returns what is sent on
// reads (blocking until then, or until Close), WriteTo records.
type fake struct {
	local  net.Addr
	reads  chan fakeRead
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	wrote  []net.Addr
}

type fakeRead struct {
	data []byte
	from net.Addr
	err  error
}

func fakeConn() *fake {
	return &fake{
		local:  net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.1:7000")),
		reads:  make(chan fakeRead),
		closed: make(chan struct{}),
	}
}

func (f *fake) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case r := <-f.reads:
		return copy(b, r.data), r.from, r.err
	case <-f.closed:
		return 0, nil, &net.OpError{Op: "read", Net: "fake", Err: net.ErrClosed}
	}
}

func (f *fake) WriteTo(b []byte, a net.Addr) (int, error) {
	select {
	case <-f.closed:
		return 0, &net.OpError{Op: "write", Net: "fake", Err: net.ErrClosed}
	default:
	}
	f.mu.Lock()
	f.wrote = append(f.wrote, a)
	f.mu.Unlock()
	return len(b), nil
}

var errFakeClose = errors.New("fake: close failed")

func (f *fake) Close() error {
	err := error(&net.OpError{Op: "close", Net: "fake", Err: net.ErrClosed})
	f.once.Do(func() {
		close(f.closed)
		err = errFakeClose // a first Close that reports a failure
	})
	return err
}
func (f *fake) LocalAddr() net.Addr              { return f.local }
func (f *fake) SetDeadline(time.Time) error      { return errors.ErrUnsupported }
func (f *fake) SetReadDeadline(time.Time) error  { return errors.ErrUnsupported }
func (f *fake) SetWriteDeadline(time.Time) error { return errors.ErrUnsupported }

// deliver hands r to the adapter's next ReadFrom (or gives up once the
// fake is closed, so a failed test leaves no goroutine behind).
func (f *fake) deliver(r fakeRead) {
	select {
	case f.reads <- r:
	case <-f.closed:
	}
}

// textAddr is a net.Addr of another kind, known only by its String().
type textAddr string

func (a textAddr) Network() string { return "text" }
func (a textAddr) String() string  { return string(a) }

// readOne reads one datagram within 5 s.
func readOne(t *testing.T, c *pconn.Conn, buf []byte) (socket.Message, error) {
	t.Helper()
	msgs := []socket.Message{{Buf: buf}}
	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := c.ReadBatch(msgs)
		done <- res{n, err}
	}()
	select {
	case r := <-done:
		if r.err == nil && r.n != 1 {
			t.Fatalf("ReadBatch = %d, nil; want 1", r.n)
		}
		return msgs[0], r.err
	case <-time.After(5 * time.Second):
		c.Close()
		t.Fatal("ReadBatch did not return within 5s")
		return socket.Message{}, nil
	}
}

// TestSourcesAndErrors: sources of any net.Addr kind that prints as
// ip:port are delivered; others are dropped and counted; a read error is
// returned once, with its Timeout(), and the goroutine reads on.
func TestSourcesAndErrors(t *testing.T) {
	f := fakeConn()
	c := adapt(t, f, pconn.Config{})
	if c.LocalAddr() != netip.MustParseAddrPort("10.0.0.1:7000") {
		t.Fatalf("LocalAddr = %v", c.LocalAddr())
	}
	buf := make([]byte, 64)

	go f.deliver(fakeRead{data: []byte("a"), from: textAddr("10.0.0.2:9")})
	m, err := readOne(t, c, buf)
	if err != nil || string(m.Buf[:m.N]) != "a" || m.Addr != netip.MustParseAddrPort("10.0.0.2:9") {
		t.Fatalf("text source: %q from %v, %v", m.Buf[:m.N], m.Addr, err)
	}

	// An unaddressable source is dropped; the next datagram comes through.
	go func() {
		f.deliver(fakeRead{data: []byte("x"), from: textAddr("relay-7")})
		f.deliver(fakeRead{data: []byte("b"), from: net.UDPAddrFromAddrPort(netip.MustParseAddrPort("[::ffff:10.0.0.3]:10"))})
	}()
	m, err = readOne(t, c, buf)
	if err != nil || string(m.Buf[:m.N]) != "b" || m.Addr != netip.MustParseAddrPort("10.0.0.3:10") {
		t.Fatalf("after an unaddressable source: %q from %v, %v (IPv4-mapped must be unmapped)", m.Buf[:m.N], m.Addr, err)
	}
	if s := c.Stats(); s.Unaddressable != 1 {
		t.Fatalf("Stats.Unaddressable = %d, want 1", s.Unaddressable)
	}

	// A passed deadline, say: returned once, Timeout() intact.
	go f.deliver(fakeRead{err: &net.OpError{Op: "read", Net: "fake", Err: os.ErrDeadlineExceeded}})
	_, err = readOne(t, c, buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read error = %v, want the conn's timeout error with Timeout() true", err)
	}
	go f.deliver(fakeRead{data: []byte("c"), from: net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:9"))})
	if m, err = readOne(t, c, buf); err != nil || string(m.Buf[:m.N]) != "c" {
		t.Fatalf("after a read error: %q, %v; want the next datagram", m.Buf[:m.N], err)
	}
	if s := c.Stats(); s.ReadErrors != 1 || s.DatagramsIn != 3 {
		t.Fatalf("Stats = %+v, want 1 read error, 3 datagrams in", s)
	}

	// Writes reuse one net.Addr per destination.
	dst := netip.MustParseAddrPort("10.0.0.9:1")
	msgs := []socket.Message{{Buf: []byte("1"), N: 1, Addr: dst}, {Buf: []byte("2"), N: 1, Addr: dst}}
	if n, err := c.WriteBatch(msgs); n != 2 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	f.mu.Lock()
	same := len(f.wrote) == 2 && f.wrote[0] == f.wrote[1] && f.wrote[0].String() == dst.String()
	f.mu.Unlock()
	if !same {
		t.Fatalf("WriteTo addresses %v, want one *net.UDPAddr for %v, reused", f.wrote, dst)
	}
}

// TestNewRefusesLocalAddr: a conn whose local address is not an IP and
// port cannot be a socket.Conn.
func TestNewRefusesLocalAddr(t *testing.T) {
	f := fakeConn()
	f.local = textAddr("relay-7")
	if _, err := pconn.New(f, pconn.Config{}); !errors.Is(err, socket.ErrInvalidAddr) || !strings.Contains(err.Error(), "relay-7") {
		t.Fatalf("New = %v, want socket.ErrInvalidAddr naming the address", err)
	}
}

// TestClose: Close reports the PacketConn's Close error once and nil
// after; a conn closed by someone else makes reads and writes report the
// closed error.
func TestClose(t *testing.T) {
	f := fakeConn()
	c, err := pconn.New(f, pconn.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, errFakeClose) {
		t.Fatalf("first Close = %v, want the PacketConn's error", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}

	// Closed under the adapter.
	uc := listen(t, lo4, 0)
	c = adapt(t, uc, pconn.Config{})
	uc.Close()
	_, err = readOne(t, c, make([]byte, 8))
	if !errors.Is(err, socket.ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadBatch after the PacketConn was closed = %v, want socket.ErrClosed", err)
	}
	if n, err := c.TryReadBatch([]socket.Message{{Buf: make([]byte, 8)}}); n != 0 || !errors.Is(err, socket.ErrClosed) {
		t.Fatalf("TryReadBatch = %d, %v; want socket.ErrClosed", n, err)
	}
	msgs := []socket.Message{{Buf: []byte("x"), N: 1, Addr: netip.MustParseAddrPort("127.0.0.1:9")}}
	if n, err := c.WriteBatch(msgs); n != 0 || !errors.Is(err, socket.ErrClosed) {
		t.Fatalf("WriteBatch = %d, %v; want socket.ErrClosed", n, err)
	}
}

// TestTruncatedAtLimit: a datagram longer than MaxDatagramSize arrives
// cut to it, counted; one cut by the reader's buffer is counted too.
func TestTruncatedAtLimit(t *testing.T) {
	a := adapt(t, listen(t, lo4, 0), pconn.Config{})
	b := adapt(t, listen(t, lo4, 0), pconn.Config{MaxDatagramSize: 100})
	msgs := []socket.Message{
		{Buf: make([]byte, 150), N: 150, Addr: b.LocalAddr()},
		{Buf: make([]byte, 100), N: 100, Addr: b.LocalAddr()},
		{Buf: make([]byte, 80), N: 80, Addr: b.LocalAddr()},
	}
	for i := range msgs[0].Buf {
		msgs[0].Buf[i] = byte(i)
	}
	if n, err := a.WriteBatch(msgs); n != 3 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	m, err := readOne(t, b, make([]byte, 200))
	if err != nil || m.N != 100 || m.Buf[99] != 99 {
		t.Fatalf("150-byte datagram at limit 100: N %d, %v; want 100 bytes", m.N, err)
	}
	if m, err = readOne(t, b, make([]byte, 200)); err != nil || m.N != 100 {
		t.Fatalf("100-byte datagram: N %d, %v", m.N, err)
	}
	if m, err = readOne(t, b, make([]byte, 50)); err != nil || m.N != 50 {
		t.Fatalf("80-byte datagram into 50: N %d, %v", m.N, err)
	}
	if s := b.Stats(); s.Truncated != 2 || s.DatagramsIn != 3 || s.BytesIn != 250 {
		t.Fatalf("Stats = %+v, want 2 truncated, 3 in, 250 bytes", s)
	}
}
