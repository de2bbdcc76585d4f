package rollback

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/wire"
)

// randomAction executes one random action into w's open frame: a peer's
// heal or move of its own entity, an event from any sender, a server input
// or a derived heal.
func randomAction(w *world, rng *rand.Rand) {
	p := rng.IntN(4)
	switch rng.IntN(5) {
	case 0:
		_ = w.x.Execute(Sender(p), w.ids.heal, w.ents[2*p+1], le32(rng.Int32N(100)))
	case 1:
		_ = w.ids.move.Execute(w.x, Sender(p), w.ents[2*p], Move{rng.Int32N(9) - 4, rng.Int32N(9) - 4})
	case 2:
		senders := []Sender{0, 1, 2, 3, SenderLocal}
		pay := make([]byte, rng.IntN(17))
		for i := range pay {
			pay[i] = byte(rng.Uint32())
		}
		_ = w.x.Execute(senders[rng.IntN(len(senders))], w.ids.ping, NoEntity, pay)
	case 3:
		_ = w.x.Execute(SenderLocal, w.ids.heal, w.ents[rng.IntN(len(w.ents))], le32(rng.Int32N(50)))
	default:
		w.x.SetDerived(true)
		_ = w.x.Execute(SenderLocal, w.ids.heal, w.ents[rng.IntN(len(w.ents))], le32(-rng.Int32N(50)))
		w.x.SetDerived(false)
	}
}

// randomLog fills frames first..last of a fresh world with random records:
// most frames a few, some none, some many.
func randomLog(tb testing.TB, rng *rand.Rand, capacity int, first, last uint32) *world {
	tb.Helper()
	w := newWorld(tb, LogConfig{FrameCapacity: capacity}, 64)
	for f := first; f <= last; f++ {
		fillFrame(tb, w, f, func() {
			n := rng.IntN(10)
			switch rng.IntN(8) {
			case 0:
				n = 0
			case 1:
				n = 30 + rng.IntN(40)
			}
			for range n {
				randomAction(w, rng)
			}
		})
	}
	return w
}

// randomFilter returns nil (everything in scope) or a filter; none of them
// may ever be asked about the peer's own records (S-H6: the owner rule is
// applied first).
func randomFilter(t *testing.T, rng *rand.Rand, peer Sender) ScopeFilter {
	guard := func(p Sender, r Record) {
		if r.Sender == p {
			t.Fatalf("filter asked about peer %d's own record", p)
		}
	}
	switch rng.IntN(5) {
	case 0:
		return nil
	case 1: // claims everything is relevant — the owner rule must still hold
		return ScopeFunc(func(p Sender, r Record) bool { guard(p, r); return true })
	case 2:
		return ScopeFunc(func(p Sender, r Record) bool { guard(p, r); return false })
	case 3: // interest by entity
		return ScopeFunc(func(p Sender, r Record) bool {
			guard(p, r)
			return r.Entity == NoEntity || r.Entity.Index()%3 != uint32(p)%3
		})
	default: // by type and payload
		return ScopeFunc(func(p Sender, r Record) bool { guard(p, r); return r.Type != 3 || len(r.Payload)%2 == 0 })
	}
}

// S-H1 (property): over random logs, peers, baselines, scope filters and
// budgets, a pack never exceeds its budget; it holds frames [start,
// through'] oldest first, start = max(baseline+1, ring's oldest frame),
// byte for byte what a slow reference encoder produces for that range;
// through' (Pack.Through, the pending record's frameEnd) is the last frame
// it actually held — the next frame would not have fit (with the header
// counted at its largest, as the budget check does) — and never the frame
// it was asked for unless that fitted. S-H6 is checked on every pack: no
// record of the peer's own, whatever the filter; and frames that aged out
// are counted.
func TestPackProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	iters := 400
	if testing.Short() {
		iters = 100
	}
	var fits, short, tooLarge, empty, aged int
	for it := 0; it < iters; it++ {
		capacity := []int{8, 16, 64}[rng.IntN(3)]
		first := uint32(rng.IntN(3))
		last := first + uint32(rng.IntN(3*capacity))
		w := randomLog(t, rng, capacity, first, last)
		peer := Sender(rng.IntN(6)) // 4 and 5 have no records of their own
		filter := randomFilter(t, rng, peer)
		r, err := NewReplicator(w.log, filter)
		if err != nil {
			t.Fatal(err)
		}
		oldest, _ := w.log.Oldest()
		newest, _ := w.log.Newest()
		baseline := first + uint32(rng.IntN(int(last-first)+2)) - 1
		if first == 0 && baseline == ^uint32(0) {
			baseline = 0
		}
		if err := r.AddPeer(peer, baseline); err != nil {
			t.Fatal(err)
		}
		through := newest - uint32(rng.IntN(4))
		if rng.IntN(5) == 0 {
			through = newest + 5 // capped at the newest frame
		}
		budget := rng.IntN(3000)
		dst := []byte("prefix")
		pk, out, err := r.PackForPeer(peer, through, dst, budget)

		start := max(uint64(baseline)+1, uint64(oldest))
		wantAged := uint64(0)
		if from := max(uint64(baseline)+1, uint64(first)); from < uint64(oldest) {
			wantAged = uint64(oldest) - from
			aged++
		}
		if got := r.Peer(peer).AgedOut; got != wantAged {
			t.Fatalf("iter %d: aged out %d, want %d", it, got, wantAged)
		}
		if r.NeedsResync(peer) != (wantAged > 0) {
			t.Fatalf("iter %d: NeedsResync %v with %d aged out", it, r.NeedsResync(peer), wantAged)
		}
		limit := uint64(min(through, newest))
		switch {
		case start > limit:
			if err != nil || pk.Frames != 0 || !bytes.Equal(out, dst) {
				t.Fatalf("iter %d: nothing owed, got %+v, %v", it, pk, err)
			}
			empty++
			continue
		case budget < sliceHeaderMax:
			if !errors.Is(err, ErrSmallBudget) {
				t.Fatalf("iter %d: budget %d: %v", it, budget, err)
			}
			continue
		}
		fitsAt := func(f uint32) bool { // the pack's own rule: header at its largest
			o := oracleSlice(t, w.log, peer, filter, uint32(start), f)
			_, h, _ := wire.ParseActionSliceHeader(o)
			return len(o)-h+sliceHeaderMax <= budget
		}
		if !fitsAt(uint32(start)) {
			if !errors.Is(err, ErrFrameTooLarge) || !bytes.Equal(out, dst) {
				t.Fatalf("iter %d: frame %d alone exceeds budget %d, got %+v, %v", it, start, budget, pk, err)
			}
			tooLarge++
			continue
		}
		if err != nil {
			t.Fatalf("iter %d: %v", it, err)
		}
		body := out[len(dst):]
		if !bytes.Equal(out[:len(dst)], dst) || len(body) != pk.Bytes || len(body) > budget {
			t.Fatalf("iter %d: slice of %d bytes (Bytes %d) over budget %d, or prefix clobbered", it, len(body), pk.Bytes, budget)
		}
		if uint64(pk.First) != start || pk.Through < pk.First || uint64(pk.Through) > limit || pk.Frames != int(pk.Through-pk.First)+1 {
			t.Fatalf("iter %d: pack %+v, start %d, limit %d", it, pk, start, limit)
		}
		if want := oracleSlice(t, w.log, peer, filter, pk.First, pk.Through); !bytes.Equal(body, want) {
			t.Fatalf("iter %d: pack differs from the reference encoding of [%d, %d]", it, pk.First, pk.Through)
		}
		if uint64(pk.Through) < limit {
			if fitsAt(pk.Through + 1) {
				t.Fatalf("iter %d: pack stopped at %d although frame %d fitted budget %d", it, pk.Through, pk.Through+1, budget)
			}
			if !pk.Short {
				t.Fatalf("iter %d: a short pack not marked Short", it)
			}
			short++
		} else {
			fits++
		}
		s, n, err := wire.ParseActionSlice(body)
		if err != nil || n != len(body) || s.FirstFrame != pk.First || s.LastFrame() != pk.Through {
			t.Fatalf("iter %d: slice does not parse as [%d, %d]: %v", it, pk.First, pk.Through, err)
		}
		recs := 0
		it2 := s.Iter()
		for _, _, ok := it2.NextFrame(); ok; _, _, ok = it2.NextFrame() {
			for rec, ok := it2.NextRecord(); ok; rec, ok = it2.NextRecord() {
				if Sender(rec.Sender) == peer { // S-H6
					t.Fatalf("iter %d: peer %d received its own record", it, peer)
				}
				recs++
			}
		}
		if recs != pk.Records {
			t.Fatalf("iter %d: %d records in the slice, Pack says %d", it, recs, pk.Records)
		}
		// The tag names exactly the packed range.
		if e, f, l := splitTag(pk.Tag); f != pk.First || l != pk.Through || e != r.peers[peer].epoch {
			t.Fatalf("iter %d: tag %x decodes to %d [%d, %d]", it, pk.Tag, e, f, l)
		}
	}
	if fits == 0 || short == 0 || tooLarge == 0 || empty == 0 || aged == 0 {
		t.Fatalf("coverage: %d whole, %d short, %d too large, %d empty, %d aged out", fits, short, tooLarge, empty, aged)
	}
	t.Logf("%d whole, %d short, %d too large, %d empty, %d with frames aged out", fits, short, tooLarge, empty, aged)
}

// S-H1 with several slices a tick: PackNext continues right after the
// previous pack, so consecutive slices tile the owed range without gap or
// overlap, each within budget.
func TestPackNextTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := randomLog(t, rng, 64, 1, 64)
	r, _ := NewReplicator(w.log, nil)
	if err := r.AddPeer(2, 0); err != nil {
		t.Fatal(err)
	}
	var prev Pack
	next := uint32(1)
	for range 64 {
		budget := 300
		pk, out, err := r.PackNext(2, prev, 64, nil, budget)
		if errors.Is(err, ErrFrameTooLarge) {
			budget = 4000
			pk, out, err = r.PackNext(2, prev, 64, nil, budget)
		}
		if err != nil {
			t.Fatal(err)
		}
		if pk.Frames == 0 {
			break
		}
		if pk.First != next || len(out) != pk.Bytes || pk.Bytes > budget {
			t.Fatalf("slice %+v after %d", pk, next)
		}
		next = pk.Through + 1
		prev = pk
	}
	if next != 65 {
		t.Fatalf("slices reached %d, want 65", next)
	}
}

// The baseline advances only through confirmed records, to the record's
// frameEnd, never backwards; abandoned records change nothing and the
// frames stay owed (S-H2 at the replicator level); a record confirmed ahead
// of a gap credits once the gap is confirmed; records from before a Resync
// credit nothing; the pending count follows the records in flight.
func TestReplicatorCredit(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	for f := uint32(1); f <= 12; f++ {
		fillFrame(t, w, f, func() { _ = w.x.Execute(1, w.ids.heal, w.ents[3], le32(int32(f))) })
	}
	r, _ := NewReplicator(w.log, nil)
	const p = 0
	if err := r.AddPeer(p, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.AddPeer(p, 0); !errors.Is(err, ErrPeerExists) {
		t.Fatalf("second AddPeer: %v", err)
	}
	if err := r.AddPeer(SenderDerived, 0); !errors.Is(err, ErrNotPeer) {
		t.Fatalf("AddPeer(254): %v", err)
	}
	if _, _, err := r.PackForPeer(7, 12, nil, 1000); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("unknown peer: %v", err)
	}
	pack := func(through uint32, budget int) Pack {
		t.Helper()
		pk, _, err := r.PackForPeer(p, through, nil, budget)
		if err != nil {
			t.Fatal(err)
		}
		r.Sent(pk)
		return pk
	}
	a := pack(4, 1000) // [1, 4]
	b := pack(8, 1000) // [1, 8]: nothing confirmed yet, so it starts at 1 again
	if a.First != 1 || a.Through != 4 || b.First != 1 || b.Through != 8 || r.PendingAckCount(p) != 2 {
		t.Fatalf("packs %+v %+v, pending %d", a, b, r.PendingAckCount(p))
	}
	r.OnRecord(p, b.Tag, false) // abandoned: nothing
	if r.LastAcked(p) != 0 || r.PendingAckCount(p) != 1 {
		t.Fatalf("abandoned record moved the baseline to %d", r.LastAcked(p))
	}
	r.OnRecord(p, a.Tag, true)
	if r.LastAcked(p) != 4 || r.PendingAckCount(p) != 0 {
		t.Fatalf("baseline %d after confirming [1,4]", r.LastAcked(p))
	}
	c := pack(12, 1000) // [5, 12]
	d := pack(6, 1000)  // [5, 6]
	r.OnRecord(p, c.Tag, true)
	r.OnRecord(p, d.Tag, true) // older, smaller: never backwards
	if r.LastAcked(p) != 12 || c.First != 5 {
		t.Fatalf("baseline %d, pack %+v", r.LastAcked(p), c)
	}
	if pk, _, _ := r.PackForPeer(p, 12, nil, 1000); pk.Frames != 0 {
		t.Fatalf("nothing owed, packed %+v", pk)
	}

	// Two slices in one tick, confirmed in reverse order.
	for f := uint32(13); f <= 20; f++ {
		fillFrame(t, w, f, func() { _ = w.x.Execute(1, w.ids.heal, w.ents[3], le32(int32(f))) })
	}
	first, _, err := r.PackForPeer(p, 20, nil, 40)
	if err != nil || !first.Short {
		t.Fatalf("first slice %+v: %v", first, err)
	}
	second, _, err := r.PackNext(p, first, 20, nil, 1000)
	if err != nil || second.First != first.Through+1 || second.Through != 20 {
		t.Fatalf("second slice %+v: %v", second, err)
	}
	r.Sent(first)
	r.Sent(second)
	r.OnRecord(p, second.Tag, true)
	if r.LastAcked(p) != 12 {
		t.Fatalf("a slice after a gap credited: %d", r.LastAcked(p))
	}
	r.OnRecord(p, first.Tag, true)
	if r.LastAcked(p) != 20 {
		t.Fatalf("baseline %d after the gap closed, want 20", r.LastAcked(p))
	}

	// Resync: records of the old epoch credit nothing.
	for f := uint32(21); f <= 24; f++ {
		fillFrame(t, w, f, func() {})
	}
	old := pack(24, 1000)
	if err := r.Resync(p, 22); err != nil {
		t.Fatal(err)
	}
	r.OnRecord(p, old.Tag, true)
	if st := r.Peer(p); st.LastAcked != 22 || st.Stale != 1 || st.Pending != 0 {
		t.Fatalf("after resync: %+v", st)
	}
	r.RemovePeer(p)
	if r.Active(p) || r.PendingAckCount(p) != 0 {
		t.Fatal("removed peer still active")
	}
	r.OnRecord(p, old.Tag, true) // ignored
}

// Forfeit gives up a frame no budget can carry, counts it and flags the
// peer; the stream moves on.
func TestReplicatorForfeit(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	fillFrame(t, w, 1, func() {
		for i := range 40 {
			_ = w.x.Execute(1, w.ids.heal, w.ents[3], le32(int32(i)))
		}
	})
	fillFrame(t, w, 2, func() { _ = w.x.Execute(1, w.ids.heal, w.ents[3], le32(1)) })
	r, _ := NewReplicator(w.log, nil)
	_ = r.AddPeer(0, 0)
	if _, _, err := r.PackForPeer(0, 2, nil, 64); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("pack: %v", err)
	}
	if f, ok, err := r.Forfeit(0); err != nil || !ok || f != 1 {
		t.Fatalf("Forfeit = %d %v %v", f, ok, err)
	}
	pk, _, err := r.PackForPeer(0, 2, nil, 64)
	if err != nil || pk.First != 2 || !r.NeedsResync(0) || r.Peer(0).Forfeited != 1 || r.Peer(0).TooLarge != 1 {
		t.Fatalf("after forfeit: %+v %v %+v", pk, err, r.Peer(0))
	}
}

// S-H3: a peer that confirmed one pack and then went quiet for 100,000
// ticks. The server packs for it every tick; the frames it walks per pack
// stay bounded by the ring (FrameCapacity), not by the silence; every frame
// that leaves the ring unconfirmed is counted (S-H4) and the peer is
// flagged for a resync; and the pack still covers the ring's content.
func TestQuietPeerBoundedWork(t *testing.T) {
	const capacity = 64
	ticks := 100_000
	if testing.Short() {
		ticks = 20_000
	}
	w := newWorld(t, LogConfig{FrameCapacity: capacity}, 64)
	r, _ := NewReplicator(w.log, nil)
	_ = r.AddPeer(0, 0)
	heal := le32(1)
	buf := make([]byte, 0, 2048)
	var acked uint32
	var maxWalk uint64
	for f := uint32(1); f <= uint32(ticks); f++ {
		w.begin(t, f)
		_ = w.x.Execute(1, w.ids.heal, w.ents[3], heal)
		w.close(t)
		before := r.Peer(0).FramesWalked
		pk, out, err := r.PackForPeer(0, f, buf[:0], 1150)
		if err != nil {
			t.Fatal(err)
		}
		buf = out[:0]
		maxWalk = max(maxWalk, r.Peer(0).FramesWalked-before)
		if f == 5 { // the only confirmation the peer ever sends
			r.OnRecord(0, pk.Tag, true)
			acked = pk.Through
		}
		if want := max(f-capacity+1, acked+1); f > capacity && (pk.First != want || pk.Through != f) {
			t.Fatalf("tick %d: pack [%d, %d], want [%d, %d]", f, pk.First, pk.Through, want, f)
		}
	}
	st := r.Peer(0)
	wantAged := uint64(ticks-capacity) - uint64(acked)
	if maxWalk > capacity || st.AgedOut != wantAged || !st.NeedsResync {
		t.Fatalf("max frames walked per pack %d (ring %d), aged out %d (want %d), resync %v", maxWalk, capacity, st.AgedOut, wantAged, st.NeedsResync)
	}
	t.Logf("%d ticks: at most %d frames walked per pack, %d frames aged out and counted", ticks, maxWalk, st.AgedOut)
}

// S-H6 on a fixed log: each peer's stream holds every record but its own —
// its own inputs, on its own entities, including its events — while other
// peers', server-authored and derived records (also those touching the
// peer's own entities) are sent, whatever filter is installed.
func TestOwnerRuleWhateverFilter(t *testing.T) {
	w := newWorld(t, LogConfig{FrameCapacity: 16}, 64)
	fillFrame(t, w, 1, func() {
		_ = w.x.Execute(0, w.ids.heal, w.ents[1], le32(1))                                // peer 0's input
		_ = w.x.Execute(0, w.ids.ping, NoEntity, []byte{7})                               // peer 0's event
		_ = w.x.Execute(1, w.ids.heal, w.ents[3], le32(2))                                // peer 1's input
		_ = w.x.Execute(SenderLocal, w.ids.heal, w.ents[1], le32(3))                      // server input on peer 0's entity
		w.x.SetDerived(true)                                                              //
		_ = w.x.Execute(SenderLocal, w.ids.damage, NoEntity, damagePayload(w.ents[0], 4)) // derived, touches peer 0's entity
		w.x.SetDerived(false)
	})
	for _, f := range []ScopeFilter{nil, ScopeFunc(func(Sender, Record) bool { return true })} {
		r, _ := NewReplicator(w.log, f)
		for p := Sender(0); p <= 2; p++ {
			_ = r.AddPeer(p, 0)
			_, out, err := r.PackForPeer(p, 1, nil, 1000)
			if err != nil {
				t.Fatal(err)
			}
			s, _, err := wire.ParseActionSlice(out)
			if err != nil {
				t.Fatal(err)
			}
			var senders []Sender
			it := s.Iter()
			for _, _, ok := it.NextFrame(); ok; _, _, ok = it.NextFrame() {
				for rec, ok := it.NextRecord(); ok; rec, ok = it.NextRecord() {
					senders = append(senders, Sender(rec.Sender))
				}
			}
			var want []Sender
			for _, s := range []Sender{0, 0, 1, SenderLocal, SenderDerived} {
				if s != p {
					want = append(want, s)
				}
			}
			if len(senders) != len(want) {
				t.Fatalf("peer %d got senders %v, want %v", p, senders, want)
			}
			for i := range want {
				if senders[i] != want[i] {
					t.Fatalf("peer %d got senders %v, want %v", p, senders, want)
				}
			}
		}
	}
}

// Tags round-trip, and a foreign tag cannot credit a range that wraps.
func TestTagLayout(t *testing.T) {
	for _, c := range []struct {
		epoch       uint16
		first, last uint32
	}{{0, 0, 0}, {1, 5, 9}, {65535, 4_000_000_000, 4_000_004_095}, {7, ^uint32(0) - 10, ^uint32(0)}} {
		e, f, l := splitTag(makeTag(c.epoch, c.first, c.last))
		if e != c.epoch || f != c.first || l != c.last {
			t.Fatalf("%+v → %d %d %d", c, e, f, l)
		}
	}
	if _, f, l := splitTag(0x0000_FFFF_0000_0003); f != 0 || l != 3 {
		t.Fatalf("wrapping span decoded to [%d, %d]", f, l)
	}
}

// Each closed frame's records are encoded once and copied into every
// peer's pack; the copies must follow the log as it changes under them.
// Over a log whose ring wraps many times (slots reused for newer frames)
// and whose past frames are rewound and replayed with other records, every
// peer's pack — also one taken mid-replay — is byte for byte the slow
// reference encoding of its range, whatever the filter and budget.
func TestPackFollowsRewrittenFrames(t *testing.T) {
	var compared, midReplay, rewinds int
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 77))
		capacity := []int{8, 16}[rng.IntN(2)]
		w := newWorld(t, LogConfig{FrameCapacity: capacity}, 64)
		filter := randomFilter(t, rng, 0)
		r, err := NewReplicator(w.log, filter)
		if err != nil {
			t.Fatal(err)
		}
		peers := []Sender{0, 1, 2, 3, 5}
		for _, p := range peers {
			if err := r.AddPeer(p, 0); err != nil {
				t.Fatal(err)
			}
		}
		packAll := func(step int, when string) {
			for _, p := range peers {
				budget := sliceHeaderMax + rng.IntN(1500)
				pk, out, err := r.PackForPeer(p, ^uint32(0), nil, budget)
				if errors.Is(err, ErrFrameTooLarge) || pk.Frames == 0 {
					continue
				}
				if err != nil {
					t.Fatalf("seed %d step %d %s: peer %d: %v (go test ./rollback -run TestPackFollowsRewrittenFrames)", seed, step, when, p, err)
				}
				if want := oracleSlice(t, w.log, p, filter, pk.First, pk.Through); !bytes.Equal(out, want) {
					t.Fatalf("seed %d step %d %s: peer %d's pack of [%d, %d] differs from the reference encoding (go test ./rollback -run TestPackFollowsRewrittenFrames)", seed, step, when, p, pk.First, pk.Through)
				}
				compared++
				if when == "mid-replay" {
					midReplay++
				}
			}
		}
		f := uint32(1)
		for step := range 120 {
			fillFrame(t, w, f, func() {
				for range rng.IntN(12) {
					randomAction(w, rng)
				}
			})
			f++
			packAll(step, "after a new frame")
			oldest, _ := w.log.Oldest()
			newest, _ := w.log.Newest()
			if newest == oldest || rng.IntN(6) != 0 {
				continue
			}
			from := oldest + 1 + uint32(rng.IntN(int(newest-oldest)))
			if _, err := w.x.Rewind(from); err != nil {
				t.Fatalf("seed %d step %d: Rewind(%d): %v", seed, step, from, err)
			}
			rewinds++
			for {
				g, ok := w.log.Replaying()
				if !ok {
					break
				}
				if err := w.log.ReopenFrame(g); err != nil {
					t.Fatal(err)
				}
				for range rng.IntN(12) {
					randomAction(w, rng)
				}
				w.close(t)
				if rng.IntN(3) == 0 {
					packAll(step, "mid-replay")
				}
			}
			packAll(step, "after a replay")
		}
	}
	if compared < 5000 || midReplay < 100 || rewinds < 200 {
		t.Fatalf("coverage: %d packs compared (%d mid-replay), %d rewinds", compared, midReplay, rewinds)
	}
	t.Logf("%d packs compared (%d mid-replay), %d rewinds", compared, midReplay, rewinds)
}
