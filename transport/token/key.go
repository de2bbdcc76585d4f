package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Key is a fleet key: the 32-byte XChaCha20-Poly1305 key that the backend
// issuing tokens and every server verifying them share. Anyone holding it
// can issue tokens and read every token's private part, session keys
// included, so it lives only on the backend and the servers. The zero
// Key is not a key: make one with GenerateKey.
//
// Its text form (MarshalText, ParseKey) is "fleet-key:" followed by 64
// lowercase hex digits. String redacts it, so a Key printed by accident
// (a log line, %v) does not leak.
type Key [KeyLen]byte

// KeyTextPrefix starts the text form of a Key.
const KeyTextPrefix = "fleet-key:"

// GoString redacts the key for %#v as String does for %v.
func (k Key) GoString() string { return k.String() }

// SessionKey is one direction's 32-byte session key from a token
// (Token.ClientKey, Private.ClientKey and the ServerKeys). It prints
// redacted (%v, %+v, %#v, %x), so a Token or Private logged by accident
// shows no key; slice it (k[:]) for the bytes.
type SessionKey [SessionKeyLen]byte

// String returns "token.SessionKey(redacted)".
func (SessionKey) String() string { return "token.SessionKey(redacted)" }

// GoString redacts the key for %#v as String does for %v.
func (k SessionKey) GoString() string { return k.String() }

// GenerateKey returns a new fleet key from crypto/rand.
func GenerateKey() (Key, error) {
	var k Key
	if _, err := io.ReadFull(rand.Reader, k[:]); err != nil {
		return k, fmt.Errorf("token: reading crypto/rand: %w", err)
	}
	return k, nil
}

// String returns "token.Key(redacted, id 1a2b3c4d)": the key id (ID), never
// the key. Use MarshalText for the key itself.
func (k Key) String() string {
	id := k.ID()
	return "token.Key(redacted, id " + hex.EncodeToString(id[:]) + ")"
}

// ID returns the key's 4-byte key id, the first 4 bytes of
// HMAC-SHA256(key, "tickwire token v1 key id"). Every sealed token
// carries the id of the key that sealed it, so a server holding several
// keys (a rotation) picks the one to try without a trial decryption, and
// a token of another fleet is refused as ErrWrongKey before any AEAD work.
// It reveals nothing about the key. It allocates; Verifier computes it
// once per key.
func (k Key) ID() [KeyIDLen]byte {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte("tickwire token v1 key id"))
	var id [KeyIDLen]byte
	copy(id[:], m.Sum(nil))
	return id
}

// MarshalText returns the key's text form, KeyTextPrefix and 64 hex
// digits, without a newline. It implements encoding.TextMarshaler.
func (k Key) MarshalText() ([]byte, error) {
	b := make([]byte, 0, len(KeyTextPrefix)+2*KeyLen)
	b = append(b, KeyTextPrefix...)
	return hex.AppendEncode(b, k[:]), nil
}

// UnmarshalText parses what MarshalText writes (see ParseKey). It
// implements encoding.TextUnmarshaler.
func (k *Key) UnmarshalText(b []byte) error {
	p, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}

// ParseKey parses a fleet key's text form: KeyTextPrefix then 64 hex
// digits (either case), or the 64 hex digits alone, with surrounding
// white space (a file's final newline) ignored. A key of the wrong length
// is refused with its length; an all-zero key is refused too. Errors wrap
// ErrKeyText and never quote the text, which may be a real key.
func ParseKey(s string) (Key, error) {
	var k Key
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, KeyTextPrefix)
	if len(s) != 2*KeyLen {
		if len(s)%2 != 0 {
			return k, fmt.Errorf("%w: %d hex digits (an odd number), want %d for %d bytes", ErrKeyText, len(s), 2*KeyLen, KeyLen)
		}
		return k, fmt.Errorf("%w: %d bytes (%d hex digits), want %d bytes (%d hex digits)", ErrKeyText, len(s)/2, len(s), KeyLen, 2*KeyLen)
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return k, fmt.Errorf("%w: character %d is not a hex digit", ErrKeyText, i+1)
		}
	}
	if _, err := hex.Decode(k[:], []byte(s)); err != nil {
		return Key{}, fmt.Errorf("%w: %v", ErrKeyText, err)
	}
	if k == (Key{}) {
		return k, fmt.Errorf("%w: the all-zero key is not a key", ErrKeyText)
	}
	return k, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
