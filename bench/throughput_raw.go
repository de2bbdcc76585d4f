package bench

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// rawPPS is the floor of the pps profile: a plain net.UDPConn sending
// s.Size-byte datagrams, one sendto each, to another that reads them, one
// recvfrom each. What the kernel drops on a full receive buffer is not
// delivered.
func rawPPS(ctx context.Context, s Scenario) (flow, error) {
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	rx, err := net.ListenUDP("udp4", loopback)
	if err != nil {
		return flow{}, err
	}
	defer rx.Close()
	tx, err := net.ListenUDP("udp4", loopback)
	if err != nil {
		return flow{}, err
	}
	defer tx.Close()
	_ = rx.SetReadBuffer(throughputSocketBuffer) // best effort: clamped by rmem_max
	_ = tx.SetWriteBuffer(throughputSocketBuffer)
	dst := rx.LocalAddr().(*net.UDPAddr).AddrPort()

	start := time.Now()
	var delivered, lastAt atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, maxDatagram)
		for {
			if _, err := rx.Read(buf); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			delivered.Add(1)
			lastAt.Store(int64(time.Since(start)))
		}
	}()

	msg := make([]byte, s.Size)
	var sent, wire int64
	end := start.Add(s.Duration)
	for i := 0; ctx.Err() == nil; i++ {
		// Check the clock every 64 datagrams, not every one.
		if i%64 == 0 && !time.Now().Before(end) {
			break
		}
		n, err := tx.WriteToUDPAddrPort(msg, dst)
		if err != nil {
			continue // ENOBUFS and the like: not sent
		}
		sent++
		wire += int64(n)
	}
	waitSettled(ctx, &delivered, time.Now().Add(s.Drain))
	rx.Close()
	wg.Wait()
	d := delivered.Load()
	return flow{sent: sent, delivered: d, datagrams: d, wireBytes: wire, elapsed: time.Duration(lastAt.Load())}, nil
}
