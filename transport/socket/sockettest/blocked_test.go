package sockettest

import (
	"net/netip"
	"testing"

	"github.com/tickwire/tickwire/transport/socket"
)

// stuck is a Conn whose ReadBatch blocks on a channel until released.
type stuck struct {
	socket.Conn
	release chan struct{}
}

func (s stuck) ReadBatch([]socket.Message) (int, error) {
	<-s.release
	return 0, socket.Closed("read", netip.AddrPort{})
}

// TestUntilBlocked: the dump parser finds a call parked in its read, and
// none once it has returned; untilBlocked waits for the call to start, so
// it cannot pass by not yet seeing the frame.
func TestUntilBlocked(t *testing.T) {
	buf := make([]byte, 1<<20)
	const frame = "sockettest.(*call).read"
	if found, _ := blockedState(buf, frame); found {
		t.Fatal("found a read call before any goroutine runs one")
	}
	for range 20 { // the goroutine's start races untilBlocked: try it often
		s := stuck{release: make(chan struct{})}
		k := newCall()
		done := make(chan error, 1)
		go func() { done <- k.read(s) }()
		if err := k.untilBlocked("read", DefaultTimeout); err != nil {
			t.Fatal(err)
		}
		if found, blocked := blockedState(buf, frame); !found || !blocked {
			t.Fatalf("after untilBlocked: found %v, blocked %v; want both for a call parked on a channel", found, blocked)
		}
		close(s.release)
		<-done
		if found, _ := blockedState(buf, frame); found {
			t.Fatal("the read call is still in the dump after it returned")
		}
	}
}
