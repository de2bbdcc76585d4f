package token

import (
	"bytes"
	"net/netip"
	"testing"
)

// benchParams are a full-size token: 256 B of user data, 4 IPv6 servers.
func benchParams() Params {
	p := baseParams()
	p.UserData = bytes.Repeat([]byte{1}, MaxUserData)
	p.Servers = nil
	for _, s := range []string{"[2001:db8::1]:7000", "[2001:db8::2]:7000", "[2001:db8::3]:7000", "[2001:db8::4]:7000"} {
		p.Servers = append(p.Servers, netip.MustParseAddrPort(s))
	}
	return p
}

// BenchmarkIssue: the backend's cost per token, with crypto/rand, and
// the encoding of the public part.
func BenchmarkIssue(b *testing.B) {
	for _, c := range []struct {
		name string
		p    Params
	}{{"small", baseParams()}, {"full", benchParams()}} {
		b.Run(c.name, func(b *testing.B) {
			key := testKey()
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				tok, err := Issue(key, c.p, nil)
				if err != nil {
					b.Fatal(err)
				}
				if buf, err = tok.AppendBinary(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

// BenchmarkOpen: the server's cost per token that verifies (the one
// AEAD open and the parse), and per forged one, refused by its tag after
// the same open, and per token of another protocol, refused before it.
func BenchmarkOpen(b *testing.B) {
	for _, c := range []struct {
		name string
		p    Params
	}{{"small", baseParams()}, {"full", benchParams()}} {
		tok := mustIssue(b, testKey(), c.p, 1)
		v := mustVerifier(b, c.p.ProtocolID, testKey())
		b.Run(c.name, func(b *testing.B) {
			priv := new(Private)
			b.ReportAllocs()
			b.SetBytes(int64(len(tok.Sealed)))
			for b.Loop() {
				if err := v.Open(tok.Sealed, t0, priv); err != nil {
					b.Fatal(err)
				}
			}
		})
		forged := bytes.Clone(tok.Sealed)
		forged[len(forged)-1] ^= 1
		b.Run(c.name+"-forged", func(b *testing.B) {
			priv := new(Private)
			b.ReportAllocs()
			for b.Loop() {
				if err := v.Open(forged, t0, priv); err == nil {
					b.Fatal("forgery opened")
				}
			}
		})
	}
	tok := mustIssue(b, testKey(), baseParams(), 1)
	v := mustVerifier(b, 9, testKey())
	b.Run("wrong-protocol", func(b *testing.B) {
		priv := new(Private)
		b.ReportAllocs()
		for b.Loop() {
			if err := v.Open(tok.Sealed, t0, priv); err == nil {
				b.Fatal("opened")
			}
		}
	})
}

// BenchmarkGuardAdmit: ReplayGuard.Admit of a held token (a retry).
func BenchmarkGuardAdmit(b *testing.B) {
	tok := mustIssue(b, testKey(), baseParams(), 1)
	v := mustVerifier(b, baseParams().ProtocolID, testKey())
	priv := new(Private)
	if err := v.Open(tok.Sealed, t0, priv); err != nil {
		b.Fatal(err)
	}
	g, _ := NewReplayGuard(GuardConfig{})
	from := netip.MustParseAddrPort("198.51.100.7:5000")
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Admit(priv, from, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAEADFloor: the bare XChaCha20-Poly1305 open that Open makes,
// for the same tokens: what Open costs beyond it is the header checks,
// the parse and the wipe.
func BenchmarkAEADFloor(b *testing.B) {
	for _, c := range []struct {
		name string
		p    Params
	}{{"small", baseParams()}, {"full", benchParams()}} {
		tok := mustIssue(b, testKey(), c.p, 1)
		v := mustVerifier(b, c.p.ProtocolID, testKey())
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, maxPrivateLen)
			s := tok.Sealed
			b.ReportAllocs()
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if _, err := v.aeads[0].Open(dst[:0], s[adLen:SealedHeaderLen], s[SealedHeaderLen:], s[:adLen]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
