package udp_test

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// Drained says when a read emptied the receive queue — fewer datagrams
// than asked for and none held back — and not when a read only filled
// the caller's batch, with or without GRO (whose held-back segments are
// not drained).
func TestDrained(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  udp.Config
	}{{"batched", udp.Config{DisableGRO: true}}, {"GRO", udp.Config{}}} {
		t.Run(c.name, func(t *testing.T) {
			rx := open(t, lo4, c.cfg)
			tx := open(t, lo4, udp.Config{})
			const k = 10
			out := make([]socket.Message, k)
			for i := range out {
				out[i] = socket.Message{Buf: make([]byte, 64), N: 64, Addr: rx.LocalAddr()}
			}
			if n, err := tx.WriteBatch(out); n != k || err != nil {
				t.Fatalf("WriteBatch: %d, %v", n, err)
			}
			waitQueued(t, rx)
			time.Sleep(10 * time.Millisecond) // loopback delivers at once; let the rest land
			in := make([]socket.Message, 16)
			for i := range in {
				in[i].Buf = make([]byte, 2048)
			}
			n, err := rx.TryReadBatch(in[:4])
			if n != 4 || err != nil || rx.Drained() {
				t.Fatalf("a read of 4 with %d waiting: %d, %v, Drained %v", k, n, err, rx.Drained())
			}
			n, err = rx.TryReadBatch(in)
			if n != k-4 || err != nil || !rx.Drained() {
				t.Fatalf("a read of 16 with %d waiting: %d, %v, Drained %v", k-4, n, err, rx.Drained())
			}
			n, err = rx.TryReadBatch(in)
			if n != 0 || err != nil || !rx.Drained() {
				t.Fatalf("a read with nothing waiting: %d, %v, Drained %v", n, err, rx.Drained())
			}
			t.Logf("GRO on: %v, coalesced receives: %d", rx.Features().GRO, rx.Stats().GROReceives)
		})
	}
}
