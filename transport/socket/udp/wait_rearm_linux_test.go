package udp_test

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport/socket/udp"
)

// TestWaitRearmsOnlyWhenDeadlineMoves: a loop woken before its deadline
// (here by Wake, as by a datagram) that waits for the same deadline again
// keeps the armed timer — no timerfd_settime — and that timer still ends
// the last Wait at the deadline; a deadline that moves earlier or later
// re-arms, and so does any Wait after the timer fired. Counts, and only
// loose time bounds (a Wait never ends before its deadline; one re-armed
// earlier ends long before the old one). The Waits that must keep the
// timer run on a frozen clock, so descheduling cannot move their deadline.
func TestWaitRearmsOnlyWhenDeadlineMoves(t *testing.T) {
	c := open(t, lo4, udp.Config{})
	defer c.Close()
	wait := func(d time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		if err := c.Wait(d); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	arms := func(want uint64, when string) {
		t.Helper()
		if n := udp.TimerArms(c); n != want {
			t.Fatalf("%s: the timer was armed %d times, want %d", when, n, want)
		}
	}

	// The loop's clock stands still while it is woken six times: each Wait
	// asks for the very deadline the first one armed. (On the real clock a
	// test goroutine descheduled between computing its timeout and Wait
	// reading the clock asks for a later deadline, and a re-arm is then
	// right.) The timer stays real: it fires one timeout after the first Wait.
	const timeout = time.Second
	deadline := time.Now().Add(timeout)
	udp.SetWaitClock(c, func() time.Duration { return 0 })
	s0 := c.Stats().WaitSyscalls
	for range 6 { // woken six times before the deadline
		c.Wake()
		wait(timeout)
	}
	arms(1, "six Waits for one deadline, each woken")
	// Each woken Wait: one epoll_wait and one eventfd read; the first also
	// armed the timer.
	if n := c.Stats().WaitSyscalls - s0; n != 6*2+1 {
		t.Fatalf("six woken Waits made %d system calls, want %d", n, 6*2+1)
	}
	// The kept timer ends the next Wait at the deadline, not before.
	wait(timeout)
	if early := time.Until(deadline); early > time.Millisecond {
		t.Fatalf("the kept timer fired %v before its deadline", early)
	}
	arms(1, "the Wait that the kept timer ended")
	start := time.Now()
	udp.SetWaitClock(c, func() time.Duration { return time.Since(start) })

	// It fired: the next Wait arms again, even for a deadline it had.
	wait(time.Millisecond)
	arms(2, "a Wait after the timer fired")

	// A deadline that moves earlier re-arms: the Wait ends at the new one.
	c.Wake()
	wait(10 * time.Second)
	arms(3, "a Wait for a far deadline")
	if d := wait(20 * time.Millisecond); d > 5*time.Second {
		t.Fatalf("a Wait re-armed for 20ms returned after %v", d)
	}
	arms(4, "a Wait whose deadline moved earlier")

	// A deadline that moves later re-arms: the Wait does not end at the
	// old one.
	c.Wake()
	wait(20 * time.Millisecond)
	arms(5, "a Wait for a near deadline")
	if d := wait(200 * time.Millisecond); d < 200*time.Millisecond-udp.RearmEarly {
		t.Fatalf("a Wait for 200ms whose deadline moved later returned after %v", d)
	}
	arms(6, "a Wait whose deadline moved later")
}
