//go:build !linux

package gnetudp

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"

	"github.com/tickwire/tickwire/transport/socket"
)

// sysState is empty where the engine is not implemented.
type sysState struct{}

// errNoEngine is what Open reports here.
var errNoEngine = fmt.Errorf("gnetudp: no engine on %s (it needs recvmmsg/sendmmsg): %w", runtime.GOOS, errors.ErrUnsupported)

// Open returns an error wrapping errors.ErrUnsupported: the engine drains
// and sends with recvmmsg/sendmmsg, which this platform lacks. Use package
// transport/socket/udp instead.
func Open(laddr netip.AddrPort, cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, errNoEngine
}

// WriteBatch returns an error wrapping errors.ErrUnsupported: Open never
// returns an Engine here.
func (e *Engine) WriteBatch(msgs []socket.Message) (int, error) { return 0, errNoEngine }

// Close returns nil: Open never returns an Engine here.
func (e *Engine) Close() error { return nil }
