//go:build !unix && !windows

package udp

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"syscall"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
)

const msgTrunc = 0

// openBest is Open and FromConn on platforms without a known socket path: the plain
// socket, whose TryReadBatch reports errors.ErrUnsupported.
func openBest(uc *net.UDPConn, cfg Config) (impl, error) { return openPlain(uc, cfg) }

func isTruncation(error) bool { return false }

// tryRecvState is empty: there is no non-blocking receive here.
type tryRecvState struct{}

func (*tryRecvState) init() {}

// errNoTryRead is what TryReadBatch reports here.
var errNoTryRead = fmt.Errorf("udp: TryReadBatch on %s: no read without waiting: %w", runtime.GOOS, errors.ErrUnsupported)

// tryRecv reports errors.ErrUnsupported: this platform offers no way to
// read without waiting.
func (c *plainConn) tryRecv(*socket.Message, *int64) (ok, cut bool, err error) {
	return false, false, errNoTryRead
}

// socketBuffers reports 0, 0: the sizes are not known here.
func socketBuffers(syscall.RawConn) (rcv, snd int) { return 0, 0 }

// setTimestamps reports false: receive timestamps are Linux-only.
func setTimestamps(syscall.RawConn, bool) bool { return false }

// oob is nil: there are no receive timestamps here.
func (c *plainConn) oob() []byte { return nil }

// age is 0: there are no receive timestamps here.
func (c *plainConn) age([]byte, *int64) time.Duration { return 0 }
