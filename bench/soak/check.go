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
	return nil
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

// Violations returns the total of the violations counted.
func (c *Checker) Violations() uint64 { return c.Duplicates + c.OutOfOrder + c.OutOfRange }
