package gnetudp

import (
	"fmt"
	"net/netip"

	"github.com/tickwire/tickwire/internal/sockaddr"
	"github.com/tickwire/tickwire/transport/socket"
)

// putSockaddr is sockaddr.Put with this package's error.
func putSockaddr(sa *sockaddr.Raw, ap netip.AddrPort, family int) (uint32, error) {
	n, err := sockaddr.Put(sa, ap, family)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", socket.ErrInvalidAddr, err)
	}
	return n, nil
}
