package link

import (
	"math"
	"time"
)

// clockStepMinFrames is the smallest error, in frames, that makes a
// client's clock step to the server's estimate instead of being steered by
// the time dilation: below it the estimate's own noise (the delay's
// jitter, rounding) would dominate.
const clockStepMinFrames = 4

// clientClock is a client link's frame clock (ClientLink.Frame). It counts
// the server's frames in the client's own time: a position in nanoseconds
// of frame time (frame = position / period) that runs at the server's tick
// period, scaled by the server's time-dilation feedback.
//
// Each clock message gives an estimate of where the client should be when
// it arrives — the server's frame then plus the lead (a round trip and
// TargetBufferFrames) — and its dilation. The first sets the clock (the
// join); after that the dilation steers it (inputs arriving too early slow
// it down, too late speed it up, up to ServerConfig.MaxTimeDilation), so a
// clock that runs fast or slow by a percent is corrected continuously. The
// estimate makes it step only when it is more than max(4, lead/2) frames
// off: at once when the clock is behind (a message can only arrive late,
// which makes the estimate too low, never too high), after two messages in
// a row when it is ahead (a re-sent message is late by a retransmission
// time). The frames it returns never go back: a clock stepped back holds
// the client at its frame until the clock passes it.
type clientClock struct {
	set    bool
	pend   bool     // msg arrived and is not anchored to a local time yet
	msg    clockMsg // the latest message
	period int64    // the server's tick period, ns
	at     int64    // local time of the anchor, ns
	pos    int64    // position at the anchor, ns of frame time
	dil    int64    // rate adjustment, 1/10,000ths
	ahead  int      // messages in a row that found the clock too far ahead
	last   uint32   // the highest frame returned
	steps  uint64   // times the clock was set from an estimate (the join included)
}

// received notes a clock message; the next frame call anchors it to its
// local time.
func (c *clientClock) received(m clockMsg) { c.msg, c.pend = m, true }

// position returns the clock at local time now (ns).
func (c *clientClock) position(now int64) int64 {
	dt := now - c.at
	return c.pos + dt + dt*c.dil/10000
}

// anchor takes the pending message as having arrived at now.
func (c *clientClock) anchor(now int64) {
	m := c.msg
	c.pend = false
	c.period = int64(m.period)
	target := (int64(m.frame) + int64(m.lead)) * c.period
	cur := target
	if c.set {
		cur = c.position(now)
		thr := max(clockStepMinFrames, int64(m.lead)/2) * c.period
		switch err := target - cur; {
		case err > thr:
			cur, c.ahead = target, 0
			c.steps++
		case err < -thr:
			c.ahead++
			if c.ahead >= 2 {
				cur, c.ahead = target, 0
				c.steps++
			}
		default:
			c.ahead = 0
		}
	} else {
		c.set = true
		c.steps++
	}
	c.pos, c.at, c.dil = cur, now, int64(m.dilation)
}

// frame returns the frame the clock is in at local time now; ok is false
// before the first clock message.
func (c *clientClock) frame(now time.Duration) (uint32, bool) {
	if c.pend {
		c.anchor(int64(now))
	}
	if !c.set {
		return 0, false
	}
	p := max(c.position(int64(now)), 0)
	f := uint32(min(p/c.period, math.MaxUint32))
	c.last = max(c.last, f)
	return c.last, true
}
