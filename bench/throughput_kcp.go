package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
)

// kcpFlow runs a pps or bulk row over kcp-go, connected directly (no
// relay), in the configuration of t. kcp-go has no unreliable mode, so
// pps sends reliable s.Size-byte messages, its closest equivalent; bulk
// sends BulkChunk-byte messages. In message mode one Write is one
// message; in stream mode (kcp-bulk) writes are merged into MSS-sized
// segments and the receiver reads each message back with io.ReadFull.
// Write blocks while kcp's send window (t's, or s.MaxInFlight) is full.
// Datagrams per second are
// not measured: kcp-go's counters (kcp.DefaultSnmp) are process-wide and
// mix both ends; wire bytes are its OutBytes, reset at the start of the
// row, which are both ends' alone as rows never overlap.
func kcpFlow(ctx context.Context, s Scenario, t kcpTransport) (flow, error) {
	kcp.DefaultSnmp.Reset()
	l, err := kcp.ListenWithOptions("127.0.0.1:0", nil, 0, 0)
	if err != nil {
		return flow{}, fmt.Errorf("kcp listen: %w", err)
	}
	_ = l.SetReadBuffer(throughputSocketBuffer)
	_ = l.SetWriteBuffer(throughputSocketBuffer)

	base := time.Now()
	var received, lastAt atomic.Int64
	var sink *bulkSink
	var src *bulkSource
	if s.Profile == ProfileBulk {
		src = newBulkSource()
		sink = &bulkSink{src: src, start: base}
	}
	var (
		mu      sync.Mutex
		session *kcp.UDPSession
		closed  bool
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
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
		session = sess
		mu.Unlock()
		buf := make([]byte, maxDatagram)
		size := s.Size
		if sink != nil {
			size = BulkChunk
		}
		for {
			var n int
			var err error
			if t.stream {
				n, err = io.ReadFull(sess, buf[:size])
			} else {
				n, err = sess.Read(buf)
			}
			if err != nil {
				return
			}
			if sink != nil {
				sink.onChunk(buf[:n])
			} else {
				lastAt.Store(int64(time.Since(base)))
			}
			received.Add(1)
		}
	}()
	shutdown := func(c *kcp.UDPSession) {
		if c != nil {
			c.Close()
		}
		l.Close()
		mu.Lock()
		closed = true
		if session != nil {
			session.Close()
		}
		mu.Unlock()
		wg.Wait()
	}

	c, err := kcp.DialWithOptions(l.Addr().String(), nil, 0, 0)
	if err != nil {
		shutdown(nil)
		return flow{}, fmt.Errorf("kcp dial: %w", err)
	}
	if err := t.configure(c, s.MTU, s.MaxInFlight); err != nil {
		shutdown(c)
		return flow{}, err
	}
	_ = c.SetReadBuffer(throughputSocketBuffer)
	_ = c.SetWriteBuffer(throughputSocketBuffer)
	// Bounds a Write blocked on a full window.
	_ = c.SetWriteDeadline(time.Now().Add(s.Duration + s.Drain + DefaultConnectTimeout))

	sendStart := time.Since(base)
	var sent int64
	total := int64(1) << 62
	msg := make([]byte, s.Size)
	if sink != nil {
		total = bulkChunks(s.Bytes)
	}
	for sent < total && ctx.Err() == nil && time.Since(base)-sendStart < s.Duration {
		p := msg
		if sink != nil {
			p = src.chunk(sent)
		}
		if _, err := c.Write(p); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			shutdown(c)
			return flow{}, fmt.Errorf("kcp write: %w", err)
		}
		sent++
	}
	deadline := time.Now().Add(s.Drain)
	var delivered, at int64
	if sink != nil {
		waitCount(ctx, &received, sent, deadline)
		shutdown(c)
		delivered, at = sink.delivered.Load(), sink.lastAt.Load()
	} else {
		waitSettled(ctx, &received, deadline)
		shutdown(c)
		delivered, at = received.Load(), lastAt.Load()
	}
	return flow{
		sent: sent, delivered: delivered,
		wireBytes: int64(kcp.DefaultSnmp.Copy().OutBytes),
		elapsed:   time.Duration(at) - sendStart,
	}, nil
}
