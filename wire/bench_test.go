package wire

import (
	"fmt"
	"testing"
)

// Benchmarks of the per-packet codecs. Each loop checks its output, so a
// benchmark that got faster by breaking the codec fails instead.
//
//	go test -run '^$' -bench . -benchmem ./wire

func BenchmarkChannelHeader(b *testing.B) {
	cases := []struct {
		name string
		h    ChannelHeader
	}{
		{"steady", ChannelHeader{Seq: 5000, Ack: 4990, AckBits: 0xFFFFFFFF}},
		{"lossy", ChannelHeader{Seq: 5000, Ack: 4990, AckBits: 0xFFFF7FBF}},
		{"worst", ChannelHeader{Seq: 5000, Ack: 900, AckBits: 0x01020304}},
	}
	for _, c := range cases {
		buf := make([]byte, 0, ChannelHeaderMaxLen)
		want := ChannelHeaderLen(c.h)
		b.Run(c.name+"/encode+decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(want))
			h := c.h
			for b.Loop() {
				enc := AppendChannelHeader(buf[:0], h)
				got, n, err := ParseChannelHeader(enc)
				if err != nil || n != want || got != h {
					b.Fatalf("round trip: %+v %d %v", got, n, err)
				}
				h.Seq++ // vary the input so nothing is hoisted
				h.Ack++
			}
		})
		b.Run(c.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(want))
			h := c.h
			for b.Loop() {
				if enc := AppendChannelHeader(buf[:0], h); len(enc) != want {
					b.Fatal(len(enc))
				}
				h.Seq++
				h.Ack++
			}
		})
		enc := AppendChannelHeader(nil, c.h)
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(want))
			for b.Loop() {
				if got, n, err := ParseChannelHeader(enc); err != nil || n != want || got != c.h {
					b.Fatal(got, n, err)
				}
			}
		})
	}
}

func BenchmarkUvarint(b *testing.B) {
	for _, v := range []uint64{100, 1 << 13, 1 << 34, 1 << 63} {
		n := UvarintLen(v)
		buf := make([]byte, 0, MaxVarintLen)
		b.Run(fmt.Sprintf("encode/%dB", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if enc := AppendUvarint(buf[:0], v); len(enc) != n {
					b.Fatal(len(enc))
				}
			}
		})
		enc := AppendUvarint(nil, v)
		b.Run(fmt.Sprintf("decode/%dB", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if got, k, err := Uvarint(enc); err != nil || k != n || got != v {
					b.Fatal(got, k, err)
				}
			}
		})
	}
}

func BenchmarkVarint(b *testing.B) {
	buf := make([]byte, 0, MaxVarintLen)
	b.ReportAllocs()
	for b.Loop() {
		enc := AppendVarint(buf[:0], -1000)
		if v, _, err := Varint(enc); err != nil || v != -1000 {
			b.Fatal(v, err)
		}
	}
}

func BenchmarkActionRecord(b *testing.B) {
	rec := ActionRecord{Sender: 3, Type: 42, Entity: 0x0000000500000123, Payload: []byte("move:+1,-1,0,jump")}
	n := ActionRecordLen(rec)
	buf := make([]byte, 0, n)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(n))
		for b.Loop() {
			if enc := AppendActionRecord(buf[:0], rec); len(enc) != n {
				b.Fatal(len(enc))
			}
		}
	})
	enc := AppendActionRecord(nil, rec)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(n))
		for b.Loop() {
			got, k, err := ParseActionRecord(enc)
			if err != nil || k != n || got.Entity != rec.Entity || len(got.Payload) != len(rec.Payload) {
				b.Fatal(got, k, err)
			}
		}
	})
}

// BenchmarkActionSlice packs and unpacks a realistic slice: 8 frames of 6
// records each, about 500 bytes.
func BenchmarkActionSlice(b *testing.B) {
	var recs [6]ActionRecord
	for i := range recs {
		recs[i] = ActionRecord{Sender: uint8(i), Type: uint16(10 + i), Entity: uint64(i) << 32, Payload: []byte("0123456789")}
	}
	buf := make([]byte, 0, 2048)
	pack := func() []byte {
		w := NewActionSliceWriter(buf[:0], 1000)
		for f := uint32(1000); f < 1008; f++ {
			_ = w.BeginFrame(f)
			for _, r := range recs {
				_ = w.AppendRecord(r)
			}
		}
		out, err := w.Finish(1007)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	enc := append([]byte(nil), pack()...)
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if out := pack(); len(out) != len(enc) {
				b.Fatal(len(out))
			}
		}
	})
	b.Run("parse+iterate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			s, n, err := ParseActionSlice(enc)
			if err != nil || n != len(enc) {
				b.Fatal(err)
			}
			it := s.Iter()
			records := 0
			for _, _, ok := it.NextFrame(); ok; _, _, ok = it.NextFrame() {
				for _, ok := it.NextRecord(); ok; _, ok = it.NextRecord() {
					records++
				}
			}
			if records != 48 {
				b.Fatal(records)
			}
		}
	})
}

// BenchmarkFragmentFrame measures the fragment header alone (empty
// payload) and a full piece of a 1200-byte datagram (header plus a
// 1174-byte payload copy on encode).
func BenchmarkFragmentFrame(b *testing.B) {
	full := FramePayloadRoom(FrameFragment, 1200-SessionHeaderLen-ChannelHeaderMaxLen)
	for _, size := range []int{0, full} {
		payload := make([]byte, size)
		f := FragmentFrame{Mode: FrameUnreliable, MessageID: 77, Index: 3, Count: 9, Payload: payload}
		n := FragmentFrameLen(f)
		buf := make([]byte, 0, n)
		name := "header"
		if size > 0 {
			name = "mtu"
		}
		b.Run(name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if enc := AppendFragmentFrame(buf[:0], f); len(enc) != n {
					b.Fatal(len(enc))
				}
			}
		})
		enc := AppendFragmentFrame(nil, f)
		b.Run(name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				got, k, err := ParseFragmentFrame(enc)
				if err != nil || k != n || got.Index != 3 || got.Count != 9 || len(got.Payload) != size {
					b.Fatal(got.Index, k, err)
				}
			}
		})
	}
}

// BenchmarkSessionDatagram is the receive hot path up to the first frame:
// kind, session header, channel header, then a reliable frame.
func BenchmarkSessionDatagram(b *testing.B) {
	enc := appendDatagram(nil, exampleDatagram())
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		k, _, err := ParsePacketKind(enc)
		if err != nil || k != KindSession {
			b.Fatal(err)
		}
		sh, off, err := ParseSessionHeader(enc)
		if err != nil || sh.Secret != 0x8877665544332211 {
			b.Fatal(err)
		}
		_, n, err := ParseChannelHeader(enc[off:])
		if err != nil {
			b.Fatal(err)
		}
		f, _, err := ParseReliableFrame(enc[off+n:])
		if err != nil || len(f.Payload) != 3 {
			b.Fatal(err)
		}
	}
}
