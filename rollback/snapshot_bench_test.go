package rollback

import (
	"testing"
)

// BenchmarkSnapshotCompress measures the codecs on gameStore(10,000):
// encode (appendStoreSnapshot + compress, buffers reused) and decode
// (decompress + readStoreSnapshot into a store), MB/s of the raw encoding,
// ratio = raw / compressed.
func BenchmarkSnapshotCompress(b *testing.B) {
	src := gameStore(b, 10000, 1)
	for _, c := range []struct {
		name  string
		codec Compression
	}{{"zstd", CompressZstd}, {"s2", CompressS2}, {"none", CompressNone}} {
		enc, err := NewSnapshotter(src, nil, SnapshotConfig{Compression: c.codec})
		if err != nil {
			b.Fatal(err)
		}
		raw := len(appendStoreSnapshot(nil, src, 1, 0, nil))
		msg, _ := enc.AppendSnapshot(nil, 0, 1)
		b.Run(c.name+"/encode", func(b *testing.B) {
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			for b.Loop() {
				msg, _ = enc.AppendSnapshot(msg[:0], 0, 1)
			}
			b.ReportMetric(float64(raw)/float64(len(msg)), "ratio")
			b.ReportMetric(float64(len(msg)), "bytes")
		})
		dst := emptyLike(b, src)
		dec, err := NewSnapshotter(dst, nil, SnapshotConfig{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dec.InstallSnapshot(msg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(raw)/float64(len(msg)), "ratio")
		})
	}
}
