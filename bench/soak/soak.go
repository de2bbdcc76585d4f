// Package soak is scenario S-I1, the long soak: a million reliable
// messages over sim(500 ms, 100 ms, 25 %) with 25 % duplication and the
// reordering its jitter causes, every one delivered exactly once (in order
// on the ordered streams), while an action stream (a rollback server and
// one client exchanging inputs, slices and checksums) runs alongside and
// converges — with the heap and the goroutine count flat from the first
// 10 % of the run to its end.
//
// Everything runs on the simulated network (transport/simlink) in virtual
// time, on the caller's goroutine, deterministically from the seed: a
// million messages take seconds of CPU, not hours.
package soak

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/wire"
)

// Defaults applied by Config for zero-valued fields.
const (
	DefaultCount      = 1_000_000
	DefaultSeed       = 1
	DefaultPerTick    = 64
	DefaultMaxVirtual = 12 * time.Hour
	DefaultMaxWall    = 30 * time.Minute
	// DefaultHeapGrowth and DefaultHeapSlack are the memory tolerance: the
	// last heap sample may exceed the first by at most
	// DefaultHeapGrowth × first + DefaultHeapSlack (GC timing and size
	// classes make a live heap wobble by a few per cent; a leak of one
	// small object per message would be tens of MiB over a million).
	DefaultHeapGrowth = 0.20
	DefaultHeapSlack  = 1 << 20
	// Tick is the virtual time between two steps (60 Hz).
	Tick = time.Second / 60
	// maxViolations caps the violation messages kept (all are counted).
	maxViolations = 16
)

// Streams: the messages go round on the reliable-unordered stream 0 and
// the reliable-ordered streams 1 and 2.
const numStreams = 3

// payloadMin and payloadSpan size the messages: 8 bytes of sequence
// number then a filler derived from it, 16 to 47 bytes in all.
const (
	payloadMin  = 16
	payloadSpan = 32
)

// DefaultLink is S-I1's link, both ways: 500 ms delay, 100 ms jitter, 25 %
// loss, 25 % duplication.
func DefaultLink() simlink.LinkConfig {
	return simlink.LinkConfig{
		Delay: 500 * time.Millisecond, Jitter: 100 * time.Millisecond,
		Loss: 0.25, Duplicate: 0.25, MTU: transport.MaxMTU,
	}
}

// Config configures a soak run. The zero value of every field means its
// default.
type Config struct {
	// Count is how many reliable messages must be delivered, spread over
	// the three streams. Default 1,000,000.
	Count uint64
	// Seed seeds the simulated network and the client's inputs. Default 1.
	Seed uint64
	// Link is the impairment, both ways, of both channel pairs. Default
	// DefaultLink. Its MTU is raised to transport.MaxMTU when zero.
	Link *simlink.LinkConfig
	// PerTick is how many messages the sender offers per stream per tick;
	// the stream's back-pressure (transport.ErrQueueFull) defers the rest
	// to the next tick. Default 64.
	PerTick int
	// MaxVirtual and MaxWall bound the run in simulated and in real time;
	// a run that hits either fails as incomplete. Defaults 12 h and 30 min.
	MaxVirtual, MaxWall time.Duration
	// HeapGrowth and HeapSlack are the memory tolerance (see
	// DefaultHeapGrowth). Defaults 0.20 and 1 MiB.
	HeapGrowth float64
	HeapSlack  uint64

	// redeliverEvery, in tests, hands every n-th delivered message to the
	// checker twice: a deliberately broken transport.
	redeliverEvery uint64
}

func (c Config) withDefaults() Config {
	if c.Count == 0 {
		c.Count = DefaultCount
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.Link == nil {
		l := DefaultLink()
		c.Link = &l
	}
	if c.PerTick <= 0 {
		c.PerTick = DefaultPerTick
	}
	if c.MaxVirtual <= 0 {
		c.MaxVirtual = DefaultMaxVirtual
	}
	if c.MaxWall <= 0 {
		c.MaxWall = DefaultMaxWall
	}
	if c.HeapGrowth <= 0 {
		c.HeapGrowth = DefaultHeapGrowth
	}
	if c.HeapSlack == 0 {
		c.HeapSlack = DefaultHeapSlack
	}
	return c
}

// Sample is one memory and goroutine sample, taken after runtime.GC.
type Sample struct {
	// Progress is the fraction of Count delivered when it was taken.
	Progress float64 `json:"progress"`
	// HeapInuse is runtime.MemStats.HeapInuse, in bytes.
	HeapInuse uint64 `json:"heap_inuse"`
	// Goroutines is runtime.NumGoroutine.
	Goroutines int `json:"goroutines"`
}

// StreamResult is one reliable stream's outcome.
type StreamResult struct {
	Stream  uint8 `json:"stream"`
	Ordered bool  `json:"ordered"`
	// Sent and Delivered count distinct messages; Missing those sent and
	// never delivered.
	Sent      uint64 `json:"sent"`
	Delivered uint64 `json:"delivered"`
	Missing   uint64 `json:"missing"`
	// Duplicates, OutOfOrder and OutOfRange are violations (Checker).
	Duplicates uint64 `json:"duplicates"`
	OutOfOrder uint64 `json:"out_of_order"`
	OutOfRange uint64 `json:"out_of_range"`
	// Reordered counts deliveries behind the newest on the unordered stream.
	Reordered uint64 `json:"reordered"`
}

// Result is a soak run's outcome. OK is the verdict: no violation.
type Result struct {
	Count   uint64                   `json:"count"`
	Seed    uint64                   `json:"seed"`
	Link    string                   `json:"link"`
	Streams [numStreams]StreamResult `json:"streams"`
	// Delivered is the total of the streams' deliveries.
	Delivered uint64 `json:"delivered"`
	// Ticks, Virtual and Wall are the run's length in steps, simulated
	// time and real time.
	Ticks   uint64        `json:"ticks"`
	Virtual time.Duration `json:"virtual_ns"`
	Wall    time.Duration `json:"wall_ns"`
	// QueueFull counts sends refused by back-pressure (and retried).
	QueueFull uint64 `json:"queue_full"`
	// Datagram figures for the message pair, both ways: sent, duplicated
	// and lost by the link; duplicate datagrams the receiver dropped;
	// reliable messages received again (redundant copies, re-sends and
	// duplicated datagrams, all discarded); ordered messages buffered
	// behind a gap (reordering absorbed); reliable re-sends.
	Datagrams          uint64 `json:"datagrams"`
	LinkDuplicated     uint64 `json:"link_duplicated"`
	LinkLost           uint64 `json:"link_lost"`
	DuplicateDatagrams uint64 `json:"duplicate_datagrams"`
	ReliableDuplicates uint64 `json:"reliable_duplicates"`
	ReliableBuffered   uint64 `json:"reliable_buffered"`
	ReliableResent     uint64 `json:"reliable_resent"`
	// Action is the action stream's outcome.
	Action ActionResult `json:"action"`
	// First and Last are the samples at 10 % and at 100 % of Count;
	// HeapLimit is the most Last.HeapInuse may be.
	First     Sample `json:"first"`
	Last      Sample `json:"last"`
	HeapLimit uint64 `json:"heap_limit"`
	// Violations counts every violation; ViolationList keeps the first
	// few, described.
	Violations    uint64   `json:"violations"`
	ViolationList []string `json:"violation_list,omitempty"`
	// OK is true when nothing was violated.
	OK bool `json:"ok"`
}

func (r *Result) violate(format string, args ...any) {
	r.Violations++
	if len(r.ViolationList) < maxViolations {
		r.ViolationList = append(r.ViolationList, fmt.Sprintf(format, args...))
	}
}

// sender is the message pair's sending side: it receives nothing but
// acks, so any message it is handed is a violation.
type sender struct{ res *Result }

func (s *sender) OnMessage(m transport.Message) {
	s.res.violate("sender received a %v message on stream %d", m.Delivery, m.Stream)
}
func (s *sender) OnRecord(uint64, bool)              {}
func (s *sender) OnDisconnect(wire.DisconnectReason) {}

// receiver checks every delivery against its stream's Checker.
type receiver struct {
	res    *Result
	checks [numStreams]*Checker
	total  uint64
	every  uint64 // Config.redeliverEvery
	seen   uint64 // deliveries so far, for every
}

func (r *receiver) OnMessage(m transport.Message) {
	if m.Delivery != transport.Reliable || int(m.Stream) >= numStreams {
		r.res.violate("unexpected %v message on stream %d", m.Delivery, m.Stream)
		return
	}
	seq, ok := parsePayload(m.Payload)
	if !ok {
		r.res.violate("stream %d: corrupt message of %d bytes", m.Stream, len(m.Payload))
		return
	}
	r.check(m.Stream, seq)
	r.seen++
	if r.every != 0 && r.seen%r.every == 0 {
		r.check(m.Stream, seq)
	}
}

func (r *receiver) check(s uint8, seq uint64) {
	if err := r.checks[s].Deliver(seq); err != nil {
		r.res.violate("stream %d: %v", s, err)
		return
	}
	r.total++
}

func (r *receiver) OnRecord(uint64, bool)              {}
func (r *receiver) OnDisconnect(wire.DisconnectReason) {}

// appendPayload appends message seq: its number, then a filler derived
// from it, 16 to 47 bytes in all.
func appendPayload(dst []byte, seq uint64) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	n := payloadMin + int(seq%payloadSpan) - 8
	for i := range n {
		dst = append(dst, byte(seq*31+uint64(i)*7))
	}
	return dst
}

// parsePayload returns the message's sequence number, or false if the
// payload is not exactly what appendPayload made for it.
func parsePayload(p []byte) (uint64, bool) {
	if len(p) < 8 {
		return 0, false
	}
	seq := binary.LittleEndian.Uint64(p)
	if len(p) != payloadMin+int(seq%payloadSpan) {
		return 0, false
	}
	for i, b := range p[8:] {
		if b != byte(seq*31+uint64(i)*7) {
			return 0, false
		}
	}
	return seq, true
}

// channelConfig is both pairs' channel config: an in-flight window and a
// reliable window sized for a 1.2 s round trip.
func channelConfig() transport.Config {
	return transport.Config{
		Ack:            ackmap.Config{MaxInFlight: 512},
		ReliableWindow: 2048,
	}
}

// sample runs a full GC and reads the heap and the goroutine count.
func sample(progress float64) Sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Sample{Progress: progress, HeapInuse: ms.HeapInuse, Goroutines: runtime.NumGoroutine()}
}

// Run runs the soak until Count messages are delivered and the action
// stream has settled, or a bound is hit. The verdict is Result.OK, with
// the violations listed; the error is for a run that could not be set up
// or was cancelled through ctx.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	link := *cfg.Link
	if link.MTU == 0 {
		link.MTU = transport.MaxMTU
	}
	res := Result{
		Count: cfg.Count, Seed: cfg.Seed,
		Link: fmt.Sprintf("sim(%v, %v, %g%%) dup %g%%", link.Delay, link.Jitter, link.Loss*100, link.Duplicate*100),
	}
	n := simlink.New(cfg.Seed)
	if err := n.SetDefaultLink(link); err != nil {
		return res, fmt.Errorf("soak: link: %w", err)
	}

	// The message pair: a sends, b checks.
	recv := &receiver{res: &res, every: cfg.redeliverEvery}
	var share [numStreams]uint64
	for s := range numStreams {
		share[s] = cfg.Count / numStreams
		if uint64(s) < cfg.Count%numStreams {
			share[s]++
		}
		recv.checks[s] = NewChecker(share[s], s != 0)
	}
	a, b, err := pair(n, 1, channelConfig(), &sender{res: &res}, recv)
	if err != nil {
		return res, err
	}
	act, err := newActionStream(n, cfg.Seed, channelConfig())
	if err != nil {
		return res, fmt.Errorf("soak: action stream: %w", err)
	}

	start := time.Now()
	var (
		now        time.Duration
		tick       uint64
		next       [numStreams]uint64
		msg        = make([]byte, 0, payloadMin+payloadSpan)
		firstAt    = max(cfg.Count/10, 1)
		haveFirst  bool
		haveLast   bool
		incomplete string
	)
	for {
		tick++
		now += Tick
		n.AdvanceTo(now)
		if err := a.receive(now, tick); err != nil {
			return res, err
		}
		if err := b.receive(now, tick); err != nil {
			return res, err
		}
		for s := range numStreams {
			for k := 0; k < cfg.PerTick && next[s] < share[s]; k++ {
				msg = appendPayload(msg[:0], next[s])
				if _, err := a.ch.SendReliable(uint8(s), msg); err != nil {
					if errors.Is(err, transport.ErrQueueFull) {
						res.QueueFull++
						break
					}
					return res, fmt.Errorf("soak: send stream %d message %d: %w", s, next[s], err)
				}
				next[s]++
			}
		}
		if err := a.flush(now, tick); err != nil {
			return res, err
		}
		if err := b.flush(now, tick); err != nil {
			return res, err
		}
		if err := act.step(now, tick); err != nil {
			return res, err
		}

		if !haveFirst && recv.total >= firstAt {
			res.First, haveFirst = sample(float64(recv.total)/float64(cfg.Count)), true
		}
		if !haveLast && recv.total >= cfg.Count {
			res.Last, haveLast = sample(1), true
			act.stop()
		}
		if haveLast && act.settled() {
			break
		}
		if now >= cfg.MaxVirtual {
			incomplete = fmt.Sprintf("virtual-time bound %v", cfg.MaxVirtual)
			break
		}
		if tick%256 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if time.Since(start) >= cfg.MaxWall {
				incomplete = fmt.Sprintf("wall-time bound %v", cfg.MaxWall)
				break
			}
		}
	}
	res.Ticks, res.Virtual, res.Wall = tick, now, time.Since(start)

	// Exactly once, in order, nothing missing.
	for s := range numStreams {
		c := recv.checks[s]
		sr := StreamResult{
			Stream: uint8(s), Ordered: s != 0, Sent: next[s], Delivered: c.Delivered,
			Missing: c.Missing(next[s]), Duplicates: c.Duplicates, OutOfOrder: c.OutOfOrder,
			OutOfRange: c.OutOfRange, Reordered: c.Reordered,
		}
		res.Streams[s] = sr
		res.Delivered += c.Delivered
		if sr.Missing != 0 {
			res.violate("stream %d: %d of %d messages sent never delivered", s, sr.Missing, sr.Sent)
		}
	}
	if incomplete != "" {
		res.violate("incomplete: %d of %d messages delivered at the %s", res.Delivered, cfg.Count, incomplete)
	}

	// Link and channel figures.
	sa, sb := a.ch.Stats(), b.ch.Stats()
	ab, ba := n.LinkStats(a.conn.LocalAddr(), b.conn.LocalAddr()), n.LinkStats(b.conn.LocalAddr(), a.conn.LocalAddr())
	res.Datagrams = ab.Sent + ba.Sent
	res.LinkDuplicated = ab.Duplicated + ba.Duplicated
	res.LinkLost = ab.Dropped() + ba.Dropped()
	res.DuplicateDatagrams = sa.Duplicates + sb.Duplicates
	res.ReliableDuplicates = sb.ReliableDuplicates
	res.ReliableBuffered = sb.ReliableBuffered
	res.ReliableResent = sa.ReliableResent
	if a.foreign+b.foreign+act.se.foreign+act.ce.foreign != 0 {
		res.violate("%d datagrams with a foreign session header", a.foreign+b.foreign+act.se.foreign+act.ce.foreign)
	}
	if sb.Malformed+sa.Malformed != 0 {
		res.violate("%d malformed datagrams", sb.Malformed+sa.Malformed)
	}

	// The action stream converged.
	var bad []string
	res.Action, bad = act.result()
	for _, v := range bad {
		res.violate("%s", v)
	}

	// Memory and goroutines flat.
	if haveFirst && haveLast {
		res.HeapLimit = res.First.HeapInuse + uint64(float64(res.First.HeapInuse)*cfg.HeapGrowth) + cfg.HeapSlack
		if res.Last.HeapInuse > res.HeapLimit {
			res.violate("heap grew from %d to %d bytes (limit %d)", res.First.HeapInuse, res.Last.HeapInuse, res.HeapLimit)
		}
		if res.Last.Goroutines > res.First.Goroutines {
			res.violate("goroutines grew from %d to %d", res.First.Goroutines, res.Last.Goroutines)
		}
	}
	res.OK = res.Violations == 0
	return res, nil
}
