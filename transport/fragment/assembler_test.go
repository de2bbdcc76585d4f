package fragment

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

func TestAssemblerConfig(t *testing.T) {
	good := []struct {
		name string
		cfg  AssemblerConfig
		want AssemblerConfig
	}{
		{"MTU only", AssemblerConfig{MTU: 1200},
			AssemblerConfig{MTU: 1200, PieceSize: 1174, MaxPartial: 8, Expiry: DefaultExpiry, MaxMessageSize: 255 * 1174}},
		{"PieceSize only", AssemblerConfig{PieceSize: 10},
			AssemblerConfig{PieceSize: 10, MaxPartial: 8, Expiry: DefaultExpiry, MaxMessageSize: 2550}},
		{"both agree", AssemblerConfig{MTU: 576, PieceSize: PieceSize(576)},
			AssemblerConfig{MTU: 576, PieceSize: PieceSize(576), MaxPartial: 8, Expiry: DefaultExpiry, MaxMessageSize: 255 * PieceSize(576)}},
		{"explicit", AssemblerConfig{PieceSize: 10, MaxPartial: 1, Expiry: 1, MaxMessageSize: 100},
			AssemblerConfig{PieceSize: 10, MaxPartial: 1, Expiry: 1, MaxMessageSize: 100}},
		{"MaxMessageSize clipped", AssemblerConfig{PieceSize: 10, MaxPartial: MaxMaxPartial, MaxMessageSize: 1 << 24},
			AssemblerConfig{PieceSize: 10, MaxPartial: MaxMaxPartial, Expiry: DefaultExpiry, MaxMessageSize: 2550}},
		{"largest", AssemblerConfig{MTU: MaxMTU},
			AssemblerConfig{MTU: MaxMTU, PieceSize: PieceSize(MaxMTU), MaxPartial: 8, Expiry: DefaultExpiry, MaxMessageSize: 255 * PieceSize(MaxMTU)}},
	}
	for _, c := range good {
		if err := c.cfg.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", c.name, err)
			continue
		}
		a := newAssembler(t, c.cfg)
		if got := a.Config(); got != c.want {
			t.Errorf("%s: Config() = %+v, want %+v", c.name, got, c.want)
		}
	}

	bad := map[string]AssemblerConfig{
		"zero":                  {},
		"MTU below":             {MTU: MinMTU - 1},
		"MTU above":             {MTU: MaxMTU + 1},
		"MTU negative":          {MTU: -1},
		"PieceSize negative":    {PieceSize: -1},
		"PieceSize above":       {PieceSize: PieceSize(MaxMTU) + 1},
		"disagree":              {MTU: 1200, PieceSize: 1000},
		"MaxPartial negative":   {MTU: 1200, MaxPartial: -1},
		"MaxPartial above":      {MTU: 1200, MaxPartial: MaxMaxPartial + 1},
		"MaxMessageSize below":  {MTU: 1200, MaxMessageSize: -1},
		"MaxMessageSize and no": {MaxMessageSize: 100},
	}
	for name, cfg := range bad {
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", name, err)
		}
		if a, err := NewAssembler(cfg); a != nil || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: NewAssembler = %v, %v; want nil, ErrInvalidConfig", name, a, err)
		}
	}
}

// shuffled returns a copy of pieces with each piece repeated 1 to 3 times,
// in random order.
func shuffled(r *rand.Rand, pieces []wire.FragmentFrame) []wire.FragmentFrame {
	var out []wire.FragmentFrame
	for _, f := range pieces {
		for range 1 + r.IntN(3) {
			out = append(out, f)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestSC4MissingPieceNeverDelivered: S-C4 — for every index of a
// several-piece message, with that piece missing (and the others arriving
// in any order, duplicated), nothing is delivered, the bytes stay buffered
// until the partial assembly expires, and the expiry is counted. The
// missing piece arriving after expiry does not resurrect the message.
func TestSC4MissingPieceNeverDelivered(t *testing.T) {
	const ps, n = 50, 7
	r := rand.New(rand.NewPCG(4, 4))
	msg, mode := frameOfLen(t, (n-1)*ps+13, 9)
	for missing := range n {
		a := newAssembler(t, AssemblerConfig{PieceSize: ps, Expiry: 30})
		pieces := split(t, msg, ps, mode, wire.Seq(100+missing))
		rest := append(append([]wire.FragmentFrame(nil), pieces[:missing]...), pieces[missing+1:]...)
		const first = 1000
		for k, f := range shuffled(r, rest) {
			if m, err := a.Add(f, first+time.Duration(k%5)); m != nil || err != nil {
				t.Fatalf("missing %d: Add = %d bytes, %v; want nothing", missing, len(m), err)
			}
		}
		wantBuffered := len(msg) - len(pieces[missing].Payload)
		if a.Partials() != 1 || a.BufferedBytes() != wantBuffered {
			t.Fatalf("missing %d: %d partials, %d bytes buffered; want 1, %d", missing, a.Partials(), a.BufferedBytes(), wantBuffered)
		}
		if got := a.Expire(first + 29); got != 0 {
			t.Fatalf("missing %d: expired after 29 ns of 30", missing)
		}
		if got := a.Expire(first + 30); got != 1 {
			t.Fatalf("missing %d: Expire after 30 ns = %d, want 1", missing, got)
		}
		s := a.Stats()
		if s.Expired != 1 || s.Completed != 0 || a.Partials() != 0 || a.BufferedBytes() != 0 {
			t.Fatalf("missing %d: after expiry %+v, %d partials, %d bytes", missing, s, a.Partials(), a.BufferedBytes())
		}
		// The lost piece, retransmitted late, starts a new partial assembly
		// of one piece: still nothing delivered.
		if m, err := a.Add(pieces[missing], first+31); m != nil || err != nil {
			t.Fatalf("missing %d: late piece delivered %d bytes, %v", missing, len(m), err)
		}
		if a.Stats().Completed != 0 {
			t.Fatalf("missing %d: a message with a piece missing was delivered", missing)
		}
	}
}

// TestSC4RandomOrderExactlyOnce: S-C4 — pieces in random order with
// duplicates deliver the message exactly once, intact, when its last
// missing piece arrives; every later copy is a late piece.
func TestSC4RandomOrderExactlyOnce(t *testing.T) {
	const ps = 32
	r := rand.New(rand.NewPCG(5, 5))
	a := newAssembler(t, AssemblerConfig{PieceSize: ps})
	for trial := range 300 {
		size := 2 + r.IntN(40*ps)
		msg, mode := frameOfLen(t, size, trial)
		id := wire.Seq(65500 + trial) // wraps through 0
		pieces := split(t, msg, ps, mode, id)
		before := a.Stats()
		seen := make(map[uint8]bool)
		delivered := 0
		for _, f := range shuffled(r, pieces) {
			m, err := a.Add(f, time.Duration(trial))
			if err != nil {
				t.Fatalf("trial %d: %v", trial, err)
			}
			seen[f.Index] = true
			if m != nil {
				delivered++
				if len(seen) != len(pieces) || !bytes.Equal(m, msg) {
					t.Fatalf("trial %d: delivered %d bytes after %d of %d pieces", trial, len(m), len(seen), len(pieces))
				}
			}
		}
		if delivered != 1 {
			t.Fatalf("trial %d: delivered %d times", trial, delivered)
		}
		after := a.Stats()
		if after.Completed-before.Completed != 1 || after.Pieces-before.Pieces != uint64(len(pieces)) {
			t.Fatalf("trial %d: stats %+v → %+v", trial, before, after)
		}
		if a.Partials() != 0 || a.BufferedBytes() != 0 {
			t.Fatalf("trial %d: %d partials, %d bytes left", trial, a.Partials(), a.BufferedBytes())
		}
	}
}

// TestSC4LateDuplicateNeverRedelivers: a whole second copy of a delivered
// message, arriving after up to CompletedWindow−1 newer messages, is
// ignored piece by piece; beyond the window its pieces are stale and still
// not delivered.
func TestSC4LateDuplicateNeverRedelivers(t *testing.T) {
	const ps = 16
	a := newAssembler(t, AssemblerConfig{PieceSize: ps})
	msg, mode := frameOfLen(t, 3*ps, 1)
	old := split(t, msg, ps, mode, 65535)
	if got := feed(t, a, old, 0); len(got) != 1 {
		t.Fatal("not delivered")
	}
	for k := 1; k < CompletedWindow; k++ {
		feed(t, a, split(t, msg, ps, mode, wire.Seq(65535).Add(k)), 0)
	}
	if got := feed(t, a, old, 0); len(got) != 0 || a.Stats().LatePieces != 3 {
		t.Fatalf("late copy: delivered %d, LatePieces %d", len(got), a.Stats().LatePieces)
	}
	feed(t, a, split(t, msg, ps, mode, wire.Seq(65535).Add(CompletedWindow)), 0)
	if got := feed(t, a, old, 0); len(got) != 0 || a.Stats().StalePieces != 3 {
		t.Fatalf("stale copy: delivered %d, StalePieces %d", len(got), a.Stats().StalePieces)
	}
	if a.Partials() != 0 {
		t.Fatalf("ignored pieces opened %d partial assemblies", a.Partials())
	}
}

// TestSC5PartialsBounded: S-C5 — at most MaxPartial partial assemblies; a
// new message beyond that evicts the oldest, which is counted and never
// delivered, while the others still complete.
func TestSC5PartialsBounded(t *testing.T) {
	const ps, maxPartial = 20, 3
	a := newAssembler(t, AssemblerConfig{PieceSize: ps, MaxPartial: maxPartial})
	var msgs [][]byte
	var pieces [][]wire.FragmentFrame
	for id := range 6 {
		m, mode := frameOfLen(t, 3*ps, id)
		msgs = append(msgs, m)
		pieces = append(pieces, split(t, m, ps, mode, wire.Seq(id)))
	}
	// First piece of messages 0..5: 0, 1, 2 fill the table; 3, 4, 5 evict
	// 0, 1, 2 in turn.
	for id := range 6 {
		feed(t, a, pieces[id][:1], time.Duration(id))
		if a.Partials() > maxPartial {
			t.Fatalf("%d partial assemblies, MaxPartial %d", a.Partials(), maxPartial)
		}
	}
	if s := a.Stats(); s.Evicted != 3 || a.Partials() != maxPartial {
		t.Fatalf("Evicted %d, %d partials; want 3, %d", s.Evicted, a.Partials(), maxPartial)
	}
	if a.BufferedBytes() != 3*ps {
		t.Fatalf("BufferedBytes %d, want %d", a.BufferedBytes(), 3*ps)
	}
	for id := 3; id < 6; id++ {
		got := feed(t, a, pieces[id][1:], 10)
		if len(got) != 1 || !bytes.Equal(got[0], msgs[id]) {
			t.Fatalf("message %d (not evicted) not delivered", id)
		}
	}
	// The rest of an evicted message: its first piece is gone, so it
	// starts again and is never delivered from two pieces.
	if got := feed(t, a, pieces[0][1:], 11); len(got) != 0 {
		t.Fatal("evicted message delivered")
	}
	// Buffers in use or free never exceed MaxPartial + 1.
	if a.RetainedBytes() > (maxPartial+1)*a.Config().MaxMessageSize {
		t.Fatalf("RetainedBytes %d above bound", a.RetainedBytes())
	}
}

// TestSC5ExpiryIsADuration: S-C5 — expiry is a duration on the caller's
// clock from the first piece, by Expire or by the next Add for the expired
// id; a time before the first piece's never expires it.
func TestSC5ExpiryIsADuration(t *testing.T) {
	const ps = 20
	msg, mode := frameOfLen(t, 3*ps, 1)
	pieces := split(t, msg, ps, mode, 9)

	a := newAssembler(t, AssemblerConfig{PieceSize: ps, Expiry: 10})
	feed(t, a, pieces[:1], 100)
	feed(t, a, pieces[1:2], 105) // later pieces do not extend the deadline
	if a.Expire(50) != 0 || a.Expire(109) != 0 || a.Partials() != 1 {
		t.Fatal("expired early")
	}
	if a.Expire(110) != 1 || a.Stats().Expired != 1 {
		t.Fatal("not expired after Expiry")
	}

	// Without Expire: the next piece for the id finds the partial assembly
	// expired, discards it (counted) and starts a new one.
	a = newAssembler(t, AssemblerConfig{PieceSize: ps, Expiry: 10})
	feed(t, a, pieces[:2], 0)
	if got := feed(t, a, pieces[2:], 10); len(got) != 0 {
		t.Fatal("message completed from an expired partial assembly")
	}
	if s := a.Stats(); s.Expired != 1 || a.Partials() != 1 || a.BufferedBytes() != len(pieces[2].Payload) {
		t.Fatalf("Expired %d, %d partials, %d bytes", s.Expired, a.Partials(), a.BufferedBytes())
	}
	// Completing within the window works.
	if got := feed(t, a, pieces[:2], 19); len(got) != 1 || !bytes.Equal(got[0], msg) {
		t.Fatal("not delivered within Expiry of its first piece")
	}
}

// TestSC5DiscardReasons: S-C5 — each discard reason, one subtest each,
// moves exactly its own counter (and returns its sentinel, if any).
func TestSC5DiscardReasons(t *testing.T) {
	const ps = 10
	msg, mode := frameOfLen(t, 3*ps-4, 1) // pieces of 10, 10, 6
	pieces := split(t, msg, ps, mode, 50)
	with := func(f wire.FragmentFrame, edit func(*wire.FragmentFrame)) wire.FragmentFrame {
		f.Payload = append([]byte(nil), f.Payload...)
		edit(&f)
		return f
	}
	// invalid is three pieces whose bytes are not one frame of their mode.
	invalid := split(t, bytes.Repeat([]byte{byte(wire.FrameUnreliable)}, 25), ps, wire.FrameUnreliable, 60)

	cases := []struct {
		name  string
		setup []wire.FragmentFrame // added first at time 0, must succeed
		f     wire.FragmentFrame   // then this, at tick (a time)
		tick  time.Duration
		err   error
		want  Stats // counter deltas caused by f
	}{
		{"duplicate piece", pieces[:1], pieces[0], 0, nil, Stats{DuplicatePieces: 1}},
		{"late piece of a completed message", pieces, pieces[1], 0, nil, Stats{LatePieces: 1}},
		{"stale piece", split(t, msg, ps, mode, 50+CompletedWindow), pieces[1], 0, nil, Stats{StalePieces: 1}},
		{"expired", pieces[:1], pieces[1], DefaultExpiry, nil, Stats{Expired: 1, Pieces: 1}},
		{"evicted", nil, pieces[0], 0, nil, Stats{Evicted: 1, Pieces: 1}}, // setup below
		{"mismatched count", pieces[:1], with(pieces[1], func(f *wire.FragmentFrame) { f.Count = 4 }), 0, ErrMismatch, Stats{Mismatched: 1}},
		{"mismatched mode", pieces[:1], with(pieces[1], func(f *wire.FragmentFrame) { f.Mode = wire.FrameActionStream }), 0, ErrMismatch, Stats{Mismatched: 1}},
		{"short middle piece", nil, with(pieces[1], func(f *wire.FragmentFrame) { f.Payload = f.Payload[:9] }), 0, ErrPieceLength, Stats{BadPieceLength: 1}},
		{"long middle piece", nil, with(pieces[1], func(f *wire.FragmentFrame) { f.Payload = append(f.Payload, 0) }), 0, ErrPieceLength, Stats{BadPieceLength: 1}},
		{"empty last piece", nil, with(pieces[2], func(f *wire.FragmentFrame) { f.Payload = nil }), 0, ErrPieceLength, Stats{BadPieceLength: 1}},
		{"long last piece", nil, with(pieces[2], func(f *wire.FragmentFrame) { f.Payload = make([]byte, ps+1) }), 0, ErrPieceLength, Stats{BadPieceLength: 1}},
		{"too large", nil, with(pieces[0], func(f *wire.FragmentFrame) { f.Count = 11 }), 0, ErrTooLarge, Stats{TooLarge: 1}},
		// The first nine pieces of ten fit in 95 bytes; a full last piece does not.
		{"too large last piece", nil, with(pieces[2], func(f *wire.FragmentFrame) { f.Index, f.Count, f.Payload = 9, 10, make([]byte, 10) }), 0, ErrTooLarge, Stats{TooLarge: 1}},
		{"count 0", nil, with(pieces[0], func(f *wire.FragmentFrame) { f.Count, f.Index = 0, 0 }), 0, ErrMalformed, Stats{Malformed: 1}},
		{"index not below count", nil, with(pieces[2], func(f *wire.FragmentFrame) { f.Index = 3 }), 0, ErrMalformed, Stats{Malformed: 1}},
		{"mode KeepAlive", nil, with(pieces[0], func(f *wire.FragmentFrame) { f.Mode = wire.FrameKeepAlive }), 0, ErrMalformed, Stats{Malformed: 1}},
		{"mode Fragment", nil, with(pieces[0], func(f *wire.FragmentFrame) { f.Mode = wire.FrameFragment }), 0, ErrMalformed, Stats{Malformed: 1}},
		{"mode 0", nil, with(pieces[0], func(f *wire.FragmentFrame) { f.Mode = 0 }), 0, ErrMalformed, Stats{Malformed: 1}},
		{"invalid message", invalid[:2], invalid[2], 0, ErrInvalidMessage, Stats{InvalidMessages: 1, Pieces: 1}},
		{"invalid one-piece message", nil, wire.FragmentFrame{Mode: wire.FrameSequenced, MessageID: 3, Count: 1, Payload: []byte{byte(wire.FrameUnreliable), 0}}, 0, ErrInvalidMessage, Stats{InvalidMessages: 1, Pieces: 1}},
		{"completed", pieces[:2], pieces[2], 0, nil, Stats{Completed: 1, Pieces: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAssembler(t, AssemblerConfig{PieceSize: ps, MaxMessageSize: 95})
			feed(t, a, c.setup, 0)
			if c.name == "evicted" {
				for id := range DefaultMaxPartial {
					feed(t, a, split(t, msg, ps, mode, wire.Seq(1000+id))[:1], 0)
				}
			}
			before := a.Stats()
			partials, buffered := a.Partials(), a.BufferedBytes()
			m, err := a.Add(c.f, c.tick)
			if err != c.err {
				t.Fatalf("Add = %v, want %v", err, c.err)
			}
			if c.name == "completed" {
				if !bytes.Equal(m, msg) {
					t.Fatalf("completed message = %x, want %x", m, msg)
				}
			} else if m != nil {
				t.Fatalf("delivered %d bytes", len(m))
			}
			if got := diff(a.Stats(), before); got != c.want {
				t.Fatalf("stats delta %+v, want %+v", got, c.want)
			}
			// A refused or ignored piece leaves the assemblies as they were.
			if c.err != nil && c.err != ErrInvalidMessage && (a.Partials() != partials || a.BufferedBytes() != buffered) {
				t.Fatalf("refused piece changed partials %d→%d, bytes %d→%d", partials, a.Partials(), buffered, a.BufferedBytes())
			}
		})
	}
}

// diff returns the counter-wise difference s − t.
func diff(s, t Stats) Stats {
	return Stats{
		Pieces:          s.Pieces - t.Pieces,
		Completed:       s.Completed - t.Completed,
		InvalidMessages: s.InvalidMessages - t.InvalidMessages,
		DuplicatePieces: s.DuplicatePieces - t.DuplicatePieces,
		LatePieces:      s.LatePieces - t.LatePieces,
		StalePieces:     s.StalePieces - t.StalePieces,
		Expired:         s.Expired - t.Expired,
		Evicted:         s.Evicted - t.Evicted,
		Mismatched:      s.Mismatched - t.Mismatched,
		BadPieceLength:  s.BadPieceLength - t.BadPieceLength,
		TooLarge:        s.TooLarge - t.TooLarge,
		Malformed:       s.Malformed - t.Malformed,
	}
}

// TestOnePieceMessage: a count-1 piece completes at once, takes no partial
// slot (so it evicts nothing when the table is full), and a copy of it is
// a late piece.
func TestOnePieceMessage(t *testing.T) {
	const ps = 10
	a := newAssembler(t, AssemblerConfig{PieceSize: ps, MaxPartial: 1})
	big, mode := frameOfLen(t, 2*ps, 1)
	feed(t, a, split(t, big, ps, mode, 1)[:1], 0)
	small, mode := frameOfLen(t, 7, 2)
	one := split(t, small, ps, mode, 2)
	if got := feed(t, a, one, 0); len(got) != 1 || !bytes.Equal(got[0], small) {
		t.Fatal("one-piece message not delivered at once")
	}
	if got := feed(t, a, one, 0); len(got) != 0 {
		t.Fatal("one-piece message delivered twice")
	}
	if s := a.Stats(); s.Evicted != 0 || s.LatePieces != 1 || a.Partials() != 1 {
		t.Fatalf("stats %+v, %d partials", s, a.Partials())
	}
}

// TestMessageBufferReuse: the delivered message stays intact until the
// next Add or Expire, and buffers are reused rather than reallocated.
func TestMessageBufferReuse(t *testing.T) {
	const ps = 10
	a := newAssembler(t, AssemblerConfig{PieceSize: ps})
	m1, mode := frameOfLen(t, 45, 1)
	p1 := split(t, m1, ps, mode, 1)
	feed(t, a, p1[:4], 0)
	got, err := a.Add(p1[4], 0)
	if err != nil || !bytes.Equal(got, m1) || cap(got) != len(got) {
		t.Fatalf("Add = %d bytes (cap %d), %v", len(got), cap(got), err)
	}
	retained := a.RetainedBytes()
	// Another message of the same size reuses the buffer.
	m2, mode := frameOfLen(t, 45, 2)
	feed(t, a, split(t, m2, ps, mode, 2), 1)
	if a.RetainedBytes() != retained {
		t.Fatalf("RetainedBytes %d → %d: buffer not reused", retained, a.RetainedBytes())
	}
	// A larger message grows one buffer; smaller ones then fit in it.
	m3, mode := frameOfLen(t, 95, 3)
	feed(t, a, split(t, m3, ps, mode, 3), 2)
	grown := a.RetainedBytes()
	for id := 4; id < 20; id++ {
		feed(t, a, split(t, m2, ps, mode, wire.Seq(id)), 3)
	}
	if a.RetainedBytes() != grown {
		t.Fatalf("RetainedBytes %d → %d after smaller messages", grown, a.RetainedBytes())
	}
}

// TestMemoryBound: a peer that opens MaxPartial assemblies of the largest
// declared size, again and again, never makes the assembler hold more than
// (MaxPartial + 1) × MaxMessageSize.
func TestMemoryBound(t *testing.T) {
	const ps = 100
	a := newAssembler(t, AssemblerConfig{PieceSize: ps, MaxPartial: 4})
	r := rand.New(rand.NewPCG(7, 7))
	payload := make([]byte, ps)
	bound := 5 * a.Config().MaxMessageSize
	for i := range 10_000 {
		count := 2 + r.IntN(254)
		f := wire.FragmentFrame{Mode: wire.FrameUnreliable, MessageID: wire.Seq(r.Uint32()), Index: uint8(r.IntN(count - 1)), Count: uint8(count), Payload: payload}
		if _, err := a.Add(f, time.Duration(i)); err != nil {
			t.Fatal(err)
		}
		if a.RetainedBytes() > bound || a.Partials() > 4 {
			t.Fatalf("after %d pieces: %d bytes retained (bound %d), %d partials", i, a.RetainedBytes(), bound, a.Partials())
		}
	}
}

// NextExpiry names the oldest partial assembly's expiry: nothing before
// it expires, it does at that time, and with nothing in assembly there is
// none.
func TestNextExpiry(t *testing.T) {
	const ps = 100
	a := newAssembler(t, AssemblerConfig{PieceSize: ps, Expiry: time.Second})
	if _, ok := a.NextExpiry(); ok {
		t.Fatal("an empty assembler reports an expiry")
	}
	payload := make([]byte, ps)
	t0 := time.Hour
	for i, at := range []time.Duration{t0, t0 + 300*time.Millisecond} {
		f := wire.FragmentFrame{Mode: wire.FrameUnreliable, MessageID: wire.Seq(10 + i), Count: 3, Payload: payload}
		if _, err := a.Add(f, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []time.Duration{t0 + time.Second, t0 + 1300*time.Millisecond} {
		at, ok := a.NextExpiry()
		if !ok || at != want {
			t.Fatalf("NextExpiry %v, %v; want %v", at, ok, want)
		}
		if n := a.Expire(at - 1); n != 0 {
			t.Fatalf("Expire just before NextExpiry %v discarded %d", at, n)
		}
		if n := a.Expire(at); n != 1 {
			t.Fatalf("Expire at NextExpiry %v discarded %d, want 1", at, n)
		}
	}
	if at, ok := a.NextExpiry(); ok {
		t.Fatalf("NextExpiry %v with nothing in assembly", at)
	}
}
