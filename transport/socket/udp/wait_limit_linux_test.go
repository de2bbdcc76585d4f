package udp_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/tickwire/tickwire/transport/socket/udp"
)

// TestOpenOutOfDescriptors: a socket takes four descriptors (the socket,
// and the waiter's epoll, eventfd and timerfd). With the process's limit
// set so that each of them in turn is the one refused, Open returns an
// error — never a panic — and leaves no descriptor behind.
func TestOpenOutOfDescriptors(t *testing.T) {
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
			t.Fatalf("restoring RLIMIT_NOFILE: %v", err)
		}
	}()
	highest := func() uint64 {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd here")
		}
		return uint64(len(ents)) + 8 // headroom: the runtime may hold a few more
	}
	base := highest()
	failed := 0
	for room := uint64(0); room < 8; room++ {
		lim := saved
		lim.Cur = base + room
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Skipf("setrlimit: %v", err)
		}
		var opened []*udp.Conn
		for range 4 {
			c, err := udp.Open(lo4, udp.Config{})
			if err != nil {
				failed++
				break
			}
			opened = append(opened, c)
		}
		for _, c := range opened {
			c.Close()
		}
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	if failed == 0 {
		t.Fatal("no Open failed: the limits did not bite")
	}
	if after := highest(); after > base {
		t.Fatalf("descriptors: %d before, %d after", base, after)
	}
}
