package token

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// fuzzSeeds are the valid tokens of the fuzz targets' corpora: small,
// full (256 B of user data, 2 addresses), the worked example of WIRE.md
// §14.5 and one with 32 IPv4 addresses. testdata/fuzz holds their
// encodings, truncated and bit-flipped.
func fuzzSeeds(t testing.TB) []Token {
	full := baseParams()
	full.UserData = bytes.Repeat([]byte{0x5a}, MaxUserData)
	v4 := baseParams()
	v4.UserData, v4.Servers = nil, nil
	for i := range MaxAddresses {
		v4.Servers = append(v4.Servers, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 7000))
	}
	ex, err := Issue(testKey(), wireExampleParams(), wireExampleRand())
	if err != nil {
		t.Fatal(err)
	}
	return []Token{mustIssue(t, testKey(), baseParams(), 1), mustIssue(t, testKey(), full, 2), ex, mustIssue(t, testKey(), v4, 9)}
}

// FuzzUnmarshalToken: the public-part decoder never panics, refuses
// with a sentinel, and what it accepts re-encodes to the same bytes.
func FuzzUnmarshalToken(f *testing.F) {
	for _, tok := range fuzzSeeds(f) {
		b, _ := tok.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tok Token
		if err := tok.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again, err := tok.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs (%v):\n%x\n%x", err, again, b)
		}
	})
}

// FuzzParsePrivate: the private-part decoder (what runs after the AEAD
// opened) never panics, and what it accepts re-encodes to the same bytes.
func FuzzParsePrivate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		p := baseParams()
		f.Add(appendPrivate(nil, p.ClientID, 10000, &s.ClientKey, &s.ServerKey, s.Servers, p.UserData))
	}
	var priv Private
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := parsePrivate(b, &priv); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again := appendPrivate(nil, priv.ClientID, uint32(priv.Timeout.Milliseconds()), &priv.ClientKey, &priv.ServerKey, priv.Servers(), priv.UserData())
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
		}
	})
}

// FuzzOpen: Open never panics on any bytes and accepts only the seeds'
// own tokens (no input the fuzzer finds verifies without the key).
func FuzzOpen(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s.Sealed)
	}
	v := mustVerifier(f, baseParams().ProtocolID, testKey())
	var priv Private
	f.Fuzz(func(t *testing.T, b []byte) {
		err := v.Open(b, t0, &priv)
		if err == nil {
			for _, s := range seeds {
				if bytes.Equal(b, s.Sealed) {
					return
				}
			}
			t.Fatalf("a token no one issued verified: %x", b)
		}
		if sentinelName(err)[:3] != "Err" {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// FuzzParseKey: the key text parser never panics, and what it accepts
// prints back to an equal key.
func FuzzParseKey(f *testing.F) {
	k := testKey()
	txt, _ := k.MarshalText()
	f.Add(string(txt))
	f.Add(string(txt[len(KeyTextPrefix):]))
	f.Add("fleet-key:00")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			if !errors.Is(err, ErrKeyText) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		txt, _ := k.MarshalText()
		if k2, err := ParseKey(string(txt)); err != nil || k2 != k {
			t.Fatalf("round trip of %q: %v", s, err)
		}
	})
}
