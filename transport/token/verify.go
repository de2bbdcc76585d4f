package token

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// MaxVerifierKeys is the most fleet keys one Verifier holds: the current
// key and the ones being rotated in or out.
const MaxVerifierKeys = 4

// Verifier checks sealed tokens on a server, statelessly: it holds only
// the fleet keys and the protocol id, so any server of a fleet admits any
// token that names it. Make one per server with NewVerifier. It is safe
// for concurrent use.
type Verifier struct {
	protocolID uint64
	n          int
	ids        [MaxVerifierKeys][KeyIDLen]byte
	aeads      [MaxVerifierKeys]cipher.AEAD
}

// NewVerifier returns a Verifier for tokens of protocolID sealed under
// any of keys (1 to MaxVerifierKeys; during a key rotation, the new key
// and the old). Keys whose key ids collide (a 1 in 2^32 chance) are
// refused, since Open picks the key by id. It allocates; call it once.
func NewVerifier(protocolID uint64, keys ...Key) (*Verifier, error) {
	if len(keys) < 1 || len(keys) > MaxVerifierKeys {
		return nil, fmt.Errorf("%w: %d fleet keys, want 1 to %d", ErrInvalidParams, len(keys), MaxVerifierKeys)
	}
	v := &Verifier{protocolID: protocolID, n: len(keys)}
	for i, k := range keys {
		if k == (Key{}) {
			return nil, fmt.Errorf("%w: fleet key %d is the zero Key", ErrInvalidParams, i+1)
		}
		v.ids[i] = k.ID()
		for j := range i {
			if v.ids[j] == v.ids[i] {
				return nil, fmt.Errorf("%w: fleet keys %d and %d have the same key id %x (the same key twice?)", ErrInvalidParams, j+1, i+1, v.ids[i])
			}
		}
		a, err := chacha20poly1305.NewX(k[:])
		if err != nil {
			return nil, fmt.Errorf("token: %w", err)
		}
		v.aeads[i] = a
	}
	return v, nil
}

// Private is the private part of a token that verified: what the server
// learns from it. Verifier.Open fills one the caller owns and reuses; its
// arrays hold everything, so Open allocates nothing. It holds secrets
// (the session keys): Wipe it when done.
type Private struct {
	// ProtocolID and Expires from the token's authenticated header.
	ProtocolID uint64
	Expires    time.Time
	// ClientID as the backend issued it.
	ClientID uint64
	// Timeout as issued: the idle time-out of the session (0: the server's IdleTimeout).
	Timeout time.Duration
	// ClientKey (client to server) and ServerKey (server to client), as
	// the client holds them. KeyMaterial joins them.
	ClientKey, ServerKey SessionKey

	tag      [TagLen]byte // the token's identity for ReplayGuard
	nServers int
	servers  [MaxAddresses]netip.AddrPort
	nUser    int
	userData [MaxUserData]byte
	plain    [maxPrivateLen]byte // decryption scratch, wiped after use
	err      OpenError           // Open's last refusal
	filled   bool                // an Open accepted a token into p since the last Wipe
}

// Servers returns the token's server addresses: a window into p, valid
// until p is reused.
func (p *Private) Servers() []netip.AddrPort { return p.servers[:p.nServers:p.nServers] }

// UserData returns the token's user data: a window into p, valid until p
// is reused.
func (p *Private) UserData() []byte { return p.userData[:p.nUser:p.nUser] }

// ID returns the token's identity, its 16-byte AEAD tag: unique to this
// token (a forgery cannot reuse it, as it cannot reuse the rest). The
// ReplayGuard keys its entries by it.
func (p *Private) ID() [TagLen]byte { return p.tag }

// KeyMaterial returns ClientKey ‖ ServerKey, the 64 bytes both ends pass
// to seal.DeriveSecret as its key material.
func (p *Private) KeyMaterial() [2 * SessionKeyLen]byte {
	var m [2 * SessionKeyLen]byte
	copy(m[:], p.ClientKey[:])
	copy(m[SessionKeyLen:], p.ServerKey[:])
	return m
}

// CheckServer returns nil when addr is among the token's server
// addresses, else an error wrapping ErrNotForServer. addr is the address
// clients reach this server at, as the backend names it (a server bound
// to 0.0.0.0 must be told its public address); an IPv4-mapped IPv6 addr
// matches its IPv4 form. It allocates nothing on success.
func (p *Private) CheckServer(addr netip.AddrPort) error {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	for _, a := range p.Servers() {
		if a == addr {
			return nil
		}
	}
	return fmt.Errorf("%w: the token names %d server addresses, %v is not one", ErrNotForServer, p.nServers, addr)
}

// Wipe zeroes p, keys included.
func (p *Private) Wipe() { *p = Private{} }

// Open verifies a sealed token (exactly the bytes Token.Sealed holds) at
// time now, on the caller's injected clock, and fills out with its
// private part. The checks, cheapest first, each with its own sentinel:
// length and version (ErrShort, ErrVersion, ErrMalformed), protocol id
// (ErrProtocol), key id (ErrWrongKey), expiry (ErrExpired, "expired 12 s
// ago"), then one XChaCha20-Poly1305 open (ErrTampered) — no token costs
// more than one AEAD open, and the tag is checked in constant time by the
// AEAD. A private part that decrypts but does not parse is ErrMalformed
// (only an issuer holding the key can make one). A refusal returns an
// *OpenError that lives in out (valid until out is reused) and wipes
// what an earlier Open put in out (a Private that held no token is not
// wiped again, so a flood of refusals costs no 1.9 KiB clear each).
// sealed is read, never written or retained.
//
// It allocates nothing, accepting or refusing (TestNoAllocs), except for
// the error of a private part that does not parse. It does not
// check the server's address (Private.CheckServer) or replay
// (ReplayGuard): the caller does both.
func (v *Verifier) Open(sealed []byte, now time.Time, out *Private) error {
	if !v.open(sealed, now, out) {
		if out.filled {
			e := out.err
			out.Wipe()
			out.err = e
		}
		return &out.err
	}
	out.err = OpenError{}
	out.filled = true
	return nil
}

// open is Open; on a refusal it sets out.err and returns false.
func (v *Verifier) open(sealed []byte, now time.Time, out *Private) bool {
	e := &out.err
	*e = OpenError{}
	h := parseHeader(sealed, e)
	if e.Reason != nil {
		return false
	}
	if len(sealed) > h.length {
		*e = OpenError{Reason: ErrMalformed, what: whatTrailing, a: uint64(len(sealed) - h.length), b: uint64(h.length)}
		return false
	}
	if h.protocolID != v.protocolID {
		*e = OpenError{Reason: ErrProtocol, what: whatProtocol, a: h.protocolID, b: v.protocolID}
		return false
	}
	var aead cipher.AEAD
	for i := range v.n {
		if v.ids[i] == h.keyID {
			aead = v.aeads[i]
			break
		}
	}
	if aead == nil {
		*e = OpenError{Reason: ErrWrongKey, what: whatKeyID, keyID: h.keyID, a: uint64(v.n)}
		return false
	}
	if h.expires > MaxExpires {
		*e = OpenError{Reason: ErrMalformed, what: whatExpiry, a: h.expires}
		return false
	}
	if now.Unix() <= 0 { // a clock that is not set would admit every token
		*e = OpenError{Reason: ErrInvalidParams, what: whatClock, b: uint64(now.Year())}
		return false
	}
	if t := now.Unix(); t >= int64(h.expires) {
		*e = OpenError{Reason: ErrExpired, what: whatExpired, a: uint64(t - int64(h.expires))}
		return false
	}
	// ad and nonce are windows into sealed, the caller's buffer, and dst
	// is out's scratch: nothing escapes through the AEAD interface that
	// is not already on the heap, so the open allocates nothing.
	ad := sealed[:adLen]
	nonce := sealed[adLen:SealedHeaderLen]
	ct := sealed[SealedHeaderLen:]
	plain, err := aead.Open(out.plain[:0], nonce, ct, ad)
	if err != nil {
		*e = OpenError{Reason: ErrTampered, what: whatTag, a: uint64(len(sealed))}
		return false
	}
	out.filled = true // from here out holds key material: a refusal wipes it
	err = parsePrivate(plain, out)
	clear(out.plain[:])
	if err != nil {
		*e = OpenError{Reason: ErrMalformed, what: whatPrivate, detail: err}
		return false
	}
	out.ProtocolID = h.protocolID
	out.Expires = time.Unix(int64(h.expires), 0)
	copy(out.tag[:], sealed[len(sealed)-TagLen:])
	return true
}

// parsePrivate decodes a private part's plaintext (docs/WIRE.md §14.3)
// into out. It allocates nothing.
func parsePrivate(b []byte, out *Private) error {
	if len(b) < privateFixedLen+addrLen4 {
		return fmt.Errorf("%w: private part of %d bytes, want at least %d", ErrMalformed, len(b), privateFixedLen+addrLen4)
	}
	out.ClientID = binary.LittleEndian.Uint64(b)
	out.Timeout = time.Duration(binary.LittleEndian.Uint32(b[8:])) * time.Millisecond
	copy(out.ClientKey[:], b[12:44])
	copy(out.ServerKey[:], b[44:76])
	count, n, err := parseAddrs(b[76:], &out.servers)
	if err != nil {
		return err
	}
	out.nServers = count
	rest := b[76+n:]
	if len(rest) < 2 {
		return fmt.Errorf("%w: private part ends before the user data length", ErrMalformed)
	}
	ud := int(binary.LittleEndian.Uint16(rest))
	if ud > MaxUserData {
		return fmt.Errorf("%w: %d bytes of user data, want at most %d", ErrMalformed, ud, MaxUserData)
	}
	if len(rest)-2 != ud {
		return fmt.Errorf("%w: user data length %d, but %d bytes follow", ErrMalformed, ud, len(rest)-2)
	}
	out.nUser = copy(out.userData[:], rest[2:])
	return nil
}
