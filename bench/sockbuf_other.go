//go:build !unix

package bench

import (
	"errors"
	"net"
)

// recvBuffer is not measured off unix.
func recvBuffer(*net.UDPConn) (int, error) { return 0, errors.ErrUnsupported }
