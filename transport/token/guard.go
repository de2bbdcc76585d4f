package token

import (
	"fmt"
	"net/netip"
	"time"
)

// DefaultGuardCapacity is ReplayGuard's capacity when GuardConfig leaves
// it 0: 16384 admitted, unexpired tokens, about 2.4 MiB (measured: 152
// bytes a slot).
const DefaultGuardCapacity = 16384

// DefaultGuardLifetime is GuardConfig.MaxLifetime's default: a token
// that expires more than an hour after it is presented is refused.
const DefaultGuardLifetime = time.Hour

// GuardConfig sizes a ReplayGuard. The zero value is the defaults.
type GuardConfig struct {
	// Capacity is how many unexpired tokens the guard holds (0:
	// DefaultGuardCapacity).
	Capacity int
	// MaxLifetime bounds how long a token may still be valid when it is
	// admitted (0: DefaultGuardLifetime): a token that expires later is
	// refused with ErrLifetime, so a backend that issues long-lived
	// tokens by mistake cannot pin the guard's slots. Issue tokens that
	// expire well within it (tens of seconds is the usual choice).
	MaxLifetime time.Duration
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c GuardConfig) WithDefaults() GuardConfig {
	if c.Capacity == 0 {
		c.Capacity = DefaultGuardCapacity
	}
	if c.MaxLifetime == 0 {
		c.MaxLifetime = DefaultGuardLifetime
	}
	return c
}

// Validate reports a negative Capacity or MaxLifetime (ErrInvalidParams).
func (c GuardConfig) Validate() error {
	switch {
	case c.Capacity < 0:
		return fmt.Errorf("%w: ReplayGuard capacity %d, want 0 (default %d) or more", ErrInvalidParams, c.Capacity, DefaultGuardCapacity)
	case c.MaxLifetime < 0:
		return fmt.Errorf("%w: ReplayGuard MaxLifetime %v, want 0 (default %v) or more", ErrInvalidParams, c.MaxLifetime, DefaultGuardLifetime)
	}
	return nil
}

// ReplayGuard binds each admitted token to the first client address that
// used it, until the token expires: the same token from that address is
// admitted again (a retried handshake, a resume), from any other address
// refused with ErrBoundElsewhere. A server keeps one and calls Admit only
// for tokens that Verifier.Open accepted, so it holds state only for
// tokens its fleet issued, never for forgeries; each entry goes at its
// token's expiry, on the caller's clock. It holds one token per client
// id: a client's newer token replaces its older one, so one account
// cannot fill the guard however many tokens it obtains. It is bounded:
// when every slot holds an unexpired token, Admit refuses new tokens
// (ErrGuardFull) rather than forget one, which would let that token be
// replayed from elsewhere; size it for the clients a server admits within
// a token's lifetime. Call Admit once the client has proved it holds the
// token's session keys, not on the bare token: an on-path attacker who
// copied the sealed bytes could otherwise bind the token to its own
// address before the real client's handshake arrives.
//
// The binding is per server: a token naming several servers can be
// admitted once by each, from different addresses, and a restarted server
// has forgotten its bindings (as in netcode). Issue a token for one
// server when that matters.
//
// A slot costs about 150 bytes, most allocated by NewReplayGuard: Admit
// allocates nothing in steady state. It is not safe for concurrent use;
// the Endpoint's goroutine owns it.
type ReplayGuard struct {
	cfg      GuardConfig
	entries  map[[TagLen]byte]guardEntry
	byClient map[uint64][TagLen]byte // each client id's admitted token
	byTime   expiryHeap              // may hold replaced tokens, skipped when popped
}

type guardEntry struct {
	from     netip.AddrPort
	expires  int64
	clientID uint64
}

// NewReplayGuard returns a guard sized by cfg (zero fields: defaults).
func NewReplayGuard(cfg GuardConfig) (*ReplayGuard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	return &ReplayGuard{
		cfg:      cfg,
		entries:  make(map[[TagLen]byte]guardEntry, cfg.Capacity),
		byClient: make(map[uint64][TagLen]byte, cfg.Capacity),
		byTime:   make(expiryHeap, 0, cfg.Capacity),
	}, nil
}

// Admit records that the token p (as Verifier.Open filled it) is used
// from the client address from at time now. It returns nil when the
// token is new (and now bound to from, replacing any older token of the
// same client id) or already bound to from; ErrBoundElsewhere when
// another address used it first; ErrExpired when the token has expired;
// ErrLifetime when it expires more than MaxLifetime after now;
// ErrGuardFull when it is new and no slot is free. Expired entries are
// dropped first. Addresses compare with IPv4-mapped IPv6 unmapped.
// O(log n); no allocation (TestGuardNoAllocs) except the error on a
// refusal.
func (g *ReplayGuard) Admit(p *Private, from netip.AddrPort, now time.Time) error {
	return g.admit(p.Binding(), from, now, true)
}

// Binding is what a ReplayGuard needs of a token that verified: its
// identity (the tag), client id and expiry, 32 bytes and no key material,
// so a server can keep it per pending session and bind the token later
// (AdmitBinding) without keeping the Private. Private.Binding returns it.
type Binding struct {
	tag      [TagLen]byte
	clientID uint64
	expires  int64
}

// Binding returns the token's Binding (zero for a Private that holds no
// token).
func (p *Private) Binding() Binding {
	return Binding{tag: p.tag, clientID: p.ClientID, expires: p.Expires.Unix()}
}

// AdmitBinding is Admit for a token's Binding: the same checks, the same
// errors, the same record.
func (g *ReplayGuard) AdmitBinding(b Binding, from netip.AddrPort, now time.Time) error {
	return g.admit(b, from, now, true)
}

// Check reports what Admit would for the token b from the address from at
// now — nil, ErrBoundElsewhere, ErrExpired, ErrLifetime or ErrGuardFull —
// without recording anything: a server checks at the handshake and binds
// once the client has proved it holds the token's keys. It expires old
// entries as Admit does, and allocates only the error of a refusal.
func (g *ReplayGuard) Check(b Binding, from netip.AddrPort, now time.Time) error {
	return g.admit(b, from, now, false)
}

// admit is Admit, AdmitBinding (record) and Check (not).
func (g *ReplayGuard) admit(b Binding, from netip.AddrPort, now time.Time, record bool) error {
	t := now.Unix()
	g.expire(t)
	exp := b.expires
	if t >= exp {
		return fmt.Errorf("%w: token expired %d s ago", ErrExpired, t-exp)
	}
	if limit := int64(g.cfg.MaxLifetime / time.Second); exp-t > limit {
		return fmt.Errorf("%w: the token expires in %d s, the guard admits at most %d s ahead", ErrLifetime, exp-t, limit)
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if e, ok := g.entries[b.tag]; ok {
		if e.from != from {
			return fmt.Errorf("%w: bound to %v until it expires in %d s, now used from %v", ErrBoundElsewhere, e.from, e.expires-t, from)
		}
		return nil
	}
	old, replacing := g.byClient[b.clientID]
	if !replacing && len(g.entries) >= g.cfg.Capacity {
		return fmt.Errorf("%w: %d unexpired tokens admitted, the soonest expires in %d s", ErrGuardFull, len(g.entries), g.byTime[0].expires-t)
	}
	if !record {
		return nil
	}
	if replacing {
		delete(g.entries, old) // its heap item stays, skipped when it pops
	}
	if len(g.byTime) >= 2*g.cfg.Capacity {
		g.compact()
	}
	g.entries[b.tag] = guardEntry{from: from, expires: exp, clientID: b.clientID}
	g.byClient[b.clientID] = b.tag
	g.byTime.push(expiryItem{expires: exp, tag: b.tag})
	return nil
}

// Len returns the number of tokens the guard holds (some may have
// expired since the last Admit).
func (g *ReplayGuard) Len() int { return len(g.entries) }

// Expire drops the entries of tokens expired at now. Admit does it too;
// call it from a timer to free memory when no token arrives.
func (g *ReplayGuard) Expire(now time.Time) { g.expire(now.Unix()) }

func (g *ReplayGuard) expire(t int64) {
	for len(g.byTime) > 0 && g.byTime[0].expires <= t {
		it := g.byTime.pop()
		if e, ok := g.entries[it.tag]; ok && e.expires == it.expires {
			delete(g.entries, it.tag)
			if g.byClient[e.clientID] == it.tag {
				delete(g.byClient, e.clientID)
			}
		}
	}
}

// compact rebuilds the heap from the live entries, dropping the items of
// replaced tokens: a client that keeps getting new tokens cannot grow it
// past twice the capacity.
func (g *ReplayGuard) compact() {
	g.byTime = g.byTime[:0]
	for tag, e := range g.entries {
		g.byTime.push(expiryItem{expires: e.expires, tag: tag})
	}
}

// expiryItem is one entry of the guard's min-heap by expiry.
type expiryItem struct {
	expires int64
	tag     [TagLen]byte
}

// expiryHeap is a binary min-heap of expiryItems, soonest first, written
// out rather than through container/heap, whose interface boxes each
// pushed item (an allocation).
type expiryHeap []expiryItem

func (h *expiryHeap) push(it expiryItem) {
	*h = append(*h, it)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if q[parent].expires <= q[i].expires {
			break
		}
		q[parent], q[i] = q[i], q[parent]
		i = parent
	}
}

func (h *expiryHeap) pop() expiryItem {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q[l].expires < q[m].expires {
			m = l
		}
		if r < len(q) && q[r].expires < q[m].expires {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}
