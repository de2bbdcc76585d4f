// Package fragment splits messages too large for one datagram into pieces
// (wire.FragmentFrame) and reassembles them on the receiving side, all or
// nothing.
//
// # Sizes
//
// Both sides know the negotiated MTU, so the piece size is not sent: it is
// PieceSize(mtu), the largest fragment payload for which the session
// header, a worst-case channel header and the fragment frame fit in one
// datagram (1174 bytes at the default MTU of 1200). Every piece but the
// last carries exactly that many bytes and the last 1 to that many, so a
// piece's index gives its offset in the message. A message is split into
// at most MaxPieces (255) pieces, so the largest message is
// MaxMessageSize(mtu) = 255 × PieceSize(mtu); Count refuses anything
// larger with ErrTooLarge, and an Assembler built for the same MTU (and
// the same, possibly lower, negotiated maximum message size) accepts
// everything Count accepts.
//
// # Sending
//
// Count gives the number of pieces; AppendPiece appends the encoding of
// piece i to a caller-owned datagram buffer. Neither allocates nor keeps
// anything: the message must stay unchanged until its last piece is
// encoded. The message is a complete frame encoding of type mode (see
// wire.FragmentFrame), and message ids follow one wire.Seq sequence per
// channel.
//
// # Receiving
//
// An Assembler (one per peer) takes pieces with Add and returns a message
// only when all its pieces have arrived; it never delivers part of one. It
// is bounded: at most MaxPartial partial assemblies (a new message beyond
// that evicts the oldest), each discarded Expiry after its first
// piece, and a message is at most MaxMessageSize bytes, so its memory is at
// most (MaxPartial + 1) × MaxMessageSize. It remembers the message ids it
// completed recently (CompletedWindow), so a late or duplicated piece can
// never deliver a message twice. Every piece it ignores or refuses and
// every partial assembly it discards is counted by reason in Stats;
// refusals are also returned as sentinel errors, so the caller can count
// malformed input with its other drop reasons.
//
// # Threading and ownership
//
// An Assembler is used by one goroutine (the peer's receive path), which
// calls all of its methods; it has no locks. Add copies the piece's
// payload, so the caller may reuse its receive buffer as soon as Add
// returns. A message returned by Add lives in the Assembler's buffer and
// is valid until the next call to Add or Expire; dispatch it or copy it
// before then.
//
// # Cost
//
// Add scans the MaxPartial slots (8 by default) and copies the piece;
// nothing is allocated once the reassembly buffers have grown to the
// largest message seen (they are reused from a free list, at most
// MaxPartial + 1 of them). Count, AppendPiece and Expire never allocate
// (AppendPiece only grows dst when it lacks room). TestNoAllocs checks
// this.
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package fragment
