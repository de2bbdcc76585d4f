package link

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/rollback"

	"github.com/tickwire/tickwire/transport"
)

// Snapshot chunking (docs/ROLLBACK.md, "Snapshots and state bursts"): a
// compressed snapshot larger than LinkConfig.SnapshotChunk travels as
// consecutive snapshot-part messages (kind 0x06) on LinkConfig.Stream.
const (
	// defaultSnapshotChunk is LinkConfig.SnapshotChunk when left zero.
	defaultSnapshotChunk = 64 << 10
	// minSnapshotChunk is the smallest LinkConfig.SnapshotChunk.
	minSnapshotChunk = 256
	// maxSnapshotChunk is the largest LinkConfig.SnapshotChunk, and the
	// most data bytes a snapshot part may carry.
	maxSnapshotChunk = 64 << 10
	// MaxSnapshotParts is the most parts one snapshot may be split into:
	// a larger snapshot is refused with ErrSnapshotTooLarge (64 MiB
	// compressed at the default chunk).
	MaxSnapshotParts = 1024
)

// snapshotParts is the server side of a chunked snapshot: an owned copy
// of the compressed snapshot and how many of its parts the channel has
// taken. Its buffers are reused, so a part costs no allocation once they
// have grown.
type snapshotParts struct {
	body  []byte // the compressed snapshot (owned copy)
	frame uint32
	chunk int
	count int // parts in all
	sent  int // parts queued so far
	msg   []byte
}

// start takes a copy of body, the compressed snapshot of the end of frame,
// to be sent in parts of chunk bytes (the last may be shorter). Errors:
// ErrSnapshotTooLarge (wrapped) beyond MaxSnapshotParts parts.
func (p *snapshotParts) start(body []byte, frame uint32, chunk int) error {
	if chunk < 1 || chunk > maxSnapshotChunk {
		return fmt.Errorf("%w: snapshot chunk %d", rollback.ErrInvalidConfig, chunk)
	}
	count := (len(body) + chunk - 1) / chunk
	if count > MaxSnapshotParts {
		p.reset()
		return fmt.Errorf("%w: %d-byte snapshot needs %d parts of %d bytes, limit %d", rollback.ErrSnapshotTooLarge, len(body), count, chunk, MaxSnapshotParts)
	}
	p.body = append(p.body[:0], body...)
	p.frame, p.chunk, p.count, p.sent = frame, chunk, count, 0
	return nil
}

// pending reports that parts remain to be queued.
func (p *snapshotParts) pending() bool { return p.sent < p.count }

// reset abandons the snapshot (the buffers are kept).
func (p *snapshotParts) reset() { p.body, p.count, p.sent = p.body[:0], 0, 0 }

// next queues as many of the remaining parts as ch accepts, in order, on
// the link's stream out; n is how many it queued, done whether none remain. Back-
// pressure (transport.ErrQueueFull) is not an error: the rest waits for the
// next call. Errors: ErrSnapshotTooLarge (wrapped) if the channel refuses
// a part as too large (its MaxMessageSize is below the chunk), and other
// channel errors; the parts are abandoned then.
func (p *snapshotParts) next(ch StreamChannel, out *linkStream) (n int, done bool, err error) {
	for p.sent < p.count {
		lo := p.sent * p.chunk
		hi := min(lo+p.chunk, len(p.body))
		p.msg = partMsg{frame: p.frame, index: p.sent, count: p.count, data: p.body[lo:hi]}.append(p.msg[:0])
		if err := out.send(ch, p.msg); err != nil {
			if errors.Is(err, transport.ErrQueueFull) {
				return n, false, nil
			}
			p.reset()
			if errors.Is(err, transport.ErrTooLarge) {
				return n, false, fmt.Errorf("%w: %d-byte snapshot part: %w", rollback.ErrSnapshotTooLarge, len(p.msg), err)
			}
			return n, false, err
		}
		p.sent++
		n++
	}
	return n, true, nil
}

// snapshotAssembler is the client side of a chunked snapshot: it joins
// snapshot-part messages, which arrive in order on the reliable-ordered
// stream, into the compressed snapshot. Its buffer is reused and grows to
// at most MaxSnapshotParts × maxSnapshotChunk bytes (the largest
// snapshot the peer sends); nothing else is allocated.
type snapshotAssembler struct {
	buf    []byte
	frame  uint32
	count  int
	next   int // index expected next; 0: no assembly in progress
	size   int // data bytes of every part but the last (the first part's)
	active bool
}

// add takes one snapshot-part message (kind byte included). When it
// completes the snapshot, complete is true and body is the compressed
// snapshot, valid until the next add. Errors wrap ErrMalformed: a part
// that does not parse (header, count 0 or above MaxSnapshotParts, index
// beyond count, data empty or above maxSnapshotChunk, a part before the
// last shorter than the first or a last one longer), or does not continue
// the assembly in progress (frame, count, index); the assembly in
// progress, if any, is dropped (dropped reports it). A first part (index
// 0) always starts a new assembly, dropping one in progress (dropped,
// without an error): a server that abandoned a snapshot half sent must
// not lock its client out of the next one. Never a panic.
func (a *snapshotAssembler) add(part []byte) (body []byte, frame uint32, complete, dropped bool, err error) {
	bad := func(what string) ([]byte, uint32, bool, bool, error) {
		dropped = a.active
		a.abort()
		return nil, 0, false, dropped, fmt.Errorf("%w: snapshot part %s", rollback.ErrMalformed, what)
	}
	m, flt := parsePart(part)
	if flt.bad() {
		dropped = a.active
		a.abort()
		return nil, 0, false, dropped, flt.err()
	}
	f, index, count, data := m.frame, m.index, m.count, m.data
	if index == 0 {
		dropped = a.active
		a.buf, a.frame, a.count, a.size, a.active = a.buf[:0], f, count, len(data), true
	} else {
		switch {
		case !a.active:
			return bad("without its first part")
		case f != a.frame || count != a.count:
			return bad("frame or count changed")
		case index != a.next:
			return bad("out of order")
		case len(data) > a.size || (index < count-1 && len(data) != a.size):
			return bad("length differs from the first part's")
		}
	}
	a.buf = append(a.buf, data...)
	a.next = index + 1
	if a.next < a.count {
		return nil, 0, false, dropped, nil
	}
	a.active, a.next = false, 0
	return a.buf, a.frame, true, dropped, nil
}

// abort drops the assembly in progress (the buffer is kept).
func (a *snapshotAssembler) abort() { a.buf, a.active, a.next = a.buf[:0], false, 0 }

// inProgress reports that an assembly is in progress.
func (a *snapshotAssembler) inProgress() bool { return a.active }
