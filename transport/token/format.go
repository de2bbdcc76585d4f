package token

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Sizes and limits of the format (docs/WIRE.md §14).
const (
	// Version is the token format version, the first byte of a sealed
	// token and of a public token.
	Version = 1

	// KeyLen is the size of a fleet Key.
	KeyLen = 32
	// KeyIDLen is the size of a key id (Key.ID).
	KeyIDLen = 4
	// SessionKeyLen is the size of each of a token's two session keys.
	SessionKeyLen = 32
	// NonceLen is the XChaCha20-Poly1305 nonce size.
	NonceLen = 24
	// TagLen is the Poly1305 tag size.
	TagLen = 16

	// MaxUserData is the most user data a token carries.
	MaxUserData = 256
	// MaxAddresses is the most server addresses a token names (fewer fit
	// with much user data: see MaxSealedLen).
	MaxAddresses = 32
	// MaxTimeout is the longest Params.Timeout: the u32 of milliseconds
	// the format holds, about 49.7 days.
	MaxTimeout = (1<<32 - 1) * 1e6 // nanoseconds

	// MaxExpires is the latest expiry a token holds, in unix seconds: the
	// end of the year 9999. A header naming a later one is ErrMalformed.
	MaxExpires = 253402300799

	// SealedHeaderLen is the sealed token's cleartext header: version,
	// length, key id, protocol id, expiry, nonce.
	SealedHeaderLen = 1 + 2 + KeyIDLen + 8 + 8 + NonceLen // 47
	// MinSealedLen is the smallest sealed token: one IPv4 address, no
	// user data.
	MinSealedLen = SealedHeaderLen + privateFixedLen + addrLen4 + TagLen // 149
	// MaxSealedLen is the largest sealed token Issue makes and Open
	// takes: 476 bytes, so that a token and about 100 bytes of handshake
	// fields fit one datagram at the minimum MTU of 576. A token is 142
	// bytes plus its user data plus 7 bytes per IPv4 and 19 per IPv6
	// address: with the full 256 bytes of user data that leaves room for
	// 4 IPv6 or 11 IPv4 addresses, with none for 17 IPv6 or all 32 IPv4.
	MaxSealedLen = 476

	// adLen is the associated data: the header up to the nonce.
	adLen = SealedHeaderLen - NonceLen // 23
	// privateFixedLen is the private part without addresses and user
	// data: client id, timeout, two keys, address count, user data length.
	privateFixedLen = 8 + 4 + 2*SessionKeyLen + 1 + 2 // 79
	// maxPrivateLen is the largest private plaintext.
	maxPrivateLen = MaxSealedLen - SealedHeaderLen - TagLen // 413
	// publicFixedLen is the public token without addresses and sealed
	// part: version, created, timeout, two keys, address count.
	publicFixedLen = 1 + 8 + 4 + 2*SessionKeyLen + 1 // 78

	addrLen4 = 1 + 4 + 2
	addrLen6 = 1 + 16 + 2
)

// sealedLen is the size of a sealed token for these addresses and this
// much user data.
func sealedLen(addrs []netip.AddrPort, userData int) int {
	return SealedHeaderLen + privateFixedLen + addrsLen(addrs) + userData + TagLen
}

// addrsLen is the encoded size of addrs, without the count byte.
func addrsLen(addrs []netip.AddrPort) int {
	n := 0
	for _, a := range addrs {
		if a.Addr().Is4() {
			n += addrLen4
		} else {
			n += addrLen6
		}
	}
	return n
}

// appendAddrs appends the count byte and the addresses: family 4 or 6,
// the address bytes, the port as u16 little-endian. The addresses must
// be valid (checkAddrs).
func appendAddrs(b []byte, addrs []netip.AddrPort) []byte {
	b = append(b, byte(len(addrs)))
	for _, a := range addrs {
		if a.Addr().Is4() {
			ip := a.Addr().As4()
			b = append(b, 4)
			b = append(b, ip[:]...)
		} else {
			ip := a.Addr().As16()
			b = append(b, 6)
			b = append(b, ip[:]...)
		}
		b = binary.LittleEndian.AppendUint16(b, a.Port())
	}
	return b
}

// parseAddrs reads what appendAddrs writes into dst and returns the
// number of addresses and bytes consumed. It allocates nothing.
func parseAddrs(b []byte, dst *[MaxAddresses]netip.AddrPort) (count, n int, err error) {
	if len(b) < 1 {
		return 0, 0, fmt.Errorf("%w: no address count", ErrMalformed)
	}
	count = int(b[0])
	if count < 1 || count > MaxAddresses {
		return 0, 0, fmt.Errorf("%w: %d server addresses, want 1 to %d", ErrMalformed, count, MaxAddresses)
	}
	n = 1
	for i := range count {
		if n >= len(b) {
			return 0, 0, fmt.Errorf("%w: address %d of %d missing", ErrMalformed, i+1, count)
		}
		var a netip.Addr
		switch fam := b[n]; fam {
		case 4:
			if len(b)-n < addrLen4 {
				return 0, 0, fmt.Errorf("%w: address %d of %d cut short", ErrMalformed, i+1, count)
			}
			a = netip.AddrFrom4([4]byte(b[n+1 : n+5]))
			n += 5
		case 6:
			if len(b)-n < addrLen6 {
				return 0, 0, fmt.Errorf("%w: address %d of %d cut short", ErrMalformed, i+1, count)
			}
			a = netip.AddrFrom16([16]byte(b[n+1 : n+17]))
			if a.Is4In6() {
				return 0, 0, fmt.Errorf("%w: address %d is IPv4-mapped IPv6 (written as family 4)", ErrMalformed, i+1)
			}
			n += 17
		default:
			return 0, 0, fmt.Errorf("%w: address %d has family %d, want 4 or 6", ErrMalformed, i+1, fam)
		}
		port := binary.LittleEndian.Uint16(b[n:])
		n += 2
		if port == 0 {
			return 0, 0, fmt.Errorf("%w: address %d has port 0", ErrMalformed, i+1)
		}
		dst[i] = netip.AddrPortFrom(a, port)
	}
	return count, n, nil
}

// checkAddrs validates server addresses for Issue and returns them
// canonical: IPv4-mapped IPv6 unmapped (so a server compares one form).
func checkAddrs(addrs []netip.AddrPort) ([]netip.AddrPort, error) {
	if len(addrs) < 1 || len(addrs) > MaxAddresses {
		return nil, fmt.Errorf("%w: %d server addresses, want 1 to %d", ErrInvalidParams, len(addrs), MaxAddresses)
	}
	out := make([]netip.AddrPort, len(addrs))
	for i, a := range addrs {
		ip := a.Addr()
		switch {
		case !ip.IsValid():
			return nil, fmt.Errorf("%w: server address %d is not set", ErrInvalidParams, i+1)
		case ip.Zone() != "":
			return nil, fmt.Errorf("%w: server address %d (%v) has a zone, which a token cannot carry", ErrInvalidParams, i+1, a)
		case a.Port() == 0:
			return nil, fmt.Errorf("%w: server address %d (%v) has port 0", ErrInvalidParams, i+1, a)
		}
		out[i] = netip.AddrPortFrom(ip.Unmap(), a.Port())
		for j := range i {
			if out[j] == out[i] {
				return nil, fmt.Errorf("%w: server address %d (%v) repeats address %d", ErrInvalidParams, i+1, a, j+1)
			}
		}
	}
	return out, nil
}
