package udp

import "golang.org/x/sys/unix"

// Queued returns the length of the datagram at the head of c's kernel
// receive queue (SIOCINQ): 0 when the queue is empty. Tests poll it to
// know a datagram has arrived without reading it.
func Queued(c *Conn) (int, error) {
	rc, err := c.impl.udpConn().SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		return 0, err
	}
	return n, ierr
}

// TimerArms returns how many times c's Waits armed the timer. Call it on
// the goroutine that Waits.
func TimerArms(c *Conn) uint64 { return c.w.arms }

// RearmEarly is how far before a Wait's deadline a kept timer may fire.
const RearmEarly = rearmEarly
