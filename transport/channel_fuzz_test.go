package transport

import (
	"errors"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// channelSeeds returns real datagrams (channel header onward) covering every
// frame type: what a peer's Flush produces for a mix of traffic.
func channelSeeds(tb testing.TB) [][]byte {
	p := newPair(tb, Config{})
	var seeds [][]byte
	collect := func() {
		p.tick++
		p.a.Flush(p.now, &p.sa)
		for _, d := range p.sa.out {
			seeds = append(seeds, append([]byte(nil), d[wire.SessionHeaderLen:]...))
		}
		p.sa.out = p.sa.out[:0]
	}
	p.a.SendUnreliable([]byte("hello"))
	p.a.SendSequenced(1, []byte("pos"))
	p.a.SendReliable(0, []byte("unordered"))
	p.a.SendReliable(2, []byte("ordered"))
	p.a.SendRecord(1, []byte("actions"))
	collect()
	p.a.SendUnreliable(make([]byte, 3000)) // fragments
	collect()
	p.a.Disconnect(3)
	collect()
	return seeds
}

// FuzzChannelReceive feeds arbitrary datagrams to a channel: it must never
// panic; a datagram it refuses is counted as malformed and delivers
// nothing; one it accepts delivers only well-formed messages.
func FuzzChannelReceive(f *testing.F) {
	for _, s := range channelSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h nopHandler
		c, err := NewChannel(Config{}, &h, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 2; round++ { // twice: the second is a duplicate
			before := c.Stats()
			err := c.Receive(time.Duration(round+1), b)
			after := c.Stats()
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error %v does not wrap ErrMalformed", err)
				}
				if after.Malformed != before.Malformed+1 {
					t.Fatalf("refused datagram not counted: %d → %d", before.Malformed, after.Malformed)
				}
				if h.messages != 0 {
					t.Fatal("a refused datagram delivered messages")
				}
				return
			}
			if round == 1 && after.Delivered != before.Delivered {
				t.Fatal("a duplicate datagram delivered messages again")
			}
		}
	})
}

// The generated seeds are themselves valid datagrams (so the fuzz target
// starts from real traffic); the same inputs are checked in under
// testdata/fuzz/FuzzChannelReceive for `go test -fuzz` runs.
func TestChannelSeedsDecode(t *testing.T) {
	for i, s := range channelSeeds(t) {
		var h nopHandler
		c, _ := NewChannel(Config{}, &h, 0, 1)
		if err := c.Receive(0, s); err != nil {
			t.Fatalf("seed %d refused: %v", i, err)
		}
	}
}
