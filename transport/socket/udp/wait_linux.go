package udp

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// aLongTimeAgo is a read deadline in the past: setting it ends a parked
// read at once.
var aLongTimeAgo = time.Unix(1, 0)

// waiter is the Linux Wait/Wake. Wait parks the goroutine in the Go
// netpoller, like a blocking read, until the socket is readable, with the
// timeout as a read deadline; Wake ends it by moving the deadline into the
// past. No thread blocks and nothing is read: a MSG_PEEK tells whether a
// datagram is queued.
type waiter struct {
	uc     *net.UDPConn
	woken  atomic.Bool // a Wake not yet consumed by a Wait
	parked atomic.Bool // a Wait is (about to be) parked on the deadline
	closed atomic.Bool

	// Owned by the waiting goroutine; the callback is bound once so that
	// Wait allocates nothing.
	peek   [1]byte
	waitFn func(fd uintptr) bool
}

func newWaiter(uc *net.UDPConn) (*waiter, error) {
	w := &waiter{uc: uc}
	w.waitFn = w.ready
	return w, nil
}

// ready is the RawConn.Read callback: true (stop waiting) when a datagram
// is queued, false (park until readable) when not.
func (w *waiter) ready(fd uintptr) bool {
	_, _, err := unix.Recvfrom(int(fd), w.peek[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err != unix.EAGAIN && err != unix.EINTR
}

func (w *waiter) wait(rc syscall.RawConn, timeout time.Duration) error {
	if w.closed.Load() {
		return net.ErrClosed
	}
	if w.woken.Swap(false) {
		return nil
	}
	// Order matters: the deadline first, then parked, then a last look
	// at woken. A Wake that stored woken after that look sees parked and
	// moves the deadline after ours, so it cannot be lost.
	if err := w.uc.SetReadDeadline(time.Now().Add(max(timeout, 0))); err != nil {
		return err
	}
	w.parked.Store(true)
	var err error
	if !w.woken.Swap(false) {
		err = rc.Read(w.waitFn)
	}
	w.parked.Store(false)
	w.uc.SetReadDeadline(time.Time{})
	if err != nil && !os.IsTimeout(err) {
		return err
	}
	return nil
}

func (w *waiter) wake() {
	w.woken.Store(true)
	if w.parked.Load() {
		// A Wait that just returned may have cleared its deadline
		// already, leaving this one in place: reads clear a stale
		// deadline and retry (Conn.clearStaleDeadline).
		w.uc.SetReadDeadline(aLongTimeAgo)
	}
}

func (w *waiter) close() {
	w.closed.Store(true)
	w.wake()
}
