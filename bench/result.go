package bench

// Latency kinds.
const (
	// RTT: the latency is a round trip, send to echo received.
	RTT = "rtt"
	// OneWay: the latency is one way, send to delivery.
	OneWay = "one_way"
)

// Result is one row of a run: one transport, one profile, one link. Its
// JSON form is the bench's machine-readable schema; every field is always
// present.
type Result struct {
	Transport string `json:"transport"`
	Profile   string `json:"profile"`
	// Delivery is Reliable or Unreliable: what the row's transport
	// promised for its messages (see DeliveryOf). A reliable row that
	// delivered a different number than it sent Failed.
	Delivery string `json:"delivery"`
	// Rep is the row's repetition, 0 … reps-1, in a run of several (see
	// RunReps); 0 in a run of one.
	Rep int `json:"rep"`
	// Config is the peer configuration the row ran: the transport name
	// and every setting of the implementation that the bench chose or
	// that differs between peers (windows, modes, MTU, flow control,
	// socket buffers), as human-readable strings.
	Config PeerConfig `json:"config"`
	// NotSupported, when not empty, says why the row could not run at
	// its settings (kcp-fast with a message above its MSS, quic below
	// 1200-byte datagrams): its counters are zero and it is not Failed.
	NotSupported string `json:"not_supported"`
	// Link is the impairment of each direction; zero (unknown) for a
	// RunClient row.
	Link LinkResult `json:"link"`
	// LatencyKind is RTT or OneWay, or NoLatency (pps and bulk, whose
	// LatencyMS is all zero).
	LatencyKind string `json:"latency_kind"`
	// Sent counts the messages the profile sent; Delivered those that
	// completed (for echo: whose echo came back intact, once; for actions:
	// the inputs generated, and those the server applied exactly once).
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
	// Refused counts the inputs the rollback server refused — too late for
	// its rewind bound, say — which are therefore not delivered (actions;
	// 0 for the other profiles).
	Refused int64 `json:"refused"`
	// LatencyMS are percentiles of the delivered messages' latency, in
	// milliseconds (µs resolution). All zero when nothing was delivered.
	LatencyMS Latency `json:"latency_ms"`
	// LatencyCDF is the distribution of the same latencies: the latency
	// at each of a fixed set of percentiles (0, 1, 2, 5, 10 … 90 by 5,
	// 95, 97.5, 99, 99.5, 99.8, 99.9, 99.99, 100), ascending; the first
	// point is the minimum, the last the maximum. Empty (never null in
	// the JSON) when the row has no latency or delivered nothing.
	LatencyCDF []CDFPoint `json:"latency_cdf"`
	// PayloadBytes are the application payload bytes carried, both
	// directions (for echo: message size × (Sent + Delivered), the
	// client's messages and the echoes that came back; for actions: the
	// inputs' payload bytes, 8 × Sent).
	PayloadBytes int64 `json:"payload_bytes"`
	// WireBytes are the UDP payload bytes both ends sent into the relay:
	// headers, acks, retransmissions and redundancy included, IP/UDP
	// headers not. For a RunClient row: the bytes the client's socket sent
	// and received (see RunClient).
	WireBytes int64 `json:"wire_bytes"`
	// RedundantBytes are the frame bytes of tickwire's redundant copies
	// among WireBytes, both ends (transport.ChannelStats.RedundantBytes;
	// echo; 0 for the other transports and profiles, which do not say).
	RedundantBytes int64 `json:"redundant_bytes"`
	// CPUSeconds is process-wide user+system CPU time over the row
	// (getrusage RUSAGE_SELF): both ends, the relay and the profile.
	CPUSeconds float64 `json:"cpu_seconds"`
	// WallSeconds is the row's elapsed time, pair opening to closing.
	WallSeconds float64 `json:"wall_seconds"`
	// AllocsPerMsg is the process-wide heap allocation count over the row
	// divided by Sent.
	AllocsPerMsg float64 `json:"allocs_per_msg"`
	// PeakRSSBytes is the process's peak resident set so far (getrusage
	// Maxrss): a high-water mark that never decreases from row to row.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// ThroughputMsgsPerS is Delivered divided by the time from the first
	// send to the last delivery (pps and bulk; 0 for echo).
	ThroughputMsgsPerS float64 `json:"throughput_msgs_per_s"`
	// ThroughputDatagramsPerS is the datagrams the receiving socket read
	// over the same time (pps and bulk; 0 for echo and for kcp, whose
	// counters mix both ends). Tickwire packs several small messages into
	// one datagram, so it may be well below ThroughputMsgsPerS.
	ThroughputDatagramsPerS float64 `json:"throughput_datagrams_per_s"`
	// ThroughputMBPerS is the payload delivered over the same time, in
	// 10^6 bytes per second (pps and bulk; 0 for echo).
	ThroughputMBPerS float64 `json:"throughput_mb_per_s"`
	// Peers is the number of clients (load and actions; 0 for the other
	// profiles).
	Peers int `json:"peers"`
	// ServerCPUUsPerPeerTick is the server's CPU time per peer-tick, in
	// µs: ServerUserUsPerPeerTick + ServerSysUsPerPeerTick (load, Linux;
	// 0 for the other profiles and where per-thread CPU is not measured,
	// where ServerWallUsPerPeerTick is the figure).
	ServerCPUUsPerPeerTick float64 `json:"server_cpu_us_per_peer_tick"`
	// ServerUserUsPerPeerTick and ServerSysUsPerPeerTick are the user and
	// system CPU time of the server's OS thread (its goroutine is locked
	// to it; getrusage RUSAGE_THREAD) from the start of the first tick in
	// the send window to the end of the last, divided by those ticks ×
	// Peers, in µs: Poll, echo and Flush, their system calls, and the
	// sleeps between ticks (load, Linux only; 0 otherwise).
	ServerUserUsPerPeerTick float64 `json:"server_user_us_per_peer_tick"`
	ServerSysUsPerPeerTick  float64 `json:"server_sys_us_per_peer_tick"`
	// ServerWallUsPerPeerTick is the wall time the server goroutine spent
	// inside Poll and Flush (echoing included) over the same ticks,
	// divided by ticks × Peers, in µs: its CPU time plus any time the OS
	// preempted it, so it moves with the machine's load (load, every OS;
	// 0 for the other profiles). Before the thread CPU was measured this
	// was the row's only server figure, named CPU.
	ServerWallUsPerPeerTick float64 `json:"server_wall_us_per_peer_tick"`
	// MemoryPerPeerBytes is the server's heap per peer: HeapInuse (after a
	// GC) with the server holding Peers sessions after the send window and
	// the clients closed and collected, minus HeapInuse before the clients
	// were opened, divided by Peers (load; 0 for the other profiles).
	MemoryPerPeerBytes int64 `json:"memory_per_peer_bytes"`
}

// LinkResult describes one direction's impairment (both directions are
// the same). The zero LinkResult (Burst 0) means the link is unknown: a
// RunClient row, whose link is whatever sits between the processes.
type LinkResult struct {
	Loss     float64 `json:"loss"` // percent
	DelayMS  float64 `json:"delay_ms"`
	JitterMS float64 `json:"jitter_ms"`
	Dup      float64 `json:"dup"`   // percent
	Burst    float64 `json:"burst"` // mean loss run, 1 = independent
	Seed     uint64  `json:"seed"`
}

// Known reports whether l describes a link the bench set up (Burst is
// at least 1), not the unknown link of a RunClient row.
func (l LinkResult) Known() bool { return l.Burst != 0 }

// Latency holds latency percentiles in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// CDFPoint is one point of a latency distribution: Percentile % of the
// delivered messages took at most MS milliseconds.
type CDFPoint struct {
	Percentile float64 `json:"p"`  // in [0, 100]
	MS         float64 `json:"ms"` // µs resolution
}

// PeerConfig is a row's peer configuration.
type PeerConfig struct {
	// Name is the transport name (Result.Transport).
	Name string `json:"name"`
	// Settings maps each setting to its value (encoding/json writes the
	// keys sorted).
	Settings map[string]string `json:"settings"`
}

// Reliable reports whether the row promises delivery of every message:
// its Delivery, or for a row without one (a Result from before the field
// existed) its profile (echo, bulk, load and actions do; pps does not).
func (r Result) Reliable() bool {
	if r.Delivery != "" {
		return r.Delivery == Reliable
	}
	switch r.Profile {
	case ProfileEcho, ProfileBulk, ProfileLoad, ProfileActions:
		return true
	}
	return false
}

// Failed reports whether a reliable row that ran delivered less (or
// more) than it sent.
func (r Result) Failed() bool {
	return r.Reliable() && r.NotSupported == "" && r.Delivered != r.Sent
}
