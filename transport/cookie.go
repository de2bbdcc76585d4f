package transport

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// This file holds the server's stateless secrets: the handshake cookie
// (proof that a client receives at its source address) and the session
// token (proof that a client holds a session it may resume). Neither needs
// per-client state to verify.

// cookieKeyLen is the size of a cookie or token HMAC key.
const cookieKeyLen = 32

// cookieMsgLen is the MAC input of a cookie: address (16, IPv4 mapped),
// port (2), bucket (4), client nonce (8).
const cookieMsgLen = 16 + 2 + 4 + 8

// cookieVerdict is the result of checking an echoed cookie.
type cookieVerdict uint8

const (
	cookieOK      cookieVerdict = iota
	cookieExpired               // an older bucket than the two accepted
	cookieForged                // wrong tag, a future bucket, or a bucket whose key is gone
)

// cookieKey is the HMAC key of one time bucket.
type cookieKey struct {
	bucket uint32
	valid  bool
	mac    hash.Hash // HMAC-SHA256 keyed with a fresh random key
}

// cookieJar makes and verifies handshake cookies: Tag =
// HMAC-SHA256(key[bucket], address ‖ port ‖ bucket ‖ nonce) truncated to
// wire.CookieTagLen bytes, where bucket = now / period. The key rotates when
// the bucket advances (lazily, on the next use), and cookies of the current
// and the previous bucket verify, so a cookie lives one to two periods. It
// keeps two keys and nothing per client. Not safe for concurrent use; after
// a rotation (which allocates the new key's HMAC state) making and
// verifying allocate nothing.
type cookieJar struct {
	period    time.Duration
	rnd       io.Reader
	cur, prev cookieKey
	msg       [cookieMsgLen]byte
	sum       [sha256.Size]byte
}

func newCookieJar(period time.Duration, rnd io.Reader) *cookieJar {
	return &cookieJar{period: period, rnd: rnd}
}

// advance rotates the keys up to the bucket of now. Time never moves a
// bucket backwards: a now before the current bucket uses the current key.
func (j *cookieJar) advance(now time.Duration) error {
	b := uint32(max(now, 0) / j.period)
	if j.cur.valid && b <= j.cur.bucket {
		return nil
	}
	var key [cookieKeyLen]byte
	if _, err := io.ReadFull(j.rnd, key[:]); err != nil {
		return fmt.Errorf("%w: cookie key: %w", ErrRandom, err)
	}
	if j.cur.valid && b == j.cur.bucket+1 {
		j.prev = j.cur
	} else {
		j.prev = cookieKey{}
	}
	j.cur = cookieKey{bucket: b, valid: true, mac: hmac.New(sha256.New, key[:])}
	return nil
}

// tag computes the tag of (addr, bucket, nonce) with k into j.sum.
func (j *cookieJar) tag(k *cookieKey, addr netip.AddrPort, bucket uint32, nonce uint64) []byte {
	a := addr.Addr().As16()
	copy(j.msg[:16], a[:])
	binary.LittleEndian.PutUint16(j.msg[16:], addr.Port())
	binary.LittleEndian.PutUint32(j.msg[18:], bucket)
	binary.LittleEndian.PutUint64(j.msg[22:], nonce)
	k.mac.Reset()
	k.mac.Write(j.msg[:])
	return k.mac.Sum(j.sum[:0])[:wire.CookieTagLen]
}

// make returns the cookie for a ConnectRequest from addr with nonce.
func (j *cookieJar) make(now time.Duration, addr netip.AddrPort, nonce uint64) (wire.Cookie, error) {
	if err := j.advance(now); err != nil {
		return wire.Cookie{}, err
	}
	c := wire.Cookie{Bucket: j.cur.bucket}
	copy(c.Tag[:], j.tag(&j.cur, addr, c.Bucket, nonce))
	return c, nil
}

// verify checks a cookie echoed by addr with nonce, in constant time in
// the tag.
func (j *cookieJar) verify(now time.Duration, addr netip.AddrPort, nonce uint64, c wire.Cookie) (cookieVerdict, error) {
	if err := j.advance(now); err != nil {
		return cookieForged, err
	}
	var k *cookieKey
	switch {
	case c.Bucket == j.cur.bucket:
		k = &j.cur
	case j.prev.valid && c.Bucket == j.prev.bucket:
		k = &j.prev
	case c.Bucket < j.cur.bucket:
		return cookieExpired, nil
	default:
		return cookieForged, nil
	}
	if subtle.ConstantTimeCompare(j.tag(k, addr, c.Bucket, nonce), c.Tag[:]) != 1 {
		return cookieForged, nil
	}
	return cookieOK, nil
}

// tokenIDLen and tokenTagLen split a session token: a random id and a
// truncated MAC of it.
const (
	tokenIDLen  = 8
	tokenTagLen = wire.TokenLen - tokenIDLen
)

// tokenMinter issues session tokens: token = id ‖ HMAC-SHA256(key, id)[:8],
// id random. The server stores each live session's token and finds a
// presented token by a constant-time scan; the MAC tells the two refusals
// apart without remembering ended sessions: a token whose MAC verifies was
// issued by this server and its session has ended (RejectExpiredToken); any
// other token was never issued here (RejectUnknownToken). The key lives as
// long as the endpoint. Not safe for concurrent use; allocation-free after
// construction.
type tokenMinter struct {
	mac hash.Hash
	sum [sha256.Size]byte
}

func newTokenMinter(rnd io.Reader) (*tokenMinter, error) {
	var key [cookieKeyLen]byte
	if _, err := io.ReadFull(rnd, key[:]); err != nil {
		return nil, fmt.Errorf("%w: token key: %w", ErrRandom, err)
	}
	return &tokenMinter{mac: hmac.New(sha256.New, key[:])}, nil
}

func (m *tokenMinter) tag(id []byte) []byte {
	m.mac.Reset()
	m.mac.Write(id)
	return m.mac.Sum(m.sum[:0])[:tokenTagLen]
}

// mint returns a fresh token.
func (m *tokenMinter) mint(rnd io.Reader) (wire.Token, error) {
	var t wire.Token
	if _, err := io.ReadFull(rnd, t[:tokenIDLen]); err != nil {
		return wire.Token{}, fmt.Errorf("%w: token: %w", ErrRandom, err)
	}
	copy(t[tokenIDLen:], m.tag(t[:tokenIDLen]))
	return t, nil
}

// genuine reports, in constant time in the tag, whether t was minted with
// this key.
func (m *tokenMinter) genuine(t *wire.Token) bool {
	return subtle.ConstantTimeCompare(m.tag(t[:tokenIDLen]), t[tokenIDLen:]) == 1
}
