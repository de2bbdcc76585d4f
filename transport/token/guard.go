package token

import (
	"fmt"
	"net/netip"
	"time"
)

// DefaultGuardCapacity is ReplayGuard's capacity when NewReplayGuard is
// given 0: 16384 admitted, unexpired tokens, about 2.4 MiB (measured: 152 bytes a slot).
const DefaultGuardCapacity = 16384

// ReplayGuard binds each admitted token to the first client address that
// used it, until the token expires: the same token from that address is
// admitted again (a retried handshake, a resume), from any other address
// refused with ErrBoundElsewhere. A server keeps one and calls Admit only
// for tokens that Verifier.Open accepted, so it holds state only for
// tokens its fleet issued, never for forgeries; each entry goes at its
// token's expiry, on the caller's clock. It is bounded: when every slot
// holds an unexpired token, Admit refuses new tokens (ErrGuardFull)
// rather than forget one, which would let that token be replayed from
// elsewhere. Size it for the tokens a server admits within a token's
// lifetime. Call Admit once the client has proved it holds the token's
// session keys, not on the bare token: an on-path attacker who copied
// the sealed bytes could otherwise bind the token to its own address
// before the real client's handshake arrives.
//
// A slot costs about 150 bytes, all allocated by NewReplayGuard: Admit
// allocates nothing in steady state. It is not safe for concurrent use;
// the Endpoint's goroutine owns it.
type ReplayGuard struct {
	cap     int
	entries map[[TagLen]byte]guardEntry
	byTime  expiryHeap
}

type guardEntry struct {
	from    netip.AddrPort
	expires int64
}

// NewReplayGuard returns a guard for capacity tokens (0:
// DefaultGuardCapacity; negative is refused with ErrInvalidParams).
func NewReplayGuard(capacity int) (*ReplayGuard, error) {
	if capacity < 0 {
		return nil, fmt.Errorf("%w: ReplayGuard capacity %d, want 0 (default %d) or more", ErrInvalidParams, capacity, DefaultGuardCapacity)
	}
	if capacity == 0 {
		capacity = DefaultGuardCapacity
	}
	return &ReplayGuard{
		cap:     capacity,
		entries: make(map[[TagLen]byte]guardEntry, capacity),
		byTime:  make(expiryHeap, 0, capacity),
	}, nil
}

// Admit records that the token p (as Verifier.Open filled it) is used
// from the client address from at time now. It returns nil when the
// token is new (and now bound to from) or already bound to from;
// ErrBoundElsewhere when another address used it first; ErrExpired when
// the token has expired; ErrGuardFull when it is new and no slot is
// free. Expired entries are dropped first. Addresses compare with
// IPv4-mapped IPv6 unmapped. O(log n); no allocation (TestGuardNoAllocs)
// except the error on a refusal.
func (g *ReplayGuard) Admit(p *Private, from netip.AddrPort, now time.Time) error {
	t := now.Unix()
	g.expire(t)
	exp := p.Expires.Unix()
	if t >= exp {
		return fmt.Errorf("%w: token expired %d s ago", ErrExpired, t-exp)
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if e, ok := g.entries[p.tag]; ok {
		if e.from != from {
			return fmt.Errorf("%w: bound to %v until it expires in %d s, now used from %v", ErrBoundElsewhere, e.from, e.expires-t, from)
		}
		return nil
	}
	if len(g.entries) >= g.cap {
		return fmt.Errorf("%w: %d unexpired tokens admitted, the soonest expires in %d s", ErrGuardFull, len(g.entries), g.byTime[0].expires-t)
	}
	g.entries[p.tag] = guardEntry{from: from, expires: exp}
	g.byTime.push(expiryItem{expires: exp, tag: p.tag})
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
		delete(g.entries, g.byTime.pop().tag)
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
