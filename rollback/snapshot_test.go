package rollback

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// gameComponents are position/velocity/health-like components for the
// snapshot tests and benchmarks.
var gameComponents = []ComponentSpec{
	{Name: "pos", Size: 12},
	{Name: "vel", Size: 12},
	{Name: "hp", Size: 4},
	{Name: "flags", Size: 1},
}

// gameStore builds a store of n live entities (capacity n+n/8), realistic
// content: positions spread over a map (random low bytes, small high
// bytes), velocities zero for two thirds of the entities (idle), health
// mostly full, a few flags; every eighth entity destroyed and the slot
// re-created, so generations vary and holes exist.
func gameStore(tb testing.TB, n int, seed uint64) *Store {
	tb.Helper()
	s, err := NewStore(StoreConfig{Components: gameComponents, Capacity: n + n/8 + 1})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	var ents []Entity
	for i := range n + n/8 {
		e, err := s.Create(Sender(i % 5))
		if err != nil {
			tb.Fatal(err)
		}
		ents = append(ents, e)
	}
	for i := 0; i < len(ents); i += 8 {
		if err := s.Destroy(ents[i]); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range s.gen {
		e, ok := s.EntityAt(uint32(i))
		if !ok {
			continue
		}
		pos, _ := s.Component(e, 0)
		for k := 0; k < 12; k += 4 {
			binary.LittleEndian.PutUint32(pos[k:], uint32(rng.IntN(4096)))
		}
		if rng.IntN(3) == 0 {
			vel, _ := s.Component(e, 1)
			for k := 0; k < 12; k += 4 {
				binary.LittleEndian.PutUint32(vel[k:], uint32(rng.Int32N(64)-32))
			}
		}
		hp, _ := s.Component(e, 2)
		binary.LittleEndian.PutUint32(hp, 100)
		if rng.IntN(10) == 0 {
			binary.LittleEndian.PutUint32(hp, uint32(rng.IntN(100)))
		}
		fl, _ := s.Component(e, 3)
		fl[0] = byte(rng.IntN(4))
	}
	return s
}

func emptyLike(tb testing.TB, s *Store) *Store {
	tb.Helper()
	d, err := NewStore(StoreConfig{Components: gameComponents, Capacity: s.Capacity()})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// Round trip across sizes: the decoded store has the same live slots,
// generations, owners and column bytes (snapshot() compares them all,
// dead slots' zeroed bytes included) and checksum; Create afterwards
// takes a free slot, never a restored one.
func TestSnapshotRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, 1000, 10000} {
		src := gameStore(t, n, uint64(n))
		raw := appendStoreSnapshot(nil, src, 4242, 0, nil)
		dst := emptyLike(t, src)
		if _, err := dst.Create(3); err != nil { // overwritten by the install
			t.Fatal(err)
		}
		f, err := readStoreSnapshot(dst, raw)
		if err != nil || f != 4242 {
			t.Fatalf("n=%d: frame %d, %v", n, f, err)
		}
		for i := range src.gen { // dead slots' generations are the receiver's own
			if src.alive[i] && dst.gen[i] != src.gen[i] {
				t.Fatalf("n=%d slot %d: generation %d, want %d", n, i, dst.gen[i], src.gen[i])
			}
		}
		for c := range src.cols {
			if !bytes.Equal(src.cols[c], dst.cols[c]) {
				t.Fatalf("n=%d: column %d differs", n, c)
			}
		}
		if !slices.Equal(src.alive, dst.alive) || !bytes.Equal(owners(src), owners(dst)) || src.Checksum() != dst.Checksum() || dst.Len() != src.Len() {
			t.Fatalf("n=%d: liveness, owners or checksum differ", n)
		}
		if e, err := dst.Create(1); err == nil && src.alive[e.Index()] {
			t.Fatalf("n=%d: Create took restored slot %v", n, e)
		}
	}
}

func owners(s *Store) []byte {
	b := make([]byte, len(s.owner))
	for i, o := range s.owner {
		if s.alive[i] {
			b[i] = byte(o)
		}
	}
	return b
}

// Compressed round trip for every codec, through Snapshotter on both
// sides (server with no log: the store's own frame), with buffers reused
// across snapshots.
func TestSnapshotCompressRoundTrip(t *testing.T) {
	for _, codec := range []Compression{CompressNone, CompressZstd, CompressS2} {
		for _, n := range []int{0, 50, 5000} {
			src := gameStore(t, n, 9)
			enc, err := NewSnapshotter(src, nil, SnapshotConfig{Compression: codec})
			if err != nil {
				t.Fatal(err)
			}
			dst := emptyLike(t, src)
			dec, err := NewSnapshotter(dst, nil, SnapshotConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var msg []byte
			for round := range 2 {
				if msg, err = enc.AppendSnapshot(msg[:0], 1, uint32(round)); err != nil {
					t.Fatal(err)
				}
				f, err := dec.InstallSnapshot(msg)
				if err != nil || f != uint32(round) {
					t.Fatalf("codec %d n=%d: %d %v", codec, n, f, err)
				}
				if src.Checksum() != dst.Checksum() || !bytes.Equal(snapshot(src), snapshotLive(dst, src)) {
					t.Fatalf("codec %d n=%d: stores differ", codec, n)
				}
			}
			t.Logf("codec %d, %d entities: %d raw → %d bytes", codec, n, len(appendStoreSnapshot(nil, src, 0, 1, nil)), len(msg))
		}
	}
}

// snapshotLive is snapshot(got) with the dead slots' generations taken
// from want (a snapshot does not carry them).
func snapshotLive(got, want *Store) []byte {
	saved := append([]uint32(nil), got.gen...)
	for i := range got.gen {
		if !got.alive[i] {
			got.gen[i] = want.gen[i]
		}
	}
	b := snapshot(got)
	copy(got.gen, saved)
	return b
}

// A scope narrows the snapshot to the entities it admits.
func TestSnapshotScope(t *testing.T) {
	src := gameStore(t, 100, 1)
	mine := func(peer Sender, _ Entity, owner Sender) bool { return owner == peer }
	dst := emptyLike(t, src)
	if _, err := readStoreSnapshot(dst, appendStoreSnapshot(nil, src, 1, 2, mine)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range src.gen {
		want := src.alive[i] && src.owner[i] == 2
		if dst.alive[i] != want {
			t.Fatalf("slot %d: alive %v, want %v", i, dst.alive[i], want)
		}
		if want {
			n++
		}
	}
	if n == 0 || dst.Len() != n {
		t.Fatalf("%d entities, want %d", dst.Len(), n)
	}
}

// Hostile input is refused with a sentinel, the store untouched, never a
// panic: every truncation, trailing bytes, bad indexes and generations, a
// mismatched layout, an unknown codec, a declared size over the cap, a
// decompression bomb, and a stream that decodes to another size.
func TestSnapshotHostile(t *testing.T) {
	src := gameStore(t, 40, 2)
	raw := appendStoreSnapshot(nil, src, 7, 0, nil)
	dst := emptyLike(t, src)
	before := snapshot(dst)
	refuse := func(what string, b []byte, want error) {
		t.Helper()
		if _, err := readStoreSnapshot(dst, b); !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
		if !bytes.Equal(snapshot(dst), before) {
			t.Fatalf("%s: store changed", what)
		}
	}
	for n := range len(raw) {
		refuse("truncated", raw[:n], ErrMalformed)
	}
	refuse("trailing", append(append([]byte(nil), raw...), 0), ErrMalformed)

	// Header: version, frame, component count and sizes, entity count.
	hdr := 1 + 4 + 1 + len(gameComponents)
	bad := func(mut func(b []byte) []byte) []byte { return mut(append([]byte(nil), raw...)) }
	refuse("version", bad(func(b []byte) []byte { b[0] = 9; return b }), ErrMalformed)
	refuse("layout", bad(func(b []byte) []byte { b[6] = 13; return b }), ErrMalformed)
	small, _ := NewStore(StoreConfig{Components: gameComponents, Capacity: 8})
	if _, err := readStoreSnapshot(small, raw); !errors.Is(err, ErrMalformed) {
		t.Fatalf("more entities than capacity: %v", err)
	}
	// First handle: index delta, generation.
	cnt := hdr + 1 // 36 live entities: one varint byte
	refuse("index", bad(func(b []byte) []byte { b[cnt] = 0x7f; return b }), ErrMalformed)
	refuse("generation 0", bad(func(b []byte) []byte { b[cnt+1] = 0; return b }), ErrMalformed)
	huge := append(append(append([]byte(nil), raw[:cnt]...), 0, 0x80, 0x80, 0x80, 0x80, 0x10), raw[cnt+2:]...)
	refuse("generation > 2^32", huge, ErrMalformed)
	overflow := append(append(append([]byte(nil), raw[:cnt]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), raw[cnt+1:]...)
	refuse("index overflow", overflow, ErrMalformed)

	// Compressed: declared size, codec, bombs.
	sn, err := NewSnapshotter(dst, nil, SnapshotConfig{MaxBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	install := func(what string, msg []byte, want error) {
		t.Helper()
		if _, err := sn.InstallSnapshot(msg); !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
		if !bytes.Equal(snapshot(dst), before) {
			t.Fatalf("%s: store changed", what)
		}
	}
	install("empty", nil, ErrMalformed)
	install("declared 1 GiB", binary.AppendUvarint([]byte{byte(CompressNone)}, 1<<30), ErrSnapshotTooLarge)
	install("codec", binary.AppendUvarint([]byte{9}, 4), ErrMalformed)
	zeros := make([]byte, 1<<20)
	for _, codec := range []Compression{CompressZstd, CompressS2} {
		big, _ := NewSnapshotter(src, nil, SnapshotConfig{Compression: codec})
		bomb := big.compress(nil, zeros)
		install("bomb as declared", bomb, ErrSnapshotTooLarge)
		// The same stream with a small declared size: must not decode past it.
		lie := append(binary.AppendUvarint([]byte{byte(codec)}, 100), bomb[1+binary.PutUvarint(make([]byte, 10), 1<<20):]...)
		install("bomb under a small declared size", lie, ErrMalformed)
		good := big.compress(nil, raw)
		install("truncated stream", good[:len(good)-3], ErrMalformed)
	}
	if _, err := sn.InstallSnapshot((&Snapshotter{cfg: SnapshotConfig{Compression: CompressNone}}).compress(nil, raw)); err != nil {
		t.Fatalf("good snapshot after the hostile ones: %v", err)
	}
}

// Restore places entities at exact handles and keeps the free queue sound.
func TestStoreRestore(t *testing.T) {
	s, _ := NewStore(StoreConfig{Components: gameComponents, Capacity: 4})
	s.Clear()
	if err := s.Restore(NewEntity(2, 7), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(NewEntity(2, 7), 1); !errors.Is(err, ErrSlotTaken) {
		t.Fatalf("taken: %v", err)
	}
	if err := s.Restore(NewEntity(4, 1), 1); !errors.Is(err, ErrStaleEntity) {
		t.Fatalf("beyond capacity: %v", err)
	}
	if err := s.Restore(NewEntity(1, 0), 1); !errors.Is(err, ErrStaleEntity) {
		t.Fatalf("generation 0: %v", err)
	}
	if err := s.Restore(NewEntity(0, 3), 2); err != nil { // below fresh: taken off the free queue
		t.Fatal(err)
	}
	var got []uint32
	for {
		e, err := s.Create(0)
		if err != nil {
			break
		}
		got = append(got, e.Index())
	}
	if len(got) != 2 || got[0] != 3 && got[1] != 3 || s.Len() != 4 {
		t.Fatalf("created slots %v, live %d", got, s.Len())
	}
	if o, _ := s.Owner(NewEntity(2, 7)); o != 1 {
		t.Fatalf("owner %v", o)
	}
}

// FuzzSnapshotDecode: any bytes, as a compressed snapshot message or as a
// raw encoding, are refused with ErrMalformed or ErrSnapshotTooLarge or
// installed — never a panic; an installed store re-encodes to exactly
// the bytes it was read from.
func FuzzSnapshotDecode(f *testing.F) {
	src, _ := NewStore(StoreConfig{Components: gameComponents, Capacity: 16})
	for i := range 10 {
		e, _ := src.Create(Sender(i))
		v, _ := src.Component(e, 0)
		v[0] = byte(i)
		if i%3 == 0 {
			_ = src.Destroy(e)
		}
	}
	raw := appendStoreSnapshot(nil, src, 5, 0, nil)
	f.Add(raw)
	for _, c := range []Compression{CompressNone, CompressZstd, CompressS2} {
		sn, _ := NewSnapshotter(src, nil, SnapshotConfig{Compression: c})
		m, _ := sn.AppendSnapshot(nil, 0, 5)
		f.Add(m)
	}
	dst, _ := NewStore(StoreConfig{Components: gameComponents, Capacity: 16})
	sn, err := NewSnapshotter(dst, nil, SnapshotConfig{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := sn.InstallSnapshot(b); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSnapshotTooLarge) {
			t.Fatalf("compressed: %v", err)
		}
		fr, err := readStoreSnapshot(dst, b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("raw: %v", err)
			}
			return
		}
		if again := appendStoreSnapshot(nil, dst, fr, 0, nil); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
		}
	})
}
