package seal

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// pairKey is one (suite, key, nonce) as Seal handed it to the AEAD.
type pairKey [1 + 32 + NonceLen]byte

// nonceLedger records every (key, nonce) pair Seal uses, through
// sealHook, and the first use of any pair seen twice.
type nonceLedger struct {
	suite Suite
	used  map[pairKey]string
	where string
	reuse []string
}

func newLedger(t *testing.T) *nonceLedger {
	l := &nonceLedger{used: map[pairKey]string{}}
	sealHook = func(key, nonce []byte) {
		var k pairKey
		k[0] = byte(l.suite)
		copy(k[1:33], key)
		copy(k[33:], nonce)
		if first, dup := l.used[k]; dup {
			if len(l.reuse) < 5 {
				l.reuse = append(l.reuse, fmt.Sprintf("%s reuses a (key, nonce) pair of %s", l.where, first))
			}
			return
		}
		l.used[k] = l.where
	}
	t.Cleanup(func() { sealHook = nil })
	return l
}

// handshake stands in for the handshake the next session wires in: both
// ends hold ikm (a connect token's keys, say) and the client's nonce; the
// server draws serverRandom fresh (from rng, standing in for
// crypto/rand), and both derive the session's Secret from the three.
func handshake(t *testing.T, cfg Config, ikm, clientNonce, serverRandom []byte) (client, server *Session, secret Secret) {
	t.Helper()
	sec, err := DeriveSecret(ikm, serverRandom, clientNonce)
	if err != nil {
		t.Fatal(err)
	}
	c, s := pair(t, cfg, &sec)
	return c, s, sec
}

// traffic seals n datagrams with s, opening each at peer (so the receive
// side follows the key updates too).
func traffic(t *testing.T, l *nonceLedger, where string, s, peer *Session, n int) {
	t.Helper()
	l.where = where
	var buf [HeaderLen + 4 + TagLen]byte
	for range n {
		d, err := s.Seal(buf[:HeaderLen+4])
		if err != nil {
			t.Fatal(err)
		}
		if peer != nil {
			if _, err := peer.Open(d); err != nil {
				t.Fatalf("%s: Open: %v", where, err)
			}
		}
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestNoKeyNonceReuse is the nonce property test of issue 12: over a
// session's life — sends both ways across key updates, a resume (a new
// handshake keyed from the old secret), a server restart that loses every
// key while an attacker replays the client's first handshake to it, and
// the client connecting again with the same token — no (key, nonce) pair
// is ever used twice. The rule that makes it hold: every Secret mixes in
// fresh server randomness. The control at the end shows the ledger
// catching reuse when a restarted server's randomness repeats.
func TestNoKeyNonceReuse(t *testing.T) {
	interval := uint64(MinKeyUpdateInterval)
	for _, suite := range suites {
		for _, seed := range seeds(1, 1) {
			r := rand.New(rand.NewPCG(seed, 0xC1+uint64(suite)))
			l := newLedger(t)
			l.suite = suite
			cfg := Config{Suite: suite, KeyUpdateInterval: interval}
			token := randBytes(r, 32) // the connect token's session keys: fixed for its lifetime
			nonce1 := randBytes(r, 8)

			// The first session: both directions, across key updates.
			c, s, sec1 := handshake(t, cfg, token, nonce1, randBytes(r, 16))
			traffic(t, l, "session 1 client", c, s, int(2*interval)+r.IntN(1000))
			traffic(t, l, "session 1 server", s, c, int(interval)+r.IntN(1000))
			if c.SendGeneration() != 2 || s.SendGeneration() != 1 || s.RecvGeneration() != 2 {
				t.Fatalf("generations: client sent %d, server sent %d and followed %d", c.SendGeneration(), s.SendGeneration(), s.RecvGeneration())
			}
			// A resume: a new handshake keyed from the session's secret,
			// which both ends kept, with a new client nonce and a new
			// server random.
			c2, s2, _ := handshake(t, cfg, sec1[:], randBytes(r, 8), randBytes(r, 16))
			traffic(t, l, "resumed client", c2, s2, int(interval)+r.IntN(1000))
			traffic(t, l, "resumed server", s2, c2, 1000)

			// The server restarts and forgets every key. An attacker
			// replays the client's first handshake (same token, same
			// nonce): the restarted server answers with fresh randomness,
			// so its keys are new although everything the client sent is
			// the same.
			_, replayed, _ := handshake(t, cfg, token, nonce1, randBytes(r, 16))
			traffic(t, l, "restarted server, replayed handshake", replayed, nil, 3000)
			// The client connects again with the same token.
			c3, s3, _ := handshake(t, cfg, token, randBytes(r, 8), randBytes(r, 16))
			traffic(t, l, "reconnected client", c3, s3, 3000)
			traffic(t, l, "restarted server", s3, c3, 3000)

			if len(l.reuse) != 0 {
				t.Fatalf("%v: %v; %s", suite, l.reuse, repro(t.Name(), seed))
			}
			if len(l.used) < int(4*interval) {
				t.Fatalf("%v: only %d pairs recorded", suite, len(l.used))
			}

			// The control: a restarted server whose "fresh" randomness
			// repeats the first session's (a seeded RNG restarted, state
			// restored from disk) derives the first session's keys again,
			// and the ledger sees its packet numbers 0, 1, … reuse nonces.
			r0 := rand.New(rand.NewPCG(seed, 0xC1+uint64(suite)))
			randBytes(r0, 32+8) // the token and nonce1, as above
			sameRandom := randBytes(r0, 16)
			_, bad, _ := handshake(t, cfg, token, nonce1, sameRandom)
			traffic(t, l, "control: restarted server with repeated randomness", bad, nil, 10)
			if len(l.reuse) == 0 {
				t.Fatalf("%v: the ledger missed the reuse of a repeated server random", suite)
			}
			t.Logf("%v: %d distinct (key, nonce) pairs over 4 sessions; the control: %s", suite, len(l.used), l.reuse[0])
			sealHook = nil
		}
	}
}
