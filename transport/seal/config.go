package seal

import "fmt"

// Suite is the AEAD a session seals with. Both ends of a session must use
// the same suite; the handshake agrees on it.
type Suite uint8

const (
	// AES128GCM is AES-128 in Galois/Counter Mode (crypto/aes,
	// crypto/cipher), hardware-accelerated on amd64 and arm64. The zero
	// Suite, and the default.
	AES128GCM Suite = iota
	// ChaCha20Poly1305 is ChaCha20-Poly1305 (RFC 8439,
	// golang.org/x/crypto/chacha20poly1305), for CPUs without AES
	// instructions.
	ChaCha20Poly1305
)

// String names the suite as the key schedule's labels do.
func (s Suite) String() string {
	switch s {
	case AES128GCM:
		return "aes128gcm"
	case ChaCha20Poly1305:
		return "chacha20poly1305"
	}
	return fmt.Sprintf("suite(%d)", uint8(s))
}

// keyLen is the suite's key size in bytes.
func (s Suite) keyLen() int {
	if s == ChaCha20Poly1305 {
		return 32
	}
	return 16
}

// integrityLimit is the number of datagrams failing authentication a
// session may see over all its keys before it must end (RFC 9001 §6.6:
// 2^52 for AES-GCM, 2^36 for ChaCha20-Poly1305).
func (s Suite) integrityLimit() uint64 {
	if s == ChaCha20Poly1305 {
		return 1 << 36
	}
	return 1 << 52
}

// Key-update limits of Config.KeyUpdateInterval.
const (
	// DefaultKeyUpdateInterval is Config.KeyUpdateInterval when it is
	// zero: 2^20 datagrams per key, an eighth of AES-GCM's confidentiality
	// limit. A bulk flow of a million datagrams a second updates its key
	// about once a second; a 60 Hz game every five hours.
	DefaultKeyUpdateInterval = 1 << 20

	// MinKeyUpdateInterval is the smallest interval: half the packet
	// number reconstruction range (2^15). A receiver can miss a whole key
	// generation only by missing more datagrams in a row than that, which
	// already breaks packet number reconstruction, so key phases add no
	// failure of their own; and it is above WindowSize, so a datagram two
	// generations old is always below the replay window.
	MinKeyUpdateInterval = 1 << 15

	// MaxKeyUpdateInterval is the largest interval: AES-GCM's
	// confidentiality limit of 2^23 datagrams per key (RFC 9001 §6.6). It
	// applies to ChaCha20-Poly1305 too, which keeps one schedule for both.
	MaxKeyUpdateInterval = 1 << 23
)

// Config configures a Session. The zero value selects every default. It
// is a plain value: copying it clones it.
type Config struct {
	// Suite is the AEAD. Default AES128GCM (the zero value); the other
	// choice is ChaCha20Poly1305. Both ends must agree.
	Suite Suite

	// KeyUpdateInterval is how many datagrams the sender seals under one
	// key generation before it moves to the next, in band (the key phase
	// bit flips; the receiver follows). Only the sending side reads it: a
	// receiver follows whatever interval its peer uses. Default
	// DefaultKeyUpdateInterval (2^20); range [MinKeyUpdateInterval,
	// MaxKeyUpdateInterval] = [2^15, 2^23].
	KeyUpdateInterval uint64
}

// WithDefaults returns c with every zero field replaced by its default.
func (c Config) WithDefaults() Config {
	if c.KeyUpdateInterval == 0 {
		c.KeyUpdateInterval = DefaultKeyUpdateInterval
	}
	return c
}

// Validate reports whether c is usable, with zero fields taking their
// defaults. Its errors wrap ErrInvalidConfig and carry the numbers.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Suite > ChaCha20Poly1305:
		return fmt.Errorf("%w: Suite %d is neither AES128GCM (0) nor ChaCha20Poly1305 (1)", ErrInvalidConfig, uint8(c.Suite))
	case c.KeyUpdateInterval < MinKeyUpdateInterval || c.KeyUpdateInterval > MaxKeyUpdateInterval:
		return fmt.Errorf("%w: KeyUpdateInterval %d outside [%d, %d]", ErrInvalidConfig, c.KeyUpdateInterval, MinKeyUpdateInterval, MaxKeyUpdateInterval)
	}
	return nil
}

// Role says which direction's keys a Session sends with. The client
// seals with the client-to-server keys and opens with the server-to-client
// ones; the server the other way round.
type Role uint8

const (
	// Client is the side that Dials.
	Client Role = iota
	// Server is the side that Listens.
	Server
)

// String returns "client" or "server".
func (r Role) String() string {
	switch r {
	case Client:
		return "client"
	case Server:
		return "server"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}
