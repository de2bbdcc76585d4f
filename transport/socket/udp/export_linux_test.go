package udp

import (
	"time"

	"golang.org/x/sys/unix"
)

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

// SetWaitClock replaces the clock c's Waits compare deadlines on (the time
// since a fixed origin); the timer itself stays real. A frozen clock makes
// repeated Waits with one timeout ask for the same deadline however long
// the test goroutine was descheduled between them. Call it on the goroutine
// that Waits.
func SetWaitClock(c *Conn, since func() time.Duration) { c.w.since = since }
