package pconn_test

import (
	"math"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/pconn"
)

// exchange returns a function that writes one batch of 64 datagrams from a
// to b and reads them all back, failing on any error; and an idle
// TryReadBatch on b.
func exchange(t *testing.T, a, b *pconn.Conn, size int) (batch, idle func()) {
	out := make([]socket.Message, socket.IdealBatchSize)
	for i := range out {
		out[i] = socket.Message{Buf: make([]byte, size), N: size, Addr: b.LocalAddr()}
	}
	in := make([]socket.Message, socket.IdealBatchSize)
	for i := range in {
		in[i].Buf = make([]byte, 2048)
	}
	batch = func() {
		if n, err := a.WriteBatch(out); n != len(out) || err != nil {
			t.Fatalf("WriteBatch = %d, %v", n, err)
		}
		for got := 0; got < len(in); {
			n, err := b.ReadBatch(in[got:])
			if err != nil {
				t.Fatalf("ReadBatch: %v", err)
			}
			got += n
		}
	}
	idle = func() {
		if n, err := b.TryReadBatch(in); n != 0 || err != nil {
			t.Fatalf("idle TryReadBatch = %d, %v", n, err)
		}
	}
	return batch, idle
}

// pairOf opens two adapters of kind k on loopback with 1 MiB socket
// buffers (a batch of 64 is never dropped) and a watchdog closing them if
// a datagram is lost anyway.
func pairOf(t *testing.T, wrapIdx int) (a, b *pconn.Conn) {
	k := kinds[wrapIdx]
	a = adapt(t, k.wrap(listen(t, lo4, 1<<20)), pconn.Config{})
	b = adapt(t, k.wrap(listen(t, lo4, 1<<20)), pconn.Config{})
	w := time.AfterFunc(20*time.Second, func() { a.Close(); b.Close() })
	t.Cleanup(func() { w.Stop() })
	return a, b
}

// TestNoAllocs: over a *net.UDPConn the steady state allocates nothing —
// a WriteBatch of 64, the ReadBatch calls that take them (the receiving
// goroutine's reads included: the count is process-wide), an idle
// TryReadBatch, and a Wait that is woken or times out.
func TestNoAllocs(t *testing.T) {
	for _, size := range []int{64, 1200} {
		a, b := pairOf(t, 0)
		batch, idle := exchange(t, a, b, size)
		if n := testing.AllocsPerRun(50, batch); n != 0 {
			t.Errorf("%d B: %v allocations per batch of 64, want 0", size, n)
		}
		if n := testing.AllocsPerRun(50, idle); n != 0 {
			t.Errorf("%v allocations per idle TryReadBatch, want 0", n)
		}
	}
	_, b := pairOf(t, 0)
	for name, f := range map[string]func(){
		"woken":     func() { b.Wake(); b.Wait(time.Second) },
		"timed out": func() { b.Wait(50 * time.Microsecond) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("Wait %s: %v allocations, want 0", name, n)
		}
	}
}

// TestAllocsGeneric measures a conn seen only as a net.PacketConn (a
// *net.UDPConn behind the interface): the adapter adds nothing of its own
// (sends reuse the cached *net.UDPAddr), so what remains is what the
// standard library's ReadFrom allocates to return each source as a
// net.Addr: the *net.UDPAddr and its IP slice, two objects per datagram
// (a memory profile puts both in net.(*UDPConn).ReadFrom). The test fails
// if that grows.
func TestAllocsGeneric(t *testing.T) {
	const perDatagram = 2 // the *net.UDPAddr ReadFrom returns, and its IP
	a, b := pairOf(t, 1)
	batch, idle := exchange(t, a, b, 200)
	n := testing.AllocsPerRun(50, batch)
	got := n / socket.IdealBatchSize
	t.Logf("generic net.PacketConn: %.2f allocations per datagram", got)
	if math.Round(got) > perDatagram {
		t.Errorf("%.2f allocations per datagram, want at most %d (ReadFrom's net.Addr and its IP)", got, perDatagram)
	}
	if n := testing.AllocsPerRun(50, idle); n != 0 {
		t.Errorf("%v allocations per idle TryReadBatch, want 0", n)
	}
}
