package rollback

import (
	"bytes"
	"testing"

	"github.com/tickwire/tickwire/wire"
)

// This file holds the replication tests' fixtures: a recording
// StreamTarget, a log filler, a slow reference slice encoder (the oracle
// for packs), and a rig joining transport.Channels over the simulated link.

// recTarget is a StreamTarget that records every confirmed frame and checks
// they come in order. own are the local peer's "unconfirmed inputs".
type recTarget struct {
	tb      testing.TB
	peer    Sender
	ready   bool
	frames  map[uint32][]Record
	last    uint32 // newest frame confirmed
	started bool
	full    uint32 // Confirm refuses frames above this with ErrTooFarAhead (0: never)
	own     []Input
	noCopy  bool // keep nothing (benchmarks)
	count   int
}

func newRecTarget(tb testing.TB, peer Sender) *recTarget {
	return &recTarget{tb: tb, peer: peer, ready: true, frames: map[uint32][]Record{}}
}

func (t *recTarget) Peer() Sender { return t.peer }
func (t *recTarget) Ready() bool  { return t.ready }
func (t *recTarget) PendingInputs(dst []Input) []Input {
	return append(dst, t.own...)
}

func (t *recTarget) Confirm(f uint32, recs []Record) error {
	if t.full != 0 && f > t.full {
		return ErrTooFarAhead
	}
	if t.started && f != t.last+1 {
		t.tb.Fatalf("frame %d confirmed after %d", f, t.last)
	}
	t.started, t.last = true, f
	t.count++
	if t.noCopy {
		return nil
	}
	cp := make([]Record, len(recs))
	for i, r := range recs {
		r.Payload = bytes.Clone(r.Payload)
		cp[i] = r
	}
	t.frames[f] = cp
	return nil
}

// logRecords returns frame f's records as peer p is owed them: every
// record but p's own and those filter rejects.
func logRecords(tb testing.TB, l *ActionLog, f uint32, p Sender, filter ScopeFilter) []Record {
	tb.Helper()
	v := mustFrame(tb, l, f)
	var out []Record
	for i := range v.Len() {
		r := v.Record(i)
		if r.Sender == p || (filter != nil && !filter.Relevant(p, r)) {
			continue
		}
		r.Payload = bytes.Clone(r.Payload)
		r.PriorLen = 0
		out = append(out, r)
	}
	return out
}

func sameRecords(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Sender != b[i].Sender || a[i].Type != b[i].Type || a[i].Entity != b[i].Entity || !bytes.Equal(a[i].Payload, b[i].Payload) {
			return false
		}
	}
	return true
}

// oracleSlice encodes the slice of frames [first, last] for p the slow,
// obvious way: header, then for every frame with records its gap, count
// and records.
func oracleSlice(tb testing.TB, l *ActionLog, p Sender, filter ScopeFilter, first, last uint32) []byte {
	tb.Helper()
	var body []byte
	entries := 0
	prev := int64(first) - 1
	for f := first; ; f++ {
		recs := logRecords(tb, l, f, p, filter)
		if len(recs) > 0 {
			body = wire.AppendUvarint(body, uint64(int64(f)-prev-1))
			body = wire.AppendUvarint(body, uint64(len(recs)))
			for _, r := range recs {
				body = wire.AppendActionRecord(body, wire.ActionRecord{Sender: uint8(r.Sender), Type: uint16(r.Type), Entity: uint64(r.Entity), Payload: r.Payload})
			}
			entries++
			prev = int64(f)
		}
		if f == last {
			break
		}
	}
	h := wire.AppendActionSliceHeader(nil, wire.ActionSliceHeader{FirstFrame: first, Frames: int(last-first) + 1, Entries: entries})
	return append(h, body...)
}

// fillFrame begins frame f on w's log, executes the actions act gives, and
// closes it.
func fillFrame(tb testing.TB, w *world, f uint32, act func()) {
	tb.Helper()
	w.begin(tb, f)
	act()
	w.close(tb)
}
