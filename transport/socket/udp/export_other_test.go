//go:build !linux

package udp

import "errors"

// Queued is Linux-only (SIOCINQ); the tests that use it run on Linux.
func Queued(*Conn) (int, error) { return 0, errors.ErrUnsupported }
