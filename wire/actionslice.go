package wire

// ActionSlice is a validated action slice: the header plus its frame
// entries, each a gap varint (frames skipped since the previous entry, or
// since FirstFrame for the first), a record count varint (≥ 1) and that
// many ActionRecords. Entry frames strictly increase and stay within the
// covered span. docs/WIRE.md has the byte layout.
//
// An ActionSlice comes from ParseActionSlice (or ActionStreamFrame.ParseSlice)
// and aliases the input it was parsed from; reading it with Iter allocates
// nothing and cannot fail. The zero ActionSlice has no entries.
type ActionSlice struct {
	ActionSliceHeader
	body []byte // the entries, already validated
}

// ParseActionSlice validates a whole action slice at the front of b —
// header, every frame entry and every record — and returns it with the
// bytes consumed. Validating before returning makes applying a slice
// all-or-nothing: a receiver never acts on the first frames of a slice
// whose tail is corrupt. Errors are those of ParseActionSliceHeader and
// ParseActionRecord, plus ErrMalformed for an entry frame outside the
// covered span or not after the previous entry, or a record count of 0,
// and ErrTooLarge for a record count above MaxFrameRecords. The work is
// linear in the bytes consumed, and it never allocates.
func ParseActionSlice(b []byte) (ActionSlice, int, error) {
	h, off, err := ParseActionSliceHeader(b)
	if err != nil {
		return ActionSlice{}, 0, err
	}
	bodyStart := off
	next := uint64(0) // lowest frame offset (from FirstFrame) the next entry may use
	for e := 0; e < h.Entries; e++ {
		gap, k, err := Uvarint(b[off:])
		if err != nil {
			return ActionSlice{}, 0, err
		}
		if gap >= uint64(h.Frames)-next {
			return ActionSlice{}, 0, ErrMalformed
		}
		next += gap + 1
		off += k
		count, k, err := uvarintMax(b[off:], MaxFrameRecords)
		if err != nil {
			return ActionSlice{}, 0, err
		}
		if count == 0 {
			return ActionSlice{}, 0, ErrMalformed
		}
		off += k
		for ; count > 0; count-- {
			_, k, err := ParseActionRecord(b[off:])
			if err != nil {
				return ActionSlice{}, 0, err
			}
			off += k
		}
	}
	return ActionSlice{ActionSliceHeader: h, body: b[bodyStart:off:off]}, off, nil
}

// Iter returns an iterator over the slice's frame entries and records:
//
//	it := s.Iter()
//	for frame, n, ok := it.NextFrame(); ok; frame, n, ok = it.NextFrame() {
//		for r, ok := it.NextRecord(); ok; r, ok = it.NextRecord() {
//			apply(frame, r) // r.Payload aliases the slice's input
//		}
//	}
//
// Frames of the covered span without an entry are not visited. The
// iterator is a small value; it allocates nothing.
func (s ActionSlice) Iter() ActionSliceIter {
	return ActionSliceIter{b: s.body, next: uint64(s.FirstFrame), entries: s.Entries}
}

// ActionSliceIter walks the frame entries of an ActionSlice in order. Get
// one from ActionSlice.Iter. It is not safe for concurrent use.
type ActionSliceIter struct {
	b       []byte
	next    uint64 // frame number the next gap counts from
	entries int    // entries not yet started
	records int    // records left in the current entry
}

// NextFrame advances to the next frame entry, skipping any records of the
// current one not yet read, and returns its frame number and record count
// (≥ 1). ok is false when no entries are left.
func (it *ActionSliceIter) NextFrame() (frame uint32, records int, ok bool) {
	for it.records > 0 {
		if _, ok := it.NextRecord(); !ok {
			return 0, 0, false
		}
	}
	if it.entries <= 0 {
		return 0, 0, false
	}
	gap, k, err := Uvarint(it.b)
	if err != nil {
		it.stop()
		return 0, 0, false
	}
	count, m, err := Uvarint(it.b[k:])
	if err != nil || count == 0 || count > MaxFrameRecords {
		it.stop()
		return 0, 0, false
	}
	f := it.next + gap
	it.next = f + 1
	it.b = it.b[k+m:]
	it.entries--
	it.records = int(count)
	return uint32(f), int(count), true
}

// NextRecord returns the next record of the current frame entry; ok is
// false when the entry has no records left. The record's payload aliases
// the slice's input.
func (it *ActionSliceIter) NextRecord() (r ActionRecord, ok bool) {
	if it.records <= 0 {
		return ActionRecord{}, false
	}
	r, n, err := ParseActionRecord(it.b)
	if err != nil {
		it.stop()
		return ActionRecord{}, false
	}
	it.b = it.b[n:]
	it.records--
	return r, true
}

// stop ends the iteration; reached only for an ActionSlice that did not
// come from ParseActionSlice.
func (it *ActionSliceIter) stop() { *it = ActionSliceIter{} }

// ActionSliceWriter builds an action slice incrementally in a caller-owned
// buffer, the way a replicator packs it: frame by frame, oldest first,
// record by record, checking a byte budget as it goes and dropping a frame
// that does not fit whole.
//
//	w := wire.NewActionSliceWriter(buf[:0], start)
//	for f := start; f <= end; f++ {
//		w.BeginFrame(f)
//		for _, r := range recordsFor(f) {
//			if w.Len()+wire.ActionRecordLen(r) > budget {
//				w.CancelFrame() // frame f does not fit whole: stop before it
//				...
//			}
//			w.AppendRecord(r)
//		}
//	}
//	buf, err = w.Finish(packedThrough)
//
// The writer reserves the header's largest size up front and moves the
// body down by at most two bytes in Finish, so the finished slice is
// canonical (what ParseActionSlice accepts) without the caller knowing the
// counts in advance. It appends to dst's spare capacity and allocates only
// when that runs out; it keeps dst until Finish and must not be copied
// while in use. The zero ActionSliceWriter is not ready: its methods return
// ErrMalformed until Reset.
type ActionSliceWriter struct {
	ready   bool // Reset was called and Finish has not yet succeeded
	buf     []byte
	start   int    // offset of the slice in buf
	first   uint32 // FirstFrame
	last    uint32 // frame of the last committed entry (valid when entries > 0)
	entries int

	open       bool   // a frame entry is being written
	frame      uint32 // its frame number
	entryStart int    // offset of its gap varint
	countPos   int    // offset of its one-byte record count placeholder
	records    int    // records appended to it
}

// NewActionSliceWriter returns a writer that appends a slice starting at
// frame first after the bytes already in dst.
func NewActionSliceWriter(dst []byte, first uint32) ActionSliceWriter {
	var w ActionSliceWriter
	w.Reset(dst, first)
	return w
}

// Reset discards any slice in progress and starts a new one, starting at
// frame first, appended after the bytes already in dst.
func (w *ActionSliceWriter) Reset(dst []byte, first uint32) {
	*w = ActionSliceWriter{ready: true, start: len(dst), first: first}
	w.buf = append(dst, make([]byte, actionSliceHeaderMax)...)
}

// BeginFrame ends the current frame entry, if any (dropping it when it got
// no records), and starts an entry for frame. Frames must be begun in
// strictly increasing order from the writer's first frame, within
// MaxSliceFrames of it: an earlier frame returns ErrMalformed and one
// beyond the span cap ErrTooLarge, with no entry begun (the previous one is
// still ended).
func (w *ActionSliceWriter) BeginFrame(frame uint32) error {
	w.endFrame()
	switch {
	case !w.ready, frame < w.first, w.entries > 0 && frame <= w.last:
		return ErrMalformed
	case frame-w.first >= MaxSliceFrames:
		return ErrTooLarge
	}
	gap := frame - w.first
	if w.entries > 0 {
		gap = frame - w.last - 1
	}
	w.open, w.frame, w.records = true, frame, 0
	w.entryStart = len(w.buf)
	w.buf = AppendUvarint(w.buf, uint64(gap))
	w.countPos = len(w.buf)
	w.buf = append(w.buf, 0)
	return nil
}

// AppendRecord appends r to the current frame entry, copying its payload.
// Without a frame begun it returns ErrMalformed; a payload longer than
// MaxActionPayloadLen, or a record beyond MaxFrameRecords in one frame,
// returns ErrTooLarge and writes nothing.
func (w *ActionSliceWriter) AppendRecord(r ActionRecord) error {
	switch {
	case !w.ready || !w.open:
		return ErrMalformed
	case len(r.Payload) > MaxActionPayloadLen, w.records >= MaxFrameRecords:
		return ErrTooLarge
	}
	w.buf = AppendActionRecord(w.buf, r)
	w.records++
	return nil
}

// AppendEncodedRecords appends n records that enc already holds, each
// encoded by AppendActionRecord, to the current frame entry: the copy a
// sender makes when it encodes a frame's records once and sends them to
// several peers. enc is copied, not parsed; the caller vouches that it is
// exactly n well-formed records, each payload ≤ MaxActionPayloadLen.
// Without a frame begun it returns ErrMalformed, and ErrTooLarge (writing
// nothing) when the entry would exceed MaxFrameRecords.
func (w *ActionSliceWriter) AppendEncodedRecords(enc []byte, n int) error {
	switch {
	case !w.ready || !w.open:
		return ErrMalformed
	case n < 0 || w.records+n > MaxFrameRecords:
		return ErrTooLarge
	}
	w.buf = append(w.buf, enc...)
	w.records += n
	return nil
}

// CancelFrame drops the current frame entry and every record appended to
// it since BeginFrame, as if the frame had not been begun. Without a frame
// begun it does nothing. The current frame stays open until the next
// BeginFrame or Finish, so calling CancelFrame after a frame's last record
// fitted, but before beginning the next, drops that completed frame: cancel
// only the frame whose record did not fit.
func (w *ActionSliceWriter) CancelFrame() {
	if w.open {
		w.buf = w.buf[:w.entryStart]
		w.open = false
	}
}

// Len returns an upper bound on the size of the slice Finish would produce
// now: the header is counted at its largest (Finish may save up to 2
// bytes), and an open frame's entry is counted even if it ends empty. So
// `w.Len() + ActionRecordLen(r) <= budget` is a safe budget check. It is 0
// for a writer that is not ready.
func (w *ActionSliceWriter) Len() int {
	if !w.ready {
		return 0
	}
	n := len(w.buf) - w.start
	if w.open && w.records > 0x7F {
		n += UvarintLen(uint64(w.records)) - 1
	}
	return n
}

// endFrame commits the open frame entry: dropped when empty, otherwise its
// record count is written over the placeholder (moving the records up when
// the count needs more than one byte).
func (w *ActionSliceWriter) endFrame() {
	if !w.open {
		return
	}
	w.open = false
	if w.records == 0 {
		w.buf = w.buf[:w.entryStart]
		return
	}
	if w.records <= 0x7F {
		w.buf[w.countPos] = byte(w.records)
	} else {
		var tmp [MaxVarintLen]byte
		cnt := AppendUvarint(tmp[:0], uint64(w.records))
		end := len(w.buf)
		w.buf = append(w.buf, tmp[:len(cnt)-1]...) // grow by the extra bytes
		copy(w.buf[w.countPos+len(cnt):], w.buf[w.countPos+1:end])
		copy(w.buf[w.countPos:], cnt)
	}
	w.entries++
	w.last = w.frame
}

// Finish ends the current frame entry, writes the header for a slice
// covering frames first..last, and returns dst extended by the finished
// slice. last may be beyond the last frame with records (the frames in
// between are covered and empty). A last before the writer's first frame or
// before its last entry returns ErrMalformed, a span above MaxSliceFrames
// ErrTooLarge; after an error the writer is still usable and Finish may be
// called again. After success the writer is not ready until Reset.
func (w *ActionSliceWriter) Finish(last uint32) ([]byte, error) {
	w.endFrame()
	switch {
	case !w.ready, last < w.first, w.entries > 0 && last < w.last:
		return nil, ErrMalformed
	case last-w.first >= MaxSliceFrames:
		return nil, ErrTooLarge
	}
	var tmp [actionSliceHeaderMax]byte
	h := AppendActionSliceHeader(tmp[:0], ActionSliceHeader{
		FirstFrame: w.first,
		Frames:     int(last-w.first) + 1,
		Entries:    w.entries,
	})
	copy(w.buf[w.start:], h)
	if d := actionSliceHeaderMax - len(h); d > 0 {
		copy(w.buf[w.start+len(h):], w.buf[w.start+actionSliceHeaderMax:])
		w.buf = w.buf[:len(w.buf)-d]
	}
	out := w.buf
	*w = ActionSliceWriter{}
	return out, nil
}
