package token

import (
	"flag"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests (0: the fixed default)")

// testSeed returns the randomized tests' seed and logs how to rerun.
func testSeed(t testing.TB, def uint64) uint64 {
	t.Helper()
	s := def
	if *seedFlag != 0 {
		s = *seedFlag
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce: go test ./transport/token -run '^%s$' -seed=%d", t.Name(), s)
		}
	})
	return s
}

// seededReader is a deterministic randomness source for Issue.
func seededReader(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return rand.NewChaCha8(s)
}

// testKey is the key 00 01 … 1f.
func testKey() Key {
	var k Key
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

// t0 is the tests' fixed "now": 2026-12-01 00:00:00 UTC.
var t0 = time.Unix(1796083200, 0)

// baseParams are valid parameters: one IPv4 and one IPv6 server.
func baseParams() Params {
	return Params{
		ProtocolID: 0x1122334455667788,
		ClientID:   42,
		Created:    t0,
		Expires:    t0.Add(time.Hour),
		Timeout:    10 * time.Second,
		Servers:    []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:7000"), netip.MustParseAddrPort("[2001:db8::1]:7000")},
		UserData:   []byte("match 7"),
	}
}

// randomParams draws valid parameters that fit MaxSealedLen.
func randomParams(r *rand.Rand) Params {
	p := Params{
		ProtocolID: r.Uint64(),
		ClientID:   r.Uint64(),
		Created:    time.Unix(r.Int64N(MaxExpires-1<<30), 0),
		Timeout:    time.Duration(r.Int64N(MaxTimeout/1e6+1)) * time.Millisecond,
	}
	p.Expires = p.Created.Add(time.Duration(1+r.Int64N(1<<30)) * time.Second)
	ud := r.IntN(MaxUserData + 1)
	p.UserData = make([]byte, ud)
	for i := range p.UserData {
		p.UserData[i] = byte(r.Uint32())
	}
	budget := MaxSealedLen - SealedHeaderLen - privateFixedLen - TagLen - ud
	n := 1 + r.IntN(MaxAddresses)
	seen := map[netip.AddrPort]bool{}
	for len(p.Servers) < n {
		var a netip.AddrPort
		port := uint16(1 + r.IntN(65535))
		if r.IntN(2) == 0 {
			a = netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())}), port)
		} else {
			var b [16]byte
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			b[0] = 0x20 // never IPv4-mapped
			a = netip.AddrPortFrom(netip.AddrFrom16(b), port)
		}
		l := addrLen6
		if a.Addr().Is4() {
			l = addrLen4
		}
		if budget < l {
			break
		}
		if seen[a] {
			continue
		}
		seen[a] = true
		budget -= l
		p.Servers = append(p.Servers, a)
	}
	if len(p.Servers) == 0 { // 256 B of user data and an IPv6 draw that did not fit
		p.Servers = []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:1")}
	}
	return p
}

// mustIssue issues p under key with a seeded reader.
func mustIssue(t testing.TB, key Key, p Params, seed uint64) Token {
	t.Helper()
	tok, err := Issue(key, p, seededReader(seed))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// mustVerifier returns a Verifier of protocolID for keys.
func mustVerifier(t testing.TB, protocolID uint64, keys ...Key) *Verifier {
	t.Helper()
	v, err := NewVerifier(protocolID, keys...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
