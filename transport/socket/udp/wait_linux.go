package udp

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// waiter is the Linux Wait/Wake: ppoll(2) on the socket and an eventfd
// that Wake writes to. The poll runs inside RawConn.Control, so the socket
// cannot be closed under it; Close wakes it first.
type waiter struct {
	mu     sync.RWMutex // held shared by Wait and Wake, exclusively by close
	efd    int
	closed bool
	one    [8]byte // the eventfd increment Wake writes

	// Owned by the waiting goroutine: the poll's arguments and result,
	// and the callback bound once so that Wait allocates nothing.
	drain  [8]byte // where Wait reads the eventfd counter back to 0
	ts     unix.Timespec
	perr   error
	pollFn func(fd uintptr)
}

func newWaiter() (*waiter, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	w := &waiter{efd: efd}
	binary.NativeEndian.PutUint64(w.one[:], 1)
	w.pollFn = w.poll
	return w, nil
}

// wait blocks in ppoll on rc's socket and the eventfd for up to timeout.
func (w *waiter) wait(rc syscall.RawConn, timeout time.Duration) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return net.ErrClosed
	}
	if timeout < 0 {
		timeout = 0
	}
	w.ts = unix.NsecToTimespec(int64(timeout))
	err := rc.Control(w.pollFn)
	if err != nil {
		return err
	}
	if w.perr != nil {
		return os.NewSyscallError("ppoll", w.perr)
	}
	return nil
}

// poll is the RawConn.Control callback: one ppoll of the socket and the
// eventfd, then the eventfd reset if it fired.
func (w *waiter) poll(fd uintptr) {
	fds := [2]unix.PollFd{
		{Fd: int32(fd), Events: unix.POLLIN},
		{Fd: int32(w.efd), Events: unix.POLLIN},
	}
	_, w.perr = unix.Ppoll(fds[:], &w.ts, nil)
	if errors.Is(w.perr, unix.EINTR) {
		w.perr = nil // a signal: an early return, which Wait allows
	}
	if fds[1].Revents&unix.POLLIN != 0 {
		unix.Read(w.efd, w.drain[:]) // back to 0; EAGAIN if raced, harmless
	}
}

// wake makes the current or next wait return.
func (w *waiter) wake() {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if !w.closed {
		unix.Write(w.efd, w.one[:]) // EAGAIN only at a counter of 2^64-2: still awake
	}
}

// close wakes any wait and releases the eventfd once no wait holds it.
func (w *waiter) close() {
	w.wake()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		unix.Close(w.efd)
	}
}
