package rollback

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Compression is the codec of a snapshot message (docs/ROLLBACK.md,
// "Snapshots and state bursts", has the measurement behind the default).
type Compression uint8

// Snapshot codecs. The codec travels in every snapshot, so the two ends
// need not agree: a Snapshotter decodes all three.
const (
	// CompressDefault, as SnapshotConfig.Compression, means CompressZstd.
	CompressDefault Compression = 0
	// CompressNone sends the encoding as is.
	CompressNone Compression = 1
	// CompressZstd is zstd at its fastest level: the best ratio of the two
	// at a speed far above what a snapshot needs.
	CompressZstd Compression = 2
	// CompressS2 is S2 (a Snappy extension): several times faster, larger.
	CompressS2 Compression = 3
)

// zstdMinMemory is the least decoder memory limit: zstd's smallest
// window is 1 KiB, so a limit below a few KiB refuses valid small frames.
// A hostile stream decodes at most max(MaxBytes, this) bytes before it is
// refused.
const zstdMinMemory = 64 << 10

// snapshotVersion is the first byte of a snapshot encoding.
const snapshotVersion = 1

// snapshotEntityBound is the most bytes one entity takes in an encoding
// besides its components: index delta and generation (uvarints, ≤ 5 each)
// and the owner.
const snapshotEntityBound = 11

// SnapshotScope decides which entities a peer's snapshot holds (interest
// management at join and repair; ScopeFilter is its counterpart on the
// action stream and should agree with it). It is called once per live
// entity per snapshot, with the entity and its owner; it must be cheap and
// deterministic. Nil means every live entity.
type SnapshotScope func(peer Sender, e Entity, owner Sender) bool

// SnapshotConfig configures a Snapshotter. The zero value of every field
// means its default.
type SnapshotConfig struct {
	// Compression is the codec of the snapshots it encodes. Default
	// CompressZstd.
	Compression Compression
	// MaxBytes caps the decoded size of a snapshot it decodes: a larger
	// declared or decoded size is refused (ErrSnapshotTooLarge) before it
	// is allocated. Default and maximum: SnapshotBound of the store, the
	// largest encoding the store can legitimately receive.
	MaxBytes int
	// Scope narrows the entities of the snapshots it encodes. Default: all.
	Scope SnapshotScope
}

// Validate reports whether c is usable. Errors wrap ErrInvalidConfig.
func (c SnapshotConfig) Validate() error {
	if c.Compression > CompressS2 {
		return fmt.Errorf("%w: unknown snapshot compression %d", ErrInvalidConfig, c.Compression)
	}
	if c.MaxBytes < 0 {
		return fmt.Errorf("%w: negative snapshot MaxBytes %d", ErrInvalidConfig, c.MaxBytes)
	}
	return nil
}

// WithDefaults returns c with CompressDefault replaced by CompressZstd.
// MaxBytes stays as given: its default is the store's (NewSnapshotter
// fills it in).
func (c SnapshotConfig) WithDefaults() SnapshotConfig {
	if c.Compression == CompressDefault {
		c.Compression = CompressZstd
	}
	return c
}

// SnapshotBound returns the largest snapshot encoding of s: every slot live.
func SnapshotBound(s *Store) int {
	n := 1 + 4 + 5 + 5 // version, frame, component count, entity count
	row := snapshotEntityBound
	for _, size := range s.sizes {
		n += 5
		row += size
	}
	return n + s.Capacity()*row
}

// appendStoreSnapshot appends to dst the uncompressed snapshot encoding of s as
// the state at the end of frame, for peer: every live entity scope admits
// (nil: all), ascending by slot, with its handle, its owner and each
// component's bytes in wire order. The layout is column-wise (all
// handles, all owners, then each component's column), which compresses
// well. It returns the extended slice; it allocates only if dst must grow.
// Cost: O(capacity) plus the bytes copied.
func appendStoreSnapshot(dst []byte, s *Store, frame uint32, peer Sender, scope SnapshotScope) []byte {
	dst = append(dst, snapshotVersion)
	dst = binary.LittleEndian.AppendUint32(dst, frame)
	dst = binary.AppendUvarint(dst, uint64(len(s.sizes)))
	for _, size := range s.sizes {
		dst = binary.AppendUvarint(dst, uint64(size))
	}
	in := func(i int) bool {
		return s.alive[i] && (scope == nil || scope(peer, NewEntity(uint32(i), s.gen[i]), s.owner[i]))
	}
	count := 0
	for i := range s.alive {
		if in(i) {
			count++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(count))
	next := 0
	for i := range s.alive {
		if in(i) {
			dst = binary.AppendUvarint(dst, uint64(i-next))
			dst = binary.AppendUvarint(dst, uint64(s.gen[i]))
			next = i + 1
		}
	}
	for i := range s.alive {
		if in(i) {
			dst = append(dst, byte(s.owner[i]))
		}
	}
	for c, col := range s.cols {
		size := s.sizes[c]
		for i := range s.alive {
			if in(i) {
				dst = append(dst, col[i*size:(i+1)*size]...)
			}
		}
	}
	return dst
}

// snapshotHeader is a parsed, validated snapshot encoding.
type snapshotHeader struct {
	frame  uint32
	count  int
	owners []byte // count bytes
	cols   []byte // the component columns, back to back
}

// parseSnapshot validates raw against s's layout and capacity, filling
// idx and gen (reused) with the entities' slots and generations. It never
// panics and changes nothing.
func parseSnapshot(s *Store, raw []byte, idx, gen []uint32) (snapshotHeader, []uint32, []uint32, error) {
	var h snapshotHeader
	bad := func(what string) (snapshotHeader, []uint32, []uint32, error) {
		return h, idx, gen, fmt.Errorf("%w: snapshot %s", ErrMalformed, what)
	}
	if len(raw) < 5 || raw[0] != snapshotVersion {
		return bad("header")
	}
	h.frame = binary.LittleEndian.Uint32(raw[1:])
	off := 5
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(raw[off:])
		if n <= 0 {
			return 0, false
		}
		off += n
		return v, true
	}
	nc, ok := uv()
	if !ok || nc != uint64(len(s.sizes)) {
		return bad("component count")
	}
	row := 0
	for _, size := range s.sizes {
		v, ok := uv()
		if !ok || v != uint64(size) {
			return bad("component layout")
		}
		row += size
	}
	count, ok := uv()
	if !ok || count > uint64(s.Capacity()) {
		return bad("entity count")
	}
	h.count = int(count)
	idx, gen = idx[:0], gen[:0]
	next := uint64(0)
	for range h.count {
		d, ok1 := uv()
		g, ok2 := uv()
		if !ok1 || !ok2 {
			return bad("truncated handles")
		}
		i := next + d
		if d >= uint64(s.Capacity()) || i >= uint64(s.Capacity()) {
			return bad("entity index")
		}
		if g == 0 || g > math.MaxUint32 {
			return bad("entity generation")
		}
		idx, gen = append(idx, uint32(i)), append(gen, uint32(g))
		next = i + 1
	}
	if len(raw)-off != h.count*(1+row) {
		return bad("length")
	}
	h.owners = raw[off : off+h.count]
	h.cols = raw[off+h.count:]
	return h, idx, gen, nil
}

// readStoreSnapshot validates the uncompressed snapshot encoding raw against
// dst's layout and, only if it is valid, makes dst hold exactly its
// entities (Clear, then Store.Restore each handle with its owner, then the
// component bytes); it returns the snapshot's frame. raw is not retained.
// Errors: ErrMalformed (wrapped) for anything that does not fit — wrong
// version or layout, an entity index beyond dst's capacity, a zero
// generation, a length that is not exact — with dst unchanged; never a
// panic. The caller then installs the frame (ClientLink.InstallSnapshot or
// Client.InstallSnapshot). Allocates two index slices per call; use a
// Snapshotter to reuse them.
func readStoreSnapshot(dst *Store, raw []byte) (uint32, error) {
	f, _, _, err := readSnapshot(dst, raw, nil, nil)
	return f, err
}

func readSnapshot(dst *Store, raw []byte, idx, gen []uint32) (uint32, []uint32, []uint32, error) {
	h, idx, gen, err := parseSnapshot(dst, raw, idx, gen)
	if err != nil {
		return 0, idx, gen, err
	}
	dst.Clear()
	for k := range h.count {
		if err := dst.Restore(NewEntity(idx[k], gen[k]), Sender(h.owners[k])); err != nil {
			return 0, idx, gen, err // unreachable: parseSnapshot checked every handle
		}
	}
	cols := h.cols
	for c, col := range dst.cols {
		size := dst.sizes[c]
		for k := range h.count {
			i := int(idx[k])
			copy(col[i*size:(i+1)*size], cols[k*size:(k+1)*size])
		}
		cols = cols[h.count*size:]
	}
	return h.frame, idx, gen, nil
}

// Snapshotter encodes and decodes compressed snapshots of one Store, the
// join-and-repair half of replication: on the server it produces a peer's
// snapshot of a final frame (SnapshotSource, for ServerLink.SetSnapshots),
// on the client it installs one into the client's store (SnapshotSink, for
// ClientLink.SetSnapshots). Its codec state and buffers are reused, so a
// steady stream of snapshots allocates little; a Snapshotter belongs to
// one goroutine and is not safe for concurrent use.
//
// A compressed snapshot is: codec (1 byte), decoded size (uvarint), then
// the codec's output of the uncompressed encoding (docs/ROLLBACK.md,
// "Snapshots and state bursts").
type Snapshotter struct {
	store   *Store
	log     *ActionLog
	scratch *Store
	cfg     SnapshotConfig
	max     int

	enc      *zstd.Encoder
	dec      *zstd.Decoder
	raw      []byte
	idx, gen []uint32
}

// NewSnapshotter returns a Snapshotter of store. log is the store's action
// log on the server — AppendSnapshot undoes its newest frames to encode an
// older final frame — and may be nil on the client. Errors wrap
// ErrInvalidConfig. Cost: a scratch store as large as store when log is
// set, and the zstd encoder and decoder state.
func NewSnapshotter(store *Store, log *ActionLog, cfg SnapshotConfig) (*Snapshotter, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: NewSnapshotter needs a store", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	bound := SnapshotBound(store)
	if cfg.MaxBytes == 0 || cfg.MaxBytes > bound {
		cfg.MaxBytes = bound
	}
	sn := &Snapshotter{store: store, log: log, cfg: cfg, max: cfg.MaxBytes}
	var err error
	if sn.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1)); err != nil {
		return nil, fmt.Errorf("%w: zstd: %w", ErrInvalidConfig, err)
	}
	if sn.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max(cfg.MaxBytes, zstdMinMemory)))); err != nil {
		return nil, fmt.Errorf("%w: zstd: %w", ErrInvalidConfig, err)
	}
	if log != nil {
		specs := make([]ComponentSpec, len(store.sizes))
		for i := range specs {
			specs[i] = ComponentSpec{Name: store.names[i], Size: store.sizes[i]}
		}
		if sn.scratch, err = NewStore(StoreConfig{Components: specs, Capacity: store.Capacity()}); err != nil {
			return nil, err
		}
	}
	return sn, nil
}

// Store returns the store the Snapshotter reads and writes.
func (sn *Snapshotter) Store() *Store { return sn.store }

// AppendSnapshot appends to dst peer's compressed snapshot of the store as
// it was at the end of frame — the server's newest final frame, normally:
// the store holds its newest frame, so the snapshot is taken from a
// scratch copy with the log's frames after frame undone (the same captures
// a rewind restores; ErrAgedOut if the ring no longer holds them,
// ErrFrameOpen or ErrReplayPending mid-tick). Without a log, frame must be
// the store's own. It implements SnapshotSource. Cost: a copy of the store,
// the undone captures, the encoding and the compression; allocates only
// while its buffers grow.
func (sn *Snapshotter) AppendSnapshot(dst []byte, peer Sender, frame uint32) ([]byte, error) {
	src := sn.store
	if sn.log != nil {
		if err := sn.stateAt(frame); err != nil {
			return dst, err
		}
		src = sn.scratch
	}
	sn.raw = appendStoreSnapshot(sn.raw[:0], src, frame, peer, sn.cfg.Scope)
	return sn.compress(dst, sn.raw), nil
}

// compress appends the compressed message of raw to dst.
func (sn *Snapshotter) compress(dst, raw []byte) []byte {
	dst = append(dst, byte(sn.cfg.Compression))
	dst = binary.AppendUvarint(dst, uint64(len(raw)))
	switch sn.cfg.Compression {
	case CompressZstd:
		return sn.enc.EncodeAll(raw, dst)
	case CompressS2:
		n := s2.MaxEncodedLen(len(raw))
		dst = growCap(dst, n)
		out := s2.Encode(dst[len(dst):len(dst)+n], raw)
		return dst[:len(dst)+len(out)]
	default:
		return append(dst, raw...)
	}
}

// growCap returns b with room for n more bytes.
func growCap(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// decompress returns the decoded snapshot encoding of the compressed
// snapshot msg, in a buffer of the Snapshotter's that the next call
// reuses. The declared size is checked against SnapshotConfig.MaxBytes
// before anything is allocated, and the decoded size must equal it.
// Errors: ErrSnapshotTooLarge; ErrMalformed (wrapped) for an unknown codec
// or a stream that does not decode. Never a panic.
func (sn *Snapshotter) decompress(msg []byte) ([]byte, error) {
	if len(msg) < 2 {
		return nil, fmt.Errorf("%w: snapshot message too short", ErrMalformed)
	}
	codec := Compression(msg[0])
	size, n := binary.Uvarint(msg[1:])
	if n <= 0 {
		return nil, fmt.Errorf("%w: snapshot size", ErrMalformed)
	}
	if size > uint64(sn.max) {
		return nil, fmt.Errorf("%w: declared %d bytes, limit %d", ErrSnapshotTooLarge, size, sn.max)
	}
	body := msg[1+n:]
	want := int(size)
	raw := sn.raw[:0]
	if cap(raw) < want {
		raw = make([]byte, 0, want)
	}
	var err error
	switch codec {
	case CompressNone:
		raw = append(raw, body...)
	case CompressZstd:
		raw, err = sn.dec.DecodeAll(body, raw)
	case CompressS2:
		var dl int
		if dl, err = s2.DecodedLen(body); err == nil && dl != want {
			err = fmt.Errorf("s2 length %d", dl)
		}
		if err == nil {
			raw, err = s2.Decode(raw[:want], body)
		}
	default:
		return nil, fmt.Errorf("%w: snapshot codec %d", ErrMalformed, codec)
	}
	if err != nil {
		if len(raw) > sn.max {
			return nil, fmt.Errorf("%w: %w", ErrSnapshotTooLarge, err)
		}
		return nil, fmt.Errorf("%w: snapshot %v", ErrMalformed, err)
	}
	if len(raw) != want {
		return nil, fmt.Errorf("%w: snapshot decoded to %d bytes, declared %d", ErrMalformed, len(raw), want)
	}
	if cap(raw) <= sn.max {
		sn.raw = raw
	}
	return raw, nil
}

// InstallSnapshot decompresses msg and writes it into the store (the
// declared size checked against SnapshotConfig.MaxBytes before anything is
// allocated, the encoding validated whole before the store is touched),
// returning its frame; the store is unchanged on any error (ErrMalformed,
// ErrSnapshotTooLarge). It implements SnapshotSink. The caller (ClientLink) then installs
// the frame into the client.
func (sn *Snapshotter) InstallSnapshot(msg []byte) (uint32, error) {
	raw, err := sn.decompress(msg)
	if err != nil {
		return 0, err
	}
	f, idx, gen, err := readSnapshot(sn.store, raw, sn.idx, sn.gen)
	sn.idx, sn.gen = idx, gen
	return f, err
}

// stateAt makes the scratch store the state at the end of frame: a copy
// of the store with the log's frames frame+1..newest undone, records
// newest first, captures newest first — a rewind on a copy. A capture
// whose entity is not live in the copy is skipped, as a rewind skips it.
func (sn *Snapshotter) stateAt(frame uint32) error {
	l := sn.log
	if l.open != nil {
		return ErrFrameOpen
	}
	if l.replaying {
		return ErrReplayPending
	}
	copyStoreAll(sn.scratch, sn.store)
	if !l.held || frame >= l.head {
		return nil
	}
	if frame+1 < l.oldest() {
		return ErrAgedOut
	}
	for f := l.head; f > frame; f-- {
		s := l.slotFor(f)
		for r := len(s.sender) - 1; r >= 0; r-- {
			span := s.arena[s.priOff[r] : s.priOff[r]+s.priLen[r]]
			for len(span) > 0 {
				t, data, rest := lastCapture(span)
				span = rest
				_ = sn.scratch.RestoreComponent(t.Entity, t.Component, data)
			}
		}
	}
	return nil
}

// copyStoreAll makes dst (same layout and capacity) an exact copy of src.
func copyStoreAll(dst, src *Store) {
	for c := range src.cols {
		copy(dst.cols[c], src.cols[c])
	}
	copy(dst.gen, src.gen)
	copy(dst.alive, src.alive)
	copy(dst.owner, src.owner)
	copy(dst.free, src.free)
	dst.fresh, dst.freeHead, dst.freeLen, dst.live, dst.retired = src.fresh, src.freeHead, src.freeLen, src.live, src.retired
}

// SnapshotSource produces a peer's compressed snapshot of the end of a
// final frame, for ServerLink; *Snapshotter implements it. The result is
// appended to dst.
type SnapshotSource interface {
	AppendSnapshot(dst []byte, peer Sender, frame uint32) ([]byte, error)
}

// SnapshotSink installs a compressed snapshot into the client's state and
// returns its frame, for ClientLink; *Snapshotter implements it. It must
// leave the state unchanged on error and must not retain msg.
type SnapshotSink interface {
	InstallSnapshot(msg []byte) (uint32, error)
}

var (
	_ SnapshotSource = (*Snapshotter)(nil)
	_ SnapshotSink   = (*Snapshotter)(nil)
)
