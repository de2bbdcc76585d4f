package sockaddr

import (
	"errors"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		family  int
	}{
		{"127.0.0.1:9", "127.0.0.1:9", unix.AF_INET},
		{"127.0.0.1:65535", "127.0.0.1:65535", unix.AF_INET6}, // mapped on the way out, unmapped on the way in
		{"[::ffff:10.0.0.1]:7", "10.0.0.1:7", unix.AF_INET},
		{"[::1]:443", "[::1]:443", unix.AF_INET6},
		{"[fe80::1%3]:5", "[fe80::1%3]:5", unix.AF_INET6},
	} {
		var sa Raw
		if _, err := Put(&sa, netip.MustParseAddrPort(tc.in), tc.family); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got := AddrPort(&sa); got.String() != tc.out {
			t.Fatalf("%s: got %s, want %s", tc.in, got, tc.out)
		}
	}
	var sa Raw
	if _, err := Put(&sa, netip.MustParseAddrPort("[::1]:1"), unix.AF_INET); !errors.Is(err, ErrAddr) {
		t.Fatalf("IPv6 on an IPv4 socket: %v", err)
	}
	if _, err := Put(&sa, netip.AddrPort{}, unix.AF_INET6); !errors.Is(err, ErrAddr) {
		t.Fatalf("invalid address: %v", err)
	}
	sa.Family = 0
	if AddrPort(&sa).IsValid() {
		t.Fatal("unknown family converted")
	}
}

func TestNoAllocs(t *testing.T) {
	v4, v6 := netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("[::1]:2")
	var sa Raw
	if n := testing.AllocsPerRun(100, func() {
		Put(&sa, v4, unix.AF_INET)
		AddrPort(&sa)
		Put(&sa, v4, unix.AF_INET6)
		AddrPort(&sa)
		Put(&sa, v6, unix.AF_INET6)
		AddrPort(&sa)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
