package wire

// Seq is a 16-bit sequence number that wraps from 65535 to 0.
//
// Seqs are compared with serial-number arithmetic (RFC 1982): a is newer
// than b when the forward distance from b to a is in [1, 32767]. Two seqs
// exactly 32768 apart are not ordered (neither is newer); the protocol never
// keeps seqs that far apart alive at once (the ack window is 33 seqs and the
// in-flight window at most 16384), so that case only arises for stale input,
// which the callers treat as too old.
//
// The zero value is seq 0. Seq is a plain value; every method is a few
// integer instructions and allocates nothing.
type Seq uint16

// Next returns s+1, wrapping at 65536.
func (s Seq) Next() Seq { return s + 1 }

// Add returns s advanced by n (n may be negative), wrapping at 65536.
func (s Seq) Add(n int) Seq { return s + Seq(uint16(n)) }

// Sub returns the signed distance s−t in [−32768, 32767]: positive when s
// is newer than t. Seqs exactly 32768 apart give −32768 both ways.
func (s Seq) Sub(t Seq) int { return int(int16(s - t)) }

// Newer reports whether s is strictly newer than t.
func (s Seq) Newer(t Seq) bool {
	d := s - t
	return d != 0 && d < 0x8000
}

// NewerOrEqual reports whether s is t or newer than t.
func (s Seq) NewerOrEqual(t Seq) bool { return s-t < 0x8000 }

// Older reports whether s is strictly older than t.
func (s Seq) Older(t Seq) bool { return t.Newer(s) }
