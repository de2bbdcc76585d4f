package udp

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// waiter is the Linux Wait/Wake: an epoll instance of our own holding the
// socket (level-triggered), an eventfd that Wake writes and a timerfd armed
// with each Wait's timeout. The epoll fd itself is registered with the Go
// netpoller (as an *os.File), so a Wait parks its goroutine like a
// blocking read — no thread blocks — and every way out of it (a datagram,
// a Wake, the timeout) is readiness, never a deadline error: Wait
// allocates nothing.
//
// The timer is re-armed only when the deadline changes: a loop woken by a
// datagram before its deadline usually waits for the same deadline again
// (Endpoint.NextDeadline did not move), and then the armed timer already
// fires at the right time, so that Wait skips its timerfd_settime.
type waiter struct {
	mu     sync.RWMutex // shared by Wait and Wake, exclusive in close
	closed bool
	ep     *os.File // the epoll fd, in the netpoller
	rc     syscall.RawConn
	efd    int // eventfd: Wake
	tfd    int // timerfd: the timeout
	one    [8]byte

	// Owned by the waiting goroutine; the callback is bound once.
	events [3]unix.EpollEvent
	drain  [8]byte
	spec   unix.ItimerSpec
	readFn func(fd uintptr) bool
	since  func() time.Duration // the clock of due: time since a fixed origin (tests freeze it)
	due    time.Duration        // on since's clock: when the armed timer fires
	armed  bool                 // the timer is armed for due and has not been read as fired
	arms   uint64               // timerfd_settime calls, for tests

	syscalls atomic.Uint64 // Stats.WaitSyscalls
}

// Re-arm tolerances: a Wait whose deadline (now + timeout) lies within
// [due − rearmEarly, due + rearmLate] of the armed timer's keeps it. A
// loop that computes the same deadline again passes a timeout a few
// microseconds shorter, measured from a later now: the deadlines differ
// by that jitter. The kept timer may fire up to rearmEarly before the
// asked-for deadline (a wake-up that finds little to do) or rearmLate after
// it (lateness far below any protocol timer's granularity).
const (
	rearmEarly = 10 * time.Microsecond
	rearmLate  = 100 * time.Microsecond
)

func newWaiter(uc *net.UDPConn) (_ *waiter, err error) {
	w := &waiter{efd: -1, tfd: -1}
	defer func() {
		if err != nil {
			w.release()
		}
	}()
	sc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	w.ep = os.NewFile(uintptr(epfd), "tickwire-wait-epoll")
	if w.rc, err = w.ep.SyscallConn(); err != nil {
		return nil, err
	}
	if w.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	if w.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	add := func(fd int) error {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		return os.NewSyscallError("epoll_ctl", unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev))
	}
	// The socket's fd stays open as long as uc does, and the waiter is
	// closed before uc.
	var sockErr error
	if err := sc.Control(func(fd uintptr) { sockErr = add(int(fd)) }); err != nil {
		return nil, err
	}
	if sockErr != nil {
		return nil, sockErr
	}
	if err := add(w.efd); err != nil {
		return nil, err
	}
	if err := add(w.tfd); err != nil {
		return nil, err
	}
	binary.NativeEndian.PutUint64(w.one[:], 1)
	w.readFn = w.ready
	base := time.Now()
	w.since = func() time.Duration { return time.Since(base) }
	return w, nil
}

// ready is the epoll fd's RawConn.Read callback: true (stop waiting) when
// any of the three has an event, false (park until the epoll fd is
// readable) when none has. It resets the eventfd and timerfd it finds
// fired.
func (w *waiter) ready(fd uintptr) bool {
	w.syscalls.Add(1)
	n, err := unix.EpollWait(int(fd), w.events[:], 0)
	for errors.Is(err, unix.EINTR) {
		w.syscalls.Add(1)
		n, err = unix.EpollWait(int(fd), w.events[:], 0)
	}
	if err != nil {
		w.armed = false // cannot tell whether it fired: arm it next time
		return true     // cannot tell: stop waiting; a wake-up with nothing to read is allowed
	}
	for _, ev := range w.events[:n] {
		switch int(ev.Fd) {
		case w.efd:
			w.syscalls.Add(1)
			unix.Read(w.efd, w.drain[:])
		case w.tfd:
			w.syscalls.Add(1)
			unix.Read(w.tfd, w.drain[:])
			w.armed = false
		}
	}
	return n > 0
}

func (w *waiter) wait(timeout time.Duration) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return net.ErrClosed
	}
	// Arm the timer (a zero value would disarm it: wait at least 1 ns),
	// unless it is armed for this deadline already. No disarm afterwards:
	// the next Wait's settime resets the timer and its expiry count, so a
	// late expiry cannot end that Wait early; a Wait that keeps the timer
	// wants that very expiry.
	timeout = max(timeout, 1)
	due := w.since() + timeout
	if !w.armed || due < w.due-rearmLate || due > w.due+rearmEarly {
		w.spec.Value = unix.NsecToTimespec(int64(timeout))
		w.syscalls.Add(1)
		w.arms++
		if err := unix.TimerfdSettime(w.tfd, 0, &w.spec, nil); err != nil {
			w.armed = false
			return os.NewSyscallError("timerfd_settime", err)
		}
		w.due, w.armed = due, true
	}
	err := w.rc.Read(w.readFn)
	if err != nil {
		return net.ErrClosed // the epoll fd was closed under the Wait
	}
	return nil
}

// syscallCount is Stats.WaitSyscalls; safe from any goroutine.
func (w *waiter) syscallCount() uint64 { return w.syscalls.Load() }

func (w *waiter) wake() {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if !w.closed {
		unix.Write(w.efd, w.one[:]) // EAGAIN only at a counter near 2^64: still readable
	}
}

// close ends a parked Wait (closing the epoll file evicts it from the
// netpoller) and releases the descriptors once no Wait or Wake holds them.
func (w *waiter) close() {
	if w.ep != nil {
		w.ep.Close()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		w.release()
	}
}

func (w *waiter) release() {
	if w.ep != nil {
		w.ep.Close()
	}
	if w.efd >= 0 {
		unix.Close(w.efd)
	}
	if w.tfd >= 0 {
		unix.Close(w.tfd)
	}
}
