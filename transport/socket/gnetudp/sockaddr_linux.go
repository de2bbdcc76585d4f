package gnetudp

// These sockaddr conversions mirror the small helpers of package
// transport/socket/udp (sockaddr_linux.go), kept here so that gnetudp
// depends on no unexported code of another package.

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSockaddr is storage for either address family: a RawSockaddrInet6 is
// the larger of the two, and a RawSockaddrInet4 is read through a pointer
// cast when Family says so.
type rawSockaddr = unix.RawSockaddrInet6

// port reads the port, which the kernel stores in network byte order.
func port(sa *rawSockaddr) uint16 {
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	return uint16(p[0])<<8 | uint16(p[1])
}

func setPort(sa *rawSockaddr, port uint16) {
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(port>>8), byte(port)
}

// addrPortFromRaw converts a received sockaddr to a netip.AddrPort,
// IPv4-mapped addresses as IPv4. It allocates only for a scoped IPv6
// source, whose zone is the numeric interface index.
func addrPortFromRaw(sa *rawSockaddr) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port(sa))
	case unix.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		if a.Is4In6() {
			a = a.Unmap()
		} else if sa.Scope_id != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(sa.Scope_id), 10))
		}
		return netip.AddrPortFrom(a, port(sa))
	}
	return netip.AddrPort{}
}

// putSockaddr encodes ap into sa for a socket of the given family and
// returns the sockaddr length. An IPv4 address on an IPv6 socket is written
// IPv4-mapped. It allocates only when it reports an error or resolves a
// named zone.
func putSockaddr(sa *rawSockaddr, ap netip.AddrPort, family int) (uint32, error) {
	a := ap.Addr()
	if family == unix.AF_INET {
		a = a.Unmap()
		if !a.Is4() {
			return 0, fmt.Errorf("%w: %v on an IPv4 engine", ErrInvalidAddr, ap)
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		sa4.Addr = a.As4()
		sa4.Zero = [8]uint8{}
		setPort(sa, ap.Port())
		return unix.SizeofSockaddrInet4, nil
	}
	if !a.IsValid() {
		return 0, fmt.Errorf("%w: %v", ErrInvalidAddr, ap)
	}
	var scope uint32
	if z := a.Zone(); z != "" {
		var err error
		if scope, err = zoneIndex(z); err != nil {
			return 0, fmt.Errorf("%w: %v: %v", ErrInvalidAddr, ap, err)
		}
	}
	sa.Family = unix.AF_INET6
	sa.Flowinfo = 0
	sa.Addr = a.As16()
	sa.Scope_id = scope
	setPort(sa, ap.Port())
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

// sockname returns the address fd is bound to, IPv4-mapped addresses as
// IPv4.
func sockname(fd int) (netip.AddrPort, error) {
	var sa rawSockaddr
	l := uint32(unix.SizeofSockaddrInet6)
	if _, _, e := unix.Syscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l))); e != 0 {
		return netip.AddrPort{}, e
	}
	return addrPortFromRaw(&sa), nil
}
