package link

import (
	"fmt"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/wire"
)

// The link messages' codec: one type, one append and one parse function
// per message kind (docs/ROLLBACK.md, "Link messages", has every byte).
// Every parser checks the whole message — its kind, every field's range and
// that the message ends exactly where its last field does — and never
// panics (FuzzLinkCodec); a valid message parses without allocating, and
// the slices a parsed message holds alias the input. A message that does
// not parse is described by a fault, a plain value (no allocation on the
// drop path, which a peer controls); fault.err turns it into an error with
// the numbers.

// Link message kinds: the first byte of every message the links exchange
// on their stream.
const (
	msgInputs   byte = 0x01 // client → server: one frame's inputs
	msgChecksum byte = 0x02 // server → client: a final frame's checksum
	msgSnapshot byte = 0x03 // server → client: a compressed snapshot
	msgResync   byte = 0x04 // client → server: state burst, please
	msgClock    byte = 0x05 // server → client: its frame, the lead, its tick period, the time dilation
	// msgSnapshotPart: server → client, one part of a compressed snapshot
	// larger than LinkConfig.SnapshotChunk.
	msgSnapshotPart byte = 0x06
	// msgAnnounce: server → client, where the client starts — the
	// snapshot that follows (its frame and size), or, size 0, the
	// baseline it starts from without one — and where the server is (its
	// newest frame and MaxRewindFrames).
	msgAnnounce byte = 0x07
	// msgRefused: server → client, one of the client's inputs refused.
	msgRefused byte = 0x08
)

// Sizes of the link messages' fixed parts.
const (
	inputsMinLen   = 1 + 4 + 1         // kind, frame, count ≥ 1 (then the records)
	checksumMinLen = 1 + 4 + 8 + 1     // kind, frame, sum, own (uvarint, 1..10 bytes)
	resyncLen      = 1 + 4             // kind, baseline
	clockLen       = 1 + 4 + 4 + 2 + 2 // kind, frame, period, lead, dilation
	announceLen    = 1 + 4 + 4 + 4 + 4 // kind, frame, size, newest, rewind
	refusedMinLen  = 1 + 4 + 1 + 4     // kind, frame, reason, then one action record (≥ 4 bytes)
	partHeaderLen  = 1 + 4 + 2 + 2     // kind, frame, index, count
	checksumMaxLen = 1 + 4 + 8 + wire.MaxVarintLen
)

// fault says why a link message did not parse; the zero fault is none.
// It is a value (no allocation): field is a constant, got and want the
// numbers.
type fault struct {
	kind      byte   // the message's first byte (0 for an empty message)
	field     string // what was wrong
	got, want int64  // the value found and the limit it broke (see field)
}

// bad reports that f is a fault.
func (f fault) bad() bool { return f.field != "" }

// err returns f as an error wrapping rollback.ErrMalformed, with the
// numbers; nil for no fault.
func (f fault) err() error {
	if !f.bad() {
		return nil
	}
	return fmt.Errorf("%w: link message kind 0x%02x: %s %d, want %d", rollback.ErrMalformed, f.kind, f.field, f.got, f.want)
}

// kindOf returns b's kind byte, 0 for an empty message (no kind is 0).
func kindOf(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// checkFixed reports a fault unless b is a message of kind k exactly n
// bytes long.
func checkFixed(b []byte, k byte, n int) fault {
	switch {
	case kindOf(b) != k:
		return fault{kindOf(b), "kind", int64(kindOf(b)), int64(k)}
	case len(b) != n:
		return fault{k, "length", int64(len(b)), int64(n)}
	}
	return fault{}
}

// checkMin reports a fault unless b is a message of kind k at least n
// bytes long.
func checkMin(b []byte, k byte, n int) fault {
	switch {
	case kindOf(b) != k:
		return fault{kindOf(b), "kind", int64(kindOf(b)), int64(k)}
	case len(b) < n:
		return fault{k, "length below minimum", int64(len(b)), int64(n)}
	}
	return fault{}
}

// inputsMsg is one frame's inputs from a client (kind 0x01): frame u32,
// record count uvarint ≥ 1, that many action records, all from the
// client's peer id.
type inputsMsg struct {
	frame uint32
	count int
	recs  []byte // the records, back to back (aliases the message)
}

// appendInputs appends the input message for frame holding ins (all for
// that frame, from peer).
func appendInputs(dst []byte, frame uint32, peer rollback.Sender, ins []rollback.Input) []byte {
	dst = append(dst, msgInputs)
	dst = wire.AppendUint32(dst, frame)
	dst = wire.AppendUvarint(dst, uint64(len(ins)))
	for i := range ins {
		in := &ins[i]
		dst = wire.AppendActionRecord(dst, wire.ActionRecord{Sender: uint8(peer), Type: uint16(in.Type), Entity: uint64(in.Entity), Payload: in.Payload})
	}
	return dst
}

// parseInputs parses an input message whose records must all be from
// peer.
func parseInputs(b []byte, peer uint8) (inputsMsg, fault) {
	if f := checkMin(b, msgInputs, inputsMinLen); f.bad() {
		return inputsMsg{}, f
	}
	frame, _, _ := wire.Uint32(b[1:])
	count, k, err := wire.Uvarint(b[5:])
	switch {
	case err != nil:
		return inputsMsg{}, fault{msgInputs, "record count: bad varint at offset", 5, 5}
	case count == 0:
		return inputsMsg{}, fault{msgInputs, "record count", 0, 1}
	case count > uint64(len(b)):
		return inputsMsg{}, fault{msgInputs, "record count above the message's length", int64(min(count, 1<<62)), int64(len(b))}
	}
	off := 5 + k
	recs := b[off:]
	for i := uint64(0); i < count; i++ {
		r, n, err := wire.ParseActionRecord(b[off:])
		if err != nil {
			return inputsMsg{}, fault{msgInputs, "action record does not parse at offset", int64(off), int64(off)}
		}
		if r.Sender != peer {
			return inputsMsg{}, fault{msgInputs, "record's sender", int64(r.Sender), int64(peer)}
		}
		off += n
	}
	if off != len(b) {
		return inputsMsg{}, fault{msgInputs, "length", int64(len(b)), int64(off)}
	}
	return inputsMsg{frame: frame, count: int(count), recs: recs}, fault{}
}

// checksumMsg is the server's checksum of a final frame (kind 0x02):
// frame u32, sum u64, own uvarint (how many of the client's inputs the
// server's frame holds).
type checksumMsg struct {
	frame uint32
	sum   uint64
	own   uint64
}

func (m checksumMsg) append(dst []byte) []byte {
	dst = append(dst, msgChecksum)
	dst = wire.AppendUint32(dst, m.frame)
	dst = wire.AppendUint64(dst, m.sum)
	return wire.AppendUvarint(dst, m.own)
}

func parseChecksum(b []byte) (checksumMsg, fault) {
	if f := checkMin(b, msgChecksum, checksumMinLen); f.bad() {
		return checksumMsg{}, f
	}
	frame, _, _ := wire.Uint32(b[1:])
	sum, _, _ := wire.Uint64(b[5:])
	own, k, err := wire.Uvarint(b[13:])
	if err != nil {
		return checksumMsg{}, fault{msgChecksum, "own count: bad varint, length", int64(len(b)), checksumMaxLen}
	}
	if 13+k != len(b) {
		return checksumMsg{}, fault{msgChecksum, "length", int64(len(b)), int64(13 + k)}
	}
	return checksumMsg{frame, sum, own}, fault{}
}

// parseSnapshot returns a snapshot message's body (kind 0x03): the
// compressed snapshot, at least one byte, aliasing b.
func parseSnapshot(b []byte) ([]byte, fault) {
	if f := checkMin(b, msgSnapshot, 2); f.bad() {
		return nil, f
	}
	return b[1:], fault{}
}

// resyncMsg is the client's request for a state burst (kind 0x04): its
// installed baseline u32 (refusedBaseline after it refused a snapshot).
type resyncMsg struct{ baseline uint32 }

func (m resyncMsg) append(dst []byte) []byte {
	return wire.AppendUint32(append(dst, msgResync), m.baseline)
}

func parseResync(b []byte) (resyncMsg, fault) {
	if f := checkFixed(b, msgResync, resyncLen); f.bad() {
		return resyncMsg{}, f
	}
	v, _, _ := wire.Uint32(b[1:])
	return resyncMsg{v}, fault{}
}

// clockMsg is the server's clock for one client (kind 0x05): its newest
// simulated frame when it sent the message, its tick period in
// nanoseconds (≥ 1), the lead in frames the client should run ahead of
// that frame on receipt, and the time dilation (Server.TimeDilation) in
// 1/10,000ths.
type clockMsg struct {
	frame    uint32
	period   uint32
	lead     uint16
	dilation int16
}

func (m clockMsg) append(dst []byte) []byte {
	dst = append(dst, msgClock)
	dst = wire.AppendUint32(dst, m.frame)
	dst = wire.AppendUint32(dst, m.period)
	dst = wire.AppendUint16(dst, m.lead)
	return wire.AppendUint16(dst, uint16(m.dilation))
}

func parseClock(b []byte) (clockMsg, fault) {
	if f := checkFixed(b, msgClock, clockLen); f.bad() {
		return clockMsg{}, f
	}
	var m clockMsg
	m.frame, _, _ = wire.Uint32(b[1:])
	m.period, _, _ = wire.Uint32(b[5:])
	m.lead, _, _ = wire.Uint16(b[9:])
	d, _, _ := wire.Uint16(b[11:])
	m.dilation = int16(d)
	if int64(m.period) < minWirePeriod {
		return clockMsg{}, fault{msgClock, "tick period (ns)", int64(m.period), minWirePeriod}
	}
	return m, fault{}
}

// minWirePeriod is the shortest tick period a clock message may carry,
// in nanoseconds: LinkConfig.TickPeriod's minimum.
const minWirePeriod = int64(minTickPeriod)

// partMsg is one part of a chunked snapshot (kind 0x06): the snapshot's
// frame u32, index u16 < count, count u16 1..MaxSnapshotParts, and 1 to
// maxSnapshotChunk data bytes.
type partMsg struct {
	frame        uint32
	index, count int
	data         []byte // aliases the message
}

func (m partMsg) append(dst []byte) []byte {
	dst = append(dst, msgSnapshotPart)
	dst = wire.AppendUint32(dst, m.frame)
	dst = wire.AppendUint16(dst, uint16(m.index))
	dst = wire.AppendUint16(dst, uint16(m.count))
	return append(dst, m.data...)
}

func parsePart(b []byte) (partMsg, fault) {
	if f := checkMin(b, msgSnapshotPart, partHeaderLen+1); f.bad() {
		return partMsg{}, f
	}
	f, _, _ := wire.Uint32(b[1:])
	i16, _, _ := wire.Uint16(b[5:])
	c16, _, _ := wire.Uint16(b[7:])
	m := partMsg{frame: f, index: int(i16), count: int(c16), data: b[partHeaderLen:]}
	switch {
	case m.count == 0 || m.count > MaxSnapshotParts:
		return partMsg{}, fault{msgSnapshotPart, "part count (1..MaxSnapshotParts)", int64(m.count), MaxSnapshotParts}
	case m.index >= m.count:
		return partMsg{}, fault{msgSnapshotPart, "part index beyond count", int64(m.index), int64(m.count - 1)}
	case len(m.data) > maxSnapshotChunk:
		return partMsg{}, fault{msgSnapshotPart, "part data bytes", int64(len(m.data)), maxSnapshotChunk}
	}
	return m, fault{}
}

// announceMsg says where the client starts (kind 0x07): the frame of the
// snapshot that follows and its size, or size 0: no snapshot follows, the
// client starts from the state it built at frame (the baseline the
// server's link was made with); and where the server is: its newest frame
// and its MaxRewindFrames.
type announceMsg struct {
	frame, size, newest, rewind uint32
}

func (m announceMsg) append(dst []byte) []byte {
	dst = append(dst, msgAnnounce)
	dst = wire.AppendUint32(dst, m.frame)
	dst = wire.AppendUint32(dst, m.size)
	dst = wire.AppendUint32(dst, m.newest)
	return wire.AppendUint32(dst, m.rewind)
}

func parseAnnounce(b []byte) (announceMsg, fault) {
	if f := checkFixed(b, msgAnnounce, announceLen); f.bad() {
		return announceMsg{}, f
	}
	var m announceMsg
	m.frame, _, _ = wire.Uint32(b[1:])
	m.size, _, _ = wire.Uint32(b[5:])
	m.newest, _, _ = wire.Uint32(b[9:])
	m.rewind, _, _ = wire.Uint32(b[13:])
	return m, fault{}
}

// refusedMsg reports one input the server refused (kind 0x08): the frame
// it was for u32, the reason (a rollback.DropReason) u8, and the input as
// one action record, whose sender must be the client's peer id.
type refusedMsg struct {
	frame  uint32
	reason rollback.DropReason
	rec    wire.ActionRecord // Payload aliases the message
}

func (m refusedMsg) append(dst []byte) []byte {
	dst = append(dst, msgRefused)
	dst = wire.AppendUint32(dst, m.frame)
	dst = append(dst, byte(m.reason))
	return wire.AppendActionRecord(dst, m.rec)
}

// refusedLen is the encoded size of m.
func (m refusedMsg) len() int { return 1 + 4 + 1 + wire.ActionRecordLen(m.rec) }

func parseRefused(b []byte, peer uint8) (refusedMsg, fault) {
	if f := checkMin(b, msgRefused, refusedMinLen); f.bad() {
		return refusedMsg{}, f
	}
	frame, _, _ := wire.Uint32(b[1:])
	r, n, err := wire.ParseActionRecord(b[6:])
	switch {
	case err != nil:
		return refusedMsg{}, fault{msgRefused, "action record does not parse, length", int64(len(b)), refusedMinLen}
	case 6+n != len(b):
		return refusedMsg{}, fault{msgRefused, "length", int64(len(b)), int64(6 + n)}
	case r.Sender != peer:
		return refusedMsg{}, fault{msgRefused, "record's sender", int64(r.Sender), int64(peer)}
	}
	return refusedMsg{frame: frame, reason: rollback.DropReason(b[5]), rec: r}, fault{}
}
