package token

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// Params are what a backend puts in a token. Issue validates them.
type Params struct {
	// ProtocolID names the game and its version; a server refuses a
	// token issued for another (ErrProtocol). In clear in the token.
	ProtocolID uint64
	// ClientID is the backend's id for the player, sealed. The server
	// learns it only from a token that verifies.
	ClientID uint64
	// Created and Expires bound the token's life, in whole unix seconds
	// (the sub-second part is dropped). Expires must be after Created,
	// and Created at or after 1970. Expires travels in clear and is
	// authenticated; Created only in the client's public part.
	Created, Expires time.Time
	// Timeout is the idle time-out of the session the token admits: how
	// long the server waits for a datagram from the client before it
	// times the session out (a transport server clamps it to
	// [1 s, 1 h]). In whole milliseconds, 0 to MaxTimeout; 0 means the
	// server's own IdleTimeout.
	Timeout time.Duration
	// Servers are the addresses the token admits the client to: 1 to
	// MaxAddresses, IPv4 or IPv6 with a port other than 0, no zone, no
	// repeats. IPv4-mapped IPv6 addresses are stored as IPv4. The client
	// tries them in order; each server checks it is among them.
	Servers []netip.AddrPort
	// UserData is up to MaxUserData bytes for the server's admission
	// decision (a match id, a role), sealed. Issue copies it.
	UserData []byte
}

// Token is the public part of a connect token: what the backend sends
// the client (over its own authenticated channel, HTTPS), encoded with
// AppendBinary. The client reads the server addresses, the timeout and
// its two session keys from it, and sends Sealed to a server in its
// handshake; it cannot read or change what Sealed holds.
type Token struct {
	// ProtocolID and Expires are copied from Sealed's cleartext header.
	ProtocolID uint64
	// Created and Expires are whole unix seconds.
	Created, Expires time.Time
	// Timeout as issued (0: the server's default).
	Timeout time.Duration
	// Servers the client may connect to, in the backend's order.
	Servers []netip.AddrPort
	// ClientKey protects the client-to-server direction and ServerKey the
	// other: 32 bytes each from the issuer's randomness, the same the
	// server finds in the sealed private part. KeyMaterial joins them.
	ClientKey, ServerKey SessionKey
	// Sealed is the sealed private part (MinSealedLen to MaxSealedLen
	// bytes, docs/WIRE.md §14.2), owned by the Token.
	Sealed []byte
}

// KeyMaterial returns ClientKey ‖ ServerKey, the 64 bytes both ends pass
// to seal.DeriveSecret as its key material.
func (t *Token) KeyMaterial() [2 * SessionKeyLen]byte {
	var m [2 * SessionKeyLen]byte
	copy(m[:], t.ClientKey[:])
	copy(m[SessionKeyLen:], t.ServerKey[:])
	return m
}

// Issue makes a token: it draws the two session keys and the nonce from
// rnd (crypto/rand when rnd is nil; tests pass a seeded reader), seals
// the private part — client id, timeout, server addresses, session keys,
// user data — with XChaCha20-Poly1305 under key, and returns the public
// part holding the sealed bytes. It fails with ErrInvalidParams for
// parameters the format cannot hold, including a token that would exceed
// MaxSealedLen. It allocates the Token's slices and about 1 KiB of
// scratch; it runs once per token, on the backend.
func Issue(key Key, p Params, rnd io.Reader) (Token, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var t Token
	addrs, err := checkAddrs(p.Servers)
	if err != nil {
		return t, err
	}
	created, expires := p.Created.Unix(), p.Expires.Unix()
	switch {
	case key == (Key{}):
		return t, fmt.Errorf("%w: the zero Key is not a fleet key (GenerateKey)", ErrInvalidParams)
	case created < 0:
		return t, fmt.Errorf("%w: Created %d s before 1970", ErrInvalidParams, -created)
	case expires > MaxExpires:
		return t, fmt.Errorf("%w: Expires %d (unix s) after the year 9999 (%d)", ErrInvalidParams, expires, int64(MaxExpires))
	case expires <= created:
		return t, fmt.Errorf("%w: Expires is %d s after Created, want more than 0", ErrInvalidParams, expires-created)
	case p.Timeout < 0 || p.Timeout > MaxTimeout:
		return t, fmt.Errorf("%w: Timeout %v, want 0 to %v", ErrInvalidParams, p.Timeout, time.Duration(MaxTimeout))
	case len(p.UserData) > MaxUserData:
		return t, fmt.Errorf("%w: %d bytes of user data, want at most %d", ErrInvalidParams, len(p.UserData), MaxUserData)
	}
	if n := sealedLen(addrs, len(p.UserData)); n > MaxSealedLen {
		return t, fmt.Errorf("%w: the sealed token would be %d bytes, over MaxSealedLen %d (%d B of user data, %d server addresses taking %d B): drop %d bytes of addresses or user data",
			ErrInvalidParams, n, MaxSealedLen, len(p.UserData), len(addrs), addrsLen(addrs), n-MaxSealedLen)
	}
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		return t, fmt.Errorf("token: %w", err)
	}
	if _, err := io.ReadFull(rnd, t.ClientKey[:]); err != nil {
		return Token{}, fmt.Errorf("token: reading randomness: %w", err)
	}
	if _, err := io.ReadFull(rnd, t.ServerKey[:]); err != nil {
		return Token{}, fmt.Errorf("token: reading randomness: %w", err)
	}
	var nonce [NonceLen]byte
	if _, err := io.ReadFull(rnd, nonce[:]); err != nil {
		return Token{}, fmt.Errorf("token: reading randomness: %w", err)
	}
	timeoutMS := uint32(p.Timeout / time.Millisecond)
	total := sealedLen(addrs, len(p.UserData))

	// Private part, docs/WIRE.md §14.3.
	plain := appendPrivate(make([]byte, 0, maxPrivateLen), p.ClientID, timeoutMS, &t.ClientKey, &t.ServerKey, addrs, p.UserData)

	// Sealed token, docs/WIRE.md §14.2.
	id := key.ID()
	sealed := make([]byte, 0, total)
	sealed = append(sealed, Version)
	sealed = binary.LittleEndian.AppendUint16(sealed, uint16(total))
	sealed = append(sealed, id[:]...)
	sealed = binary.LittleEndian.AppendUint64(sealed, p.ProtocolID)
	sealed = binary.LittleEndian.AppendUint64(sealed, uint64(expires))
	sealed = append(sealed, nonce[:]...)
	sealed = aead.Seal(sealed, nonce[:], plain, sealed[:adLen])
	clear(plain[:cap(plain)])
	if len(sealed) != total {
		panic(fmt.Sprintf("token: sealed %d bytes, computed %d", len(sealed), total))
	}

	t.ProtocolID = p.ProtocolID
	t.Created = time.Unix(created, 0)
	t.Expires = time.Unix(expires, 0)
	t.Timeout = time.Duration(timeoutMS) * time.Millisecond
	t.Servers = addrs
	t.Sealed = sealed
	return t, nil
}

// appendPrivate appends a private part's plaintext (docs/WIRE.md §14.3).
func appendPrivate(b []byte, clientID uint64, timeoutMS uint32, ck, sk *SessionKey, addrs []netip.AddrPort, userData []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, clientID)
	b = binary.LittleEndian.AppendUint32(b, timeoutMS)
	b = append(b, ck[:]...)
	b = append(b, sk[:]...)
	b = appendAddrs(b, addrs)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(userData)))
	return append(b, userData...)
}

// EncodedLen is the size of t's public encoding.
func (t *Token) EncodedLen() int {
	return publicFixedLen + addrsLen(t.Servers) + len(t.Sealed)
}

// AppendBinary appends the public part (docs/WIRE.md §14.4) to b and
// returns the extended buffer. It implements encoding.BinaryAppender. It
// fails with ErrInvalidParams on a Token that Issue or UnmarshalBinary did
// not make (bad addresses, a Sealed of the wrong size).
func (t *Token) AppendBinary(b []byte) ([]byte, error) {
	if _, err := checkAddrs(t.Servers); err != nil {
		return b, err
	}
	if len(t.Sealed) < MinSealedLen || len(t.Sealed) > MaxSealedLen {
		return b, fmt.Errorf("%w: Sealed is %d bytes, want %d to %d", ErrInvalidParams, len(t.Sealed), MinSealedLen, MaxSealedLen)
	}
	created := t.Created.Unix()
	if created < 0 || t.Timeout < 0 || t.Timeout > MaxTimeout {
		return b, fmt.Errorf("%w: Created %d or Timeout %v out of range", ErrInvalidParams, created, t.Timeout)
	}
	b = append(b, Version)
	b = binary.LittleEndian.AppendUint64(b, uint64(created))
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Timeout/time.Millisecond))
	b = append(b, t.ClientKey[:]...)
	b = append(b, t.ServerKey[:]...)
	b = appendAddrs(b, t.Servers)
	return append(b, t.Sealed...), nil
}

// MarshalBinary returns the public part (AppendBinary to a new buffer).
func (t *Token) MarshalBinary() ([]byte, error) {
	return t.AppendBinary(make([]byte, 0, t.EncodedLen()))
}

// UnmarshalBinary decodes a public part that AppendBinary wrote, into t.
// It checks the format — versions, counts, addresses (none repeated), the sealed header's
// length, Created before Expires, no trailing bytes — but cannot check the
// sealed part's tag, which only a fleet key opens. t's slices are new
// copies: b is not retained. Errors wrap ErrShort, ErrVersion or
// ErrMalformed.
func (t *Token) UnmarshalBinary(b []byte) error {
	*t = Token{}
	if len(b) < publicFixedLen {
		return fmt.Errorf("%w: public token of %d bytes, want at least %d", ErrShort, len(b), publicFixedLen+addrLen4+MinSealedLen)
	}
	if b[0] != Version {
		return fmt.Errorf("%w: public token version %d, want %d", ErrVersion, b[0], Version)
	}
	created := binary.LittleEndian.Uint64(b[1:])
	timeoutMS := binary.LittleEndian.Uint32(b[9:])
	var tt Token
	copy(tt.ClientKey[:], b[13:45])
	copy(tt.ServerKey[:], b[45:77])
	var addrs [MaxAddresses]netip.AddrPort
	count, n, err := parseAddrs(b[77:], &addrs)
	if err != nil {
		return err
	}
	for i := 1; i < count; i++ {
		for j := range i {
			if addrs[i] == addrs[j] {
				return fmt.Errorf("%w: server address %d repeats address %d", ErrMalformed, i+1, j+1)
			}
		}
	}
	rest := b[77+n:]
	var e OpenError
	h := parseHeader(rest, &e)
	if e.Reason != nil {
		return &e
	}
	if len(rest) > h.length {
		return fmt.Errorf("%w: %d bytes after the sealed part", ErrMalformed, len(rest)-h.length)
	}
	if h.expires > MaxExpires || created >= h.expires {
		return fmt.Errorf("%w: created %d, expires %d (unix s): want created before expires", ErrMalformed, created, h.expires)
	}
	tt.ProtocolID = h.protocolID
	tt.Created = time.Unix(int64(created), 0)
	tt.Expires = time.Unix(int64(h.expires), 0)
	tt.Timeout = time.Duration(timeoutMS) * time.Millisecond
	tt.Servers = append([]netip.AddrPort(nil), addrs[:count]...)
	tt.Sealed = append([]byte(nil), rest...)
	*t = tt
	return nil
}

// header is a sealed token's cleartext header.
type header struct {
	length     int
	keyID      [KeyIDLen]byte
	protocolID uint64
	expires    uint64
}

// parseHeader reads a sealed token's header and checks its length field
// against the limits and against len(b) (ErrShort when b holds fewer
// bytes than the header says). A refusal sets e.Reason.
func parseHeader(b []byte, e *OpenError) header {
	var h header
	switch {
	case len(b) < 3:
		*e = OpenError{Reason: ErrShort, what: whatTooShort, a: uint64(len(b))}
		return h
	case b[0] != Version:
		*e = OpenError{Reason: ErrVersion, what: whatVersion, a: uint64(b[0])}
		return h
	}
	h.length = int(binary.LittleEndian.Uint16(b[1:]))
	switch {
	case h.length < MinSealedLen || h.length > MaxSealedLen:
		*e = OpenError{Reason: ErrMalformed, what: whatLength, a: uint64(h.length)}
		return h
	case len(b) < h.length:
		*e = OpenError{Reason: ErrShort, what: whatTruncated, a: uint64(len(b)), b: uint64(h.length)}
		return h
	}
	copy(h.keyID[:], b[3:7])
	h.protocolID = binary.LittleEndian.Uint64(b[7:])
	h.expires = binary.LittleEndian.Uint64(b[15:])
	return h
}
