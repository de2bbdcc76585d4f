//go:build unix

package bench

import (
	"net"
	"syscall"
)

// recvBuffer returns the receive buffer size of c as the kernel reports
// it (SO_RCVBUF).
func recvBuffer(c *net.UDPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		n, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	}); err != nil {
		return 0, err
	}
	return n, serr
}
