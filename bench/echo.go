package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/tickwire/tickwire/transport"
	"net/netip"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport/simlink"
)

// ProfileEcho is the echo profile: fixed-size reliable-ordered messages at
// a fixed rate from client to server, each echoed back; latency is the
// round trip.
const ProfileEcho = "echo"

// Defaults of Scenario's zero fields.
const (
	DefaultCount          = 300 // 5 s at 60 Hz: the default suite's 15 echo rows (three peers × five losses) fit its 90 s
	DefaultRate           = 60  // Hz
	DefaultSize           = 64  // bytes
	DefaultMTU            = 1200
	DefaultDrain          = 5 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	// MinSize is the smallest echo message: a sequence number and a send
	// time, 8 bytes each.
	MinSize = 16
	// MaxSize is the largest echo message the bench sends.
	MaxSize = 1024
)

// Histogram bounds, in microseconds: 1 µs to 60 s, 3 significant digits.
const (
	histMin    = 1
	histMax    = 60_000_000
	histDigits = 3
)

// ErrScenario is wrapped by Run for a scenario out of range.
var ErrScenario = errors.New("bench: invalid scenario")

// Link is the impairment of each direction of a scenario's relay.
type Link struct {
	Loss   float64       // probability in [0, 1]
	Delay  time.Duration // one way
	Jitter time.Duration
	Dup    float64 // probability in [0, 1]
	Burst  float64 // mean loss run; 0 or 1 = independent loss
	Seed   uint64
}

// config returns the simlink form of l.
func (l Link) config() simlink.LinkConfig {
	return simlink.LinkConfig{Delay: l.Delay, Jitter: l.Jitter, Loss: l.Loss, BurstLen: l.Burst, Duplicate: l.Dup}
}

// result returns the JSON form of l.
func (l Link) result() LinkResult {
	burst := l.Burst
	if burst == 0 {
		burst = 1
	}
	return LinkResult{
		Loss:     l.Loss * 100,
		DelayMS:  float64(l.Delay) / float64(time.Millisecond),
		JitterMS: float64(l.Jitter) / float64(time.Millisecond),
		Dup:      l.Dup * 100,
		Burst:    burst,
		Seed:     l.Seed,
	}
}

// Scenario is one row: a transport running a profile over a link. Zero
// fields take the Default values.
type Scenario struct {
	// Profile is ProfileEcho (the default), ProfilePPS, ProfileBulk,
	// ProfileLoad or ProfileActions.
	Profile   string
	Transport string // one of Transports
	// Delivery is Reliable or Unreliable ("": DeliveryOf the transport
	// and profile). Only tickwire's pps row runs either way (its
	// reliable row sends on a reliable-ordered stream); every other row
	// runs its default.
	Delivery string
	Link     Link
	// Count is the messages sent (actions: the inputs each client
	// generates, one per frame).
	Count int
	// Rate is the messages per second (actions: the frame rate of the
	// server and the clients, range (0, 1000]).
	Rate float64
	Size int // message bytes, [MinSize, MaxSize]; actions ignore it
	MTU  int // datagram bytes for both transports
	// Drain bounds the wait for outstanding echoes (pps and bulk: the
	// outstanding deliveries; actions: the inputs not applied yet) after
	// the last send.
	Drain time.Duration
	// Duration is how long pps and load send, and how long bulk may send
	// (pps, bulk and load only; default DefaultDuration, for load
	// DefaultLoadDuration).
	Duration time.Duration
	// Bytes is the size of the bulk transfer (bulk only; default
	// DefaultBulkBytes).
	Bytes int64
	// Peers is the number of clients (load and actions only; default
	// DefaultPeers for load, DefaultActionPeers for actions; range
	// [1, DefaultPeers]). For actions, Peers × Count is at most
	// MaxActionInputs.
	Peers int
	// FrameCapacity is the frames each rollback action log holds, the
	// server's and every client's (actions only; 0: rollback's default,
	// rollback.DefaultFrameCapacity = 64; range
	// [rollback.MinFrameCapacity, rollback.MaxFrameCapacity]). It bounds
	// how late an input may arrive and still be applied: see
	// ProfileActions.
	FrameCapacity int
	// MaxInFlight bounds the datagrams in flight on each connection
	// (echo, actions, pps and bulk; 0: the transport's default; range [0,
	// ackmap.MaxInFlightLimit]). Tickwire: every channel's
	// transport.Config.Ack.MaxInFlight, the span of unacked datagram seqs
	// (default 64; a send beyond it gives up the oldest as lost). kcp:
	// every session's send and receive window, in packets (default
	// KCPWindow, kcp-bulk KCPBulkWindow; a full send window blocks
	// Write). quic and raw have no such knob and ignore it (quic-go's
	// congestion controller and flow-control windows bound what is in
	// flight).
	MaxInFlight int
	// RedundancyInterval is tickwire's transport.Config.RedundancyInterval
	// on both ends (echo only; 0: the default, one 60 Hz tick; range [0,
	// 1 s]): the spacing of redundant copies. The other transports ignore
	// it.
	RedundancyInterval time.Duration
	// Redundancy is tickwire's transport.Config.Redundancy on both ends
	// (echo only; the zero value is the default, adaptive).
	Redundancy transport.RedundancyMode
}

func (s Scenario) withDefaults() Scenario {
	if s.Profile == "" {
		s.Profile = ProfileEcho
	}
	if s.Delivery == "" {
		s.Delivery = DeliveryOf(s.Transport, s.Profile)
	}
	if s.Count == 0 {
		s.Count = DefaultCount
	}
	if s.Rate == 0 {
		s.Rate = DefaultRate
	}
	if s.Size == 0 {
		s.Size = DefaultSize
	}
	if s.MTU == 0 {
		s.MTU = DefaultMTU
	}
	if s.Drain == 0 {
		s.Drain = DefaultDrain
	}
	if s.Duration == 0 && s.Profile == ProfileLoad {
		s.Duration = DefaultLoadDuration
	}
	if s.Duration == 0 {
		s.Duration = DefaultDuration
	}
	if s.Peers == 0 && s.Profile == ProfileActions {
		s.Peers = DefaultActionPeers
	}
	if s.Peers == 0 {
		s.Peers = DefaultPeers
	}
	if s.Bytes == 0 {
		s.Bytes = DefaultBulkBytes
	}
	return s
}

// Validate reports the first field of s (defaults applied) out of range.
func (s Scenario) Validate() error {
	s = s.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrScenario}, args...)...)
	}
	switch {
	case !slices.Contains(Profiles, s.Profile):
		return bad("profile %q (want one of %v)", s.Profile, Profiles)
	case s.Transport == Raw && s.Profile != ProfilePPS:
		return bad("transport %q runs only the %q profile", Raw, ProfilePPS)
	case s.Profile == ProfileLoad && s.Transport != Tickwire:
		return bad("profile %q runs only the %q transport", ProfileLoad, Tickwire)
	case s.Transport == Raw && s.Profile == ProfileActions:
		return bad("transport %q runs only the %q profile", Raw, ProfilePPS)
	case s.Peers < 1 || s.Peers > DefaultPeers:
		return bad("peers %d not in [1, %d]", s.Peers, DefaultPeers)
	case s.Profile == ProfileActions && s.Rate > MaxActionRate:
		return bad("rate %v above %d Hz, the frame rate limit of %q", s.Rate, MaxActionRate, ProfileActions)
	case s.Profile == ProfileActions && int64(s.Peers)*int64(s.Count) > MaxActionInputs:
		return bad("peers × count %d above %d", int64(s.Peers)*int64(s.Count), MaxActionInputs)
	case s.FrameCapacity != 0 && (s.FrameCapacity < rollback.MinFrameCapacity || s.FrameCapacity > rollback.MaxFrameCapacity):
		return bad("frame capacity %d not 0 or in [%d, %d]", s.FrameCapacity, rollback.MinFrameCapacity, rollback.MaxFrameCapacity)
	case s.Redundancy > transport.RedundancyOff:
		return bad("redundancy mode %d not a transport.RedundancyMode", s.Redundancy)
	case s.RedundancyInterval < 0 || s.RedundancyInterval > time.Second:
		return bad("redundancy interval %v not in [0, 1s]", s.RedundancyInterval)
	case s.MaxInFlight < 0 || s.MaxInFlight > ackmap.MaxInFlightLimit:
		return bad("max in flight %d not in [0, %d]", s.MaxInFlight, ackmap.MaxInFlightLimit)
	case s.Duration <= 0 || s.Duration > MaxDuration:
		return bad("duration %v not in (0, %v]", s.Duration, MaxDuration)
	case s.Bytes < 1 || s.Bytes > MaxBulkBytes:
		return bad("bytes %d not in [1, %d]", s.Bytes, MaxBulkBytes)
	case s.Count < 1 || s.Count > 10_000_000:
		return bad("count %d not in [1, 10000000]", s.Count)
	case !(s.Rate > 0 && s.Rate <= 100_000):
		return bad("rate %v not in (0, 100000]", s.Rate)
	case s.Size < MinSize || s.Size > MaxSize:
		return bad("size %d not in [%d, %d]", s.Size, MinSize, MaxSize)
	case s.MTU < 576 || s.MTU > 1472:
		return bad("mtu %d not in [576, 1472]", s.MTU)
	case s.Drain < 0:
		return bad("drain %v negative", s.Drain)
	}
	if _, err := NewTransport(s.Transport); err != nil {
		return err
	}
	switch {
	case !Runs(s.Transport, s.Profile):
		return bad("transport %q does not run the %q profile (it runs %v)", s.Transport, s.Profile, peers[s.Transport].runs)
	case s.Delivery != DeliveryOf(s.Transport, s.Profile) && (s.Transport != Tickwire || s.Profile != ProfilePPS || s.Delivery != Reliable):
		return bad("delivery %q for %s %s (it runs %q; only tickwire's pps runs both)", s.Delivery, s.Transport, s.Profile, DeliveryOf(s.Transport, s.Profile))
	}
	if err := s.Link.config().Validate(); err != nil {
		return fmt.Errorf("%w: link: %w", ErrScenario, err)
	}
	return nil
}

// Run runs one scenario and measures it. It returns an error only for an
// invalid scenario or when the pair or relay cannot be set up; a pair that
// loses messages yields a Result that Failed. Cancelling ctx stops sending
// early (the row then Failed unless every sent message came back).
//
// Echo runs the transport's server half and client half (the code Serve
// and RunClient run in separate processes) with a Relay between them;
// actions runs through a Relay per client. Pps and bulk connect the two
// ends directly,
// without one, at 0 % loss: the relay reads and writes one datagram per
// system call on each direction's goroutine, so it cannot forward faster
// than the raw floor and would measure itself, not the transports.
func Run(ctx context.Context, s Scenario) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	s = s.withDefaults()
	if err := unsupported(s); err != nil {
		kind := RTT
		if s.Profile == ProfilePPS || s.Profile == ProfileBulk {
			kind = NoLatency
		}
		return Result{Transport: s.Transport, Profile: s.Profile, Delivery: s.Delivery, Config: peerConfig(s),
			NotSupported: err.Error(), Link: s.Link.result(), LatencyKind: kind, LatencyCDF: []CDFPoint{}}, nil
	}
	res, err := run(ctx, s)
	res.Delivery, res.Config = s.Delivery, peerConfig(s)
	return res, err
}

// run is Run past validation, for a row that can run.
func run(ctx context.Context, s Scenario) (Result, error) {
	switch s.Profile {
	case ProfileLoad:
		return runLoad(ctx, s)
	case ProfileActions:
		return runActions(ctx, s)
	case ProfilePPS, ProfileBulk:
		return runThroughput(ctx, s)
	}
	t, _ := NewTransport(s.Transport)
	res := Result{Transport: t.Name(), Profile: s.Profile, Link: s.Link.result(), LatencyKind: RTT, LatencyCDF: []CDFPoint{}}
	var (
		srv   serverHalf
		relay *Relay
	)
	link := s.Link.config()
	open := func(onEcho func([]byte)) (clientHalf, error) {
		var err error
		if srv, err = t.listen(listenConfig{addr: netip.MustParseAddrPort("127.0.0.1:0"), mtu: s.MTU, maxInFlight: s.MaxInFlight, redundancyInterval: s.RedundancyInterval, redundancy: s.Redundancy}); err != nil {
			return nil, err
		}
		relay, err = NewRelay(RelayConfig{Target: srv.addr(), Up: link, Down: link, Seed: s.Link.Seed})
		if err != nil {
			srv.close()
			return nil, err
		}
		c, err := t.dial(ctx, dialConfig{server: relay.Addr(), mtu: s.MTU, maxInFlight: s.MaxInFlight, redundancyInterval: s.RedundancyInterval, redundancy: s.Redundancy, onEcho: onEcho,
			connectTimeout: DefaultConnectTimeout, serverKey: serverKeyOf(srv)})
		if err != nil {
			srv.close()
			relay.Close()
			return nil, err
		}
		return c, nil
	}
	var redundant int64
	closeRest := func(c clientHalf) int64 {
		srv.close()
		relay.Close()
		for _, h := range []any{c, srv} {
			if r, ok := h.(interface{ redundantBytes() int64 }); ok {
				redundant += r.redundantBytes()
			}
		}
		return int64(relay.Stats().WireBytes())
	}
	res, err := echoRow(ctx, s, res, open, closeRest)
	res.RedundantBytes = redundant
	return res, err
}

// echoRow runs the echo profile of s (defaults applied) and measures it
// into res. open starts what the row needs and returns the connected
// client half, whose echoes must go to onEcho; once the client is closed,
// closeRest closes whatever else open started and returns the row's wire
// bytes. Both run inside the measured window: CPU, allocations and wall
// time include setting up and tearing down, as the Result documents.
func echoRow(ctx context.Context, s Scenario, res Result,
	open func(onEcho func([]byte)) (clientHalf, error), closeRest func(clientHalf) int64) (Result, error) {
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	wall0 := time.Now()

	e := newEchoRecorder(s.Count, s.Size)
	c, err := open(e.onEcho)
	if err != nil {
		return res, err
	}
	sent, sendErr := e.send(ctx, c, s.Count, s.Rate)
	if errors.Is(sendErr, ErrNotSupported) {
		res.NotSupported = sendErr.Error()
	}
	e.wait(ctx, sent, s.Drain)
	c.Close()
	wire := closeRest(c)

	wall := time.Since(wall0)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)

	res.Sent = int64(sent)
	res.Delivered = e.delivered.Load()
	res.LatencyMS, res.LatencyCDF = latencyOf(e.hist)
	res.PayloadBytes = int64(s.Size) * (int64(sent) + res.Delivered)
	res.WireBytes = wire
	res.CPUSeconds = cpu.Seconds()
	res.WallSeconds = wall.Seconds()
	if sent > 0 {
		res.AllocsPerMsg = float64(ms1.Mallocs-ms0.Mallocs) / float64(sent)
	}
	res.PeakRSSBytes = peakRSS()
	return res, nil
}

// echoRecorder generates the echo profile's messages and checks and times
// their echoes. onEcho runs on one goroutine of the client half's; the
// histogram is read only after the client is closed.
type echoRecorder struct {
	start     time.Time
	size      int
	seen      []bool
	hist      *hdrhistogram.Histogram
	delivered atomic.Int64
	bad       atomic.Int64 // duplicate, unknown or corrupt echoes
	buf       []byte
}

func newEchoRecorder(count, size int) *echoRecorder {
	return &echoRecorder{
		start: time.Now(),
		size:  size,
		seen:  make([]bool, count),
		hist:  hdrhistogram.New(histMin, histMax, histDigits),
		buf:   make([]byte, size),
	}
}

// fill writes message seq's payload into b: seq, send time (ns since
// start), then a pattern derived from seq.
func fill(b []byte, seq uint64, at time.Duration) {
	binary.LittleEndian.PutUint64(b[0:], seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(at))
	for i := MinSize; i < len(b); i++ {
		b[i] = byte(seq) + byte(i)
	}
}

// send sends count messages at rate on an absolute schedule, and returns
// how many it sent (fewer if ctx ends or the client refuses one) and the
// client's refusal, if any.
func (e *echoRecorder) send(ctx context.Context, p clientHalf, count int, rate float64) (int, error) {
	period := time.Duration(float64(time.Second) / rate)
	t0 := time.Since(e.start)
	timer := time.NewTimer(time.Hour) // one timer: the profile allocates nothing per message
	defer timer.Stop()
	for i := range count {
		if d := t0 + time.Duration(i)*period - time.Since(e.start); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return i, nil
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return i, nil
		}
		fill(e.buf, uint64(i), time.Since(e.start))
		if err := p.Send(e.buf); err != nil {
			return i + 1, err // counted as sent: it will not come back
		}
	}
	return count, nil
}

// wait returns once sent echoes arrived, ctx ended or drain passed.
func (e *echoRecorder) wait(ctx context.Context, sent int, drain time.Duration) {
	deadline := time.Now().Add(drain)
	for e.delivered.Load() < int64(sent) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}

// onEcho checks one echo and records its round trip.
func (e *echoRecorder) onEcho(p []byte) {
	now := time.Since(e.start)
	if len(p) != e.size {
		e.bad.Add(1)
		return
	}
	seq := binary.LittleEndian.Uint64(p[0:])
	at := time.Duration(binary.LittleEndian.Uint64(p[8:]))
	if seq >= uint64(len(e.seen)) || e.seen[seq] {
		e.bad.Add(1)
		return
	}
	for i := MinSize; i < len(p); i++ {
		if p[i] != byte(seq)+byte(i) {
			e.bad.Add(1)
			return
		}
	}
	e.seen[seq] = true
	us := max((now - at).Microseconds(), histMin)
	_ = e.hist.RecordValue(min(us, histMax)) // clamped: cannot fail
	e.delivered.Add(1)
}

// cdfPercentiles are the percentiles Result.LatencyCDF samples: every 5
// points through the body, denser in the tail, and the endpoints (0: the
// minimum, 100: the maximum). 29 points.
var cdfPercentiles = [...]float64{
	0, 1, 2, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90,
	95, 97.5, 99, 99.5, 99.8, 99.9, 99.99, 100,
}

// latencyOf returns the percentiles of h, a histogram of latencies in µs,
// in milliseconds, and its distribution at cdfPercentiles (a new slice,
// non-decreasing in both fields, first point h's minimum, last its
// maximum). An empty h yields the zero Latency and an empty, non-nil CDF.
// Every profile that records latency summarises it with latencyOf, so
// that Latency and the CDF agree (P50 is the CDF's point at 50, …).
func latencyOf(h *hdrhistogram.Histogram) (Latency, []CDFPoint) {
	if h.TotalCount() == 0 {
		return Latency{}, []CDFPoint{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	cdf := make([]CDFPoint, len(cdfPercentiles))
	for i, p := range cdfPercentiles {
		cdf[i] = CDFPoint{Percentile: p, MS: ms(h.ValueAtQuantile(p))}
	}
	return Latency{
		P50:  ms(h.ValueAtQuantile(50)),
		P90:  ms(h.ValueAtQuantile(90)),
		P99:  ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)),
		Max:  ms(h.Max()),
	}, cdf
}
