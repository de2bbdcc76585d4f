// Package seal encrypts and authenticates session datagrams: one AEAD
// seal per datagram sent, one open per datagram received, with a replay
// window and in-band key updates. It is the per-datagram layer of issue
// 12's secure sessions; docs/WIRE.md §13 specifies its bytes. The
// Endpoint does not use it yet: the handshake that agrees on a Secret is
// the next step.
//
// # Format and cost
//
// A sealed datagram is a 3-byte cleartext header — a kind byte carrying
// the key phase (KindPhase0, KindPhase1) and the low 16 bits of a 64-bit
// packet number — then the ciphertext, then a 16-byte tag: Overhead is 19
// bytes. The header is the AEAD's associated data; the nonce is the
// per-key IV XORed with the full packet number, which never repeats under
// a key. AES-128-GCM is the default Suite, ChaCha20-Poly1305 the other.
//
// Seal and Open work in place and allocate nothing (TestNoAllocs), except
// at a key update, once every KeyUpdateInterval datagrams, which derives
// the next key (an HKDF-SHA256 chain and a new AEAD: about 3.4 KiB in 33
// allocations and 4.5 µs with AES-GCM on the development machine, under
// 5 ps per datagram at the default interval).
// Their cost is the AEAD's: BenchmarkSealOpen measures seal plus open
// against BenchmarkAEADFloor, the bare AEAD calls; docs/WIRE.md §13.7 has
// the figures. A refused datagram costs at most one AEAD open, and those
// refused for their header or packet number (short, malformed, replayed,
// too old, a phase that fits no key) cost none.
//
// # Buffers
//
// The caller owns every buffer. Seal takes the datagram as it will be
// sent — HeaderLen bytes of room, then the plaintext — with TagLen bytes
// of spare capacity, and returns it extended over the tag. Open decrypts
// the received datagram where it lies and returns the plaintext as a
// window into it, valid while the caller keeps the buffer.
//
// # Packet numbers, replay and key updates
//
// The receiver rebuilds the full packet number from its low 16 bits
// around the highest number it authenticated (RFC 9000 §A.3), checks it
// against a WindowSize (8128) replay window before opening, and marks the
// window only after the tag verifies. Each direction updates its key on
// its own: after KeyUpdateInterval datagrams (default 2^20, at most 2^23,
// AES-GCM's confidentiality limit in RFC 9001 §6.6) the sender moves to
// the next generation and flips the phase bit; packet numbers continue.
// The receiver holds the next generation's key ready and keeps the
// previous one until the replay window has moved past the update — a
// bound in packet numbers, not time: no datagram of the previous
// generation can be accepted after that, so the key is useless, and Open
// needs no clock. A session that sees more forgeries than the suite's
// integrity limit (2^52 for AES-GCM, 2^36 for ChaCha20-Poly1305) refuses
// everything with ErrIntegrityLimit and must end.
//
// # Nonce uniqueness across resumes and restarts
//
// Keys belong to a session and packet numbers to a key, starting at 0.
// A (key, nonce) pair therefore repeats only if two sessions derive the
// same keys, which DeriveSecret prevents by mixing in at least
// MinServerRandom bytes the server draws fresh from crypto/rand for each
// handshake and never stores. A restarted server holds nothing — it
// cannot derive an earlier session's keys even if a client's handshake is
// replayed to it — and a resume is a new handshake whose Secret is derived
// from the old one with new randomness (TestNoKeyNonceReuse).
//
// # Concurrency
//
// A Session is owned by one goroutine, like the Endpoint's per-peer
// state; it is not safe for concurrent use.
package seal
