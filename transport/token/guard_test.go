package token

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// openedAt issues a token expiring at exp and opens it.
func openedAt(t *testing.T, v *Verifier, exp time.Time, seed uint64) *Private {
	t.Helper()
	p := baseParams()
	p.Expires = exp
	priv := new(Private)
	if err := v.Open(mustIssue(t, testKey(), p, seed).Sealed, t0, priv); err != nil {
		t.Fatal(err)
	}
	return priv
}

// TestGuardBinding: the first address owns the token until it expires;
// the same address may come back, another may not.
func TestGuardBinding(t *testing.T) {
	v := mustVerifier(t, baseParams().ProtocolID, testKey())
	g, err := NewReplayGuard(0)
	if err != nil {
		t.Fatal(err)
	}
	tok := openedAt(t, v, t0.Add(time.Minute), 1)
	a := netip.MustParseAddrPort("198.51.100.7:5000")
	b := netip.MustParseAddrPort("203.0.113.9:5000")
	if err := g.Admit(tok, a, t0); err != nil {
		t.Fatal(err)
	}
	if err := g.Admit(tok, a, t0.Add(10*time.Second)); err != nil {
		t.Fatalf("retry from the same address: %v", err)
	}
	if err := g.Admit(tok, netip.MustParseAddrPort("[::ffff:198.51.100.7]:5000"), t0.Add(10*time.Second)); err != nil {
		t.Fatalf("the same address IPv4-mapped: %v", err)
	}
	err = g.Admit(tok, b, t0.Add(20*time.Second))
	if !errors.Is(err, ErrBoundElsewhere) || !strings.Contains(err.Error(), "bound to 198.51.100.7:5000 until it expires in 40 s, now used from 203.0.113.9:5000") {
		t.Fatalf("replay from another address: %v", err)
	}
	if err := g.Admit(tok, netip.MustParseAddrPort("198.51.100.7:5001"), t0.Add(20*time.Second)); !errors.Is(err, ErrBoundElsewhere) {
		t.Fatalf("another port: %v", err)
	}
	if err := g.Admit(tok, b, t0.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Fatalf("after expiry: %v", err)
	}
	if g.Len() != 0 {
		t.Fatalf("the expired entry stayed: %d entries", g.Len())
	}
}

// TestGuardCapacity: a full guard refuses new tokens rather than forget
// an unexpired one, and frees slots as tokens expire.
func TestGuardCapacity(t *testing.T) {
	v := mustVerifier(t, baseParams().ProtocolID, testKey())
	g, _ := NewReplayGuard(3)
	from := netip.MustParseAddrPort("198.51.100.7:5000")
	var toks []*Private
	for i := range 5 {
		toks = append(toks, openedAt(t, v, t0.Add(time.Duration(10*(3-i%3)+i)*time.Second), uint64(i)))
	}
	// Expiries: 30, 21, 12, 33, 24 s.
	for i := range 3 {
		if err := g.Admit(toks[i], from, t0); err != nil {
			t.Fatal(err)
		}
	}
	err := g.Admit(toks[3], from, t0)
	if !errors.Is(err, ErrGuardFull) || !strings.Contains(err.Error(), "3 unexpired tokens admitted, the soonest expires in 12 s") {
		t.Fatalf("full: %v", err)
	}
	if err := g.Admit(toks[0], from, t0.Add(time.Second)); err != nil {
		t.Fatalf("a held token at capacity: %v", err)
	}
	if err := g.Admit(toks[3], from, t0.Add(12*time.Second)); err != nil {
		t.Fatalf("after the soonest expired: %v", err)
	}
	if err := g.Admit(toks[4], from, t0.Add(12*time.Second)); !errors.Is(err, ErrGuardFull) {
		t.Fatalf("full again: %v", err)
	}
	g.Expire(t0.Add(21 * time.Second))
	if g.Len() != 2 {
		t.Fatalf("after Expire at 21 s: %d entries, want 2", g.Len())
	}
	if _, err := NewReplayGuard(-1); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("negative capacity: %v", err)
	}
}

// TestGuardHeapOrder: entries leave in expiry order whatever the order
// they came in (the hand-written heap against a sort).
func TestGuardHeapOrder(t *testing.T) {
	seed := testSeed(t, 5)
	r := seededReader(seed)
	var h expiryHeap
	var want []int64
	for range 500 {
		var b [8]byte
		r.Read(b[:])
		e := int64(b[0]) | int64(b[1])<<8
		h.push(expiryItem{expires: e})
		want = append(want, e)
	}
	slices.Sort(want)
	for i, w := range want {
		if e := h.pop().expires; e != w {
			t.Fatalf("pop %d gave %d, want %d", i, e, w)
		}
	}
	if len(h) != 0 {
		t.Fatalf("%d items left", len(h))
	}
}
