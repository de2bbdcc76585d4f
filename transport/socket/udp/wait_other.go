//go:build !linux

package udp

import (
	"net"
	"sync"
	"time"
)

// waiter is the portable Wait/Wake: it sleeps for the timeout or until
// Wake. It does not wake for an arriving datagram (the standard library
// has no readiness wait without a read), so on these platforms a loop
// using Wait reacts at its timeout, as a fixed-period loop would.
type waiter struct {
	woken  chan struct{}
	mu     sync.Mutex
	closed bool
}

func newWaiter(*net.UDPConn) (*waiter, error) { return &waiter{woken: make(chan struct{}, 1)}, nil }

func (w *waiter) wait(timeout time.Duration) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return net.ErrClosed
	}
	t := time.NewTimer(max(timeout, 0))
	defer t.Stop()
	select {
	case <-w.woken:
	case <-t.C:
	}
	w.mu.Lock()
	closed = w.closed
	w.mu.Unlock()
	if closed {
		return net.ErrClosed // Close ended this Wait
	}
	return nil
}

// syscallCount is Stats.WaitSyscalls: this waiter makes none.
func (w *waiter) syscallCount() uint64 { return 0 }

func (w *waiter) wake() {
	select {
	case w.woken <- struct{}{}:
	default:
	}
}

func (w *waiter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wake()
}
