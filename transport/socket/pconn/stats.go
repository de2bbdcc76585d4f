package pconn

import (
	"sync/atomic"

	"github.com/tickwire/tickwire/transport/socket"
)

// Stats is a snapshot of an adapter's counters. Counters only grow.
// Reading them is a handful of atomic loads, safe from any goroutine.
type Stats struct {
	// DatagramsIn and BytesIn count datagrams handed to callers by
	// ReadBatch and TryReadBatch and their bytes (after truncation).
	DatagramsIn, BytesIn uint64
	// DatagramsOut and BytesOut count datagrams the PacketConn's WriteTo
	// accepted and their bytes.
	DatagramsOut, BytesOut uint64
	// Truncated counts datagrams cut to MaxDatagramSize when received or to
	// the caller's buffer when read.
	Truncated uint64
	// OversizeRejected counts WriteBatch messages refused with
	// socket.ErrTooLarge.
	OversizeRejected uint64
	// ReadErrors counts ReadFrom errors other than the PacketConn being
	// closed; each was returned by a read call.
	ReadErrors uint64
	// Unaddressable counts datagrams dropped because their source address
	// was not an IP and port.
	Unaddressable uint64
	// Queued is the number of datagrams received and not yet read.
	Queued int
	// QueueLen is the ring's size in datagrams (Config.QueueLen).
	QueueLen int
}

// Stats returns a snapshot of the adapter's counters.
func (c *Conn) Stats() Stats {
	return Stats{
		DatagramsIn:      c.rd.datagrams.Load(),
		BytesIn:          c.rd.bytes.Load(),
		DatagramsOut:     c.wr.datagrams.Load(),
		BytesOut:         c.wr.bytes.Load(),
		Truncated:        c.rd.truncated.Load(),
		OversizeRejected: c.wr.oversize.Load(),
		ReadErrors:       c.rcv.errors.Load(),
		Unaddressable:    c.rcv.unaddressable.Load(),
		Queued:           len(c.full),
		QueueLen:         cap(c.full),
	}
}

// readCounters are updated by the reading goroutine only.
type readCounters struct {
	datagrams, bytes, truncated atomic.Uint64
	_                           [40]byte
}

// count adds the datagrams of one read call.
func (r *readCounters) count(msgs []socket.Message) {
	var nbytes uint64
	for i := range msgs {
		nbytes += uint64(msgs[i].N)
	}
	r.datagrams.Add(uint64(len(msgs)))
	r.bytes.Add(nbytes)
}

// writeCounters are updated by the writing goroutine only.
type writeCounters struct {
	datagrams, bytes, oversize atomic.Uint64
	_                          [40]byte
}

// recvCounters are updated by the receiving goroutine only.
type recvCounters struct {
	errors, unaddressable atomic.Uint64
}
