package fragment

import (
	"time"

	"github.com/tickwire/tickwire/wire"
)

// Stats counts what an Assembler did with the pieces it was given. Every
// piece passed to Add lands in exactly one of Pieces, DuplicatePieces,
// LatePieces, StalePieces, Malformed, BadPieceLength, TooLarge and
// Mismatched; every partial assembly ends in exactly one of Completed,
// InvalidMessages, Expired and Evicted (or is still in progress). A
// message of one piece counts in Pieces and then Completed or
// InvalidMessages. The counters only grow.
type Stats struct {
	// Pieces is the pieces accepted: copied into an assembly.
	Pieces uint64
	// Completed is the messages delivered by Add.
	Completed uint64
	// InvalidMessages is the messages discarded on completion because the
	// reassembled bytes were not one frame of their Mode
	// (ErrInvalidMessage).
	InvalidMessages uint64
	// DuplicatePieces is the pieces ignored because their partial assembly
	// already had that index.
	DuplicatePieces uint64
	// LatePieces is the pieces ignored because their message id completed
	// recently (within CompletedWindow ids): late duplicates of a message
	// that must not be delivered twice.
	LatePieces uint64
	// StalePieces is the pieces ignored because their message id is
	// CompletedWindow or more older than the newest completed id.
	StalePieces uint64
	// Expired is the partial assemblies discarded because Expiry
	// passed since their first piece.
	Expired uint64
	// Evicted is the partial assemblies discarded to make room for a new
	// message when MaxPartial were already in progress (oldest first).
	Evicted uint64
	// Mismatched is the pieces refused with ErrMismatch: Count or Mode
	// different from the earlier pieces of their message id.
	Mismatched uint64
	// BadPieceLength is the pieces refused with ErrPieceLength.
	BadPieceLength uint64
	// TooLarge is the pieces refused with ErrTooLarge: their message would
	// exceed MaxMessageSize.
	TooLarge uint64
	// Malformed is the pieces refused with ErrMalformed: Count 0, Index not
	// below Count, or a Mode that cannot be fragmented.
	Malformed uint64
}

// partial is one message being reassembled.
type partial struct {
	buf   []byte        // len = the most bytes the message can have; piece i at i×PieceSize
	have  [4]uint64     // bit i: piece i received
	first time.Duration // arrival of the first piece, on the caller's clock
	order uint64        // creation serial: smallest is the oldest, evicted first
	bytes int           // piece bytes received so far
	size  int           // message length, known once the last piece arrived
	got   int           // pieces received so far
	id    wire.Seq      // message id
	mode  wire.FrameType
	count uint8
	used  bool
}

// Assembler reassembles fragmented messages from one peer, all or nothing.
// Create it with NewAssembler; the zero value is not usable. It is not
// safe for concurrent use: one goroutine (the peer's receive path) calls
// all its methods, Stats included.
type Assembler struct {
	cfg      AssemblerConfig // resolved: defaults applied
	parts    []partial       // MaxPartial slots
	live     int             // slots in use
	serial   uint64          // next partial.order
	free     [][]byte        // reusable buffers; capacity MaxPartial+1, never outgrown
	out      []byte          // buffer of the message last returned, recycled by the next Add or Expire
	grow     int             // size of new buffers: the largest message space needed so far
	pending  int             // piece bytes held by partial assemblies
	retained int             // capacity of every buffer the Assembler holds
	done     completedWindow
	stats    Stats
}

// NewAssembler returns an Assembler for cfg, or an error wrapping
// ErrInvalidConfig. It allocates the partial-assembly table (MaxPartial
// slots of about 100 bytes); message buffers are allocated lazily.
func NewAssembler(cfg AssemblerConfig) (*Assembler, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return &Assembler{
		cfg:   c,
		parts: make([]partial, c.MaxPartial),
		free:  make([][]byte, 0, c.MaxPartial+1),
	}, nil
}

// Config returns the configuration in effect: the one NewAssembler was
// given, with defaults applied, PieceSize derived and MaxMessageSize
// clipped.
func (a *Assembler) Config() AssemblerConfig { return a.cfg }

// Stats returns the counters so far. It is a copy of a small struct.
func (a *Assembler) Stats() Stats { return a.stats }

// Partials returns the number of partial assemblies in progress, at most
// MaxPartial.
func (a *Assembler) Partials() int { return a.live }

// BufferedBytes returns the piece bytes held by partial assemblies: bytes
// received but not yet delivered (or discarded).
func (a *Assembler) BufferedBytes() int { return a.pending }

// RetainedBytes returns the capacity of every reassembly buffer the
// Assembler holds, in use or kept for reuse: its memory beyond the fixed
// table. It never exceeds (MaxPartial + 1) × MaxMessageSize.
func (a *Assembler) RetainedBytes() int { return a.retained }

// Add takes one piece received at now (the caller's clock, which should
// not go backwards) and returns the whole message when f was the
// last missing piece of its message id. The message is the concatenation
// of the pieces in index order, checked to be exactly one frame encoding
// of type f.Mode (wire.SkipFrame); it lives in the Assembler's buffer and
// is valid only until the next call to Add or Expire, so the caller
// dispatches or copies it first. Add copies f.Payload and does not keep f.
//
// Otherwise it returns (nil, nil) when the piece was stored, or ignored as
// a duplicate, a late piece of a completed message id or a stale one, and
// (nil, err) with one of the sentinels ErrMalformed, ErrPieceLength,
// ErrTooLarge, ErrMismatch or ErrInvalidMessage when it refused the piece
// (or, for ErrInvalidMessage, the message it completed). Each outcome is
// counted in Stats. A refused piece leaves its partial assembly as it was.
//
// A piece of a message id with no partial assembly starts one (a message
// of one piece completes at once and never takes a slot); beyond
// MaxPartial partial assemblies, that evicts the oldest. A partial
// assembly that has expired (see AssemblerConfig.Expiry) is discarded
// before the piece is considered, even if Expire was not called. No field
// value of f makes Add panic.
//
// Cost: a scan of the MaxPartial slots and a copy of the piece; no
// allocation once every buffer has grown to the largest message seen.
func (a *Assembler) Add(f wire.FragmentFrame, now time.Duration) ([]byte, error) {
	a.recycle()
	ps := a.cfg.PieceSize
	count, idx, n := int(f.Count), int(f.Index), len(f.Payload)
	if count == 0 || idx >= count || !f.Mode.Fragmentable() {
		a.stats.Malformed++
		return nil, ErrMalformed
	}
	last := idx == count-1
	if last && (n < 1 || n > ps) || !last && n != ps {
		a.stats.BadPieceLength++
		return nil, ErrPieceLength
	}
	// The message has at least one byte in its last piece; with the last
	// piece at hand its size is exact. count ≤ 255 and ps ≤ 65 k: no
	// overflow.
	size := (count-1)*ps + 1
	if last {
		size = idx*ps + n
	}
	if size > a.cfg.MaxMessageSize {
		a.stats.TooLarge++
		return nil, ErrTooLarge
	}

	if p := a.find(f.MessageID); p != nil {
		if !a.expired(p, now) {
			return a.addTo(p, f)
		}
		a.stats.Expired++
		a.discard(p)
	}
	switch a.done.state(f.MessageID) {
	case idDone:
		a.stats.LatePieces++
		return nil, nil
	case idStale:
		a.stats.StalePieces++
		return nil, nil
	}
	if count == 1 {
		buf := a.acquire(n)
		copy(buf, f.Payload)
		a.stats.Pieces++
		return a.finish(buf, n, f.MessageID, f.Mode)
	}
	return a.addTo(a.start(f, now), f)
}

// Expire discards the partial assemblies whose first piece arrived
// Expiry or more before now, counts them in Stats.Expired and
// returns how many it discarded. Call it now and then (every Flush, say, or less often:
// Add also expires the partial assembly it is about to extend). It
// invalidates the message last returned by Add. It allocates nothing.
func (a *Assembler) Expire(now time.Duration) int {
	if a.out == nil && a.live == 0 {
		return 0 // the common case: nothing in assembly, nothing to recycle (inlined)
	}
	return a.expire(now)
}

func (a *Assembler) expire(now time.Duration) int {
	a.recycle()
	if a.live == 0 {
		return 0
	}
	n := 0
	for i := range a.parts {
		if p := &a.parts[i]; p.used && a.expired(p, now) {
			a.discard(p)
			n++
		}
	}
	a.stats.Expired += uint64(n)
	return n
}

// NextExpiry returns when Expire will next discard a partial assembly:
// the first piece's arrival plus Expiry for the oldest one; ok is false
// when nothing is in assembly. O(MaxPartial), no allocation.
func (a *Assembler) NextExpiry() (at time.Duration, ok bool) {
	if a.live == 0 {
		return 0, false
	}
	for i := range a.parts {
		if p := &a.parts[i]; p.used && (!ok || p.first+a.cfg.Expiry < at) {
			at, ok = p.first+a.cfg.Expiry, true
		}
	}
	return at, ok
}

// addTo stores f in p, whose message id is f's, and completes the message
// if f was its last missing piece. f has been validated on its own.
func (a *Assembler) addTo(p *partial, f wire.FragmentFrame) ([]byte, error) {
	if f.Count != p.count || f.Mode != p.mode {
		a.stats.Mismatched++
		return nil, ErrMismatch
	}
	idx, n := int(f.Index), len(f.Payload)
	w, bit := idx>>6, uint64(1)<<(idx&63)
	if p.have[w]&bit != 0 {
		a.stats.DuplicatePieces++
		return nil, nil
	}
	p.have[w] |= bit
	off := idx * a.cfg.PieceSize
	copy(p.buf[off:off+n], f.Payload)
	p.got++
	p.bytes += n
	a.pending += n
	a.stats.Pieces++
	if idx == int(p.count)-1 {
		p.size = off + n
	}
	if p.got < int(p.count) {
		return nil, nil
	}
	buf, size, id, mode := p.buf, p.size, p.id, p.mode
	a.pending -= p.bytes
	*p = partial{}
	a.live--
	return a.finish(buf, size, id, mode)
}

// finish checks a complete message in buf[:size], records its id as
// completed and returns it, handing buf to a.out until the next call.
func (a *Assembler) finish(buf []byte, size int, id wire.Seq, mode wire.FrameType) ([]byte, error) {
	a.done.add(id)
	msg := buf[:size:size]
	if t, n, err := wire.SkipFrame(msg); err != nil || t != mode || n != size {
		a.stats.InvalidMessages++
		a.putFree(buf)
		return nil, ErrInvalidMessage
	}
	a.stats.Completed++
	a.out = buf
	return msg, nil
}

// start opens a partial assembly for f's message id, evicting one if
// every slot is taken: the oldest unreliable or sequenced one if there is
// any, else the oldest. Pieces of a record (ActionStream) were acked as
// they arrived and its sender will not send them again, so evicting its
// partial loses the record while its sender counts it confirmed; they are
// the last to go.
func (a *Assembler) start(f wire.FragmentFrame, now time.Duration) *partial {
	if a.live == len(a.parts) {
		var oldest, oldestLossy *partial
		for i := range a.parts {
			p := &a.parts[i]
			if !p.used {
				continue
			}
			if oldest == nil || p.order < oldest.order {
				oldest = p
			}
			if p.mode != wire.FrameActionStream && (oldestLossy == nil || p.order < oldestLossy.order) {
				oldestLossy = p
			}
		}
		if oldestLossy != nil {
			oldest = oldestLossy
		}
		a.stats.Evicted++
		a.discard(oldest)
	}
	var p *partial
	for i := range a.parts {
		if !a.parts[i].used {
			p = &a.parts[i]
			break
		}
	}
	// The last piece starts at (count−1)×PieceSize and ends by
	// MaxMessageSize (checked by Add) and by count×PieceSize.
	need := min(int(f.Count)*a.cfg.PieceSize, a.cfg.MaxMessageSize)
	*p = partial{
		buf:   a.acquire(need),
		first: now,
		order: a.serial,
		id:    f.MessageID,
		mode:  f.Mode,
		count: f.Count,
		used:  true,
	}
	a.serial++
	a.live++
	return p
}

func (a *Assembler) find(id wire.Seq) *partial {
	for i := range a.parts {
		if p := &a.parts[i]; p.used && p.id == id {
			return p
		}
	}
	return nil
}

func (a *Assembler) expired(p *partial, now time.Duration) bool {
	return now-p.first >= a.cfg.Expiry
}

// discard drops p without delivering anything; the caller counts why.
func (a *Assembler) discard(p *partial) {
	a.pending -= p.bytes
	a.putFree(p.buf)
	*p = partial{}
	a.live--
}

// recycle returns the buffer of the message last delivered to the free
// list: the caller has had it until this call.
func (a *Assembler) recycle() {
	if a.out != nil {
		a.putFree(a.out)
		a.out = nil
	}
}

// acquire returns a buffer of length need: the smallest free one that is
// large enough, or else a new one of the largest size needed so far
// (replacing the smallest free buffer, which is too small). Buffers in use
// (at most MaxPartial partial assemblies plus one message of one piece)
// plus free ones never exceed MaxPartial + 1, so the free list never
// outgrows its capacity and memory is bounded by (MaxPartial + 1) ×
// MaxMessageSize.
func (a *Assembler) acquire(need int) []byte {
	best, smallest := -1, -1
	for i, b := range a.free {
		if cap(b) >= need && (best < 0 || cap(b) < cap(a.free[best])) {
			best = i
		}
		if smallest < 0 || cap(b) < cap(a.free[smallest]) {
			smallest = i
		}
	}
	if best >= 0 {
		return a.takeFree(best)[:need]
	}
	if smallest >= 0 {
		a.retained -= cap(a.takeFree(smallest))
	}
	a.grow = max(a.grow, need)
	b := make([]byte, a.grow)
	a.retained += cap(b)
	return b[:need]
}

func (a *Assembler) takeFree(i int) []byte {
	b := a.free[i]
	last := len(a.free) - 1
	a.free[i] = a.free[last]
	a.free[last] = nil
	a.free = a.free[:last]
	return b
}

func (a *Assembler) putFree(b []byte) { a.free = append(a.free, b[:0]) }
