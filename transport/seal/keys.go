package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// Sizes of the key schedule's inputs.
const (
	// SecretLen is the size of a session Secret.
	SecretLen = 32
	// MinKeyMaterial is the least input key material DeriveSecret takes:
	// 128 bits.
	MinKeyMaterial = 16
	// MinServerRandom is the least fresh server randomness DeriveSecret
	// takes: 128 bits.
	MinServerRandom = 16
	// NonceLen is the AEAD nonce size of both suites.
	NonceLen = 12
)

// Secret is a session's master secret, from which the keys of both
// directions and every key generation are derived. It must be unique to
// one session: make it with DeriveSecret, which mixes in fresh server
// randomness, never from long-term keys alone.
type Secret [SecretLen]byte

// String redacts the secret, so that a Secret printed with %v or %s (a
// log line, an error) shows no key material.
func (Secret) String() string { return "seal.Secret(redacted)" }

// GoString redacts the secret for %#v as String does for %v.
func (Secret) GoString() string { return "seal.Secret(redacted)" }

// DeriveSecret makes a session's Secret. ikm is the key material the
// handshake agreed on (the session keys of a connect token, or an X25519
// shared secret); serverRandom is at least MinServerRandom bytes that the
// server drew from crypto/rand for this handshake alone and never stores;
// transcript binds the handshake (client nonce, protocol id, suite: any
// bytes both ends hold, may be empty).
//
// Secret = HKDF-Expand(HKDF-Extract(salt = serverRandom, ikm),
// "tickwire seal v1 session" ‖ transcript, 32), with SHA-256.
//
// The server's fresh randomness is what makes nonces unique across
// restarts and replays: packet numbers start at 0 in every session, so a
// Secret that a replayed handshake or a restarted server could derive
// again would reuse every (key, nonce) pair of the earlier session. With
// serverRandom fresh, two sessions share keys only if two 128-bit random
// draws collide. For a resume, pass the session's current Secret as ikm
// with the resume handshake's new server random: the resumed session gets
// new keys and starts its packet numbers at 0 under them. It allocates; it
// runs once per handshake.
func DeriveSecret(ikm, serverRandom, transcript []byte) (Secret, error) {
	var s Secret
	if len(ikm) < MinKeyMaterial {
		return s, fmt.Errorf("%w: %d bytes of key material, want at least %d", ErrSecret, len(ikm), MinKeyMaterial)
	}
	if len(serverRandom) < MinServerRandom {
		return s, fmt.Errorf("%w: %d bytes of server randomness, want at least %d", ErrSecret, len(serverRandom), MinServerRandom)
	}
	prk, err := hkdf.Extract(sha256.New, ikm, serverRandom)
	if err != nil {
		return s, fmt.Errorf("seal: HKDF-Extract: %w", err)
	}
	out, err := hkdf.Expand(sha256.New, prk, "tickwire seal v1 session"+string(transcript), SecretLen)
	if err != nil {
		return s, fmt.Errorf("seal: HKDF-Expand: %w", err)
	}
	copy(s[:], out)
	return s, nil
}

// direction names one way of a session in the key labels.
type direction string

const (
	clientToServer direction = "c2s"
	serverToClient direction = "s2c"
)

// keyState is one key generation of one direction.
//
// What Seal and Open read on every datagram (aead, iv, gen) is first, in
// one cache line; the padding to 128 bytes keeps each keyState of an
// array at the same offset within its lines.
type keyState struct {
	aead cipher.AEAD
	iv   [NonceLen]byte
	gen  uint64
	key  [32]byte // the suite's key in its first keyLen bytes
	ts   [32]byte // this generation's traffic secret
	_    [24]byte
}

// trafficSecret0 is generation 0's traffic secret of direction d:
// HKDF-Expand(secret, "tickwire seal v1 traffic " ‖ d, 32).
func trafficSecret0(secret *Secret, d direction) ([32]byte, error) {
	var ts [32]byte
	out, err := hkdf.Expand(sha256.New, secret[:], "tickwire seal v1 traffic "+string(d), 32)
	if err != nil {
		return ts, fmt.Errorf("seal: HKDF-Expand: %w", err)
	}
	copy(ts[:], out)
	return ts, nil
}

// nextTrafficSecret ratchets: generation g+1's traffic secret is
// HKDF-Expand(ts_g, "tickwire seal v1 ku " ‖ d ‖ u64le(g+1), 32). The
// chain runs one way, so a key that leaks reveals no earlier generation.
func nextTrafficSecret(ts *[32]byte, d direction, gen uint64) ([32]byte, error) {
	var next [32]byte
	var g [8]byte
	binary.LittleEndian.PutUint64(g[:], gen)
	out, err := hkdf.Expand(sha256.New, ts[:], "tickwire seal v1 ku "+string(d)+string(g[:]), 32)
	if err != nil {
		return next, fmt.Errorf("seal: HKDF-Expand: %w", err)
	}
	copy(next[:], out)
	return next, nil
}

// install fills k with generation gen of suite from traffic secret ts:
// key = HKDF-Expand(ts, "tickwire seal v1 key " ‖ suite, keyLen),
// iv = HKDF-Expand(ts, "tickwire seal v1 iv", 12). It allocates the AEAD
// (with the HKDF calls, about 3.4 KiB), once per key generation.
func (k *keyState) install(suite Suite, ts [32]byte, gen uint64) error {
	n := suite.keyLen()
	key, err := hkdf.Expand(sha256.New, ts[:], "tickwire seal v1 key "+suite.String(), n)
	if err != nil {
		return fmt.Errorf("seal: HKDF-Expand: %w", err)
	}
	iv, err := hkdf.Expand(sha256.New, ts[:], "tickwire seal v1 iv", NonceLen)
	if err != nil {
		return fmt.Errorf("seal: HKDF-Expand: %w", err)
	}
	var aead cipher.AEAD
	switch suite {
	case ChaCha20Poly1305:
		aead, err = chacha20poly1305.New(key)
	default:
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			aead, err = cipher.NewGCM(b)
		}
	}
	if err != nil {
		return fmt.Errorf("seal: %v key: %w", suite, err)
	}
	*k = keyState{aead: aead, ts: ts, gen: gen}
	copy(k.key[:], key)
	copy(k.iv[:], iv)
	clear(key)
	return nil
}

// wipe forgets the key generation.
func (k *keyState) wipe() { *k = keyState{} }

// nonce writes into dst the nonce of packet number pn: the IV with the
// 64-bit packet number, little-endian, XORed into its first 8 bytes
// (bytes 8–11 are the IV's). Distinct packet numbers give distinct
// nonces under one key.
func (k *keyState) nonce(dst *[NonceLen]byte, pn uint64) []byte {
	*dst = k.iv
	binary.LittleEndian.PutUint64(dst[:8], binary.LittleEndian.Uint64(k.iv[:8])^pn)
	return dst[:]
}
