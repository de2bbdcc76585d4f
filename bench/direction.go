package bench

import (
	"sync"
	"time"

	"github.com/tickwire/tickwire/transport/simlink"
)

// held is one datagram copy waiting for its delivery time.
type held struct {
	at  time.Duration
	seq uint64 // tie-break: equal times leave in arrival order
	buf []byte
}

// direction is one direction of a Relay without its sockets: the model,
// the heap of held copies, a free list of buffers and the counters. offer
// and next take the time as an argument, so tests drive it with a fake
// clock through exactly the code the relay runs.
type direction struct {
	dir  Direction
	wake chan struct{} // capacity 1: a copy was queued

	mu    sync.Mutex
	model *simlink.Model
	heap  []held
	free  [][]byte
	limit int
	seq   uint64
	log   func(Decision)
	stats DirStats
}

func newDirection(dir Direction, cfg simlink.LinkConfig, seed uint64, limit int, log func(Decision)) (*direction, error) {
	m, err := simlink.NewModel(cfg, seed)
	if err != nil {
		return nil, err
	}
	return &direction{dir: dir, wake: make(chan struct{}, 1), model: m, limit: limit, log: log}, nil
}

// offer runs one datagram received at now through the model and holds its
// surviving copies (b is copied).
func (d *direction) offer(now time.Duration, b []byte) {
	d.mu.Lock()
	idx := d.stats.Received
	d.stats.Received++
	d.stats.ReceivedBytes += uint64(len(b))
	v := d.model.Decide(now, len(b))
	if d.log != nil {
		d.log(Decision{Dir: d.dir, Index: idx, Now: now, Size: len(b), Verdict: v})
	}
	for i := range v.Copies {
		if len(d.heap) >= d.limit {
			d.stats.Overflow++
			continue
		}
		var buf []byte
		if n := len(d.free); n > 0 {
			buf, d.free = d.free[n-1], d.free[:n-1]
		}
		d.push(held{at: v.At[i], seq: d.seq, buf: append(buf[:0], b...)})
		d.seq++
	}
	d.mu.Unlock()
	if v.Copies > 0 {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// foreign counts a datagram discarded before the model.
func (d *direction) foreign() {
	d.mu.Lock()
	d.stats.Foreign++
	d.mu.Unlock()
}

// next returns the earliest held copy if it is due at now (ok), or else
// how long until it is (wait; negative when nothing is held). The caller
// hands buf back with sent.
func (d *direction) next(now time.Duration) (buf []byte, wait time.Duration, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.heap) == 0 {
		return nil, -1, false
	}
	if h := d.heap[0]; h.at > now {
		return nil, h.at - now, false
	}
	return d.pop().buf, 0, true
}

// sent counts a copy written (or refused, err != nil) and recycles buf.
func (d *direction) sent(buf []byte, err error) {
	d.mu.Lock()
	if err != nil {
		d.stats.WriteErrors++
	} else {
		d.stats.Forwarded++
		d.stats.ForwardedBytes += uint64(len(buf))
	}
	if len(d.free) < d.limit {
		d.free = append(d.free, buf)
	}
	d.mu.Unlock()
}

// snapshot returns the counters.
func (d *direction) snapshot() DirStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.Model = d.model.Stats()
	return s
}

// less orders held copies by delivery time, then arrival.
func (d *direction) less(i, j int) bool {
	a, b := &d.heap[i], &d.heap[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (d *direction) push(h held) {
	d.heap = append(d.heap, h)
	for i := len(d.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if !d.less(i, p) {
			break
		}
		d.heap[i], d.heap[p] = d.heap[p], d.heap[i]
		i = p
	}
}

func (d *direction) pop() held {
	top := d.heap[0]
	last := len(d.heap) - 1
	d.heap[0] = d.heap[last]
	d.heap[last] = held{}
	d.heap = d.heap[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && d.less(l, m) {
			m = l
		}
		if r < last && d.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		d.heap[i], d.heap[m] = d.heap[m], d.heap[i]
		i = m
	}
	return top
}
