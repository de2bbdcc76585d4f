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
	p.ClientID = seed // a client id of its own: the guard holds one token per client
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
	g, err := NewReplayGuard(GuardConfig{})
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
	g, _ := NewReplayGuard(GuardConfig{Capacity: 3})
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
	if _, err := NewReplayGuard(GuardConfig{Capacity: -1}); !errors.Is(err, ErrInvalidParams) {
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

// One client id holds one slot: however many tokens an account obtains,
// each new one replaces its previous one (which may then be presented
// again, from any address, only as a new token would); the heap of
// expiries stays within twice the capacity; a token valid further ahead
// than MaxLifetime is refused.
func TestGuardOneSlotPerClient(t *testing.T) {
	v := mustVerifier(t, baseParams().ProtocolID, testKey())
	g, _ := NewReplayGuard(GuardConfig{Capacity: 4, MaxLifetime: 10 * time.Minute})
	from := netip.MustParseAddrPort("198.51.100.7:5000")
	issue := func(client, seed uint64, exp time.Duration) *Private {
		p := baseParams()
		p.ClientID, p.Expires = client, t0.Add(exp)
		priv := new(Private)
		if err := v.Open(mustIssue(t, testKey(), p, seed).Sealed, t0, priv); err != nil {
			t.Fatal(err)
		}
		return priv
	}
	for i := range 100 { // one account, 100 tokens
		if err := g.Admit(issue(7, uint64(i), time.Minute), from, t0); err != nil {
			t.Fatalf("token %d of one client: %v", i, err)
		}
		if g.Len() != 1 || len(g.byTime) > 2*4 {
			t.Fatalf("token %d of one client: %d entries, %d heap items", i, g.Len(), len(g.byTime))
		}
	}
	for c := range uint64(3) { // three more clients fill the guard
		if err := g.Admit(issue(100+c, 1000+c, time.Minute), from, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Admit(issue(200, 2000, time.Minute), from, t0); !errors.Is(err, ErrGuardFull) {
		t.Fatalf("a fifth client on a guard of 4: %v", err)
	}
	if err := g.Admit(issue(7, 3000, time.Minute), from, t0); err != nil || g.Len() != 4 {
		t.Fatalf("a full guard replacing a client's token: %v, %d entries", err, g.Len())
	}
	err := g.Admit(issue(300, 4000, 11*time.Minute), from, t0)
	if !errors.Is(err, ErrLifetime) || !strings.Contains(err.Error(), "expires in 660 s, the guard admits at most 600 s") {
		t.Fatalf("a token valid 11 minutes on a guard of 10: %v", err)
	}
	g.Expire(t0.Add(time.Minute))
	if g.Len() != 0 || len(g.byClient) != 0 {
		t.Fatalf("after every token expired: %d entries, %d clients", g.Len(), len(g.byClient))
	}
	if _, err := NewReplayGuard(GuardConfig{MaxLifetime: -1}); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("negative lifetime: %v", err)
	}
}

// TestGuardCheck: Check answers as Admit would and records nothing;
// AdmitBinding binds as Admit does (the late bind of a handshake).
func TestGuardCheck(t *testing.T) {
	v := mustVerifier(t, baseParams().ProtocolID, testKey())
	g, err := NewReplayGuard(GuardConfig{Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	tok, other := openedAt(t, v, t0.Add(time.Minute), 1), openedAt(t, v, t0.Add(time.Minute), 2)
	a := netip.MustParseAddrPort("198.51.100.7:5000")
	b := netip.MustParseAddrPort("203.0.113.9:5000")
	for range 3 {
		if err := g.Check(tok.Binding(), b, t0); err != nil {
			t.Fatal(err)
		}
	}
	if g.Len() != 0 {
		t.Fatalf("Check recorded %d entries", g.Len())
	}
	if err := g.AdmitBinding(tok.Binding(), a, t0); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(tok.Binding(), a, t0); err != nil {
		t.Fatalf("the owner: %v", err)
	}
	if err := g.Check(tok.Binding(), b, t0); !errors.Is(err, ErrBoundElsewhere) {
		t.Fatalf("another address: %v", err)
	}
	if err := g.Check(other.Binding(), b, t0); !errors.Is(err, ErrGuardFull) {
		t.Fatalf("a full guard: %v", err)
	}
	if err := g.Check(tok.Binding(), a, t0.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired: %v", err)
	}
	if (&Private{}).Binding() != (Binding{expires: time.Time{}.Unix()}) {
		t.Fatal("an empty Private's Binding")
	}
}
