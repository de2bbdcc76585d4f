package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// ProfileLoad is the server-load profile: Peers client Endpoints in one
// process against one server Endpoint, direct on loopback at 0 % loss
// (no relay: the relay would be the bottleneck, not the server). The
// server ticks at LoadRate on its own goroutine (Poll, echo on receipt,
// Flush); one goroutine ticks every client at LoadRate (Poll, send one
// Size-byte reliable-ordered message, Flush) and times each echo. All
// peers connect first (bounded by DefaultConnectTimeout), then the clients
// send for Duration, then the outstanding echoes drain (bounded by Drain).
//
// Its figures are what a game-server operator sizes a machine by: the
// server's CPU µs per peer-tick, user and system apart (the server
// goroutine is locked to its OS thread and that thread's CPU time read
// with getrusage RUSAGE_THREAD over the send window, Linux only), and the
// wall time inside its Poll+Flush per peer-tick (every OS; it also counts
// time the OS preempted the goroutine), the echo round trip (which
// includes up to a tick of waiting at each end), and the server's heap per
// peer (measured with the clients closed, since they share the process).
// The row's CPUSeconds is process-wide (getrusage) over the send window,
// so it includes the clients, for context. Only the tickwire transport
// runs it.
const ProfileLoad = "load"

// Load profile settings.
const (
	// DefaultPeers is the load profile's default number of clients: the
	// most one server Endpoint holds (transport.MaxPeersLimit, one per
	// peer id).
	DefaultPeers = transport.MaxPeersLimit
	// DefaultLoadDuration is how long the load profile's clients send.
	DefaultLoadDuration = 5 * time.Second
	// LoadRate is the tick rate of the load profile's server and clients,
	// and so each client's message rate, in Hz.
	LoadRate = 60
)

// loadResult is what runLoad measured besides the echo recorder.
type loadResult struct {
	sent, delivered int64
	server          serverWindow // the server's ticks and time in the send window
	heapPerPeer     int64
	wireBytes       int64
}

// serverWindow is what the server goroutine measured over the send
// window: its ticks, the wall time inside Poll+Flush, and its OS thread's
// user and system CPU time from the start of the first measured tick to
// the end of the last (zero where threadCPUMeasured is false).
type serverWindow struct {
	ticks     int64
	busy      time.Duration
	user, sys time.Duration
}

// loadServer is the server Endpoint and its 60 Hz goroutine.
type loadServer struct {
	ep        *transport.Endpoint
	measuring atomic.Bool
	mu        sync.Mutex   // guards window
	window    serverWindow // written by loop while measuring
	peers     atomic.Int64 // sessions held after the last tick
	stop      chan struct{}
	done      chan struct{}
}

// measured returns what the server measured in the send window so far.
func (s *loadServer) measured() serverWindow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.window
}

// loop ticks the server every period on an absolute schedule until stop,
// then closes it. It runs locked to its OS thread, and the tick's work
// runs on this goroutine only, so the thread's CPU time (threadCPU) over
// the measured ticks is the server's: its Poll, echo and Flush, the system
// calls they make, and the sleeps between ticks (which cost next to
// nothing). The wall time inside Poll+Flush is measured beside it; it
// also counts time the OS preempted the goroutine.
func (s *loadServer) loop(start time.Time, period time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(s.done)
	defer s.ep.Close()
	next := time.Since(start)
	var user0, sys0 time.Duration
	inWindow := false
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		measuring := s.measuring.Load()
		if measuring && !inWindow {
			user0, sys0 = threadCPU()
			inWindow = true
		}
		t0 := time.Now()
		now := t0.Sub(start)
		errPoll := s.ep.Poll(now)
		errFlush := s.ep.Flush(now)
		if measuring {
			busy := time.Since(t0)
			user, sys := threadCPU()
			s.mu.Lock()
			s.window.ticks++
			s.window.busy += busy
			s.window.user, s.window.sys = user-user0, sys-sys0
			s.mu.Unlock()
		}
		s.peers.Store(int64(s.ep.StateSize()))
		if errors.Is(errPoll, transport.ErrClosed) || errors.Is(errFlush, transport.ErrClosed) {
			return
		}
		next += period
		if d := next - time.Since(start); d > 0 {
			time.Sleep(d)
		} else {
			next = time.Since(start) // fell behind: do not burst to catch up
		}
	}
}

// loadClient is one client Endpoint and its echo bookkeeping; all clients
// run on the driver goroutine.
type loadClient struct {
	transport.NopHandler
	ep        *transport.Endpoint
	rec       *loadRecorder
	connected bool
	next      uint64 // the next echo's seq (reliable-ordered: in order)
	seq       uint64 // the next message's seq
}

func (c *loadClient) OnConnect(*transport.Peer) { c.connected = true }

func (c *loadClient) OnMessage(_ *transport.Peer, m transport.Message) {
	c.rec.onEcho(c, m.Payload)
}

// loadRecorder times the echoes of every client; it runs on the driver
// goroutine only.
type loadRecorder struct {
	start     time.Time
	size      int
	hist      *hdrhistogram.Histogram
	delivered int64
	bad       int64 // out-of-order, duplicate or corrupt echoes
}

// onEcho checks one of c's echoes and records its round trip.
func (r *loadRecorder) onEcho(c *loadClient, p []byte) {
	now := time.Since(r.start)
	if len(p) != r.size {
		r.bad++
		return
	}
	seq := binary.LittleEndian.Uint64(p[0:])
	at := time.Duration(binary.LittleEndian.Uint64(p[8:]))
	if seq != c.next {
		r.bad++
		return
	}
	for i := MinSize; i < len(p); i++ {
		if p[i] != byte(seq)+byte(i) {
			r.bad++
			return
		}
	}
	c.next++
	us := max((now - at).Microseconds(), histMin)
	_ = r.hist.RecordValue(min(us, histMax)) // clamped: cannot fail
	r.delivered++
}

// heapInuse returns HeapInuse after a full collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// runLoad runs a load scenario (defaults applied).
func runLoad(ctx context.Context, s Scenario) (Result, error) {
	res := Result{Transport: s.Transport, Profile: s.Profile, Link: s.Link.result(), LatencyKind: RTT, LatencyCDF: []CDFPoint{}, Peers: s.Peers}
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	wall0 := time.Now()

	lr, rec, cpu, err := loadRun(ctx, s)
	if err != nil {
		return res, err
	}
	wall := time.Since(wall0)
	runtime.ReadMemStats(&ms1)

	res.Sent, res.Delivered = lr.sent, lr.delivered
	res.LatencyMS, res.LatencyCDF = latencyOf(rec.hist)
	res.PayloadBytes = int64(s.Size) * (lr.sent + lr.delivered)
	res.WireBytes = lr.wireBytes
	res.CPUSeconds = cpu.Seconds()
	res.WallSeconds = wall.Seconds()
	if lr.sent > 0 {
		res.AllocsPerMsg = float64(ms1.Mallocs-ms0.Mallocs) / float64(lr.sent)
	}
	res.PeakRSSBytes = peakRSS()
	if w := lr.server; w.ticks > 0 {
		perPeerTick := func(d time.Duration) float64 {
			return float64(d.Nanoseconds()) / 1e3 / float64(w.ticks*int64(s.Peers))
		}
		res.ServerWallUsPerPeerTick = perPeerTick(w.busy)
		if threadCPUMeasured {
			res.ServerUserUsPerPeerTick = perPeerTick(w.user)
			res.ServerSysUsPerPeerTick = perPeerTick(w.sys)
			res.ServerCPUUsPerPeerTick = res.ServerUserUsPerPeerTick + res.ServerSysUsPerPeerTick
		}
	}
	res.MemoryPerPeerBytes = lr.heapPerPeer
	return res, nil
}

// loadRun sets up the server and the clients, connects them, runs the send
// window and the drain, and closes everything. cpu is the process's CPU
// time over the send window.
func loadRun(ctx context.Context, s Scenario) (lr loadResult, rec *loadRecorder, cpu time.Duration, err error) {
	period := time.Second / LoadRate
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	// Every client shares the source address 127.0.0.1, so the per-source
	// handshake limit (meant for one player per address) is raised to let
	// all of them in at once; the global budget likewise.
	scfg := transport.EndpointConfig{
		Channel:              transport.Config{MTU: s.MTU},
		MaxPeers:             s.Peers,
		HandshakeRate:        1e6,
		HandshakeBurst:       4 * s.Peers,
		GlobalHandshakeRate:  1e6,
		GlobalHandshakeBurst: 4 * s.Peers,
	}
	ccfg := transport.EndpointConfig{Channel: transport.Config{MTU: s.MTU}}

	// One datagram from every peer arrives each tick while the server
	// sleeps, so its buffers are sized as a game server's would be (the
	// kernel clamps them to rmem_max / wmem_max).
	serverSock, err := udp.Open(loopback, udp.Config{
		RecvBuffer: throughputSocketBuffer, SendBuffer: throughputSocketBuffer,
	})
	if err != nil {
		return lr, nil, 0, fmt.Errorf("bench: load server socket: %w", err)
	}
	ep, err := transport.Listen(serverSock, scfg, &tickwireEcho{})
	if err != nil {
		serverSock.Close()
		return lr, nil, 0, fmt.Errorf("bench: load server: %w", err)
	}
	ccfg.ServerKey = ep.PublicKey()
	start := time.Now()
	srv := &loadServer{ep: ep, stop: make(chan struct{}), done: make(chan struct{})}
	rec = &loadRecorder{start: start, size: s.Size, hist: hdrhistogram.New(histMin, histMax, histDigits)}
	clients := make([]*loadClient, 0, s.Peers)
	heap0 := heapInuse() // the server is open, no client yet
	var clientsOnce, serverOnce sync.Once
	closeClients := func() {
		clientsOnce.Do(func() {
			for i, c := range clients {
				c.ep.Close()
				clients[i] = nil // unreachable: out of the server's heap figure
			}
		})
	}
	closeAll := func() {
		closeClients()
		serverOnce.Do(func() {
			close(srv.stop)
			<-srv.done
		})
	}
	go srv.loop(start, period)
	defer closeAll()

	for range s.Peers {
		sock, err := udp.Open(loopback, udp.Config{})
		if err != nil {
			return lr, nil, 0, fmt.Errorf("bench: load client socket %d: %w", len(clients), err)
		}
		c := &loadClient{rec: rec}
		c.ep, err = transport.Dial(sock, serverSock.LocalAddr(), ccfg, c, time.Since(start))
		if err != nil {
			sock.Close()
			return lr, nil, 0, fmt.Errorf("bench: load client %d: %w", len(clients), err)
		}
		clients = append(clients, c)
	}

	// tick runs one client tick: Poll, send (if send), Flush each client.
	buf := make([]byte, s.Size)
	tick := func(send bool) {
		for _, c := range clients {
			now := time.Since(start)
			c.ep.Poll(now)
			if send && c.connected {
				fill(buf, c.seq, time.Since(start))
				c.seq++
				lr.sent++
				// A refused send is never echoed: delivered < sent.
				c.ep.Remote().Channel().SendReliable(echoStream, buf) // copies buf
			}
			c.ep.Flush(time.Since(start))
		}
	}
	// ticker sleeps to the next tick on an absolute schedule.
	next := time.Since(start)
	wait := func() {
		next += period
		if d := next - time.Since(start); d > 0 {
			time.Sleep(d)
		} else {
			next = time.Since(start)
		}
	}

	// Connect all the peers, bounded.
	deadline := time.Now().Add(DefaultConnectTimeout)
	for {
		n := 0
		for _, c := range clients {
			if c.connected {
				n++
			}
		}
		if n == len(clients) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return lr, nil, 0, fmt.Errorf("bench: load: %d of %d clients connected after %v", n, len(clients), DefaultConnectTimeout)
		}
		tick(false)
		wait()
	}
	next = time.Since(start)

	// The send window.
	cpu0 := cpuTime()
	srv.measuring.Store(true)
	end := time.Since(start) + s.Duration
	for time.Since(start) < end && ctx.Err() == nil {
		tick(true)
		wait()
	}
	srv.measuring.Store(false)
	cpu = cpuTime() - cpu0
	lr.server = srv.measured()

	// Drain the outstanding echoes, bounded.
	deadline = time.Now().Add(s.Drain)
	for rec.delivered < lr.sent && time.Now().Before(deadline) && ctx.Err() == nil {
		tick(false)
		wait()
	}
	lr.delivered = rec.delivered
	for _, c := range clients {
		lr.wireBytes += int64(c.ep.Stats().BytesOut)
	}

	// The server's heap per peer: with the clients closed and unreachable,
	// what the heap grew by since before they were opened is the server's
	// sessions, in their steady state after the send window (the server
	// keeps them until its idle timeout, far longer than this takes).
	closeClients()
	heap1 := heapInuse()
	if n := srv.peers.Load(); n != int64(s.Peers) {
		return lr, nil, 0, fmt.Errorf("bench: load: the server holds %d sessions, want %d", n, s.Peers)
	}
	lr.heapPerPeer = (int64(heap1) - int64(heap0)) / int64(s.Peers)
	closeAll()
	lr.wireBytes += int64(ep.Stats().BytesOut)
	return lr, rec, cpu, nil
}
