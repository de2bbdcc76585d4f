package bench

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/simlink"
	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/wire"
)

// ProfileBottleneck is the bottleneck time series (tickwire bench
// --profile bottleneck, not in the default suite): one tickwire channel
// offering twice a simulated bottleneck's rate, on a simulated clock, its
// send budget sampled over time (see RunBottleneck).
const ProfileBottleneck = "bottleneck"

// Defaults of BottleneckConfig's zero fields: the scenario of the
// transport package's bottleneck test (a 200 KB/s link with a 64 KB queue,
// 20 ms ± 1 ms one way, about 400 KB/s offered).
const (
	DefaultBottleneckBandwidth = 200_000 // bytes/s
	DefaultBottleneckQueue     = 64 << 10
	DefaultBottleneckDelay     = 20 * time.Millisecond
	DefaultBottleneckJitter    = time.Millisecond
	DefaultBottleneckDuration  = 10 * time.Second       // capped
	DefaultBottleneckAfter     = 3 * time.Second        // lifted
	DefaultBottleneckSettle    = 3 * time.Second        // the estimator's settling time, excluded from the p99
	DefaultBottleneckSample    = 50 * time.Millisecond  // sampling interval
	bottleneckRecoveryWindow   = 250 * time.Millisecond // recovered: this long's sent bytes cover the offered
	bottleneckDrain            = 5 * time.Second        // after the run: every reliable message must arrive
	bottleneckStep             = time.Millisecond       // the event loop's resolution
	bottleneckTick             = time.Second / 60
)

// ErrBottleneck is wrapped by RunBottleneck for a config out of range.
var ErrBottleneck = errors.New("bench: invalid bottleneck config")

// BottleneckConfig is the bottleneck time series' scenario. Zero fields
// take the Default values.
type BottleneckConfig struct {
	Seed       uint64        // the simulated network's seed (0: DefaultSeed)
	Bandwidth  int64         // the bottleneck's bytes/s
	QueueLimit int           // the bottleneck queue's bytes
	Delay      time.Duration // one way, each direction
	Jitter     time.Duration
	// Duration is how long the game offers its load with the bottleneck
	// in place; After how long it goes on offering once the bottleneck
	// lifts (the link then uncapped, same delay).
	Duration, After time.Duration
	// Settle is how long from the start the p99 queuing delay leaves out:
	// the estimator's time to find the bottleneck.
	Settle time.Duration
	// Sample is the time series' interval.
	Sample time.Duration
}

func (c BottleneckConfig) withDefaults() BottleneckConfig {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.Bandwidth == 0 {
		c.Bandwidth = DefaultBottleneckBandwidth
	}
	if c.QueueLimit == 0 {
		c.QueueLimit = DefaultBottleneckQueue
	}
	def(&c.Delay, DefaultBottleneckDelay)
	def(&c.Jitter, DefaultBottleneckJitter)
	def(&c.Duration, DefaultBottleneckDuration)
	def(&c.After, DefaultBottleneckAfter)
	def(&c.Settle, DefaultBottleneckSettle)
	def(&c.Sample, DefaultBottleneckSample)
	return c
}

// Validate reports a config (defaults applied) out of range.
func (c BottleneckConfig) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBottleneck}, args...)...)
	}
	switch {
	case c.Bandwidth < 10_000 || c.Bandwidth > 1<<30:
		return bad("bandwidth %d B/s not in [10000, %d]", c.Bandwidth, 1<<30)
	case c.QueueLimit < transport.MaxMTU || c.QueueLimit > 64<<20:
		return bad("queue limit %d B not in [%d, %d]", c.QueueLimit, transport.MaxMTU, 64<<20)
	case c.Delay < 0 || c.Delay > time.Second, c.Jitter < 0 || c.Jitter > c.Delay:
		return bad("delay %v ± %v: want delay in [0, 1s], jitter in [0, delay]", c.Delay, c.Jitter)
	case c.Duration < time.Second || c.Duration > 10*time.Minute:
		return bad("duration %v not in [1s, 10m]", c.Duration)
	case c.After < 0 || c.After > 10*time.Minute:
		return bad("after %v not in [0, 10m]", c.After)
	case c.Settle < 0 || c.Settle >= c.Duration:
		return bad("settle %v not in [0, duration %v)", c.Settle, c.Duration)
	case c.Sample < 10*time.Millisecond || c.Sample > c.Duration:
		return bad("sample %v not in [10ms, duration %v]", c.Sample, c.Duration)
	}
	return nil
}

// BottleneckSample is one interval of the time series.
type BottleneckSample struct {
	// AtMS is the interval's end, ms of simulated time from the start.
	AtMS float64 `json:"at_ms"`
	// CapacityBps is the bottleneck's rate in the interval, bytes/s (0:
	// lifted, uncapped).
	CapacityBps int64 `json:"capacity_bps"`
	// SendBps is what the sender put on the wire over the interval,
	// bytes/s (ChannelStats.BytesSent); OfferedBps what the game offered
	// (frame bytes).
	SendBps    float64 `json:"send_bps"`
	OfferedBps float64 `json:"offered_bps"`
	// BudgetBps is the budget's estimated rate at the interval's end
	// (BudgetStats.Rate).
	BudgetBps int64 `json:"budget_bps"`
	// BudgetQueueMS is the budget's measured queuing delay
	// (BudgetStats.QueueDelay) and SendQueueMS its back-pressure figure
	// (BudgetStats.SendQueueDelay), ms.
	BudgetQueueMS float64 `json:"budget_queue_ms"`
	SendQueueMS   float64 `json:"send_queue_ms"`
	// QueueMaxMS and QueueP50MS are the one-way queuing delay at the
	// bottleneck of the sender's datagrams sent in the interval and
	// delivered (arrival − send − the link's delay; the link's jitter
	// included), ms: their maximum and median; Datagrams how many.
	QueueMaxMS float64 `json:"queue_max_ms"`
	QueueP50MS float64 `json:"queue_p50_ms"`
	Datagrams  int     `json:"datagrams"`
	// Shed is what the budget shed so far, by reason (cumulative).
	ShedRedundant  uint64 `json:"shed_redundant"`
	ShedSuperseded uint64 `json:"shed_superseded"`
	ShedExpired    uint64 `json:"shed_expired"`
	// QueueDrops counts the datagrams the bottleneck queue dropped so far.
	QueueDrops uint64 `json:"queue_drops"`
}

// BottleneckResult is a bottleneck run: its settings, the time series and
// the figures the efficiency issue asks for.
type BottleneckResult struct {
	Config struct {
		Seed          uint64  `json:"seed"`
		BandwidthBps  int64   `json:"bandwidth_bps"`
		QueueLimit    int     `json:"queue_limit_bytes"`
		DelayMS       float64 `json:"delay_ms"`
		JitterMS      float64 `json:"jitter_ms"`
		DurationS     float64 `json:"duration_s"`
		AfterS        float64 `json:"after_s"`
		SettleS       float64 `json:"settle_s"`
		SampleMS      float64 `json:"sample_ms"`
		OfferedBps    int64   `json:"offered_bps"`
		Offer         string  `json:"offer"`
		QueueTargetMS float64 `json:"queue_target_ms"`
	} `json:"config"`
	Samples []BottleneckSample `json:"samples"`
	// P99QueueMS is the p99 one-way queuing delay of the sender's datagrams
	// sent from Settle until the bottleneck lifts; P99QueueBeforeMS before
	// Settle; QueueDatagrams the datagrams the former is over.
	P99QueueMS       float64 `json:"p99_queue_ms"`
	P99QueueBeforeMS float64 `json:"p99_queue_before_ms"`
	QueueDatagrams   int     `json:"queue_datagrams"`
	// MeanSendBps is the sender's wire rate from Settle until the lift.
	MeanSendBps float64 `json:"mean_send_bps"`
	// RecoveryMS is the time from the lift until the bytes sent over
	// 250 ms cover the bytes offered in them and the budget's rate covers
	// the offered rate; −1 when that did not happen before the run ended.
	RecoveryMS float64 `json:"recovery_ms"`
	// ReliableAccepted counts the reliable messages SendReliable accepted,
	// ReliableDelivered those the receiver delivered (5 s after the load
	// stopped), ReliableInOrder whether they came in order, once;
	// QueueFull the times SendReliable answered ErrQueueFull (the game
	// retried at its next tick: back-pressure, no drop).
	ReliableAccepted  int  `json:"reliable_accepted"`
	ReliableDelivered int  `json:"reliable_delivered"`
	ReliableInOrder   bool `json:"reliable_in_order"`
	QueueFull         int  `json:"queue_full"`
	// Unreliable and Sequenced count the messages the game offered and the
	// receiver got.
	UnreliableOffered   int `json:"unreliable_offered"`
	UnreliableDelivered int `json:"unreliable_delivered"`
	SequencedOffered    int `json:"sequenced_offered"`
	SequencedDelivered  int `json:"sequenced_delivered"`
	// ShedRedundant … Increases are the sender's BudgetStats at the end:
	// what it shed by reason (ShedBytes all reasons' frame bytes), its paced
	// Flushes and the estimator's decisions.
	ShedRedundant  uint64 `json:"shed_redundant"`
	ShedSuperseded uint64 `json:"shed_superseded"`
	ShedExpired    uint64 `json:"shed_expired"`
	ShedBytes      uint64 `json:"shed_bytes"`
	PacedWaits     uint64 `json:"paced_waits"`
	Backoffs       uint64 `json:"backoffs"`
	Increases      uint64 `json:"increases"`
	// QueueDrops and MaxBacklog are the bottleneck's.
	QueueDrops uint64 `json:"queue_drops"`
	MaxBacklog int    `json:"max_backlog_bytes"`
}

// The bottleneck's game: every 60 Hz tick one reliable message on ordered
// stream 1, a state update on each of four sequenced streams and three
// unreliable events.
const (
	bnRelSize, bnSeqSize, bnUnrelSize = 500, 800, 1000
	bnSeqStreams, bnUnrelPerTick      = 4, 3
)

// bnOffered is the game's offered rate, frame bytes per second.
const bnOffered = (bnRelSize + bnSeqStreams*bnSeqSize + bnUnrelPerTick*bnUnrelSize) * 60

// bnEnd is one end of the bottleneck run: a channel on a simulated socket.
type bnEnd struct {
	ch     *transport.Channel
	conn   *simlink.Conn
	remote netip.AddrPort
	secret uint64
	bufs   [][]byte
	out    []socket.Message
	in     []socket.Message

	// Received, by delivery.
	reliable    int
	outOfOrder  bool
	lastRelID   wire.Seq
	unrel, seqd int
}

func (e *bnEnd) OnMessage(m transport.Message) {
	switch m.Delivery {
	case transport.Reliable:
		if e.reliable > 0 && m.ID != e.lastRelID+1 {
			e.outOfOrder = true
		}
		e.lastRelID = m.ID
		e.reliable++
	case transport.Unreliable:
		e.unrel++
	case transport.Sequenced:
		e.seqd++
	}
}
func (e *bnEnd) OnRecord(uint64, bool)              {}
func (e *bnEnd) OnDisconnect(wire.DisconnectReason) {}

// Buffer and Commit make bnEnd the channel's Sink: datagrams collect in a
// batch written to the simulated socket after Flush.
func (e *bnEnd) Buffer() []byte {
	if len(e.out) == len(e.bufs) {
		e.bufs = append(e.bufs, make([]byte, 0, transport.MaxMTU))
	}
	return e.bufs[len(e.out)][:0]
}

func (e *bnEnd) Commit(d []byte) {
	e.out = append(e.out, socket.Message{Buf: d, N: len(d), Addr: e.remote})
}

// receive hands the channel every datagram that has arrived.
func (e *bnEnd) receive(now time.Duration) error {
	for {
		n, err := e.conn.TryReadBatch(e.in)
		if err != nil {
			return err
		}
		for _, m := range e.in[:n] {
			b := m.Buf[:m.N]
			h, k, err := wire.ParseSessionHeader(b)
			if err != nil || h.Secret != e.secret {
				return fmt.Errorf("bench: bottleneck: a datagram that is not the session's (%v)", err)
			}
			e.ch.ReceiveAged(now, m.Age, b[k:])
		}
		if n < len(e.in) {
			return nil
		}
	}
}

// flush flushes the channel and writes what it produced.
func (e *bnEnd) flush(now time.Duration) error {
	e.ch.Flush(now, e)
	if len(e.out) == 0 {
		return nil
	}
	_, err := e.conn.WriteBatch(e.out)
	e.out = e.out[:0]
	return err
}

// bnGame is the sender's game (see bnOffered). Reliable sends refused with
// ErrQueueFull wait in backlog and go first at the next tick.
type bnGame struct {
	buf          []byte
	accepted     int   // reliable messages SendReliable took
	backlog      int   // reliable messages refused, to retry
	queueFull    int   // refusals
	offeredBytes int64 // frame bytes offered, all kinds
	unrel, seq   int   // messages offered
}

func (g *bnGame) tick(ch *transport.Channel) error {
	g.backlog++
	g.offeredBytes += bnRelSize
	if err := g.retry(ch); err != nil {
		return err
	}
	for s := range bnSeqStreams {
		g.seq++
		g.offeredBytes += bnSeqSize
		if err := ch.SendSequenced(uint8(s), g.buf[:bnSeqSize]); err != nil {
			return fmt.Errorf("bench: bottleneck: SendSequenced: %w", err)
		}
	}
	for range bnUnrelPerTick {
		g.unrel++
		g.offeredBytes += bnUnrelSize
		if err := ch.SendUnreliable(g.buf[:bnUnrelSize]); err != nil {
			return fmt.Errorf("bench: bottleneck: SendUnreliable: %w", err)
		}
	}
	return nil
}

// retry sends the reliable messages back-pressure held back, in order.
func (g *bnGame) retry(ch *transport.Channel) error {
	for g.backlog > 0 {
		if _, err := ch.SendReliable(1, g.buf[:bnRelSize]); err != nil {
			if !errors.Is(err, transport.ErrQueueFull) {
				return fmt.Errorf("bench: bottleneck: SendReliable: %w", err)
			}
			g.queueFull++
			return nil
		}
		g.accepted++
		g.backlog--
	}
	return nil
}

// bnQueued is one delivered datagram of the sender's: when it was sent and
// how long it queued at the bottleneck.
type bnQueued struct{ at, q time.Duration }

// RunBottleneck runs the bottleneck time series: a tickwire channel (the
// transport's default Config, so the send budget on) and its peer on a
// simulated network, the sender's link capped at cfg.Bandwidth with a
// cfg.QueueLimit queue, the return link uncapped. A game on the sender
// offers about 400 KB/s (twice the default bottleneck) at 60 Hz — a
// reliable message, four sequenced updates and three unreliable events a
// tick — for cfg.Duration; then the cap lifts and it goes on for
// cfg.After; then the game stops and the run goes on 5 s for the last
// reliable messages. Each end reads and, when its NextDeadline is due or
// a datagram arrived, Flushes every millisecond of simulated time. Every
// cfg.Sample it records the sender's wire rate, its budget's stats and the
// queuing delay its datagrams met at the bottleneck (from the network's
// trace).
//
// It runs on the simulated clock only: the same config gives the same
// result, in about a second of CPU for the default 13 s. An error is a
// config out of range (ErrBottleneck) or a transport call that failed.
func RunBottleneck(cfg BottleneckConfig) (BottleneckResult, error) {
	var res BottleneckResult
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	cfg = cfg.withDefaults()
	rc := &res.Config
	rc.Seed, rc.BandwidthBps, rc.QueueLimit = cfg.Seed, cfg.Bandwidth, cfg.QueueLimit
	rc.DelayMS, rc.JitterMS = msOf(cfg.Delay), msOf(cfg.Jitter)
	rc.DurationS, rc.AfterS, rc.SettleS, rc.SampleMS = cfg.Duration.Seconds(), cfg.After.Seconds(), cfg.Settle.Seconds(), msOf(cfg.Sample)
	rc.OfferedBps = bnOffered
	rc.Offer = fmt.Sprintf("every 1/60 s: one %d B reliable message (ordered stream 1), %d × %d B sequenced updates (streams 0-%d), %d × %d B unreliable events",
		bnRelSize, bnSeqStreams, bnSeqSize, bnSeqStreams-1, bnUnrelPerTick, bnUnrelSize)
	rc.QueueTargetMS = msOf(transport.DefaultQueueDelayTarget)

	n := simlink.New(cfg.Seed)
	back := simlink.LinkConfig{MTU: transport.MaxMTU, Delay: cfg.Delay, Jitter: cfg.Jitter}
	if err := n.SetDefaultLink(back); err != nil {
		return res, err
	}
	aAddr := netip.MustParseAddrPort("127.0.0.1:1000")
	bAddr := netip.MustParseAddrPort("127.0.0.2:2000")
	capped := back
	capped.Bandwidth, capped.QueueLimit = cfg.Bandwidth, cfg.QueueLimit
	secret := 0x5EC2E7 + cfg.Seed
	mk := func(addr, remote netip.AddrPort, first wire.Seq) (*bnEnd, error) {
		conn, err := n.Listen(addr)
		if err != nil {
			return nil, err
		}
		e := &bnEnd{conn: conn, remote: remote, secret: secret, in: make([]socket.Message, socket.IdealBatchSize)}
		for i := range e.in {
			e.in[i].Buf = make([]byte, transport.MaxMTU)
		}
		e.ch, err = transport.NewChannel(transport.Config{}, e, first, secret)
		return e, err
	}
	a, err := mk(aAddr, bAddr, wire.Seq(cfg.Seed*31))
	if err != nil {
		return res, err
	}
	b, err := mk(bAddr, aAddr, wire.Seq(cfg.Seed*77))
	if err != nil {
		return res, err
	}
	if err := n.SetLink(aAddr, bAddr, capped); err != nil {
		return res, err
	}

	// The trace: every a→b datagram's queuing delay, by send time.
	var queued []bnQueued
	sendTimes := map[uint64]time.Duration{}
	n.SetTrace(func(e simlink.Event) {
		if e.Src != aAddr {
			return
		}
		switch e.Kind {
		case simlink.EventSend:
			sendTimes[e.ID] = e.At
		case simlink.EventDrop:
			delete(sendTimes, e.ID)
		case simlink.EventDeliver:
			if s, ok := sendTimes[e.ID]; ok && e.Copy == 0 {
				queued = append(queued, bnQueued{at: s, q: e.At - s - cfg.Delay})
				delete(sendTimes, e.ID)
			}
		}
	})

	g := &bnGame{buf: make([]byte, bnUnrelSize)}
	var now, nextTick time.Duration
	step := func(offering bool) error {
		if now >= nextTick {
			var err error
			if offering {
				err = g.tick(a.ch)
			} else {
				err = g.retry(a.ch)
			}
			if err != nil {
				return err
			}
			nextTick += bottleneckTick
		}
		for _, e := range []*bnEnd{a, b} {
			rx := e.ch.Stats().DatagramsReceived
			if err := e.receive(now); err != nil {
				return err
			}
			if at, _ := e.ch.NextDeadline(); at <= now || e.ch.Stats().DatagramsReceived != rx {
				if err := e.flush(now); err != nil {
					return err
				}
			}
		}
		now += bottleneckStep
		n.AdvanceTo(now)
		return nil
	}

	lift := cfg.Duration
	end := cfg.Duration + cfg.After
	marks := []bnMark{{}}
	res.RecoveryMS = -1
	window := int(bottleneckRecoveryWindow / cfg.Sample)
	for now < end {
		if now == lift {
			if err := n.SetLink(aAddr, bAddr, back); err != nil {
				return res, err
			}
		}
		stop := min(now+cfg.Sample, end)
		if now < lift {
			stop = min(stop, lift)
		}
		from := len(queued)
		for now < stop {
			if err := step(true); err != nil {
				return res, err
			}
		}
		st := a.ch.Stats()
		prev := marks[len(marks)-1]
		marks = append(marks, bnMark{now, st.BytesSent, g.offeredBytes})
		secs := (now - prev.at).Seconds()
		sm := BottleneckSample{
			AtMS:           msOf(now),
			SendBps:        float64(st.BytesSent-prev.sent) / secs,
			OfferedBps:     float64(g.offeredBytes-prev.offered) / secs,
			BudgetBps:      st.Budget.Rate,
			BudgetQueueMS:  msOf(st.Budget.QueueDelay),
			SendQueueMS:    msOf(st.Budget.SendQueueDelay),
			ShedRedundant:  st.Budget.Shed[transport.ShedRedundant],
			ShedSuperseded: st.Budget.Shed[transport.ShedSuperseded],
			ShedExpired:    st.Budget.Shed[transport.ShedExpired],
			QueueDrops:     n.LinkStats(aAddr, bAddr).QueueDrops,
		}
		if now <= lift {
			sm.CapacityBps = cfg.Bandwidth
		}
		// The datagrams sent in this interval that arrived by now; the
		// late ones of an interval are few at a 50 ms sample and fall in
		// the next (their send time is what places them in the p99).
		var qs []time.Duration
		for _, q := range queued[from:] {
			qs = append(qs, q.q)
		}
		if len(qs) > 0 {
			slices.Sort(qs)
			sm.QueueMaxMS, sm.QueueP50MS, sm.Datagrams = msOf(qs[len(qs)-1]), msOf(qs[len(qs)/2]), len(qs)
		}
		res.Samples = append(res.Samples, sm)
		if now > lift && res.RecoveryMS < 0 && len(marks) > window {
			p0, p1 := marks[len(marks)-1-window], marks[len(marks)-1]
			if p0.at >= lift && int64(p1.sent-p0.sent) >= p1.offered-p0.offered && st.Budget.Rate >= bnOffered {
				res.RecoveryMS = msOf(now - lift)
			}
		}
		if now == lift {
			res.MeanSendBps = float64(st.BytesSent-sentAt(marks, cfg.Settle)) / (lift - cfg.Settle).Seconds()
		}
	}
	// The game stops; the last reliable messages drain.
	for drainEnd := now + bottleneckDrain; now < drainEnd; {
		if err := step(false); err != nil {
			return res, err
		}
	}

	pct := func(from, to time.Duration) (float64, int) {
		var qs []time.Duration
		for _, q := range queued {
			if q.at >= from && q.at < to {
				qs = append(qs, q.q)
			}
		}
		if len(qs) == 0 {
			return 0, 0
		}
		slices.Sort(qs)
		return msOf(qs[len(qs)*99/100]), len(qs)
	}
	res.P99QueueBeforeMS, _ = pct(0, cfg.Settle)
	res.P99QueueMS, res.QueueDatagrams = pct(cfg.Settle, lift)
	st := a.ch.Stats()
	res.ReliableAccepted, res.ReliableDelivered = g.accepted, b.reliable
	res.ReliableInOrder = !b.outOfOrder && g.backlog == 0
	res.QueueFull = g.queueFull
	res.UnreliableOffered, res.UnreliableDelivered = g.unrel, b.unrel
	res.SequencedOffered, res.SequencedDelivered = g.seq, b.seqd
	res.ShedRedundant = st.Budget.Shed[transport.ShedRedundant]
	res.ShedSuperseded = st.Budget.Shed[transport.ShedSuperseded]
	res.ShedExpired = st.Budget.Shed[transport.ShedExpired]
	for _, v := range st.Budget.ShedBytes {
		res.ShedBytes += v
	}
	res.PacedWaits, res.Backoffs, res.Increases = st.Budget.PacedWaits, st.Budget.Backoffs, st.Budget.Increases
	ls := n.LinkStats(aAddr, bAddr)
	res.QueueDrops, res.MaxBacklog = ls.QueueDrops, ls.MaxBacklog
	return res, nil
}

// bnMark is the sender's bytes sent and the game's bytes offered at a
// sample's end.
type bnMark struct {
	at      time.Duration
	sent    uint64
	offered int64
}

// sentAt returns the bytes sent at the last of marks at or before t.
func sentAt(marks []bnMark, t time.Duration) uint64 {
	var v uint64
	for _, m := range marks {
		if m.at <= t {
			v = m.sent
		}
	}
	return v
}

// msOf is d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Failed reports whether the run broke a promise: a reliable message not
// delivered, or delivered out of order or twice.
func (r BottleneckResult) Failed() bool {
	return r.ReliableDelivered != r.ReliableAccepted || !r.ReliableInOrder
}

// WriteBottleneckJSON writes r as indented JSON.
func WriteBottleneckJSON(w io.Writer, r BottleneckResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteBottleneckCSV writes r's time series as CSV, a header row first,
// the columns the JSON names of BottleneckSample.
func WriteBottleneckCSV(w io.Writer, r BottleneckResult) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	rows := [][]string{{"at_ms", "capacity_bps", "send_bps", "offered_bps", "budget_bps", "budget_queue_ms", "send_queue_ms",
		"queue_max_ms", "queue_p50_ms", "datagrams", "shed_redundant", "shed_superseded", "shed_expired", "queue_drops"}}
	for _, s := range r.Samples {
		rows = append(rows, []string{f(s.AtMS), strconv.FormatInt(s.CapacityBps, 10), f(s.SendBps), f(s.OfferedBps),
			strconv.FormatInt(s.BudgetBps, 10), f(s.BudgetQueueMS), f(s.SendQueueMS), f(s.QueueMaxMS), f(s.QueueP50MS),
			strconv.Itoa(s.Datagrams), u(s.ShedRedundant), u(s.ShedSuperseded), u(s.ShedExpired), u(s.QueueDrops)})
	}
	return cw.WriteAll(rows) // flushes
}

// Goals of the efficiency issue for the bottleneck: the p99 queuing delay
// after settling within two 60 Hz ticks, the rate back within 2 s of the
// lift.
const (
	BottleneckQueueGoal    = 2 * time.Second / 60
	BottleneckRecoveryGoal = 2 * time.Second
)

// WriteBottleneckMarkdown writes r's figures as a Markdown table, each
// against its goal, linking chart (a file name; "" for none).
func WriteBottleneckMarkdown(w io.Writer, r BottleneckResult, chart string) error {
	c := r.Config
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	recovery := "not within the run"
	if r.RecoveryMS >= 0 {
		recovery = fmt.Sprintf("%.0f ms", r.RecoveryMS)
	}
	var b []byte
	p := func(format string, args ...any) { b = fmt.Appendf(b, format, args...) }
	p("# tickwire bench --profile bottleneck\n\n")
	p("A %d B/s bottleneck with a %d B queue, %g ms ± %g ms one way, seed %d; the game offers %d B/s (%s) for %g s, then the bottleneck lifts for %g s. Simulated clock: the same flags give the same figures.\n\n",
		c.BandwidthBps, c.QueueLimit, c.DelayMS, c.JitterMS, c.Seed, c.OfferedBps, c.Offer, c.DurationS, c.AfterS)
	if chart != "" {
		p("![send rate and queuing delay over time](%s)\n\n", chart)
	}
	p("| figure | value | goal |\n|---|---:|---|\n")
	p("| p99 one-way queuing delay at the bottleneck, %g s to the lift (%d datagrams) | %.1f ms | ≤ %.0f ms: %s |\n",
		c.SettleS, r.QueueDatagrams, r.P99QueueMS, msOf(BottleneckQueueGoal), verdict(r.P99QueueMS <= msOf(BottleneckQueueGoal)))
	p("| p99 queuing delay before %g s (the estimator settling) | %.1f ms | |\n", c.SettleS, r.P99QueueBeforeMS)
	p("| mean wire rate, %g s to the lift | %.0f B/s (%.2f× the bottleneck) | |\n", c.SettleS, r.MeanSendBps, r.MeanSendBps/float64(c.BandwidthBps))
	p("| recovery after the lift (250 ms of sending covers the offer, budget rate ≥ offered) | %s | ≤ %v: %s |\n",
		recovery, BottleneckRecoveryGoal, verdict(r.RecoveryMS >= 0 && r.RecoveryMS <= msOf(BottleneckRecoveryGoal)))
	p("| reliable messages delivered / accepted (in order, once: %v) | %d / %d | all: %s |\n",
		r.ReliableInOrder, r.ReliableDelivered, r.ReliableAccepted, verdict(!r.Failed()))
	p("| reliable sends refused with ErrQueueFull (retried next tick) | %d | |\n", r.QueueFull)
	p("| shed: redundant copies / superseded sequenced / expired unreliable | %d / %d / %d (%d B) | counted |\n",
		r.ShedRedundant, r.ShedSuperseded, r.ShedExpired, r.ShedBytes)
	p("| sequenced delivered / offered; unreliable delivered / offered | %d / %d; %d / %d | |\n",
		r.SequencedDelivered, r.SequencedOffered, r.UnreliableDelivered, r.UnreliableOffered)
	p("| budget: back-offs / increases / paced Flushes | %d / %d / %d | |\n", r.Backoffs, r.Increases, r.PacedWaits)
	p("| bottleneck queue: drops / largest backlog | %d / %d B | |\n", r.QueueDrops, r.MaxBacklog)
	_, err := w.Write(b)
	return err
}
