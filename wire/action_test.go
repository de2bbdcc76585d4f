package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

var (
	actionRecordCodec = codec[ActionRecord]{
		app: AppendActionRecord, parse: ParseActionRecord, size: ActionRecordLen,
	}
	actionSliceHeaderCodec = codec[ActionSliceHeader]{
		app: AppendActionSliceHeader, parse: ParseActionSliceHeader, size: ActionSliceHeaderLen,
	}
	actionStreamCodec = codec[ActionStreamFrame]{
		app: AppendActionStreamFrame, parse: ParseActionStreamFrame, size: ActionStreamFrameLen,
	}
)

func randActionRecord(r *rand.Rand) ActionRecord {
	return ActionRecord{
		Sender:  uint8(r.Uint32()),
		Type:    uint16(randUint64(r)),
		Entity:  randUint64(r),
		Payload: randPayload(r, 256),
	}
}

func actionRecordSamples() []ActionRecord {
	s := []ActionRecord{
		{Payload: []byte{}},
		{Sender: 3, Type: 12, Entity: 0x0000000100000007, Payload: []byte{0x10, 0x00}},
		{Sender: SenderDerived, Type: 65535, Entity: ^uint64(0), Payload: make([]byte, 300)},
		{Sender: SenderLocal, Type: 128, Entity: 127, Payload: []byte{1}},
	}
	r := testRand(20)
	for i := 0; i < 8; i++ {
		s = append(s, randActionRecord(r))
	}
	return s
}

func TestActionRecord(t *testing.T) {
	for _, a := range actionRecordSamples() {
		actionRecordCodec.roundTrip(t, a)
	}
	r := testRand(21)
	for i := 0; i < 20000; i++ {
		actionRecordCodec.roundTrip(t, randActionRecord(r))
	}
	// All 256 sender values are legal.
	for s := 0; s < 256; s++ {
		actionRecordCodec.roundTrip(t, ActionRecord{Sender: uint8(s), Payload: []byte{}})
	}
	// Maximum payload.
	actionRecordCodec.roundTrip(t, ActionRecord{Payload: make([]byte, MaxActionPayloadLen)})
	if n := ActionRecordLen(ActionRecord{}); n != 4 {
		t.Fatalf("smallest record is %d bytes", n)
	}
	if got := hexs(AppendActionRecord(nil, ActionRecord{Sender: 2, Type: 300, Entity: 5, Payload: []byte{0xAA}})); got != "02 ac 02 05 01 aa" {
		t.Fatalf("encoding %s", got)
	}
}

func TestActionRecordErrors(t *testing.T) {
	typ := AppendUvarint([]byte{0}, 65536) // type just over uint16
	mustErr(t, "ParseActionRecord", ParseActionRecord, append(typ, 0, 0), ErrTooLarge)
	big := AppendUvarint([]byte{0, 1, 1}, MaxActionPayloadLen+1)
	mustErr(t, "ParseActionRecord", ParseActionRecord, append(big, make([]byte, MaxActionPayloadLen+1)...), ErrTooLarge)
	mustErr(t, "ParseActionRecord", ParseActionRecord, []byte{0, 1, 1, 2, 0}, ErrShort)
	mustErr(t, "ParseActionRecord", ParseActionRecord, []byte{0, 0x81, 0x00, 1, 0}, ErrMalformed)
	mustErr(t, "ParseActionRecord", ParseActionRecord, []byte{0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0}, ErrOverflow)
}

func TestActionSliceHeader(t *testing.T) {
	for _, h := range []ActionSliceHeader{
		{FirstFrame: 0, Frames: 1, Entries: 0},
		{FirstFrame: 1000, Frames: 64, Entries: 64},
		{FirstFrame: 0xFFFFFFFF, Frames: 1, Entries: 1},
		{FirstFrame: 0xFFFFFFFF - MaxSliceFrames + 1, Frames: MaxSliceFrames, Entries: 200},
	} {
		actionSliceHeaderCodec.roundTrip(t, h)
		if n := ActionSliceHeaderLen(h); n > actionSliceHeaderMax {
			t.Fatalf("%+v: %d bytes > reserved %d", h, n, actionSliceHeaderMax)
		}
	}
	r := testRand(26)
	for i := 0; i < 5000; i++ {
		h := ActionSliceHeader{Frames: 1 + r.IntN(MaxSliceFrames)}
		h.FirstFrame = uint32(r.Uint64N(uint64(1)<<32 - uint64(h.Frames) + 1))
		h.Entries = r.IntN(h.Frames + 1)
		actionSliceHeaderCodec.roundTrip(t, h)
	}
	if (ActionSliceHeader{FirstFrame: 10, Frames: 5}).LastFrame() != 14 {
		t.Fatal("LastFrame")
	}
	for _, c := range []struct {
		h    ActionSliceHeader
		want error
	}{
		{ActionSliceHeader{Frames: 0}, ErrMalformed},
		{ActionSliceHeader{Frames: MaxSliceFrames + 1}, ErrTooLarge},
		{ActionSliceHeader{Frames: 3, Entries: 4}, ErrMalformed},
		{ActionSliceHeader{FirstFrame: 0xFFFFFFFF, Frames: 2}, ErrMalformed}, // runs past 2^32−1
	} {
		mustErr(t, "ParseActionSliceHeader", ParseActionSliceHeader, AppendActionSliceHeader(nil, c.h), c.want)
	}
}

// sliceModel is the plain-data view of an action slice the tests compare.
type sliceModel struct {
	First   uint32
	Frames  int
	Entries []entryModel
}

type entryModel struct {
	Frame   uint32
	Records []ActionRecord
}

// refEncodeSlice is the literal reading of docs/WIRE.md, the oracle for
// ActionSliceWriter.
func refEncodeSlice(dst []byte, m sliceModel) []byte {
	dst = AppendUint32(dst, m.First)
	dst = AppendUvarint(dst, uint64(m.Frames))
	dst = AppendUvarint(dst, uint64(len(m.Entries)))
	prev := int64(m.First) - 1
	for _, e := range m.Entries {
		dst = AppendUvarint(dst, uint64(int64(e.Frame)-prev-1))
		dst = AppendUvarint(dst, uint64(len(e.Records)))
		for _, r := range e.Records {
			dst = AppendActionRecord(dst, r)
		}
		prev = int64(e.Frame)
	}
	return dst
}

// writeSlice encodes m with ActionSliceWriter, the straightforward way.
func writeSlice(dst []byte, m sliceModel) []byte {
	w := NewActionSliceWriter(dst, m.First)
	for _, e := range m.Entries {
		if err := w.BeginFrame(e.Frame); err != nil {
			panic(err)
		}
		for _, r := range e.Records {
			if err := w.AppendRecord(r); err != nil {
				panic(err)
			}
		}
	}
	out, err := w.Finish(m.First + uint32(m.Frames) - 1)
	if err != nil {
		panic(err)
	}
	return out
}

// decodeSlice parses and walks a slice into its model.
func decodeSlice(b []byte) (sliceModel, int, error) {
	s, n, err := ParseActionSlice(b)
	if err != nil {
		return sliceModel{}, 0, err
	}
	m := sliceModel{First: s.FirstFrame, Frames: s.Frames}
	it := s.Iter()
	for f, cnt, ok := it.NextFrame(); ok; f, cnt, ok = it.NextFrame() {
		e := entryModel{Frame: f}
		for r, ok := it.NextRecord(); ok; r, ok = it.NextRecord() {
			e.Records = append(e.Records, r)
		}
		if len(e.Records) != cnt {
			panic("record count mismatch in a validated slice")
		}
		m.Entries = append(m.Entries, e)
	}
	if len(m.Entries) != s.Entries {
		panic("entry count mismatch in a validated slice")
	}
	return m, n, nil
}

var actionSliceCodec = codec[sliceModel]{app: writeSlice, parse: decodeSlice}

func randSliceModel(r *rand.Rand) sliceModel {
	m := sliceModel{First: r.Uint32()}
	switch r.IntN(4) {
	case 0:
		m.Frames = 1 + r.IntN(4)
	case 1:
		m.Frames = []int{64, 127, 128, 129, MaxSliceFrames}[r.IntN(5)]
	default:
		m.Frames = 1 + r.IntN(80)
	}
	if r.IntN(5) == 0 {
		m.First = 0xFFFFFFFF - uint32(m.Frames) + 1 // ends exactly at the top
	} else if uint64(m.First)+uint64(m.Frames) > 1<<32 {
		m.First = 0
	}
	for off := 0; off < m.Frames; off++ {
		if r.IntN(3) != 0 && len(m.Entries) < 12 {
			continue
		}
		e := entryModel{Frame: m.First + uint32(off)}
		n := 1 + r.IntN(3)
		if r.IntN(40) == 0 {
			n = 128 + r.IntN(4) // two-byte record count, small records
			for i := 0; i < n; i++ {
				e.Records = append(e.Records, ActionRecord{Sender: uint8(i), Type: uint16(i), Entity: uint64(i), Payload: []byte{byte(i)}})
			}
		}
		for len(e.Records) < n {
			e.Records = append(e.Records, randActionRecord(r))
		}
		m.Entries = append(m.Entries, e)
		if len(m.Entries) >= 12 {
			break
		}
	}
	return m
}

func actionSliceSamples() []sliceModel {
	s := []sliceModel{
		{First: 0, Frames: 1},
		{First: 500, Frames: 3, Entries: []entryModel{
			{Frame: 500, Records: []ActionRecord{{Sender: 1, Type: 4, Entity: 9, Payload: []byte{0x01, 0x02}}}},
			{Frame: 502, Records: []ActionRecord{{Sender: SenderDerived, Type: 7, Entity: 0x0100000002, Payload: []byte{}}}},
		}},
		{First: 0xFFFFFFFF, Frames: 1, Entries: []entryModel{{Frame: 0xFFFFFFFF, Records: []ActionRecord{{Payload: []byte{}}}}}},
	}
	r := testRand(22)
	for i := 0; i < 8; i++ {
		s = append(s, randSliceModel(r))
	}
	return s
}

func TestActionSliceRoundTrip(t *testing.T) {
	for _, m := range actionSliceSamples() {
		enc := actionSliceCodec.roundTrip(t, m)
		if ref := refEncodeSlice(nil, m); string(ref) != string(enc) {
			t.Fatalf("writer % x\nreference % x", enc, ref)
		}
	}
	r := testRand(23)
	for i := 0; i < 1500; i++ {
		m := randSliceModel(r)
		enc := actionSliceCodec.roundTrip(t, m)
		if ref := refEncodeSlice(nil, m); string(ref) != string(enc) {
			t.Fatalf("writer % x\nreference % x", enc, ref)
		}
		// The same slice written the way a budgeted replicator writes it:
		// every frame begun, empty ones dropped, a cancelled frame in the
		// middle.
		if got := writeSliceNoisy(r, m); string(got) != string(enc) {
			t.Fatalf("noisy writer % x\nwant % x", got, enc)
		}
	}
}

// writeSliceNoisy writes m through ActionSliceWriter with empty frames begun
// and abandoned, frames cancelled after records, and budget checks, which
// must not change the result.
func writeSliceNoisy(r *rand.Rand, m sliceModel) []byte {
	w := NewActionSliceWriter(make([]byte, 3, 8), m.First)
	next := 0
	for off := 0; off < m.Frames; off++ {
		f := m.First + uint32(off)
		if r.IntN(4) == 0 {
			_ = w.BeginFrame(f)
			_ = w.AppendRecord(randActionRecord(r))
			w.CancelFrame()
		}
		if next < len(m.Entries) && m.Entries[next].Frame == f {
			before := w.Len()
			_ = w.BeginFrame(f)
			for _, rec := range m.Entries[next].Records {
				_ = w.AppendRecord(rec)
			}
			if w.Len() < before {
				panic("Len shrank")
			}
			next++
		} else if r.IntN(2) == 0 && off < 200 {
			_ = w.BeginFrame(f) // left empty: dropped
		}
	}
	upper := w.Len()
	out, err := w.Finish(m.First + uint32(m.Frames) - 1)
	if err != nil {
		panic(err)
	}
	if len(out)-3 > upper {
		panic("Len was not an upper bound")
	}
	return out[3:]
}

// TestActionSliceExample pins the worked example in docs/WIRE.md.
func TestActionSliceExample(t *testing.T) {
	m := actionSliceSamples()[1]
	enc := actionSliceCodec.roundTrip(t, m)
	want := "f4 01 00 00 03 02 00 01 01 04 09 02 01 02 01 01 fe 07 82 80 80 80 10 00"
	if got := hexs(enc); got != want {
		t.Fatalf("slice %s\nwant  %s", got, want)
	}
	frame := AppendActionStreamFrame(nil, ActionStreamFrame{Payload: enc})
	if got := hexs(frame[:2]); got != "05 18" {
		t.Fatalf("frame header %s", got)
	}
}

func TestActionSliceErrors(t *testing.T) {
	rec := AppendActionRecord(nil, ActionRecord{Payload: []byte{}})
	hdr := func(first uint32, frames, entries int) []byte {
		return AppendActionSliceHeader(nil, ActionSliceHeader{FirstFrame: first, Frames: frames, Entries: entries})
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"gap past span", cat(hdr(10, 2, 1), []byte{2, 1}, rec), ErrMalformed},
		{"second entry past span", cat(hdr(10, 2, 2), []byte{0, 1}, rec, []byte{1, 1}, rec), ErrMalformed},
		{"zero records", cat(hdr(10, 2, 1), []byte{0, 0}), ErrMalformed},
		{"too many records", cat(hdr(10, 2, 1), []byte{0}, AppendUvarint(nil, MaxFrameRecords+1)), ErrTooLarge},
		{"missing entry", cat(hdr(10, 2, 2), []byte{0, 1}, rec), ErrShort},
		{"missing record", cat(hdr(10, 2, 1), []byte{0, 2}, rec), ErrShort},
		{"huge gap", cat(hdr(10, 2, 1), AppendUvarint(nil, 1<<63), []byte{1}, rec), ErrMalformed},
		{"bad gap varint", cat(hdr(10, 2, 1), []byte{0x80, 0x00, 1}, rec), ErrMalformed},
	}
	for _, c := range cases {
		_, n, err := ParseActionSlice(c.in)
		if err != c.want || n != 0 {
			t.Errorf("%s: n=%d err=%v, want %v", c.name, n, err, c.want)
		}
	}
	// A huge declared record count with little input fails fast, not after
	// MaxFrameRecords iterations of work.
	if _, _, err := ParseActionSlice(cat(hdr(0, 1, 1), []byte{0}, AppendUvarint(nil, MaxFrameRecords))); err != ErrShort {
		t.Fatalf("short body: %v", err)
	}
}

func TestActionSliceWriterErrors(t *testing.T) {
	var zero ActionSliceWriter
	if zero.BeginFrame(0) != ErrMalformed || zero.AppendRecord(ActionRecord{}) != ErrMalformed || zero.Len() != 0 {
		t.Fatal("zero writer is usable")
	}
	if _, err := zero.Finish(0); err != ErrMalformed {
		t.Fatal("zero writer finished")
	}
	w := NewActionSliceWriter(nil, 100)
	if w.AppendRecord(ActionRecord{}) != ErrMalformed {
		t.Fatal("record before frame")
	}
	if w.BeginFrame(99) != ErrMalformed {
		t.Fatal("frame before first")
	}
	if w.BeginFrame(100+MaxSliceFrames) != ErrTooLarge {
		t.Fatal("frame beyond span")
	}
	if err := w.BeginFrame(105); err != nil {
		t.Fatal(err)
	}
	if w.AppendRecord(ActionRecord{Payload: make([]byte, MaxActionPayloadLen+1)}) != ErrTooLarge {
		t.Fatal("oversized payload")
	}
	if err := w.AppendRecord(ActionRecord{Type: 1, Payload: []byte{}}); err != nil {
		t.Fatal(err)
	}
	if w.BeginFrame(105) != ErrMalformed || w.BeginFrame(104) != ErrMalformed {
		t.Fatal("frame not after last entry")
	}
	if _, err := w.Finish(104); err != ErrMalformed {
		t.Fatal("last before last entry")
	}
	if _, err := w.Finish(100 + MaxSliceFrames); err != ErrTooLarge {
		t.Fatal("span too large")
	}
	out, err := w.Finish(110) // still usable after errors
	if err != nil {
		t.Fatal(err)
	}
	m, n, err := decodeSlice(out)
	if err != nil || n != len(out) || m.First != 100 || m.Frames != 11 || len(m.Entries) != 1 || m.Entries[0].Frame != 105 {
		t.Fatalf("%+v %d %v", m, n, err)
	}
	if _, err := w.Finish(110); err != ErrMalformed {
		t.Fatal("writer usable after Finish")
	}
	// Record limit per frame.
	w.Reset(nil, 0)
	_ = w.BeginFrame(0)
	for i := 0; i < MaxFrameRecords; i++ {
		if err := w.AppendRecord(ActionRecord{}); err != nil {
			t.Fatal(err)
		}
	}
	if w.AppendRecord(ActionRecord{}) != ErrTooLarge {
		t.Fatal("record limit")
	}
	out, err = w.Finish(0)
	if err != nil {
		t.Fatal(err)
	}
	if m, _, err := decodeSlice(out); err != nil || len(m.Entries[0].Records) != MaxFrameRecords {
		t.Fatalf("max records: %v", err)
	}
}

func TestActionStreamFrame(t *testing.T) {
	for _, m := range actionSliceSamples() {
		slice := writeSlice(nil, m)
		f := ActionStreamFrame{Payload: slice}
		actionStreamCodec.roundTrip(t, f)
		got, _, _ := ParseActionStreamFrame(AppendActionStreamFrame(nil, f))
		s, err := got.ParseSlice()
		if err != nil || s.FirstFrame != m.First || s.Frames != m.Frames || s.Entries != len(m.Entries) {
			t.Fatalf("ParseSlice: %+v %v", s, err)
		}
		// A byte after the slice inside the frame is malformed.
		bad := ActionStreamFrame{Payload: append(append([]byte(nil), slice...), 0)}
		if _, err := bad.ParseSlice(); err != ErrMalformed {
			t.Fatalf("trailing byte: %v", err)
		}
	}
	if _, err := (ActionStreamFrame{Payload: []byte{1, 2}}).ParseSlice(); err != ErrShort {
		t.Fatalf("short slice: %v", err)
	}
	var zero ActionSlice
	it := zero.Iter()
	if _, _, ok := it.NextFrame(); ok {
		t.Fatal("zero ActionSlice has entries")
	}
	if _, ok := it.NextRecord(); ok {
		t.Fatal("zero ActionSlice has records")
	}
}

// TestActionSliceIterSkip: NextFrame skips records not read.
func TestActionSliceIterSkip(t *testing.T) {
	m := randSliceModel(testRand(24))
	for len(m.Entries) < 2 {
		m = randSliceModel(testRand(uint64(len(m.Entries) + 25)))
	}
	s, _, err := ParseActionSlice(writeSlice(nil, m))
	if err != nil {
		t.Fatal(err)
	}
	it := s.Iter()
	for i := 0; ; i++ {
		f, n, ok := it.NextFrame()
		if !ok {
			if i != len(m.Entries) {
				t.Fatalf("visited %d of %d entries", i, len(m.Entries))
			}
			break
		}
		if f != m.Entries[i].Frame || n != len(m.Entries[i].Records) {
			t.Fatalf("entry %d: frame %d n %d", i, f, n)
		}
		if i%2 == 0 {
			it.NextRecord() // read one, leave the rest
		}
	}
}

func seedsActionRecord() [][]byte { return encodeAll(actionRecordCodec, actionRecordSamples()) }

func seedsActionSliceHeader() [][]byte {
	return [][]byte{
		AppendActionSliceHeader(nil, ActionSliceHeader{FirstFrame: 1, Frames: 1}),
		AppendActionSliceHeader(nil, ActionSliceHeader{FirstFrame: 1000, Frames: 200, Entries: 150}),
	}
}

func seedsActionSlice() [][]byte { return encodeAll(actionSliceCodec, actionSliceSamples()[:6]) }

func seedsActionStreamFrame() [][]byte {
	var s [][]byte
	for _, sl := range seedsActionSlice()[:4] {
		s = append(s, AppendActionStreamFrame(nil, ActionStreamFrame{Payload: sl}))
	}
	return s
}

func FuzzParseActionRecord(f *testing.F) {
	for _, s := range seedsActionRecord() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { actionRecordCodec.fuzzCheck(t, b) })
}

func FuzzParseActionSliceHeader(f *testing.F) {
	for _, s := range seedsActionSliceHeader() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		actionSliceHeaderCodec.fuzzCheck(t, b)
		if h, _, err := ParseActionSliceHeader(b); err == nil {
			if h.Frames < 1 || h.Frames > MaxSliceFrames || h.Entries > h.Frames || h.LastFrame() < h.FirstFrame {
				t.Fatalf("accepted %+v", h)
			}
		}
	})
}

// FuzzParseActionSlice checks that a slice that parses re-encodes through
// ActionSliceWriter to the same bytes, that the iterator yields exactly
// the declared entries in increasing frame order inside the span, and
// that the parse agrees with the reference encoder.
func FuzzParseActionSlice(f *testing.F) {
	for _, s := range seedsActionSlice() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		actionSliceCodec.fuzzCheck(t, b)
		m, n, err := decodeSlice(b)
		if err != nil {
			return
		}
		if ref := refEncodeSlice(nil, m); string(ref) != string(b[:n]) {
			t.Fatalf("reference encoding differs")
		}
		last := uint64(m.First) + uint64(m.Frames) - 1
		prev := int64(m.First) - 1
		for _, e := range m.Entries {
			if int64(e.Frame) <= prev || uint64(e.Frame) > last || len(e.Records) == 0 {
				t.Fatalf("entry frame %d outside order/span", e.Frame)
			}
			prev = int64(e.Frame)
		}
	})
}

func FuzzParseActionStreamFrame(f *testing.F) {
	for _, s := range seedsActionStreamFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		actionStreamCodec.fuzzCheck(t, b)
		if fr, _, err := ParseActionStreamFrame(b); err == nil {
			s, err := fr.ParseSlice()
			if err != nil {
				if !isSentinel(err) {
					t.Fatal(err)
				}
				return
			}
			if s.Frames < 1 {
				t.Fatal("empty span accepted")
			}
		}
	})
}

// TestActionSliceIterCorrupt feeds the iterator bodies that ParseActionSlice
// would have rejected (possible only from inside the package): it must stop
// cleanly, never panic or loop.
func TestActionSliceIterCorrupt(t *testing.T) {
	bodies := [][]byte{
		nil,
		{0x80},             // truncated gap
		{0x00},             // missing count
		{0x00, 0x00},       // zero records
		{0x00, 0x80},       // truncated count
		{0x00, 0x02, 0x01}, // record truncated after the sender
		{0x00, 0xFF, 0xFF, 0x7F},
	}
	for _, body := range bodies {
		s := ActionSlice{ActionSliceHeader: ActionSliceHeader{FirstFrame: 7, Frames: 3, Entries: 2}, body: body}
		it := s.Iter()
		steps := 0
		for _, _, ok := it.NextFrame(); ok; _, _, ok = it.NextFrame() {
			for _, ok := it.NextRecord(); ok; _, ok = it.NextRecord() {
				steps++
			}
			if steps++; steps > 10 {
				t.Fatalf("% x: iterator does not stop", body)
			}
		}
		if _, ok := it.NextRecord(); ok {
			t.Fatalf("% x: record after the end", body)
		}
	}
	mustErr(t, "ParseActionStreamFrame", ParseActionStreamFrame, []byte{0x01, 0x00}, ErrMalformed)
}

// AppendEncodedRecords writes what AppendRecord writes for the same
// records (so a frame encoded once can go to several peers), counts them
// (over 127 records the count grows a byte), and keeps the writer's
// errors: no frame begun, the per-frame record limit.
func TestActionSliceWriterEncodedRecords(t *testing.T) {
	recs := make([]ActionRecord, 200)
	var enc []byte
	for i := range recs {
		recs[i] = ActionRecord{Sender: uint8(i % 7), Type: uint16(i), Entity: uint64(i) << 20, Payload: bytes.Repeat([]byte{byte(i)}, i%9)}
		enc = AppendActionRecord(enc, recs[i])
	}
	for _, split := range []int{0, 1, 127, 128, 200} {
		a, b := NewActionSliceWriter([]byte("x"), 7), NewActionSliceWriter([]byte("x"), 7)
		for _, w := range []*ActionSliceWriter{&a, &b} {
			if err := w.BeginFrame(9); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range recs {
			if err := a.AppendRecord(r); err != nil {
				t.Fatal(err)
			}
		}
		cut := len(appendRecords(recs[:split]))
		if err := b.AppendEncodedRecords(enc[:cut], split); err != nil {
			t.Fatal(err)
		}
		if err := b.AppendEncodedRecords(enc[cut:], len(recs)-split); err != nil {
			t.Fatal(err)
		}
		if a.Len() != b.Len() {
			t.Fatalf("split %d: Len %d, want %d", split, b.Len(), a.Len())
		}
		wa, _ := a.Finish(12)
		wb, err := b.Finish(12)
		if err != nil || !bytes.Equal(wa, wb) {
			t.Fatalf("split %d: %v\n%x\nwant\n%x", split, err, wb, wa)
		}
	}
	w := NewActionSliceWriter(nil, 0)
	if w.AppendEncodedRecords(enc, len(recs)) != ErrMalformed {
		t.Fatal("records before a frame")
	}
	_ = w.BeginFrame(0)
	if w.AppendEncodedRecords(nil, MaxFrameRecords+1) != ErrTooLarge || w.AppendEncodedRecords(nil, -1) != ErrTooLarge {
		t.Fatal("record limit")
	}
}

// appendRecords encodes rs back to back.
func appendRecords(rs []ActionRecord) []byte {
	var b []byte
	for _, r := range rs {
		b = AppendActionRecord(b, r)
	}
	return b
}
