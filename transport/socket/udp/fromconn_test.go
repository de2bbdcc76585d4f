package udp_test

import (
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// listenUDP binds a standard-library socket on 127.0.0.1, closed at
// cleanup (closing it twice is harmless).
func listenUDP(t *testing.T) *net.UDPConn {
	t.Helper()
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	return uc
}

// TestFromConn: the Conn keeps the caller's socket (same address, the
// batched path on Linux), clears a deadline the caller left on it, applies
// the buffer sizes, and its Close closes the socket.
func TestFromConn(t *testing.T) {
	uc := listenUDP(t)
	// A deadline in the past would fail every read through the RawConn.
	if err := uc.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	c, err := udp.FromConn(uc, udp.Config{RecvBuffer: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, want := c.LocalAddr().String(), uc.LocalAddr().String(); got != want {
		t.Fatalf("LocalAddr = %s, want the socket's %s", got, want)
	}
	if runtime.GOOS == "linux" {
		if f := c.Features(); !f.BatchRecv || !f.BatchSend {
			t.Fatalf("Features = %+v, want the batched path", f)
		}
		if s := c.Stats(); s.RecvBufferBytes < 1<<20 {
			t.Fatalf("RecvBufferBytes = %d after RecvBuffer 1 MiB", s.RecvBufferBytes)
		}
	}
	peer := open(t, lo4, udp.Config{})
	out := []socket.Message{{Buf: []byte("hello"), N: 5, Addr: c.LocalAddr()}}
	if n, err := peer.WriteBatch(out); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	in := []socket.Message{{Buf: make([]byte, 64)}}
	watchdog := time.AfterFunc(5*time.Second, func() { c.Close() })
	defer watchdog.Stop()
	if n, err := c.ReadBatch(in); n != 1 || err != nil || string(in[0].Buf[:in[0].N]) != "hello" || in[0].Addr != peer.LocalAddr() {
		t.Fatalf("ReadBatch = %d, %v, %q from %v", n, err, in[0].Buf[:in[0].N], in[0].Addr)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := uc.ReadFromUDPAddrPort(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the socket after Conn.Close: ReadFrom = %v, want net.ErrClosed", err)
	}
}

// TestFromConnRefuses: a nil conn, a connected conn and an invalid config
// are refused, and a refused conn stays open and the caller's.
func TestFromConnRefuses(t *testing.T) {
	if _, err := udp.FromConn(nil, udp.Config{}); !errors.Is(err, udp.ErrInvalidConfig) {
		t.Errorf("FromConn(nil) = %v, want ErrInvalidConfig", err)
	}
	srv := listenUDP(t)
	dialed, err := net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	if _, err := udp.FromConn(dialed, udp.Config{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("FromConn(connected) = %v, want errors.ErrUnsupported", err)
	}
	uc := listenUDP(t)
	if _, err := udp.FromConn(uc, udp.Config{BatchSize: -1}); !errors.Is(err, udp.ErrInvalidConfig) {
		t.Errorf("FromConn(BatchSize -1) = %v, want ErrInvalidConfig", err)
	}
	// Both refused conns still work.
	if _, err := dialed.Write([]byte("x")); err != nil {
		t.Errorf("connected conn after a refused FromConn: %v", err)
	}
	if _, err := uc.WriteToUDPAddrPort([]byte("x"), srv.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Errorf("conn after a refused FromConn: %v", err)
	}
	// A closed conn is refused too.
	closed := listenUDP(t)
	closed.Close()
	if _, err := udp.FromConn(closed, udp.Config{}); err == nil {
		t.Error("FromConn(closed conn) = nil error")
	}
}

// TestFromConnDeadline: a deadline set on the socket after FromConn (which
// the caller should not do) shows as what it is: ReadBatch and
// TryReadBatch return a net.Error with Timeout() true, not the closed
// error, and the Conn works again once the deadline is cleared.
func TestFromConnDeadline(t *testing.T) {
	uc := listenUDP(t)
	c, err := udp.FromConn(uc, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := uc.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	in := []socket.Message{{Buf: make([]byte, 64)}}
	for name, read := range map[string]func([]socket.Message) (int, error){"ReadBatch": c.ReadBatch, "TryReadBatch": c.TryReadBatch} {
		_, err := read(in)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || errors.Is(err, net.ErrClosed) {
			t.Errorf("%s past a deadline = %v; want a net.Error with Timeout() true", name, err)
		}
	}
	if err := uc.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.TryReadBatch(in); n != 0 || err != nil {
		t.Fatalf("TryReadBatch after clearing the deadline = %d, %v", n, err)
	}
}
