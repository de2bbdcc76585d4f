package ackmap

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// BenchmarkSendAck is the per-datagram cost of the ack bookkeeping on both
// sides of a steady lossless stream: the sender hands out a seq with a
// one-datagram record, the receiver records it and builds its ack header,
// the sender applies the header and confirms the record. Target ≤ 30 ns/op,
// 0 allocs/op.
func BenchmarkSendAck(b *testing.B) {
	tr, _ := NewSendTracker(Config{}, 0)
	var h RecvHistory
	evs := make([]Event, 0, 64)
	var now time.Duration
	b.ReportAllocs()
	for b.Loop() {
		now += time.Microsecond
		var seq wire.Seq
		seq, _, evs = tr.SendOne(evs[:0], now, 1)
		h.Record(seq)
		ack, bits, _ := h.Ack()
		evs, _ = tr.OnAck(evs[:0], now, ack, bits)
		if len(evs) != 2 || evs[1].Kind != RecordConfirmed {
			b.Fatalf("events %v", kinds(evs))
		}
	}
}

// BenchmarkSendAckDelayed keeps 32 datagrams in flight (acks arrive a
// window behind), as on a path with RTT ≈ 32 send intervals; every 10th
// datagram is lost and resolved by the ack bits.
func BenchmarkSendAckDelayed(b *testing.B) {
	tr, _ := NewSendTracker(Config{}, 0)
	var h RecvHistory
	evs := make([]Event, 0, 64)
	var now time.Duration
	var i int
	type hdr struct {
		ack  wire.Seq
		bits uint32
	}
	var ring [32]hdr
	b.ReportAllocs()
	for b.Loop() {
		now += time.Microsecond
		var seq wire.Seq
		seq, _, evs = tr.SendOne(evs[:0], now, 1)
		if i%10 != 0 {
			h.Record(seq)
		}
		ack, bits, _ := h.Ack()
		old := ring[i%32]
		ring[i%32] = hdr{ack, bits}
		if i >= 32 {
			evs, _ = tr.OnAck(evs[:0], now, old.ack, old.bits)
		}
		i++
	}
	if tr.PendingCount() > 64 {
		b.Fatalf("pending %d", tr.PendingCount())
	}
}

// BenchmarkFragmentRecord is the cost of one 16-fragment record: open, 16
// sends, seal, one ack header that confirms all of it.
func BenchmarkFragmentRecord(b *testing.B) {
	tr, _ := NewSendTracker(Config{}, 0)
	evs := make([]Event, 0, 64)
	var now time.Duration
	b.ReportAllocs()
	for b.Loop() {
		now += time.Microsecond
		id := tr.Open(7)
		var s wire.Seq
		for range 16 {
			s, evs = tr.Send(evs[:0], now, id)
		}
		evs = tr.Seal(evs[:0], id)
		evs, _ = tr.OnAck(evs[:0], now, s, 0x7FFF)
		if evs[len(evs)-1].Kind != RecordConfirmed {
			b.Fatalf("record not confirmed: %v", kinds(evs))
		}
	}
}

// BenchmarkRecvHistory is the receive-side cost per datagram.
func BenchmarkRecvHistory(b *testing.B) {
	var h RecvHistory
	var seq wire.Seq
	b.ReportAllocs()
	for b.Loop() {
		seq++
		if h.Record(seq) != RecvFresh {
			b.Fatal("not fresh")
		}
		h.Ack()
	}
}
