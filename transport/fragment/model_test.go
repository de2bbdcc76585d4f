package fragment

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// refAssembler is the oracle: the Assembler's documented behaviour written
// the slow, obvious way — a map of partial assemblies holding a map of
// pieces each, and the set of every message id ever completed, unwrapped
// to an absolute (int64) id so that wrapping needs no bit tricks.
type refAssembler struct {
	cfg       AssemblerConfig // resolved
	parts     map[wire.Seq]*refPartial
	serial    uint64
	completed map[int64]bool // absolute ids completed
	newest    int64          // absolute id of the newest completed message
	any       bool
	stats     Stats
}

type refPartial struct {
	mode   wire.FrameType
	count  int
	pieces map[int][]byte
	first  time.Duration
	order  uint64
}

func newRef(tb testing.TB, cfg AssemblerConfig) *refAssembler {
	c, err := cfg.resolve()
	if err != nil {
		tb.Fatal(err)
	}
	return &refAssembler{cfg: c, parts: map[wire.Seq]*refPartial{}, completed: map[int64]bool{}}
}

// abs unwraps id to the absolute id nearest the newest completed one.
func (r *refAssembler) abs(id wire.Seq) int64 {
	return r.newest + int64(id.Sub(wire.Seq(r.newest)))
}

func (r *refAssembler) buffered() int {
	n := 0
	for _, p := range r.parts {
		for _, b := range p.pieces {
			n += len(b)
		}
	}
	return n
}

func (r *refAssembler) expire(tick time.Duration) int {
	n := 0
	for id, p := range r.parts {
		if tick >= p.first && tick-p.first >= r.cfg.Expiry {
			delete(r.parts, id)
			n++
		}
	}
	r.stats.Expired += uint64(n)
	return n
}

func (r *refAssembler) add(f wire.FragmentFrame, tick time.Duration) ([]byte, error) {
	ps, count, idx, n := r.cfg.PieceSize, int(f.Count), int(f.Index), len(f.Payload)
	validMode := f.Mode == wire.FrameUnreliable || f.Mode == wire.FrameSequenced ||
		f.Mode == wire.FrameActionStream
	if count == 0 || idx >= count || !validMode {
		r.stats.Malformed++
		return nil, ErrMalformed
	}
	if idx == count-1 && (n == 0 || n > ps) || idx < count-1 && n != ps {
		r.stats.BadPieceLength++
		return nil, ErrPieceLength
	}
	smallest := (count-1)*ps + 1
	if idx == count-1 {
		smallest = (count-1)*ps + n
	}
	if smallest > r.cfg.MaxMessageSize {
		r.stats.TooLarge++
		return nil, ErrTooLarge
	}
	if p, ok := r.parts[f.MessageID]; ok {
		if tick >= p.first && tick-p.first >= r.cfg.Expiry {
			delete(r.parts, f.MessageID)
			r.stats.Expired++
		} else {
			return r.store(p, f)
		}
	}
	if r.any {
		a := r.abs(f.MessageID)
		switch {
		case a <= r.newest-CompletedWindow:
			r.stats.StalePieces++
			return nil, nil
		case r.completed[a]:
			r.stats.LatePieces++
			return nil, nil
		}
	}
	p := &refPartial{mode: f.Mode, count: count, pieces: map[int][]byte{}, first: tick, order: r.serial}
	if count > 1 {
		if len(r.parts) == r.cfg.MaxPartial {
			// The oldest unreliable or sequenced partial, else
			// the oldest of all.
			var oldest wire.Seq
			var best *refPartial
			for _, lossy := range []bool{true, false} {
				for id, q := range r.parts {
					if lossy && q.mode == wire.FrameActionStream {
						continue
					}
					if best == nil || q.order < best.order {
						oldest, best = id, q
					}
				}
				if best != nil {
					break
				}
			}
			delete(r.parts, oldest)
			r.stats.Evicted++
		}
		r.parts[f.MessageID] = p
		r.serial++
	}
	return r.store(p, f)
}

func (r *refAssembler) store(p *refPartial, f wire.FragmentFrame) ([]byte, error) {
	if int(f.Count) != p.count || f.Mode != p.mode {
		r.stats.Mismatched++
		return nil, ErrMismatch
	}
	if _, dup := p.pieces[int(f.Index)]; dup {
		r.stats.DuplicatePieces++
		return nil, nil
	}
	p.pieces[int(f.Index)] = append([]byte(nil), f.Payload...)
	r.stats.Pieces++
	if len(p.pieces) < p.count {
		return nil, nil
	}
	delete(r.parts, f.MessageID)
	var msg []byte
	for i := range p.count {
		msg = append(msg, p.pieces[i]...)
	}
	if !r.any {
		r.any, r.newest = true, int64(f.MessageID)
	}
	a := r.abs(f.MessageID)
	r.completed[a] = true
	r.newest = max(r.newest, a)
	if t, k, err := wire.SkipFrame(msg); err != nil || t != p.mode || k != len(msg) {
		r.stats.InvalidMessages++
		return nil, ErrInvalidMessage
	}
	r.stats.Completed++
	return msg, nil
}

// pair drives an Assembler and the reference with the same calls and
// fails on the first difference.
type pair struct {
	tb   testing.TB
	a    *Assembler
	ref  *refAssembler
	ops  int
	adds uint64 // calls to Add
}

func newPair(tb testing.TB, cfg AssemblerConfig) *pair {
	return &pair{tb: tb, a: newAssembler(tb, cfg), ref: newRef(tb, cfg)}
}

func (p *pair) add(f wire.FragmentFrame, tick time.Duration) []byte {
	p.tb.Helper()
	p.ops++
	p.adds++
	got, err := p.a.Add(f, tick)
	want, wantErr := p.ref.add(f, tick)
	if err != wantErr || !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		p.tb.Fatalf("op %d: Add(mode %d id %d piece %d/%d, %d bytes; tick %d) = %d bytes, %v; reference %d bytes, %v",
			p.ops, f.Mode, f.MessageID, f.Index, f.Count, len(f.Payload), tick, len(got), err, len(want), wantErr)
	}
	p.check()
	return got
}

func (p *pair) expire(tick time.Duration) {
	p.tb.Helper()
	p.ops++
	if got, want := p.a.Expire(tick), p.ref.expire(tick); got != want {
		p.tb.Fatalf("op %d: Expire(%d) = %d, reference %d", p.ops, tick, got, want)
	}
	p.check()
}

func (p *pair) check() {
	p.tb.Helper()
	if p.a.Stats() != p.ref.stats || p.a.Partials() != len(p.ref.parts) || p.a.BufferedBytes() != p.ref.buffered() {
		p.tb.Fatalf("op %d: stats %+v, %d partials, %d bytes; reference %+v, %d, %d", p.ops,
			p.a.Stats(), p.a.Partials(), p.a.BufferedBytes(), p.ref.stats, len(p.ref.parts), p.ref.buffered())
	}
	// Every piece lands in exactly one piece counter (Stats doc).
	s := p.a.Stats()
	if n := s.Pieces + s.DuplicatePieces + s.LatePieces + s.StalePieces + s.Malformed +
		s.BadPieceLength + s.TooLarge + s.Mismatched; n != p.adds {
		p.tb.Fatalf("op %d: piece counters sum to %d after %d calls to Add: %+v", p.ops, n, p.adds, s)
	}
	c := p.a.Config()
	if p.a.RetainedBytes() > (c.MaxPartial+1)*c.MaxMessageSize {
		p.tb.Fatalf("op %d: %d bytes retained, bound %d", p.ops, p.a.RetainedBytes(), (c.MaxPartial+1)*c.MaxMessageSize)
	}
}

// hostile returns f damaged in one of the ways a broken or malicious peer
// could: out-of-range fields, wrong lengths, a count or mode that
// disagrees with the other pieces, an id of another message.
func hostile(r *rand.Rand, f wire.FragmentFrame) wire.FragmentFrame {
	f.Payload = append([]byte(nil), f.Payload...)
	switch r.IntN(9) {
	case 0:
		f.Mode = wire.FrameType(r.IntN(256))
	case 1:
		f.Count = uint8(r.IntN(256))
	case 2:
		f.Index = uint8(r.IntN(256))
	case 3:
		f.Payload = f.Payload[:r.IntN(len(f.Payload)+1)]
	case 4:
		f.Payload = append(f.Payload, make([]byte, 1+r.IntN(3))...)
	case 5:
		f.MessageID += wire.Seq(r.IntN(5)) - 2
	case 6:
		if len(f.Payload) > 0 {
			f.Payload[r.IntN(len(f.Payload))] ^= 0xFF // content: may make the whole message invalid
		}
	case 7:
		f.Mode = []wire.FrameType{wire.FrameUnreliable, wire.FrameSequenced, wire.FrameReliable, wire.FrameActionStream}[r.IntN(4)] // Reliable: refused
	default:
		f = wire.FragmentFrame{
			Mode: wire.FrameType(r.IntN(8)), MessageID: wire.Seq(r.Uint32()),
			Index: uint8(r.IntN(256)), Count: uint8(r.IntN(256)), Payload: make([]byte, r.IntN(40)),
		}
	}
	return f
}

// TestPropertyMatchesReference: random interleavings of many messages'
// pieces with loss, duplication, reordering, hostile frames, id jumps and
// wrap-around, expiry and eviction; the Assembler and the map-based
// reference must deliver the same messages (byte for byte) and return the
// same errors at every step, with identical counters.
func TestPropertyMatchesReference(t *testing.T) {
	seeds := 150
	if testing.Short() || raceEnabled {
		seeds = 50
	}
	var total Stats
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		ps := 4 + r.IntN(29)
		cfg := AssemblerConfig{
			PieceSize:  ps,
			MaxPartial: 1 + r.IntN(8),
			Expiry:     time.Duration(1 + r.IntN(40)),
		}
		if r.IntN(2) == 0 {
			cfg.MaxMessageSize = 2 + r.IntN(30*ps)
		}
		limit := newAssembler(t, cfg).Config().MaxMessageSize
		p := newPair(t, cfg)
		loss, dup := r.Float64()*0.3, r.Float64()*0.3
		nextID := wire.Seq(r.Uint32())
		if r.IntN(2) == 0 {
			nextID = 65536 - 40 // wrap early
		}
		var pool []wire.FragmentFrame // pieces in flight
		var sent [][]wire.FragmentFrame
		tick := time.Duration(r.IntN(1000))
		for range 3000 {
			switch k := r.IntN(100); {
			case k < 25 && len(pool) < 200: // send a new message
				size := 2 + r.IntN(min(limit+ps, 40*ps))
				msg, mode := frameOfLen(t, size, r.IntN(1<<20))
				if _, err := Count(size, ps); err != nil {
					continue
				}
				id := nextID
				switch j := r.IntN(20); {
				case j == 0 && len(sent) > 0: // the same message again, same id
					old := sent[r.IntN(len(sent))]
					pool = append(pool, old...)
					continue
				case j == 1:
					nextID = nextID.Add(r.IntN(2 * CompletedWindow))
				}
				nextID = nextID.Next()
				pieces := split(t, msg, ps, mode, id)
				sent = append(sent, pieces)
				if len(sent) > 50 {
					sent = sent[1:]
				}
				for _, f := range pieces {
					if r.Float64() < loss {
						continue
					}
					pool = append(pool, f)
					if r.Float64() < dup {
						pool = append(pool, f)
					}
				}
			case k < 85 && len(pool) > 0: // deliver a random piece in flight
				i := r.IntN(min(len(pool), 1+r.IntN(12))) // near the front: reordering, not chaos
				f := pool[i]
				pool = append(pool[:i], pool[i+1:]...)
				p.add(f, tick)
			case k < 92 && len(pool) > 0:
				p.add(hostile(r, pool[r.IntN(len(pool))]), tick)
			case k < 96:
				tick += time.Duration(r.IntN(5))
				p.expire(tick)
			default:
				tick += time.Duration(r.IntN(3))
			}
		}
		for _, f := range pool {
			p.add(f, tick)
		}
		if p.a.Stats().Completed == 0 {
			t.Fatalf("seed %d: nothing completed; the generator is broken", seed)
		}
		total = sum(total, p.a.Stats())
	}
	t.Logf("totals over %d seeds: %+v", seeds, total)
	// Every outcome must have been exercised, or the comparison proves
	// little.
	if total.Completed == 0 || total.InvalidMessages == 0 || total.DuplicatePieces == 0 ||
		total.LatePieces == 0 || total.StalePieces == 0 || total.Expired == 0 || total.Evicted == 0 ||
		total.Mismatched == 0 || total.BadPieceLength == 0 || total.TooLarge == 0 || total.Malformed == 0 {
		t.Fatalf("an outcome was never exercised: %+v", total)
	}
}

// sum returns the counter-wise sum s + t.
func sum(s, t Stats) Stats {
	return Stats{
		Pieces:          s.Pieces + t.Pieces,
		Completed:       s.Completed + t.Completed,
		InvalidMessages: s.InvalidMessages + t.InvalidMessages,
		DuplicatePieces: s.DuplicatePieces + t.DuplicatePieces,
		LatePieces:      s.LatePieces + t.LatePieces,
		StalePieces:     s.StalePieces + t.StalePieces,
		Expired:         s.Expired + t.Expired,
		Evicted:         s.Evicted + t.Evicted,
		Mismatched:      s.Mismatched + t.Mismatched,
		BadPieceLength:  s.BadPieceLength + t.BadPieceLength,
		TooLarge:        s.TooLarge + t.TooLarge,
		Malformed:       s.Malformed + t.Malformed,
	}
}
