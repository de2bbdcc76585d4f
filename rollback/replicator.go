package rollback

import (
	"fmt"

	"github.com/tickwire/tickwire/wire"
)

// ScopeFilter decides which records of the action log a peer receives on
// its action stream (interest management). The Replicator AND-composes it
// with the owner rule: whatever Relevant returns, a peer never receives a
// record whose Sender is that peer (S-H6). Relevant is called once per
// record per pack, on the packing goroutine, with a Record whose Payload
// aliases the log (valid only during the call); it must be cheap,
// deterministic and must not retain the record.
//
// A filter that leaves records out leaves the receiving client without
// them: its copy of the out-of-scope entities is not kept up to date, so a
// whole-state checksum (Store.Checksum) no longer matches the server's.
type ScopeFilter interface {
	Relevant(peer Sender, r Record) bool
}

// ScopeFunc adapts a function to a ScopeFilter.
type ScopeFunc func(peer Sender, r Record) bool

// Relevant calls f.
func (f ScopeFunc) Relevant(peer Sender, r Record) bool { return f(peer, r) }

// Pack describes one action slice built by Replicator.PackForPeer: the
// frames [First, Through] of the log, packed for Peer. Every frame of that
// range is in the slice, complete for this peer (a frame with nothing in
// scope is covered and costs nothing); no frame after Through is. The zero
// Pack (Frames == 0) means nothing was owed and nothing was written.
type Pack struct {
	// Peer is the peer the slice was packed for.
	Peer Sender
	// First and Through are the first and last frame the slice covers.
	// Through is the last frame the pack actually held — never more than
	// the budget allowed (S-H1).
	First, Through uint32
	// Frames is the number of frames covered (Through−First+1), 0 for an
	// empty pack; Entries how many of them carry records.
	Frames, Entries int
	// Records is the number of records packed.
	Records int
	// Bytes is the encoded size of the slice.
	Bytes int
	// Short is true when the pack stopped before the frame it was asked to
	// pack through: the next frame did not fit the budget (or the slice
	// reached wire.MaxSliceFrames).
	Short bool
	// Tag identifies the pack for Channel.SendRecord and Replicator.OnRecord
	// (see Replicator for its layout).
	Tag uint64
}

// ReplicatorPeerStats are one peer's replication counters (Replicator.Peer).
type ReplicatorPeerStats struct {
	// LastAcked is the peer's baseline: every frame up to it has been
	// confirmed delivered (or covered by its snapshot, or forfeited — see
	// AgedOut).
	LastAcked uint32
	// Pending is the number of records sent and not yet given a verdict
	// (PendingAckCount).
	Pending int
	// NeedsResync reports that frames the peer was owed left the ring (or
	// could not be packed) before it confirmed them: the peer needs a state
	// burst (Replicator.Resync) to be correct again.
	NeedsResync bool

	// Packs counts slices packed; Sent the records registered with Sent.
	Packs, Sent uint64
	// FramesPacked, RecordsPacked and BytesPacked total what the packs held.
	FramesPacked, RecordsPacked, BytesPacked uint64
	// FramesWalked counts log frames visited by packs — the pack work,
	// bounded per pack by the ring whatever the peer's silence (S-H3).
	FramesWalked uint64
	// OwnSkipped counts records left out by the owner rule (the peer's own
	// inputs); Filtered those the ScopeFilter left out.
	OwnSkipped, Filtered uint64
	// Confirmed and Abandoned count verdicts; Stale counts confirmed
	// records from before the last Resync, which credit nothing.
	Confirmed, Abandoned, Stale uint64
	// AgedOut counts frames that left the ring while still owed to the peer
	// (S-H4): none is lost silently. Forfeited counts frames skipped because
	// their in-scope records exceed the largest budget (Replicator.Forfeit).
	AgedOut, Forfeited uint64
	// TooLarge counts packs refused with ErrFrameTooLarge.
	TooLarge uint64
}

// replPeer is one peer's replication state. Frames after the baseline
// that have been confirmed (acked) or abandoned and not sent again (lost)
// are bits of two bitmaps indexed by frame modulo their size, a power of
// two of at least the ring: every such frame lies within one ring after
// the baseline (AgeOut keeps it so), so the bits never alias.
type replPeer struct {
	active      bool
	needsResync bool
	epoch       uint16
	lastAcked   uint32
	sent        uint32 // newest frame sent in this epoch (≥ lastAcked)
	pending     int
	acked, lost []uint64
	st          ReplicatorPeerStats
}

func (ps *replPeer) reset(baseline uint32) {
	ps.lastAcked, ps.sent = baseline, baseline
	clear(ps.acked)
	clear(ps.lost)
}

func (ps *replPeer) bit(bm []uint64, f uint32) (word *uint64, mask uint64) {
	i := f & uint32(len(bm)*64-1)
	return &bm[i>>6], 1 << (i & 63)
}

func (ps *replPeer) get(bm []uint64, f uint32) bool {
	w, m := ps.bit(bm, f)
	return *w&m != 0
}

func (ps *replPeer) set(bm []uint64, f uint32, on bool) {
	w, m := ps.bit(bm, f)
	if on {
		*w |= m
	} else {
		*w &^= m
	}
}

// moveBaseline sets the baseline to to (≥ the current one), clearing the
// bits of the frames it passes, and keeps sent at or after it.
func (ps *replPeer) moveBaseline(to uint32) {
	if uint64(to)-uint64(ps.lastAcked) >= uint64(len(ps.acked)*64) {
		clear(ps.acked)
		clear(ps.lost)
	} else {
		for f := ps.lastAcked + 1; f <= to && f > ps.lastAcked; f++ {
			ps.set(ps.acked, f, false)
			ps.set(ps.lost, f, false)
		}
	}
	ps.lastAcked = to
	ps.sent = max(ps.sent, to)
}

// advance moves the baseline over the confirmed frames that follow it.
func (ps *replPeer) advance() {
	for f := ps.lastAcked + 1; f != 0 && ps.get(ps.acked, f); f++ {
		ps.set(ps.acked, f, false)
		ps.set(ps.lost, f, false)
		ps.lastAcked = f
	}
	ps.sent = max(ps.sent, ps.lastAcked)
}

// makeTag lays out Pack.Tag: bits 0–31 the pack's last frame, bits 32–47
// its span (Through−First, below wire.MaxSliceFrames), bits 48–63 the
// peer's resync epoch.
func makeTag(epoch uint16, first, through uint32) uint64 {
	return uint64(epoch)<<48 | uint64(through-first)<<32 | uint64(through)
}

func splitTag(tag uint64) (epoch uint16, first, through uint32) {
	through = uint32(tag)
	span := uint32(tag>>32) & 0xFFFF
	if span > through { // not a tag of ours; credits nothing that wraps
		span = through
	}
	return uint16(tag >> 48), through - span, through
}

// Replicator packs the server's action log into each peer's action stream
// and keeps each peer's baseline: the frame through which the peer has
// provably received everything.
//
// Per peer it packs the frames [max(baseline+1, oldest frame in the ring),
// through] oldest first into one action slice within a byte budget
// (PackForPeer); a frame that does not fit whole ends the pack, and the
// pack reports the last frame it actually held (Pack.Through), never the
// frame it was asked for (S-H1). Each tick's first slice re-sends
// everything owed from the baseline on, so a lost slice costs one tick,
// not a loss verdict's round trip. When the owed frames exceed one budget,
// PackNext packs further slices of the same tick: first the frames of
// abandoned records not sent again yet, then frames never sent — so a
// stream larger than a datagram per round trip keeps up (see LinkConfig.
// SlicesPerFlush).
//
// A pack's frames count as delivered only when the record carrying it is
// confirmed — every datagram of it acked (OnRecord with confirmed true,
// S-H2); the baseline then moves over the run of delivered frames that
// follows it (to the pack's Through, when nothing before it is missing),
// never backwards. An abandoned record changes nothing: its frames stay
// owed and are packed again. Per peer, two bitmaps over one ring of frames
// after the baseline (delivered; abandoned and not re-sent) hold this.
//
// Frames the ring drops while still owed to a peer are counted
// (ReplicatorPeerStats.AgedOut) and flag the peer NeedsResync (S-H4); the
// pack then starts at the ring's oldest frame, so its work per call is
// bounded by the ring, not by how long the peer has been silent (S-H3).
//
// The frames packed must be final: once a pack is confirmed its frames are
// never sent again, and the receiver de-duplicates by frame number, so a
// frame that changes after it was packed would leave the peer with the old
// version. Server.FinalThrough is the newest frame safe to pack;
// ServerLink packs through it.
//
// Owner rule: a peer never receives records whose Sender is its own peer
// id — its own inputs, which it predicted and applies from its own input
// history (Receiver puts them back). The owner rule confines a peer's
// inputs to entities it owns (and NoEntity events), so these are exactly
// "its own entities' input records". Everything else is sent, subject to
// the ScopeFilter: other peers' inputs, server-authored inputs (SenderLocal
// or ServerConfig.ServerPeer) and derived records, including those that
// touch the peer's own entities.
//
// Tags: a pack's Tag encodes its frame range and the peer's resync epoch
// (bits 0–31 the last frame, 32–47 the span, 48–63 the epoch); pass it to
// Channel.SendRecord and hand the channel's verdict back to OnRecord. The
// tag carries everything a verdict needs: no per-record state, no pool.
//
// A Replicator belongs to the server's tick goroutine; it is not safe for
// concurrent use. Per-peer state is a fixed table entry plus two bitmaps
// of the ring's size (16 bytes at the default 64 frames), made by AddPeer
// the first time a peer id is used; PackForPeer, PackNext, Sent and
// OnRecord allocate nothing (the slice is appended to the caller's buffer).
type Replicator struct {
	log    *ActionLog
	filter ScopeFilter
	peers  []replPeer
	words  int // per-peer bitmap size, in 64-bit words
	w      wire.ActionSliceWriter
	codes  []frameCode // closed frames' records encoded once, by log slot
	runs   []recordRun // pack's scratch: one frame's in-scope runs
}

// frameCode is one closed frame's records encoded once (docs/WIRE.md §8.3)
// for every peer's pack: a peer's entry is these bytes less its own
// records and those its filter rejects, copied in runs instead of encoded
// record by record for each peer. Codes are indexed like the log's slots
// (frame mod FrameCapacity), and a code describes its slot at the epoch it
// was built: a slot reused for a newer frame, or reopened by a replay, has
// another epoch (and no slot that held a frame has epoch 0), so the code
// is built again.
type frameCode struct {
	epoch uint64
	enc   []byte
	ends  []uint32 // ends[i]: where record i's encoding ends in enc
}

// recordRun is a run of n consecutive in-scope records of a frame, whose
// encodings are enc[from:to].
type recordRun struct {
	from, to uint32
	n        int
}

// NewReplicator returns a replicator over log (the server's log) with an
// optional scope filter (nil: every record is in scope for every peer, the
// owner rule aside). Besides its per-peer state it keeps each packed
// frame's records encoded (about the log's payload bytes plus 4–14 bytes a
// record, for the frames the ring holds), so that a frame is encoded once
// however many peers it goes to.
func NewReplicator(log *ActionLog, filter ScopeFilter) (*Replicator, error) {
	if log == nil {
		return nil, fmt.Errorf("%w: NewReplicator needs a log", ErrInvalidConfig)
	}
	r := &Replicator{log: log, filter: filter, peers: make([]replPeer, int(MaxPeerID)+1), codes: make([]frameCode, log.FrameCapacity())}
	bits := 64
	for bits < log.FrameCapacity() {
		bits *= 2
	}
	r.words = bits / 64
	return r, nil
}

// Log returns the log the replicator packs from.
func (r *Replicator) Log() *ActionLog { return r.log }

// SetFilter replaces the scope filter (nil for none). It takes effect with
// the next pack; frames already confirmed are not re-sent.
func (r *Replicator) SetFilter(f ScopeFilter) { r.filter = f }

func (r *Replicator) peer(p Sender) (*replPeer, error) {
	if !p.IsPeer() {
		return nil, ErrNotPeer
	}
	ps := &r.peers[p]
	if !ps.active {
		return nil, ErrUnknownPeer
	}
	return ps, nil
}

// AddPeer starts replicating to peer p, whose state is a snapshot of the
// end of frame baseline: the first pack starts at baseline+1. Errors:
// ErrNotPeer (p above MaxPeerID), ErrPeerExists.
func (r *Replicator) AddPeer(p Sender, baseline uint32) error {
	if !p.IsPeer() {
		return ErrNotPeer
	}
	ps := &r.peers[p]
	if ps.active {
		return ErrPeerExists
	}
	if ps.acked == nil {
		ps.acked, ps.lost = make([]uint64, r.words), make([]uint64, r.words)
	}
	// A later session of the same id starts a new epoch.
	*ps = replPeer{active: true, epoch: ps.epoch + 1, acked: ps.acked, lost: ps.lost}
	ps.reset(baseline)
	return nil
}

// RemovePeer stops replicating to p and forgets its state, records in
// flight included (their channel is gone with the peer). Removing an
// unknown peer does nothing.
func (r *Replicator) RemovePeer(p Sender) {
	if p.IsPeer() {
		ps := &r.peers[p]
		*ps = replPeer{epoch: ps.epoch, acked: ps.acked, lost: ps.lost}
		ps.reset(0)
	}
}

// Resync resets p's baseline to baseline after a state burst of the end of
// that frame reached it: NeedsResync clears, and records sent before (still
// in flight) credit nothing when they confirm — the burst replaced what
// they carried. Errors: ErrNotPeer, ErrUnknownPeer.
func (r *Replicator) Resync(p Sender, baseline uint32) error {
	ps, err := r.peer(p)
	if err != nil {
		return err
	}
	ps.epoch++
	ps.reset(baseline)
	ps.needsResync = false
	return nil
}

// Active reports whether p is being replicated to.
func (r *Replicator) Active(p Sender) bool { return p.IsPeer() && r.peers[p].active }

// LastAcked returns p's baseline (0 for an unknown peer).
func (r *Replicator) LastAcked(p Sender) uint32 {
	if !r.Active(p) {
		return 0
	}
	return r.peers[p].lastAcked
}

// PendingAckCount returns the number of p's records sent (Sent) and still
// awaiting a verdict (OnRecord): diagnostics, bounded by the channel's
// window, and back to 0 once traffic settles (S-H5). 0 for an unknown peer.
func (r *Replicator) PendingAckCount(p Sender) int {
	if !r.Active(p) {
		return 0
	}
	return r.peers[p].pending
}

// NeedsResync reports whether p was owed frames that it can no longer
// receive — they aged out of the ring, or were forfeited — so only a state
// burst (then Resync) makes it correct again. It also accounts any frames
// that aged out since the last pack (see AgeOut).
func (r *Replicator) NeedsResync(p Sender) bool {
	ps, err := r.peer(p)
	if err != nil {
		return false
	}
	r.ageOut(ps)
	return ps.needsResync
}

// Peer returns p's counters (zero for an unknown peer).
func (r *Replicator) Peer(p Sender) ReplicatorPeerStats {
	if !r.Active(p) {
		return ReplicatorPeerStats{}
	}
	ps := &r.peers[p]
	st := ps.st
	st.LastAcked, st.Pending, st.NeedsResync = ps.lastAcked, ps.pending, ps.needsResync
	return st
}

// AgeOut accounts the frames owed to p that have left the ring — counted
// in AgedOut, flagging NeedsResync — and moves p's baseline to just before
// the ring's oldest frame, since those frames can never be sent. It returns
// how many frames aged out now. PackForPeer and NeedsResync call it; it is
// exported for a caller that stops packing for a peer (a throttled link)
// and still wants the count current. O(1).
func (r *Replicator) AgeOut(p Sender) uint64 {
	ps, err := r.peer(p)
	if err != nil {
		return 0
	}
	return r.ageOut(ps)
}

func (r *Replicator) ageOut(ps *replPeer) uint64 {
	l := r.log
	oldest, ok := l.Oldest()
	if !ok || uint64(ps.lastAcked)+1 >= uint64(oldest) {
		return 0
	}
	// Frames before the log's first frame never existed: not owed.
	from := max(uint64(ps.lastAcked)+1, uint64(l.first))
	var n uint64
	if from < uint64(oldest) {
		n = uint64(oldest) - from
		ps.st.AgedOut += n
		ps.needsResync = true
	}
	ps.moveBaseline(oldest - 1)
	ps.advance()
	return n
}

// Forfeit gives up the oldest frame owed to p — one whose in-scope records
// do not fit the largest budget the caller can send (PackForPeer returned
// ErrFrameTooLarge at that budget) — so the stream can move on: the frame
// is counted (Forfeited) and p flagged NeedsResync. It returns the frame
// forfeited; ok is false when nothing is owed. Errors: ErrNotPeer,
// ErrUnknownPeer.
func (r *Replicator) Forfeit(p Sender) (frame uint32, ok bool, err error) {
	ps, err := r.peer(p)
	if err != nil {
		return 0, false, err
	}
	r.ageOut(ps)
	newest, held := r.log.Newest()
	if !held || ps.lastAcked >= newest {
		return 0, false, nil
	}
	f := ps.lastAcked + 1
	ps.moveBaseline(f)
	ps.advance()
	ps.st.Forfeited++
	ps.needsResync = true
	return f, true, nil
}

// PackForPeer appends to dst one action slice for peer p holding the
// frames [start, through'] oldest first, where start = max(baseline+1,
// the ring's oldest frame) and through' ≤ through is the last frame that
// fits whole in budget bytes (the slice's whole encoding, header included);
// through is also capped at the newest closed frame. It returns the Pack
// (Pack.Through = through', S-H1) and dst extended by the slice. Nothing
// owed (start > through, or an empty log): a zero Pack and dst unchanged.
//
// A frame's records are p's in-scope records in log order — every record
// except p's own inputs (the owner rule) and those the ScopeFilter rejects.
// A frame with none is covered at no cost. Frames that aged out of the ring
// while owed are accounted first (AgeOut).
//
// The pack does not register anything in flight: after the slice has been
// handed to the channel, call Sent, and route the channel's verdict for
// Pack.Tag to OnRecord.
//
// Errors: ErrNotPeer, ErrUnknownPeer; ErrSmallBudget for a budget below
// the largest slice header; ErrFrameTooLarge when the first owed frame
// alone exceeds budget (retry with a larger budget — a fragmented record —
// or Forfeit it). Cost: one visit per frame in range (at most the ring),
// one ScopeFilter call per record, and one copy per run of in-scope
// records: the first pack of a closed frame, for any peer, encodes its
// records once into the replicator's buffers (which grow to the largest
// frame the ring held, then allocate no more), and every later pack of it
// copies those bytes. No allocation when dst has room and the buffers
// have grown.
func (r *Replicator) PackForPeer(p Sender, through uint32, dst []byte, budget int) (Pack, []byte, error) {
	ps, err := r.peer(p)
	if err != nil {
		return Pack{}, dst, err
	}
	r.ageOut(ps)
	return r.pack(p, ps, uint64(ps.lastAcked)+1, through, dst, budget)
}

// PackNext packs for peer p a further slice of this tick, after prev (p's
// previous pack of the tick): from the oldest frame of an abandoned record
// not sent again yet, else from the first frame after both prev and every
// frame already sent (Sent) — frames the peer has never been sent — up to
// through'. It pipelines a stream larger than one budget: PackForPeer
// re-sends from the baseline every tick, which repairs a loss within a
// tick but brings only one budget of new frames per round trip; the
// slices PackNext adds carry new frames every tick. Confirmed ahead of a
// gap, a slice credits the baseline once the gap is confirmed (the first
// slice of each tick re-sends from the baseline, so it closes). A zero
// prev packs like PackForPeer. Errors as PackForPeer.
func (r *Replicator) PackNext(p Sender, prev Pack, through uint32, dst []byte, budget int) (Pack, []byte, error) {
	if prev.Frames == 0 {
		return r.PackForPeer(p, through, dst, budget)
	}
	ps, err := r.peer(p)
	if err != nil {
		return Pack{}, dst, err
	}
	r.ageOut(ps)
	from := max(uint64(prev.Through), uint64(ps.sent), uint64(ps.lastAcked)) + 1
	if f, ok := ps.nextLost(prev.Through); ok && uint64(f) < from {
		from = uint64(f) // a lost slice's frames first
	}
	return r.pack(p, ps, from, through, dst, budget)
}

// sliceHeaderMax is the largest action-slice header (wire §8.1): the
// smallest budget a pack accepts.
const sliceHeaderMax = 8

func (r *Replicator) pack(p Sender, ps *replPeer, from uint64, through uint32, dst []byte, budget int) (Pack, []byte, error) {
	if budget < sliceHeaderMax {
		return Pack{}, dst, ErrSmallBudget
	}
	l := r.log
	oldest, ok := l.Oldest()
	if !ok {
		return Pack{}, dst, nil
	}
	// Only closed frames are stable: not the open frame, and not frames a
	// rewind has undone and a replay not yet redone.
	newest, _ := l.Newest()
	if f, open := l.OpenFrame(); open {
		if f == 0 {
			return Pack{}, dst, nil
		}
		newest = min(newest, f-1)
	}
	if f, rep := l.Replaying(); rep {
		if f == 0 {
			return Pack{}, dst, nil
		}
		newest = min(newest, f-1)
	}
	through = min(through, newest)
	from = max(from, uint64(oldest))
	if from > uint64(through) {
		return Pack{}, dst, nil
	}
	first := uint32(from)
	want := through
	through = uint32(min(uint64(through), from+wire.MaxSliceFrames-1))

	filter := r.filter
	w := &r.w
	w.Reset(dst, first)
	var (
		packed            = int64(first) - 1
		lastEntry         = int64(first) - 1
		entries, nrecs    int
		walked, own, filt uint64
	)
	for f := first; ; f++ {
		walked++
		v, err := l.Frame(f)
		if err != nil { // cannot happen for first..through ⊆ [oldest, newest]
			return Pack{}, dst, err
		}
		code, err := r.encoded(v)
		if err != nil {
			return Pack{}, dst, err
		}
		runs, cnt, size := r.runs[:0], 0, 0
		for i, sender := range v.s.sender {
			if sender == p {
				own++
				continue
			}
			if filter != nil && !filter.Relevant(p, v.Record(i)) {
				filt++
				continue
			}
			var from uint32
			if i > 0 {
				from = code.ends[i-1]
			}
			to := code.ends[i]
			// Every record encodes to 4 bytes or more, so a run that ends
			// where this record starts ended with the record before it.
			if k := len(runs) - 1; k >= 0 && runs[k].to == from {
				runs[k].to, runs[k].n = to, runs[k].n+1
			} else {
				runs = append(runs, recordRun{from: from, to: to, n: 1})
			}
			cnt++
			size += int(to - from)
		}
		r.runs = runs
		if cnt > 0 {
			// The entry: gap varint, record count, records (wire §8.2).
			need := wire.UvarintLen(uint64(int64(f)-lastEntry-1)) + wire.UvarintLen(uint64(cnt)) + size
			if w.Len()+need > budget {
				break // frame f does not fit whole
			}
			if err := w.BeginFrame(f); err != nil {
				return Pack{}, dst, err
			}
			for _, run := range runs {
				if err := w.AppendEncodedRecords(code.enc[run.from:run.to], run.n); err != nil {
					return Pack{}, dst, err
				}
			}
			entries++
			lastEntry = int64(f)
		}
		nrecs += cnt
		packed = int64(f)
		if f == through {
			break
		}
	}
	ps.st.FramesWalked += walked
	ps.st.OwnSkipped += own
	ps.st.Filtered += filt
	if packed < int64(first) {
		ps.st.TooLarge++
		r.w = wire.ActionSliceWriter{}
		return Pack{}, dst, ErrFrameTooLarge
	}
	out, err := w.Finish(uint32(packed))
	if err != nil {
		return Pack{}, dst, err
	}
	pk := Pack{
		Peer: p, First: first, Through: uint32(packed),
		Frames: int(packed-int64(first)) + 1, Entries: entries, Records: nrecs,
		Bytes: len(out) - len(dst), Short: packed < int64(want),
		Tag: makeTag(ps.epoch, first, uint32(packed)),
	}
	ps.st.Packs++
	ps.st.FramesPacked += uint64(pk.Frames)
	ps.st.RecordsPacked += uint64(nrecs)
	ps.st.BytesPacked += uint64(pk.Bytes)
	return pk, out, nil
}

// encoded returns closed frame v's records encoded, building them on the
// first pack of the frame since its slot was last written: a closed frame
// gains no records, and discarding them advances the slot's epoch. A
// payload over wire.MaxActionPayloadLen returns wire.ErrTooLarge.
func (r *Replicator) encoded(v FrameView) (*frameCode, error) {
	c := &r.codes[v.num%uint32(len(r.codes))]
	if c.epoch == v.epoch && len(c.ends) == v.Len() {
		return c, nil
	}
	c.epoch, c.enc, c.ends = 0, c.enc[:0], c.ends[:0]
	for i := range v.Len() {
		rec := v.Record(i)
		if len(rec.Payload) > wire.MaxActionPayloadLen {
			return nil, wire.ErrTooLarge
		}
		c.enc = wire.AppendActionRecord(c.enc, wire.ActionRecord{Sender: uint8(rec.Sender), Type: uint16(rec.Type), Entity: uint64(rec.Entity), Payload: rec.Payload})
		c.ends = append(c.ends, uint32(len(c.enc)))
	}
	c.epoch = v.epoch
	return c, nil
}

// Sent registers pk's record as in flight (PendingAckCount) once the caller
// has handed it to the channel (Channel.SendRecord(pk.Tag, slice)
// succeeded). A pack that was not sent needs nothing. Unknown peers and
// empty packs are ignored.
func (r *Replicator) Sent(pk Pack) {
	if pk.Frames == 0 || !r.Active(pk.Peer) {
		return
	}
	ps := &r.peers[pk.Peer]
	ps.pending++
	ps.st.Sent++
	if e, _, _ := splitTag(pk.Tag); e == ps.epoch {
		ps.sent = max(ps.sent, pk.Through)
		for f := max(pk.First, ps.lastAcked+1); f <= pk.Through && f > ps.lastAcked; f++ {
			ps.set(ps.lost, f, false) // sent again
		}
	}
}

// nextLost returns the oldest frame after both after and the baseline that
// an abandoned record carried and no record has carried since.
func (ps *replPeer) nextLost(after uint32) (uint32, bool) {
	for f := max(after, ps.lastAcked) + 1; f <= ps.sent && f != 0; f++ {
		if ps.get(ps.lost, f) {
			return f, true
		}
	}
	return 0, false
}

// OnRecord takes the channel's verdict on a record sent for peer p with
// tag (Handler.OnRecord). Confirmed — every datagram of it acked, so the
// peer received the whole slice — its frames count as delivered and the
// baseline moves over the delivered run that follows it: to the pack's
// last frame when every frame before the pack's first was delivered
// already, otherwise not yet (the frames wait, marked, for the gap to
// close); never backwards, and only for the current epoch (a record from
// before Resync counts as Stale). Abandoned (confirmed false), nothing is
// credited: the frames stay owed, and those not delivered yet are marked
// for PackNext to pack again first (S-H2). Either way the record leaves
// PendingAckCount. Verdicts for an unknown peer are ignored. Cost:
// proportional to the pack's frames.
func (r *Replicator) OnRecord(p Sender, tag uint64, confirmed bool) {
	if !r.Active(p) {
		return
	}
	ps := &r.peers[p]
	if ps.pending > 0 {
		ps.pending--
	}
	epoch, first, through := splitTag(tag)
	if confirmed {
		ps.st.Confirmed++
	} else {
		ps.st.Abandoned++
	}
	if epoch != ps.epoch {
		if confirmed {
			ps.st.Stale++
		}
		return
	}
	r.ageOut(ps)
	newest, _ := r.log.Newest()
	// Every frame after the baseline is within one ring of it; a tag
	// naming more (not one of ours) is cut there.
	through = min(through, newest, ps.lastAcked+uint32(len(ps.acked)*64))
	for f := max(first, ps.lastAcked+1); f <= through && f > ps.lastAcked; f++ {
		if confirmed {
			ps.set(ps.acked, f, true)
			ps.set(ps.lost, f, false)
		} else if !ps.get(ps.acked, f) {
			ps.set(ps.lost, f, true)
		}
	}
	if confirmed {
		ps.advance()
	}
}
