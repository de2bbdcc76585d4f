package transport

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"

	"github.com/tickwire/tickwire/transport/seal"
	"github.com/tickwire/tickwire/wire"
)

// The handshake's key schedule (docs/WIRE.md §9.8), a Noise-NK-like
// pattern of our own: the client knows the server's static key s (pinned,
// EndpointConfig.ServerKey) and sends an ephemeral key e_c in its
// ConnectResponse; the server, once the cookie verified, answers with an
// ephemeral key e_s and 16 bytes of fresh randomness in its Accept.
//
//	es         = X25519(s, e_c)              (omitted in InsecureCleartext)
//	ee         = X25519(e_s, e_c)
//	ikm        = es ‖ ee [‖ old secret]      (the old secret when resuming)
//	             es ‖ ee ‖ token keys        (a connect token's 64 bytes;
//	             ee ‖ token keys              without es if the client pins no key)
//	transcript = SHA-256("tickwire hs v3" ‖ ConnectResponse (all of it) ‖ Accept[0:57])
//	secret     = seal.DeriveSecret(ikm, server random, transcript)
//	accept key = HKDF-Expand(secret, "tickwire hs v3 accept", 16), AES-128-GCM,
//	             nonce 0, associated data Accept[0:57]
//
// Only the holder of s computes es, so only it can seal an Accept body
// the client opens: server authentication. The transcript binds both
// messages, the cookie among them, to the keys. A second key source, a
// connect token's keys issued by a backend (ConnectResponse flag bit 2,
// admit.go), enters ikm after ee, with the same transcript and
// derivation: the token's keys and the pinned static key each keep the
// session safe on their own, and an unpinned token client (flag bit 3)
// relies on the token's keys alone.

// transcriptLabel opens the handshake transcript hash.
const transcriptLabel = "tickwire hs v3"

// acceptKeyLabel and resumeKeyLabel are the HKDF labels of the Accept
// body key and the resume proof key.
const (
	acceptKeyLabel = "tickwire hs v3 accept"
	resumeKeyLabel = "tickwire hs v3 resume"
)

// keyPair returns a fresh X25519 key from crypto/rand (never the
// configured Rand: key material must not repeat with a seed).
func keyPair() (*ecdh.PrivateKey, error) {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("%w: X25519 key: %w", ErrRandom, err)
	}
	return k, nil
}

// transcript hashes the two handshake messages the keys are bound to.
func transcript(resp []byte, acceptHeader []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(transcriptLabel))
	h.Write(resp)
	h.Write(acceptHeader)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// handshakeIKM computes the key material: es (nil: omitted), ee, then
// the old secret of a resumed session (nil for a new one) or a connect
// token's 64 bytes of key material km (nil: none). eph is this side's
// ephemeral key, peerEph the other's.
func handshakeIKM(eph *ecdh.PrivateKey, peerEph []byte, es []byte, old *seal.Secret, km []byte) ([]byte, error) {
	pub, err := ecdh.X25519().NewPublicKey(peerEph)
	if err != nil {
		return nil, err
	}
	ee, err := eph.ECDH(pub) // fails for a low-order key (all-zero result)
	if err != nil {
		return nil, err
	}
	ikm := make([]byte, 0, 128)
	ikm = append(ikm, es...)
	ikm = append(ikm, ee...)
	if old != nil {
		ikm = append(ikm, old[:]...)
	}
	return append(ikm, km...), nil
}

// staticDH computes es from a static private key and an ephemeral public
// key (the server's side), or from an ephemeral private key and the
// pinned static public key (the client's).
func staticDH(priv *ecdh.PrivateKey, pub []byte) ([]byte, error) {
	p, err := ecdh.X25519().NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return priv.ECDH(p)
}

// acceptAEAD returns the one-use AEAD of an Accept body.
func acceptAEAD(secret *seal.Secret) (cipher.AEAD, error) {
	key, err := hkdf.Expand(sha256.New, secret[:], acceptKeyLabel, 16)
	if err != nil {
		return nil, err
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// sealAcceptBody seals body into out (AcceptSealedLen bytes).
func sealAcceptBody(secret *seal.Secret, header, body []byte, out *[wire.AcceptSealedLen]byte) error {
	a, err := acceptAEAD(secret)
	if err != nil {
		return err
	}
	var nonce [12]byte
	a.Seal(out[:0], nonce[:], body, header)
	return nil
}

// openAcceptBody opens a sealed Accept body; false if it does not
// authenticate.
func openAcceptBody(secret *seal.Secret, header []byte, sealed *[wire.AcceptSealedLen]byte, out *[wire.AcceptBodyLen]byte) bool {
	a, err := acceptAEAD(secret)
	if err != nil {
		return false
	}
	var nonce [12]byte
	_, err = a.Open(out[:0], nonce[:], sealed[:], header)
	return err == nil
}

// resumeProof is the proof a resuming client gives that it holds the
// session's secret: HMAC-SHA256(HKDF-Expand(secret, "tickwire hs v3
// resume", 32), ConnectResponse[0:85]) truncated to 16 bytes. The MAC
// covers the cookie (bound to the client's address and nonce) and the
// client's ephemeral key, so it cannot be replayed from another address
// nor reused with another key exchange.
func resumeProof(secret *seal.Secret, resp []byte) [wire.ResumeProofLen]byte {
	var p [wire.ResumeProofLen]byte
	key, err := hkdf.Expand(sha256.New, secret[:], resumeKeyLabel, 32)
	if err != nil { // only for sizes this code never asks
		panic("transport: resume key: " + err.Error())
	}
	m := hmac.New(sha256.New, key)
	m.Write(resp[:wire.ConnectResponseProofOff])
	copy(p[:], m.Sum(nil))
	return p
}
