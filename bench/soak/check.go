package soak

import "fmt"

// Checker verifies one reliable stream's deliveries against its send
// sequence: messages carry sequence numbers 0..n−1, each must arrive
// exactly once, and on an ordered stream in sequence order. Its memory is
// one bit per message, allocated up front, so checking a long run does not
// grow the heap.
type Checker struct {
	ordered bool
	bits    []uint64
	n       uint64
	next    uint64 // ordered: the sequence number due next
	low     uint64 // the lowest sequence number not yet delivered
	high    uint64 // one past the highest sequence number delivered

	// Delivered counts accepted deliveries (each sequence number once).
	Delivered uint64
	// Duplicates, OutOfOrder and OutOfRange count the violations seen.
	Duplicates, OutOfOrder, OutOfRange uint64
	// Reordered counts deliveries below the highest delivered so far: on
	// an unordered stream, the reordering the link caused and the stream
	// passed through (not a violation).
	Reordered uint64
}

// NewChecker returns a checker for n messages, numbered 0..n−1, on an
// ordered stream if ordered.
func NewChecker(n uint64, ordered bool) *Checker {
	return &Checker{ordered: ordered, bits: make([]uint64, (n+63)/64), n: n}
}

// Deliver records the delivery of message seq and returns an error
// describing the violation, if it is one: a sequence number outside
// 0..n−1, a second delivery, or (ordered) a delivery other than the next
// due. A violating delivery is counted but not accepted.
func (c *Checker) Deliver(seq uint64) error {
	if seq >= c.n {
		c.OutOfRange++
		return fmt.Errorf("message %d outside 0..%d", seq, c.n-1)
	}
	w, b := seq/64, uint64(1)<<(seq%64)
	if c.bits[w]&b != 0 {
		c.Duplicates++
		return fmt.Errorf("message %d delivered twice", seq)
	}
	if c.ordered && seq != c.next {
		c.OutOfOrder++
		return fmt.Errorf("message %d delivered when %d was due", seq, c.next)
	}
	c.bits[w] |= b
	c.Delivered++
	if c.ordered {
		c.next++
	}
	if seq+1 < c.high {
		c.Reordered++
	}
	c.high = max(c.high, seq+1)
	for c.low < c.n && c.bits[c.low/64]&(1<<(c.low%64)) != 0 {
		c.low++
	}
	return nil
}

// Resolve returns the sequence number whose low 16 bits are id (a
// message's wire id on its stream, counted from the stream's first
// message) that lies nearest the lowest sequence number not yet
// delivered: the sender holds at most a reliable window (≤ 16,384) of
// messages past that one, so a genuine id resolves uniquely. It returns
// false for an id that resolves below 0.
func (c *Checker) Resolve(id uint16) (uint64, bool) {
	d := int64(int16(id - uint16(c.low)))
	if d < 0 && uint64(-d) > c.low {
		return 0, false
	}
	return uint64(int64(c.low) + d), true
}

// Has reports whether message seq has been delivered.
func (c *Checker) Has(seq uint64) bool {
	return seq < c.n && c.bits[seq/64]&(1<<(seq%64)) != 0
}

// Missing returns how many of the first sent messages (0..sent−1) have not
// been delivered.
func (c *Checker) Missing(sent uint64) uint64 {
	sent = min(sent, c.n)
	var got uint64
	for i := uint64(0); i < sent; i++ {
		if c.bits[i/64]&(1<<(i%64)) != 0 {
			got++
		}
	}
	return sent - got
}

// FirstMissing returns the lowest of the first sent messages not delivered,
// or false if none is missing.
func (c *Checker) FirstMissing(sent uint64) (uint64, bool) {
	if c.low < min(sent, c.n) {
		return c.low, true
	}
	return 0, false
}

// Violations returns the total of the violations counted.
func (c *Checker) Violations() uint64 { return c.Duplicates + c.OutOfOrder + c.OutOfRange }
