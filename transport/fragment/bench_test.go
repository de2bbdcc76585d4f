package fragment

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

const (
	benchMTU     = 1200
	benchMsgSize = 50_000
)

// BenchmarkSplitAdd: the whole path of a 50 KB message at MTU 1200 — each
// piece encoded with AppendPiece into a datagram buffer, decoded with
// wire.ParseFragmentFrame and added to the Assembler, which delivers the
// message on the last piece. Bytes are message bytes.
func BenchmarkSplitAdd(b *testing.B) {
	ps := PieceSize(benchMTU)
	msg, mode := frameOfLen(b, benchMsgSize, 1)
	n, _ := Count(len(msg), ps)
	a := newAssembler(b, AssemblerConfig{MTU: benchMTU})
	dgram := make([]byte, 0, benchMTU)
	var id wire.Seq
	feed(b, a, split(b, msg, ps, mode, id), 0) // warm up: allocate the buffer
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for i := 0; b.Loop(); i++ {
		id++
		var got []byte
		for k := range n {
			dgram = AppendPiece(dgram[:0], msg, ps, mode, id, k)
			f, _, err := wire.ParseFragmentFrame(dgram)
			if err != nil {
				b.Fatal(err)
			}
			if got, err = a.Add(f, time.Duration(i)); err != nil {
				b.Fatal(err)
			}
		}
		if len(got) != len(msg) || got[len(got)-1] != msg[len(msg)-1] {
			b.Fatalf("delivered %d bytes, want %d", len(got), len(msg))
		}
	}
}

// BenchmarkSplit: AppendPiece of every piece of a 50 KB message at MTU
// 1200 into a reused datagram buffer.
func BenchmarkSplit(b *testing.B) {
	ps := PieceSize(benchMTU)
	msg, mode := frameOfLen(b, benchMsgSize, 1)
	n, _ := Count(len(msg), ps)
	dgram := make([]byte, 0, benchMTU)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		for k := range n {
			dgram = AppendPiece(dgram[:0], msg, ps, mode, 1, k)
		}
		if len(dgram) == 0 {
			b.Fatal("empty piece")
		}
	}
}

// BenchmarkAddPiece: the cost of Add per piece (1174-byte pieces of 50 KB
// messages at MTU 1200). "sequential" completes one message at a time;
// "interleaved-8" keeps MaxPartial (8) messages in progress, adding one
// piece of each in turn, so every Add scans a full table.
func BenchmarkAddPiece(b *testing.B) {
	ps := PieceSize(benchMTU)
	msg, mode := frameOfLen(b, benchMsgSize, 1)
	pieces := split(b, msg, ps, mode, 0)
	for _, bc := range []struct {
		name     string
		inFlight int
	}{{"sequential", 1}, {"interleaved-8", DefaultMaxPartial}} {
		b.Run(bc.name, func(b *testing.B) {
			a := newAssembler(b, AssemblerConfig{MTU: benchMTU})
			var base wire.Seq
			var tick time.Duration
			k, m := 0, 0 // next piece index, next message of the group
			delivered := 0
			b.ReportAllocs()
			b.SetBytes(int64(ps))
			for b.Loop() {
				f := pieces[k]
				f.MessageID = base + wire.Seq(m)
				got, err := a.Add(f, tick)
				if err != nil {
					b.Fatal(err)
				}
				if got != nil {
					delivered++
				}
				if m++; m == bc.inFlight {
					m = 0
					if k++; k == len(pieces) {
						k = 0
						base += wire.Seq(bc.inFlight)
						tick++
					}
				}
			}
			if a.Stats().Completed != uint64(delivered) || a.Partials() > bc.inFlight {
				b.Fatalf("completed %d, delivered %d, %d partials", a.Stats().Completed, delivered, a.Partials())
			}
		})
	}
}
