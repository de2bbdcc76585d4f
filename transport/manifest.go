package transport

import (
	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/wire"
)

// manifestCap is the most reliable messages (or pieces) one datagram
// carries; the packer starts a new datagram when it is reached.
const manifestCap = 48

// manifestEntry names one reliable message (or one piece of one) that rode
// in a datagram, so that datagram's verdict reaches it.
type manifestEntry struct {
	id     wire.Seq
	stream uint8
	piece  uint8 // for a piece: its index
	frag   bool  // a piece of a large message, not a whole message
}

// manifest lists the reliable content of the datagram being built.
type manifest struct {
	n       uint8
	entries [manifestCap]manifestEntry
}

// manifestRef locates one in-flight datagram's entries in manifestLog's
// ring.
type manifestRef struct {
	off uint32 // absolute index of the first entry
	n   uint8
}

// manifestLog keeps what each in-flight datagram carried, so its verdict
// reaches those messages: one ring of entries shared by every datagram
// (most carry one to three), and per seq a reference into it. Memory
// follows what is in flight — 8 bytes per seq of the span plus 5 per entry
// — not the worst case of 48 entries per datagram; the ring grows (by
// doubling, so rarely) only when the datagrams in flight carry more
// entries than it holds. Entries are written in seq order and a seq's are
// dead once its verdict is dispatched, so space is reclaimed from the
// oldest seq that still has a manifest.
type manifestLog struct {
	refs    *ackmap.SeqBuffer[manifestRef]
	entries []manifestEntry // ring; its length is a power of two
	head    uint32          // absolute index of the next entry written
	tail    uint32          // absolute index below which no entry is live
	tailSeq wire.Seq        // the oldest seq that may hold a live manifest
}

// newManifestLog returns a log for a span of up to span seqs in flight,
// the first being first.
func newManifestLog(span int, first wire.Seq) *manifestLog {
	n := 64
	for n < 2*span {
		n *= 2
	}
	return &manifestLog{refs: ackmap.NewSeqBuffer[manifestRef](span), entries: make([]manifestEntry, n), tailSeq: first}
}

// sent notes that datagram seq went out (with a manifest or not), so the
// oldest seq that may hold a live manifest never lags more than the span:
// anything older has had its verdict. O(1).
func (l *manifestLog) sent(seq wire.Seq) {
	if span := wire.Seq(l.refs.Size()); seq-l.tailSeq > span {
		l.tailSeq = seq - span
	}
}

// put records that datagram seq carried es. seq is newer than every seq
// put before, and sent(seq) was called. O(len(es)) amortised; allocates
// only to grow the ring.
func (l *manifestLog) put(seq wire.Seq, es []manifestEntry) {
	n := uint32(len(es))
	if l.head+n-l.tail > uint32(len(l.entries)) {
		l.reclaim(seq)
		if l.head+n-l.tail > uint32(len(l.entries)) {
			l.grow(n)
		}
	}
	mask := uint32(len(l.entries) - 1)
	for i, e := range es {
		l.entries[(l.head+uint32(i))&mask] = e
	}
	*l.refs.Claim(seq) = manifestRef{off: l.head, n: uint8(n)}
	l.head += n
}

// reclaim moves the tail up to the entries of the oldest seq before next
// that still holds a manifest (or to the head if none does).
func (l *manifestLog) reclaim(next wire.Seq) {
	for ; l.tailSeq != next; l.tailSeq++ {
		if r := l.refs.Get(l.tailSeq); r != nil {
			l.tail = r.off
			return
		}
	}
	l.tail = l.head
}

// grow doubles the ring until n more entries fit, keeping every live entry
// at its absolute index.
func (l *manifestLog) grow(n uint32) {
	size := len(l.entries)
	for l.head+n-l.tail > uint32(size) {
		size *= 2
	}
	old, oldMask, mask := l.entries, uint32(len(l.entries)-1), uint32(size-1)
	l.entries = make([]manifestEntry, size)
	for p := l.tail; p != l.head; p++ {
		l.entries[p&mask] = old[p&oldMask]
	}
}

// take removes seq's manifest and returns where its entries are (read them
// with at before the next put), or ok false if seq carried none.
func (l *manifestLog) take(seq wire.Seq) (off uint32, n int, ok bool) {
	r, ok := l.refs.Take(seq)
	return r.off, int(r.n), ok
}

// at returns entry i of the manifest at off.
func (l *manifestLog) at(off uint32, i int) manifestEntry {
	return l.entries[(off+uint32(i))&uint32(len(l.entries)-1)]
}
