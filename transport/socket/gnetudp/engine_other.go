//go:build !linux

package gnetudp

import (
	"net/netip"

	"github.com/tickwire/tickwire/transport/socket"
)

// sysState is empty where the engine is not implemented.
type sysState struct{}

// Open returns ErrUnsupported: the engine drains and sends with
// recvmmsg/sendmmsg, which this platform lacks. Use package
// transport/socket/udp instead.
func Open(laddr netip.AddrPort, cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, ErrUnsupported
}

// WriteBatch returns ErrUnsupported: Open never returns an Engine here.
func (e *Engine) WriteBatch(msgs []socket.Message) (int, error) { return 0, ErrUnsupported }

// Close returns nil: Open never returns an Engine here.
func (e *Engine) Close() error { return nil }
