package udp_test

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/udp"
)

// ageSlack covers the two clocks compared: Age is a CLOCK_REALTIME
// difference, the test's elapsed times are monotonic.
const ageSlack = time.Millisecond

// sendN writes n datagrams of size bytes from a to b.
func sendN(t *testing.T, a, b *udp.Conn, n, size int) {
	t.Helper()
	out := make([]socket.Message, n)
	for i := range out {
		out[i] = socket.Message{Buf: make([]byte, size), N: size, Addr: b.LocalAddr()}
	}
	if k, err := a.WriteBatch(out); k != n || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want %d", k, err, n)
	}
}

// readN reads exactly n datagrams from c, in calls of at most per
// messages, and returns them; it fails after 5 s.
func readN(t *testing.T, c *udp.Conn, n, per int) []socket.Message {
	t.Helper()
	watchdog := time.AfterFunc(5*time.Second, func() { c.Close() })
	defer watchdog.Stop()
	in := make([]socket.Message, n)
	for i := range in {
		in[i].Buf = make([]byte, 2048)
		in[i].Age = -1 // a read must overwrite it
	}
	for got := 0; got < n; {
		k, err := c.ReadBatch(in[got:min(got+per, n)])
		if err != nil {
			t.Fatalf("ReadBatch after %d of %d: %v", got, n, err)
		}
		got += k
	}
	return in
}

// warmUp sends datagrams from a to b until one arrives with a kernel
// timestamp. Some kernels turn receive stamping on lazily (a static key
// flipped by deferred work): the first datagrams after the setsockopt can
// be stamped only when read, with an Age of about 0.
func warmUp(t *testing.T, a, b *udp.Conn) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		sendN(t, a, b, 1, 32)
		waitQueued(t, b)
		time.Sleep(5 * time.Millisecond)
		m := readN(t, b, 1, 1)[0]
		if m.Age >= 4*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no datagram came with a kernel receive timestamp within 3 s (last Age %v)", m.Age)
		}
	}
}

// TestAge reads datagrams that waited in the socket and datagrams that did
// not, on every variant with timestamps: Age is the wait, bounded by the
// time the test saw pass between the send and the read's return.
func TestAge(t *testing.T) {
	if !kernelFeatures(t).Timestamps {
		t.Skip("the kernel refuses SO_TIMESTAMPNS")
	}
	for _, v := range variants {
		if !v.want.Timestamps {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			a, b := openPair(t, v, lo4)
			if !b.Features().Timestamps {
				t.Fatalf("Features() = %+v, want Timestamps", b.Features())
			}
			warmUp(t, a, b)

			// One datagram left 30 ms in the socket.
			t0 := time.Now()
			sendN(t, a, b, 1, 100)
			waitQueued(t, b)
			time.Sleep(30 * time.Millisecond)
			m := readN(t, b, 1, 1)[0]
			if el := time.Since(t0); m.Age < 25*time.Millisecond || m.Age > el+ageSlack || m.Age >= time.Second {
				t.Errorf("waited 30 ms: Age %v, want in [25ms, %v]", m.Age, el+ageSlack)
			}

			// One read at once.
			t0 = time.Now()
			sendN(t, a, b, 1, 100)
			waitQueued(t, b)
			m = readN(t, b, 1, 1)[0]
			if el := time.Since(t0); m.Age < 0 || m.Age > el+ageSlack {
				t.Errorf("read at once: Age %v, want in [0, %v]", m.Age, el+ageSlack)
			}

			// Two 30 ms apart, read together: each has its own age.
			sendN(t, a, b, 1, 100)
			waitQueued(t, b)
			time.Sleep(30 * time.Millisecond)
			t1 := time.Now()
			sendN(t, a, b, 1, 100)
			two := readN(t, b, 2, 2)
			el := time.Since(t1)
			if two[0].Age < 25*time.Millisecond || two[0].Age >= time.Second {
				t.Errorf("first of two: Age %v, want ≥ 25ms", two[0].Age)
			}
			if two[1].Age < 0 || two[1].Age > el+ageSlack {
				t.Errorf("second of two: Age %v, want in [0, %v]", two[1].Age, el+ageSlack)
			}
		})
	}
}

// TestAgeGRO: the datagrams of one coalesced receive share its stamp, also
// those a later read hands out of the buffer.
func TestAgeGRO(t *testing.T) {
	if !kernelFeatures(t).Timestamps {
		t.Skip("the kernel refuses SO_TIMESTAMPNS")
	}
	a, b := openPair(t, variants[0], lo4) // GSO and GRO
	if f := b.Features(); !f.GRO || !f.GSO {
		t.Skipf("no GSO and GRO here (%+v)", f)
	}
	warmUp(t, a, b)
	a0, b0 := a.Stats(), b.Stats()
	const n = 8
	t0 := time.Now()
	sendN(t, a, b, n, 200)
	waitQueued(t, b)
	time.Sleep(30 * time.Millisecond)
	first := readN(t, b, 3, 3)
	rest := readN(t, b, n-3, n)
	el := time.Since(t0)
	all := append(first, rest...)
	for i, m := range all {
		if m.Age < 25*time.Millisecond || m.Age > el+ageSlack {
			t.Errorf("datagram %d: Age %v, want in [25ms, %v]", i, m.Age, el+ageSlack)
		}
	}
	// One GSO send arriving as one GRO buffer: one stamp for all.
	if a.Stats().GSOSends-a0.GSOSends != 1 || b.Stats().GROReceives-b0.GROReceives != 1 {
		t.Logf("the %d datagrams did not travel as one buffer; shared stamp not checked", n)
		return
	}
	for i, m := range first {
		if m.Age != first[0].Age {
			t.Errorf("first read, datagram %d: Age %v, want %v as datagram 0 (one stamp, one clock read)", i, m.Age, first[0].Age)
		}
	}
	for i, m := range rest {
		if m.Age != rest[0].Age || m.Age < first[0].Age {
			t.Errorf("second read, datagram %d: Age %v, want %v as its first, and ≥ the first read's %v", i, m.Age, rest[0].Age, first[0].Age)
		}
	}
}

// TestAgeDisabled: with Config.DisableTimestamps the socket reports no
// timestamps and every Age is 0, however long the datagram waited.
func TestAgeDisabled(t *testing.T) {
	for _, v := range variants {
		if !v.cfg.DisableTimestamps {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			a, b := openPair(t, v, lo4)
			if f := b.Features(); f.Timestamps {
				t.Fatalf("Features() = %+v, want no Timestamps", f)
			}
			if f := b.Stats().Features; f.Timestamps {
				t.Fatalf("Stats().Features = %+v, want no Timestamps", f)
			}
			sendN(t, a, b, 2, 100)
			waitQueued(t, b)
			time.Sleep(30 * time.Millisecond)
			for i, m := range readN(t, b, 2, 2) {
				if m.Age != 0 {
					t.Errorf("datagram %d: Age %v, want 0", i, m.Age)
				}
			}
		})
	}
}
