package wire

// Provenance values of ActionRecord.Sender. Every byte value is legal on
// the wire; the action log gives the top two a meaning.
const (
	// MaxPeerID is the highest id a connected peer can hold. Accept with a
	// higher id is malformed, and the server refuses a connection that would
	// need one (RejectInvalidPeerID).
	MaxPeerID uint8 = 253
	// SenderDerived marks a record the local simulation step produced; a
	// replay recomputes it instead of reapplying it.
	SenderDerived uint8 = 254
	// SenderLocal marks a record the server authored itself (an input that
	// did not come from a peer).
	SenderLocal uint8 = 255
)

// Limits of the action-stream formats.
const (
	// MaxActionPayloadLen is the largest payload one action record may carry.
	MaxActionPayloadLen = 0xFFFF
	// MaxSliceFrames is the most frames one action slice may span. A slice
	// covers a window of the action log's ring (64 frames by default), so
	// the cap leaves a wide margin and exists to bound what a receiver
	// accepts from a hostile peer.
	MaxSliceFrames = 4096
	// MaxFrameRecords is the most records one frame entry of a slice may
	// hold.
	MaxFrameRecords = 0xFFFF
)

// ActionStreamFrame carries one action slice (see ParseActionSlice), the
// replicated records of a run of simulation frames. Payload is the slice's
// encoding; it aliases the decoded input (see the package doc).
//
// ParseActionStreamFrame checks only the frame's framing; the receiver
// validates and reads the slice with ParseSlice before applying any of it.
type ActionStreamFrame struct {
	Payload []byte
}

// AppendActionStreamFrame appends f — FrameActionStream, the payload length
// as a varint, the payload — to dst and returns the extended slice. It
// copies the payload and allocates only if dst lacks capacity.
func AppendActionStreamFrame(dst []byte, f ActionStreamFrame) []byte {
	dst = append(dst, byte(FrameActionStream))
	return appendPayload(dst, f.Payload)
}

// ActionStreamFrameLen returns the exact encoded size of f.
func ActionStreamFrameLen(f ActionStreamFrame) int {
	return FrameLen(FrameActionStream, len(f.Payload))
}

// ParseActionStreamFrame decodes an action-stream frame from the front of b
// and returns it with the bytes consumed. The payload aliases b. Errors are
// those of ParseUnreliableFrame. It never allocates.
func ParseActionStreamFrame(b []byte) (ActionStreamFrame, int, error) {
	if len(b) < actionStreamFixed {
		return ActionStreamFrame{}, 0, ErrShort
	}
	if FrameType(b[0]) != FrameActionStream {
		return ActionStreamFrame{}, 0, ErrMalformed
	}
	p, n, err := parsePayload(b, actionStreamFixed, MaxMessageLen)
	if err != nil {
		return ActionStreamFrame{}, 0, err
	}
	return ActionStreamFrame{Payload: p}, n, nil
}

// ParseSlice validates f.Payload as exactly one action slice and returns
// it. Errors are those of ParseActionSlice, plus ErrMalformed when bytes
// follow the slice inside the payload. The slice aliases f.Payload. It never
// allocates.
func (f ActionStreamFrame) ParseSlice() (ActionSlice, error) {
	s, n, err := ParseActionSlice(f.Payload)
	if err != nil {
		return ActionSlice{}, err
	}
	if n != len(f.Payload) {
		return ActionSlice{}, ErrMalformed
	}
	return s, nil
}

// ActionRecord is one replicated action: who issued it, what it is, which
// entity it targets, and its argument bytes.
//
// Sender is the provenance byte (0–253 a peer id, SenderDerived,
// SenderLocal). Type is the registered action type. Entity is the target
// handle as the rollback layer packs it (a generation-tagged index; the wire
// treats it as an opaque uint64 and encodes it as a varint, so small
// handles stay short). Payload is at most MaxActionPayloadLen bytes and
// aliases the decoded input (see the package doc).
type ActionRecord struct {
	Sender  uint8
	Type    uint16
	Entity  uint64
	Payload []byte
}

// AppendActionRecord appends r — sender byte, type varint, entity varint,
// payload length varint, payload — to dst and returns the extended slice.
// It copies the payload and allocates only if dst lacks capacity. A
// payload longer than MaxActionPayloadLen is written as given and rejected
// by ParseActionRecord with ErrTooLarge; ActionSliceWriter refuses it up
// front.
func AppendActionRecord(dst []byte, r ActionRecord) []byte {
	dst = append(dst, r.Sender)
	dst = AppendUvarint(dst, uint64(r.Type))
	dst = AppendUvarint(dst, r.Entity)
	return appendPayload(dst, r.Payload)
}

// ActionRecordLen returns the exact encoded size of r: 4 bytes plus the
// payload for the smallest types, entities and payloads.
func ActionRecordLen(r ActionRecord) int {
	return 1 + UvarintLen(uint64(r.Type)) + UvarintLen(r.Entity) +
		UvarintLen(uint64(len(r.Payload))) + len(r.Payload)
}

// ParseActionRecord decodes one action record from the front of b and
// returns it with the bytes consumed. The payload aliases b. A type above
// 65535 or a payload length above MaxActionPayloadLen returns ErrTooLarge;
// a payload length above the bytes remaining ErrShort; varint errors are
// those of Uvarint. It never allocates.
func ParseActionRecord(b []byte) (ActionRecord, int, error) {
	if len(b) == 0 {
		return ActionRecord{}, 0, ErrShort
	}
	typ, k, err := uvarintMax(b[1:], 0xFFFF)
	if err != nil {
		return ActionRecord{}, 0, err
	}
	off := 1 + k
	ent, k, err := Uvarint(b[off:])
	if err != nil {
		return ActionRecord{}, 0, err
	}
	off += k
	p, n, err := parsePayload(b, off, MaxActionPayloadLen)
	if err != nil {
		return ActionRecord{}, 0, err
	}
	return ActionRecord{Sender: b[0], Type: uint16(typ), Entity: ent, Payload: p}, n, nil
}

// ActionSliceHeader opens an action slice: the slice covers the Frames
// consecutive simulation frames FirstFrame .. FirstFrame+Frames−1, and
// Entries of them (those with at least one record for this receiver)
// follow as frame entries. A covered frame without an entry had no records
// for this receiver: the slice tells the receiver that frame is complete
// and empty, which is as much information as a record.
type ActionSliceHeader struct {
	FirstFrame uint32
	Frames     int // 1..MaxSliceFrames
	Entries    int // 0..Frames
}

// LastFrame returns the last frame the slice covers.
func (h ActionSliceHeader) LastFrame() uint32 { return h.FirstFrame + uint32(h.Frames) - 1 }

// AppendActionSliceHeader appends h — FirstFrame (u32 LE), Frames varint,
// Entries varint — to dst and returns the extended slice. Most callers use
// ActionSliceWriter, which writes the header itself. Out-of-range fields
// are written as given and rejected by ParseActionSliceHeader.
func AppendActionSliceHeader(dst []byte, h ActionSliceHeader) []byte {
	dst = AppendUint32(dst, h.FirstFrame)
	dst = AppendUvarint(dst, uint64(h.Frames))
	return AppendUvarint(dst, uint64(h.Entries))
}

// ActionSliceHeaderLen returns the exact encoded size of h (6 to 8 bytes
// for valid headers).
func ActionSliceHeaderLen(h ActionSliceHeader) int {
	return 4 + UvarintLen(uint64(h.Frames)) + UvarintLen(uint64(h.Entries))
}

// actionSliceHeaderMax is the most bytes a valid header takes.
const actionSliceHeaderMax = 4 + 2 + 2

// ParseActionSliceHeader decodes an action-slice header from the front of b
// and returns it with the bytes consumed, without looking at the entries
// (ParseActionSlice validates those). Frames of 0, Entries above Frames, or
// a span that runs past frame 2³²−1 return ErrMalformed; Frames above
// MaxSliceFrames ErrTooLarge. It never allocates.
func ParseActionSliceHeader(b []byte) (ActionSliceHeader, int, error) {
	first, off, err := Uint32(b)
	if err != nil {
		return ActionSliceHeader{}, 0, err
	}
	frames, k, err := Uvarint(b[off:])
	if err != nil {
		return ActionSliceHeader{}, 0, err
	}
	if frames == 0 {
		return ActionSliceHeader{}, 0, ErrMalformed
	}
	if frames > MaxSliceFrames {
		return ActionSliceHeader{}, 0, ErrTooLarge
	}
	if uint64(first)+frames-1 > 0xFFFFFFFF {
		return ActionSliceHeader{}, 0, ErrMalformed
	}
	off += k
	entries, k, err := Uvarint(b[off:])
	if err != nil {
		return ActionSliceHeader{}, 0, err
	}
	if entries > frames {
		return ActionSliceHeader{}, 0, ErrMalformed
	}
	off += k
	return ActionSliceHeader{FirstFrame: first, Frames: int(frames), Entries: int(entries)}, off, nil
}
