package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

// quicBulk runs a bulk row over quic-go, connected directly (no relay):
// bulkChunks(s.Bytes) BulkChunk-byte Writes on one bidirectional stream,
// for at most s.Duration, the receiver reading them back with
// io.ReadFull and checking each; then the sender closes the stream and
// waits until the receiver has all it was sent or s.Drain passes. Wire
// bytes are both connections' ConnectionStats BytesSent; datagrams are
// the receiver's PacketsReceived.
func quicBulk(ctx context.Context, s Scenario) (flow, error) {
	tlsConf, err := quicServerTLS()
	if err != nil {
		return flow{}, err
	}
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	sudp, err := net.ListenUDP("udp4", loopback)
	if err != nil {
		return flow{}, err
	}
	defer sudp.Close()
	str := &quic.Transport{Conn: sudp}
	defer str.Close()
	l, err := str.Listen(tlsConf, quicConfig(s.MTU))
	if err != nil {
		return flow{}, fmt.Errorf("quic listen: %w", err)
	}
	defer l.Close()
	noteBuffers(sudp)

	src := newBulkSource()
	sink := &bulkSink{src: src, start: time.Now()}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		sconn *quic.Conn // the server's end, once accepted
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		conn, err := l.Accept(rctx)
		if err != nil {
			return
		}
		mu.Lock()
		sconn = conn
		mu.Unlock()
		st, err := conn.AcceptStream(rctx)
		if err != nil {
			return
		}
		buf := make([]byte, BulkChunk)
		for {
			if _, err := io.ReadFull(st, buf); err != nil {
				return
			}
			sink.onChunk(buf)
		}
	}()
	// Last: close the server's end (its reader may wait on the stream)
	// and wait for the reader.
	defer func() {
		cancel()
		mu.Lock()
		if sconn != nil {
			sconn.CloseWithError(0, "done")
		}
		mu.Unlock()
		wg.Wait()
	}()

	cliTLS, err := quicClientTLS(nil, quicALPNBulk)
	if err != nil {
		return flow{}, err
	}
	cudp, err := net.ListenUDP("udp4", loopback)
	if err != nil {
		return flow{}, err
	}
	defer cudp.Close()
	ctr := &quic.Transport{Conn: cudp}
	defer ctr.Close()
	dctx, dcancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	conn, err := ctr.Dial(dctx, sudp.LocalAddr(), cliTLS, quicConfig(s.MTU))
	dcancel()
	if err != nil {
		return flow{}, fmt.Errorf("quic dial: %w", err)
	}
	defer conn.CloseWithError(0, "done")
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return flow{}, fmt.Errorf("quic open stream: %w", err)
	}
	// Bounds a Write blocked on flow control.
	_ = st.SetWriteDeadline(time.Now().Add(s.Duration + s.Drain + DefaultConnectTimeout))

	total := bulkChunks(s.Bytes)
	sendStart := time.Since(sink.start)
	var sent int64
	for sent < total && ctx.Err() == nil && time.Since(sink.start)-sendStart < s.Duration {
		if _, err := st.Write(src.chunk(sent)); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			return flow{}, fmt.Errorf("quic write: %w", err)
		}
		sent++
	}
	st.Close()
	waitCount(ctx, &sink.delivered, sent, time.Now().Add(s.Drain))
	f := flow{sent: sent, delivered: sink.delivered.Load(), elapsed: time.Duration(sink.lastAt.Load()) - sendStart}
	f.wireBytes = int64(conn.ConnectionStats().BytesSent)
	mu.Lock()
	if sconn != nil {
		stats := sconn.ConnectionStats()
		f.wireBytes += int64(stats.BytesSent)
		f.datagrams = int64(stats.PacketsReceived)
	}
	mu.Unlock()
	return f, nil
}
