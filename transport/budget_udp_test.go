package transport

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket/udp"
)

// TestBudgetLoopStylesUDP is TestBudgetCleanPathLoopStyles on real
// loopback UDP through Endpoints, for the pairs whose loops read their
// sockets late: a sender waking at random 1–50 ms gaps to a 60 Hz
// receiver and back. Each datagram's wait in its socket comes from the
// kernel's receive timestamp (socket.Message.Age), so neither loop's
// wake-up gaps read as queuing on a path that has none, and the budget
// carries the whole offer (about 400 KB/s) for the 2.5 s it runs.
func TestBudgetLoopStylesUDP(t *testing.T) {
	for _, pair := range [][2]loopStyle{{loopRandom, loopTick60}, {loopTick60, loopRandom}} {
		tx, rx := pair[0], pair[1]
		t.Run(fmt.Sprintf("%v-to-%v", tx, rx), func(t *testing.T) {
			sent, offered, st := runUDPOffer(t, tx, rx, 2500*time.Millisecond)
			t.Logf("from 0.5 s: sent %d B for %d B offered; budget rate %d B/s, backoffs %d, SRTT %v, jitter %v",
				sent, offered, st.Budget.Rate, st.Budget.Backoffs, st.SRTT, st.Jitter)
			if sent < offered*85/100 {
				t.Errorf("on clean loopback the budget held %v-to-%v traffic back: sent %d B for %d B offered (want ≥ 85 %%); budget %+v",
					tx, rx, sent, offered, st.Budget)
			}
		})
	}
}

// runUDPOffer connects a client (the sender, loop style tx, its game
// offering newOffer's load at 60 Hz) to a server (style rx) over real
// loopback UDP, runs both for d of wall time, each loop on its own
// goroutine, and returns the bytes the client sent and the bytes offered
// after the first 0.5 s, and the client channel's stats at the end.
func runUDPOffer(t *testing.T, tx, rx loopStyle, d time.Duration) (sent, offered int64, st ChannelStats) {
	t.Helper()
	open := func() *udp.Conn {
		c, err := udp.Open(netip.MustParseAddrPort("127.0.0.1:0"), udp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	sc, cc := open(), open()
	epoch := time.Now()
	clock := func() time.Duration { return time.Since(epoch) }
	server, err := Listen(sc, EndpointConfig{Clock: clock}, NopHandler{})
	if err != nil {
		t.Fatal(err)
	}
	client, err := Dial(cc, sc.LocalAddr(), EndpointConfig{ServerKey: server.PublicKey(), Clock: clock}, NopHandler{}, clock())
	if err != nil {
		t.Fatal(err)
	}
	// The handshake, both ends event-driven, bounded in time.
	for deadline := time.Now().Add(5 * time.Second); client.Remote() == nil || client.Remote().State() != PeerConnected; {
		if time.Now().After(deadline) {
			t.Fatal("handshake over loopback did not complete in 5 s")
		}
		for _, e := range []*Endpoint{server, client} {
			now := e.Now()
			if err := e.Poll(now); err != nil {
				t.Fatal(err)
			}
			if err := e.Flush(now); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	ch := client.Remote().Channel()
	o := newOffer()
	var sent0 uint64
	var off0 int64
	start := client.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	loop := func(e *Endpoint, style loopStyle, seed uint64, tick func(now time.Duration)) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 0x0DB))
		next := e.Now()
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch style {
			case loopTick60:
				next += tick60
			default: // loopRandom
				next += time.Duration(1+rng.IntN(50)) * time.Millisecond
			}
			if wait := next - e.Now(); wait > 0 {
				time.Sleep(wait)
			}
			now := e.Now()
			err := e.Poll(now)
			if err == nil {
				if tick != nil {
					tick(now)
				}
				err = e.Flush(now)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}
	game := start
	wg.Add(2)
	go loop(client, tx, 1, func(now time.Duration) {
		for ; game <= now; game += tick60 {
			o.tick(ch)
		}
		if sent0 == 0 && now-start >= 500*time.Millisecond {
			sent0, off0 = ch.Stats().BytesSent, o.offeredBytes
		}
	})
	go loop(server, rx, 2, nil)
	time.Sleep(d)
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	st = ch.Stats()
	return int64(st.BytesSent - sent0), o.offeredBytes - off0, st
}
