package bench

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"

	"github.com/tickwire/tickwire/rollback"
)

// actionsInbox carries the messages the kcp sessions' reader goroutines
// receive to the server's goroutine; buffers are recycled.
type actionsInbox struct {
	mu      sync.Mutex
	pending []actionsInboxMsg
	spare   [][]byte
}

type actionsInboxMsg struct {
	session int // index in accept order
	b       []byte
}

// push queues a copy of b from session.
func (q *actionsInbox) push(session int, b []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var buf []byte
	if n := len(q.spare); n > 0 {
		buf, q.spare = q.spare[n-1], q.spare[:n-1]
	}
	q.pending = append(q.pending, actionsInboxMsg{session, append(buf, b...)})
}

// drain hands every queued message to fn, in arrival order, under the
// inbox's lock (fn must not push).
func (q *actionsInbox) drain(fn func(session int, b []byte)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.pending {
		fn(m.session, m.b)
		q.spare = append(q.spare, m.b[:0])
	}
	clear(q.pending)
	q.pending = q.pending[:0]
}

// actionsKCP runs an actions row over kcp-go in t's mode: each client a
// kcp session through its own Relay, sending one input message per frame;
// the server's loop submits what the sessions received and ticks. A
// session is bound to the peer of its first message's record (kcp has no
// handshake that hands out ids; the bench tells each client its id), and
// a later message from another peer is malformed.
func actionsKCP(ctx context.Context, s Scenario, t kcpTransport, run *actionsRun, srv *actionsServer, rec *actionsRecorder) (actionsOutcome, error) {
	var out actionsOutcome
	l, err := kcp.ListenWithOptions("127.0.0.1:0", nil, 0, 0)
	if err != nil {
		return out, fmt.Errorf("bench: actions: kcp listen: %w", err)
	}
	_ = l.SetReadBuffer(throughputSocketBuffer)
	_ = l.SetWriteBuffer(throughputSocketBuffer)
	server := l.Addr().(*net.UDPAddr).AddrPort()

	var (
		inbox    actionsInbox
		readers  sync.WaitGroup
		mu       sync.Mutex
		closed   bool
		sessions []*kcp.UDPSession // accepted
		relays   []*Relay
		clients  []*kcp.UDPSession
	)
	closeAll := func() {
		for _, c := range clients {
			c.Close()
		}
		l.Close()
		mu.Lock()
		closed = true
		for _, sess := range sessions {
			sess.Close()
		}
		mu.Unlock()
		readers.Wait()
		for _, r := range relays {
			r.Close()
		}
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			sess, err := l.AcceptKCP()
			if err != nil {
				return
			}
			_ = t.configure(sess, s.MTU, s.MaxInFlight) // the client's MTU was accepted already
			mu.Lock()
			if closed {
				mu.Unlock()
				sess.Close()
				return
			}
			idx := len(sessions)
			sessions = append(sessions, sess)
			readers.Add(1)
			mu.Unlock()
			go func() {
				defer readers.Done()
				buf := make([]byte, maxDatagram)
				for {
					n, err := sess.Read(buf)
					if err != nil {
						return
					}
					inbox.push(idx, buf[:n])
				}
			}()
		}
	}()

	link := s.Link.config()
	for i := range s.Peers {
		r, err := NewRelay(RelayConfig{Target: server, Up: link, Down: link, Seed: relaySeed(s.Link.Seed, i)})
		if err != nil {
			closeAll()
			return out, fmt.Errorf("bench: actions relay %d: %w", i, err)
		}
		relays = append(relays, r)
		c, err := kcp.DialWithOptions(r.Addr().String(), nil, 0, 0)
		if err != nil {
			closeAll()
			return out, fmt.Errorf("bench: actions: kcp dial %d: %w", i, err)
		}
		clients = append(clients, c)
		if err := t.configure(c, s.MTU, s.MaxInFlight); err != nil {
			closeAll()
			return out, err
		}
	}

	// The server: bound[session] is the session's peer, −1 until its first
	// message.
	var bound []int
	var malformed int64
	submit := func(session int, b []byte) {
		for len(bound) <= session {
			bound = append(bound, -1)
		}
		peer, err := srv.submitActionInputs(b, bound[session])
		if err != nil {
			malformed++
			return
		}
		bound[session] = peer
	}
	run.wg.Add(1 + len(clients))
	go run.loop(func(now time.Duration) error {
		inbox.drain(submit)
		_, err := srv.tick(run.clk, now)
		return err
	})
	for i, c := range clients {
		go actionsKCPClient(run, rec, srv.w, rollback.Sender(i), c)
	}
	err = run.play(ctx, s, rec, func() bool { return true })
	close(run.stop)
	closeAll() // unblocks a client stuck in Write on a full window
	run.wg.Wait()
	if err == nil {
		err = run.firstErr()
	}
	if err != nil {
		return out, err
	}
	if malformed > 0 {
		return out, fmt.Errorf("bench: actions: %d malformed kcp input messages", malformed)
	}
	for _, r := range relays {
		out.wireBytes += int64(r.Stats().WireBytes())
	}
	out.refused = srv.refused
	return out, nil
}

// actionsKCPClient is kcp client p's goroutine: at the beginning of each
// frame 1 to Count it samples p's input and writes its input message.
// The world w is the server's, read only for the move type and p's entity
// (registered and created alike on every side).
func actionsKCPClient(run *actionsRun, rec *actionsRecorder, w *actWorld, p rollback.Sender, c *kcp.UDPSession) {
	defer run.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(d time.Duration) bool {
		if d <= 0 {
			return !run.stopped()
		}
		timer.Reset(d)
		select {
		case <-run.stop:
			return false
		case <-timer.C:
			return true
		}
	}
	for {
		if _, ok := run.clk.begin(1); ok {
			break
		}
		if !wait(time.Millisecond) {
			return
		}
	}
	move, ent := w.move.ID(), w.ents[p]
	payload := make([]byte, 0, actMoveSize)
	msg := make([]byte, 0, 64)
	for f := uint32(1); int(f) <= rec.count; f++ {
		at, _ := run.clk.begin(f)
		if !wait(at - time.Since(run.clk.start)) {
			return
		}
		if !rec.generate(p, f) {
			return
		}
		payload = encodeMove(payload[:0], actMoveOf(p, f))
		msg = appendActionInputs(msg[:0], f, p, move, ent, payload)
		if _, err := c.Write(msg); err != nil {
			if !run.stopped() {
				run.fail(fmt.Errorf("bench: actions: kcp client %d: %w", p, err))
			}
			return
		}
	}
}
