// Package token implements connect tokens, issue 12's way for a fleet of
// servers to admit clients that a backend vouched for, with no state of
// their own: the netcode model in tickwire's own format, which
// docs/WIRE.md §14 specifies byte for byte.
//
// # Roles
//
// A fleet Key (32 bytes, GenerateKey, text form "fleet-key:<hex>") is
// shared by the backend and every server. The backend, once it has
// authenticated a player by its own means, calls Issue with Params —
// protocol id, client id, creation and expiry, timeout, 1 to 32 server
// addresses, up to 256 bytes of user data — and sends the client the
// Token's AppendBinary encoding over its own secure channel (HTTPS). Issue
// draws two 32-byte session keys (client to server, server to client) and
// seals the private part — client id, timeout, addresses, keys, user data
// — with XChaCha20-Poly1305 under the fleet key and a random 24-byte
// nonce; the version, length, key id, protocol id and expiry travel in
// clear as associated data. The client decodes the public part
// (UnmarshalBinary), learns the servers and its keys, and sends the sealed
// bytes, Token.Sealed, in its handshake.
//
// A server holds a Verifier (NewVerifier: its protocol id and the fleet
// keys, two during a rotation) and, per sealed token received,
// Verifier.Open checks it at the server's injected time: each refusal has
// its own sentinel (ErrShort, ErrVersion, ErrMalformed, ErrProtocol,
// ErrWrongKey, ErrExpired, ErrTampered), none costs more than one AEAD
// open, and a token that verifies fills the caller's Private without
// allocating. The server then checks that the token names it
// (Private.CheckServer) and that it is not replayed from another address
// (ReplayGuard.Admit, which binds a token to the first address that used
// it until it expires, and holds entries only for tokens that verified).
// The session's keys come from Private.KeyMaterial on the server and
// Token.KeyMaterial on the client, the same 64 bytes, passed to
// seal.DeriveSecret with the server's fresh randomness.
//
// # Sizes and cost
//
// A sealed token is 142 bytes plus its user data plus 7 bytes per IPv4
// and 19 per IPv6 address, at most MaxSealedLen (476) so that it fits one
// handshake datagram at the 576-byte minimum MTU: with the full 256 bytes
// of user data, 4 IPv6 or 11 IPv4 addresses fit, with none 17 IPv6 or all
// 32 IPv4; Issue refuses what does not fit and says by how much. The
// public part adds 78 bytes and the addresses again. BenchmarkIssue and
// BenchmarkOpen measure the two sides (docs/WIRE.md §14.6 has the
// figures).
//
// # Concurrency and ownership
//
// Issue and a Verifier are safe for concurrent use; a ReplayGuard and a
// Private are owned by one goroutine. Encoders append to the caller's
// buffer; UnmarshalBinary copies what it keeps; Open reads the sealed
// bytes and retains nothing of them.
package token
