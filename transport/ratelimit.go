package transport

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"time"
)

// rateVerdict is the result of a rate-limit check.
type rateVerdict uint8

const (
	rateAllowed rateVerdict = iota
	rateSource              // the source's bucket is empty
	rateGlobal              // the global budget is spent
)

// rateLimiter meters handshake datagrams per source and in total with
// GCRA token buckets (one "theoretical arrival time" per bucket: a
// datagram conforms when tat − now ≤ (burst−1)·interval, and then tat =
// max(tat, now) + interval).
//
// Per-source buckets live in a fixed table indexed by a keyed hash of the
// source (the IPv4 address, or the IPv6 /64 prefix: one host or one
// customer). Sources that collide share a bucket, which only makes the
// limit stricter for them; the key, drawn from the endpoint's random
// source, keeps an attacker from aiming collisions at a chosen victim. The
// table never grows: a flood from a million spoofed sources costs the same
// memory as none. Not safe for concurrent use; allow allocates nothing.
type rateLimiter struct {
	slots    []time.Duration
	mask     uint64
	k0, k1   uint64
	interval time.Duration
	tol      time.Duration

	gTAT      time.Duration
	gInterval time.Duration
	gTol      time.Duration
	started   bool
}

func newRateLimiter(cfg EndpointConfig) (*rateLimiter, error) {
	var key [16]byte
	if _, err := io.ReadFull(cfg.Rand, key[:]); err != nil {
		return nil, fmt.Errorf("%w: rate-limit key: %w", ErrRandom, err)
	}
	interval := time.Duration(float64(time.Second) / cfg.HandshakeRate)
	gInterval := time.Duration(float64(time.Second) / cfg.GlobalHandshakeRate)
	return &rateLimiter{
		slots:     make([]time.Duration, cfg.RateLimitSlots),
		mask:      uint64(cfg.RateLimitSlots - 1),
		k0:        binary.LittleEndian.Uint64(key[:8]),
		k1:        binary.LittleEndian.Uint64(key[8:]),
		interval:  max(interval, 1),
		tol:       max(interval, 1) * time.Duration(cfg.HandshakeBurst-1),
		gInterval: max(gInterval, 1),
		gTol:      max(gInterval, 1) * time.Duration(cfg.GlobalHandshakeBurst-1),
	}, nil
}

// slot returns the table index of addr's source.
func (r *rateLimiter) slot(addr netip.AddrPort) uint64 {
	a := addr.Addr().Unmap()
	b := a.As16()
	hi := binary.BigEndian.Uint64(b[:8])
	lo := uint64(0)
	if a.Is4() {
		lo = binary.BigEndian.Uint64(b[8:])
	}
	// Keyed mixing (splitmix64 finaliser rounds keyed on both halves).
	h := mix64(hi ^ r.k0)
	h = mix64(h ^ lo ^ r.k1)
	return h & r.mask
}

// allow charges one handshake datagram from addr at now, to its source's
// bucket and to the global budget, and reports whether both had room. A
// refused datagram charges nothing.
func (r *rateLimiter) allow(now time.Duration, addr netip.AddrPort) rateVerdict {
	if !r.started {
		// Buckets start full at the first datagram, whatever the clock.
		r.started = true
		for i := range r.slots {
			r.slots[i] = now - r.tol - r.interval
		}
		r.gTAT = now - r.gTol - r.gInterval
	}
	i := r.slot(addr)
	tat := r.slots[i]
	if tat-now > r.tol {
		return rateSource
	}
	if r.gTAT-now > r.gTol {
		return rateGlobal
	}
	r.slots[i] = max(tat, now) + r.interval
	r.gTAT = max(r.gTAT, now) + r.gInterval
	return rateAllowed
}

// mix64 is the splitmix64 finaliser: a bijective 64-bit mix.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
