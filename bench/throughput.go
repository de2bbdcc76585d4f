package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"runtime"
	"sync/atomic"
	"time"
)

// Throughput profiles.
const (
	// ProfilePPS is the packets-per-second profile: Size-byte unreliable
	// messages sent one way as fast as the transport accepts them for
	// Duration, counted at the receiver. Tickwire runs it twice, with
	// unreliable and with reliable-ordered messages; kcp has no unreliable
	// mode, so its row is reliable. The raw transport, one sendto and one
	// recvfrom per datagram, is the floor.
	ProfilePPS = "pps"
	// ProfileBulk is the bulk-transfer profile: Bytes sent one way as
	// BulkChunk-byte reliable-ordered messages, the sending bounded by
	// Duration; every chunk is checked at the receiver (order and CRC-32C).
	ProfileBulk = "bulk"
)

// Profiles lists the profile names, in the default suite's order; load
// and actions, last, are not in the default suite.
var Profiles = []string{ProfileEcho, ProfilePPS, ProfileBulk, ProfileLoad, ProfileActions}

// NoLatency is the latency kind of the throughput profiles: they measure
// no latency, and their latency fields are zero.
const NoLatency = "none"

// Throughput profile defaults and limits.
const (
	// DefaultDuration is how long pps sends, and how long bulk may send.
	DefaultDuration = time.Second
	// DefaultBulkBytes is the bulk transfer size.
	DefaultBulkBytes = 32 << 20
	// BulkChunk is the bulk profile's message size: what a game streaming
	// a level or a replay would send on a reliable-ordered stream.
	BulkChunk = 1024
	// MaxBulkBytes bounds Scenario.Bytes.
	MaxBulkBytes = 1 << 30
	// MaxDuration bounds Scenario.Duration.
	MaxDuration = time.Minute
	// throughputSocketBuffer is SO_RCVBUF and SO_SNDBUF of every
	// throughput socket (the kernel clamps it to rmem_max / wmem_max).
	throughputSocketBuffer = 4 << 20
	// settle is how long the receiver must stay quiet after the sending
	// ends for a pps row to end.
	settle = 50 * time.Millisecond
)

// flow is what a throughput driver measured.
type flow struct {
	sent, delivered int64         // messages
	datagrams       int64         // datagrams the receiving socket read
	wireBytes       int64         // UDP payload bytes both ends sent
	elapsed         time.Duration // first send to last delivery
}

// runThroughput runs a pps or bulk scenario (defaults applied).
func runThroughput(ctx context.Context, s Scenario) (Result, error) {
	res := Result{Transport: s.Transport, Profile: s.Profile, Link: s.Link.result(), LatencyKind: NoLatency, LatencyCDF: []CDFPoint{}}
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	wall0 := time.Now()

	var f flow
	var err error
	family := peers[s.Transport].family
	switch {
	case s.Transport == Raw:
		f, err = rawPPS(ctx, s)
	case family == "kcp":
		f, err = kcpFlow(ctx, s, kcpMode(s.Transport))
	case family == "quic":
		f, err = quicBulk(ctx, s)
	case s.Profile == ProfilePPS:
		f, err = tickwirePPS(ctx, s)
	default:
		f, err = tickwireBulk(ctx, s)
	}
	if err != nil {
		return res, fmt.Errorf("bench: %s %s: %w", s.Transport, s.Profile, err)
	}

	wall := time.Since(wall0)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	size := int64(s.Size)
	if s.Profile == ProfileBulk {
		size = BulkChunk
	}
	res.Sent, res.Delivered = f.sent, f.delivered
	res.PayloadBytes = size * f.delivered
	res.WireBytes = f.wireBytes
	res.CPUSeconds = cpu.Seconds()
	res.WallSeconds = wall.Seconds()
	if f.sent > 0 {
		res.AllocsPerMsg = float64(ms1.Mallocs-ms0.Mallocs) / float64(f.sent)
	}
	if sec := f.elapsed.Seconds(); sec > 0 {
		res.ThroughputMsgsPerS = float64(f.delivered) / sec
		res.ThroughputDatagramsPerS = float64(f.datagrams) / sec
		res.ThroughputMBPerS = float64(res.PayloadBytes) / sec / 1e6
	}
	res.PeakRSSBytes = peakRSS()
	return res, nil
}

// kcpMode returns the configuration of a kcp transport name.
func kcpMode(name string) kcpTransport {
	t, _ := NewTransport(name)
	return t.(kcpTransport)
}

// bulkChunks is the number of BulkChunk messages that carry n bytes.
func bulkChunks(n int64) int64 { return (n + BulkChunk - 1) / BulkChunk }

// castagnoli is the CRC-32C table (hardware-accelerated on amd64/arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// bulkVariants is the number of distinct chunk bodies (a prime, so that a
// chunk delivered in the wrong place fails its check as well as the
// sequence check).
const bulkVariants = 61

// bulkSource builds the chunks the sender sends: chunk seq is
// seq (8 bytes) | CRC-32C of the body (4 bytes) | body, the body one of
// bulkVariants pseudo-random blocks. The sender only writes seq into a
// prepared buffer, so the profile's own cost per chunk is a few stores.
type bulkSource struct {
	bufs [bulkVariants][]byte
}

func newBulkSource() *bulkSource {
	var b bulkSource
	x := uint64(0x9e3779b97f4a7c15)
	for v := range b.bufs {
		buf := make([]byte, BulkChunk)
		for i := 12; i < BulkChunk; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			buf[i] = byte(x)
		}
		binary.LittleEndian.PutUint32(buf[8:], crc32.Checksum(buf[12:], castagnoli))
		b.bufs[v] = buf
	}
	return &b
}

// chunk returns chunk seq; it is valid until the next call.
func (b *bulkSource) chunk(seq int64) []byte {
	buf := b.bufs[seq%bulkVariants]
	binary.LittleEndian.PutUint64(buf, uint64(seq))
	return buf
}

// bulkSink checks the chunks in arrival order: each must be the next seq,
// BulkChunk bytes, with the CRC-32C of its body equal to its variant's.
type bulkSink struct {
	src       *bulkSource
	delivered atomic.Int64 // intact chunks, in order
	bad       atomic.Int64 // anything else
	lastAt    atomic.Int64 // ns since start of the last intact chunk
	start     time.Time
}

// onChunk checks one delivered chunk.
func (k *bulkSink) onChunk(p []byte) {
	next := k.delivered.Load()
	want := k.src.bufs[next%bulkVariants]
	if len(p) != BulkChunk || binary.LittleEndian.Uint64(p) != uint64(next) ||
		binary.LittleEndian.Uint32(p[8:]) != binary.LittleEndian.Uint32(want[8:]) ||
		crc32.Checksum(p[12:], castagnoli) != binary.LittleEndian.Uint32(want[8:]) {
		k.bad.Add(1)
		return
	}
	k.lastAt.Store(int64(time.Since(k.start)))
	k.delivered.Add(1)
}

// waitSettled returns once count has not moved for settle, or at
// deadline or when ctx ends.
func waitSettled(ctx context.Context, count *atomic.Int64, deadline time.Time) {
	last, since := count.Load(), time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		if n := count.Load(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= settle {
			return
		}
	}
}

// waitCount returns once count reaches want, or at deadline or when ctx
// ends.
func waitCount(ctx context.Context, count *atomic.Int64, want int64, deadline time.Time) {
	for count.Load() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}
