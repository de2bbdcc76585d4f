// Package sockaddr converts between netip.AddrPort and the kernel's raw
// socket addresses without allocating, for the sockets that issue
// recvmmsg/sendmmsg themselves (transport/socket/udp and gnetudp).
package sockaddr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrAddr is wrapped by Put for an address the socket cannot send to.
var ErrAddr = errors.New("sockaddr: address does not fit the socket")

// Raw is storage for either address family: a RawSockaddrInet6 is the
// larger of the two, and a RawSockaddrInet4 is read through a pointer cast
// when Family says so.
type Raw = unix.RawSockaddrInet6

// Len is the length to offer the kernel for a Raw it fills in.
const Len = unix.SizeofSockaddrInet6

// Port reads the port, which the kernel stores in network byte order.
func Port(sa *Raw) uint16 {
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	return uint16(p[0])<<8 | uint16(p[1])
}

// SetPort writes the port in network byte order.
func SetPort(sa *Raw, port uint16) {
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(port>>8), byte(port)
}

// AddrPort converts a received sockaddr to a netip.AddrPort. IPv4-mapped
// IPv6 addresses (from a dual-stack socket) come out as IPv4. It allocates
// nothing except for a scoped (link-local) IPv6 source, whose zone is the
// numeric interface index. An unknown family gives the zero AddrPort.
func AddrPort(sa *Raw) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), Port(sa))
	case unix.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		if a.Is4In6() {
			a = a.Unmap()
		} else if sa.Scope_id != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(sa.Scope_id), 10))
		}
		return netip.AddrPortFrom(a, Port(sa))
	}
	return netip.AddrPort{}
}

// Put encodes ap into sa for a socket of the given family (AF_INET or
// AF_INET6) and returns the sockaddr length. An IPv4 address on an IPv6
// socket is written IPv4-mapped. It allocates only when it reports an
// error (wrapping ErrAddr) or resolves a named zone.
func Put(sa *Raw, ap netip.AddrPort, family int) (uint32, error) {
	a := ap.Addr()
	if family == unix.AF_INET {
		a = a.Unmap()
		if !a.Is4() {
			return 0, fmt.Errorf("%w: %v on an IPv4 socket", ErrAddr, ap)
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		sa4.Addr = a.As4()
		sa4.Zero = [8]uint8{}
		SetPort(sa, ap.Port())
		return unix.SizeofSockaddrInet4, nil
	}
	if !a.IsValid() {
		return 0, fmt.Errorf("%w: %v", ErrAddr, ap)
	}
	var scope uint32
	if z := a.Zone(); z != "" {
		var err error
		if scope, err = zoneIndex(z); err != nil {
			return 0, fmt.Errorf("%w: %v: %v", ErrAddr, ap, err)
		}
	}
	sa.Family = unix.AF_INET6
	sa.Flowinfo = 0
	sa.Addr = a.As16()
	sa.Scope_id = scope
	SetPort(sa, ap.Port())
	return unix.SizeofSockaddrInet6, nil
}

// zoneIndex resolves an IPv6 zone: a number is the interface index,
// anything else an interface name.
func zoneIndex(zone string) (uint32, error) {
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n), nil
	}
	ifi, err := net.InterfaceByName(zone)
	if err != nil {
		return 0, err
	}
	return uint32(ifi.Index), nil
}

// Family reports the address family of the socket behind fd.
func Family(fd int) (int, error) {
	return unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
}

// Name returns the address fd is bound to, IPv4-mapped addresses as IPv4.
func Name(fd int) (netip.AddrPort, error) {
	var sa Raw
	l := uint32(Len)
	if _, _, e := unix.Syscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l))); e != 0 {
		return netip.AddrPort{}, e
	}
	return AddrPort(&sa), nil
}
