package rollback

// remotePrediction is the client's basis for predicting the other peers'
// inputs: a copy of the state-writing inputs of the other peers in one
// authoritative frame of the log (the newest before the frame predicted),
// and the scratch slices the PredictFunc is called with. Its buffers are
// reused, so predicting allocates nothing once they have grown.
type remotePrediction struct {
	basis frameCopy
	frame uint32 // the frame basis was copied from
	epoch uint64 // that frame's log slot epoch when copied
	ok    bool   // basis holds frame (false: predict nothing)

	last []Input // one peer's inputs in basis, for the PredictFunc
	out  []Input // the PredictFunc's result
}

// basisFrame returns the newest frame before f whose authoritative records
// the log holds (applied, out of order or in the confirmed run); ok is
// false when there is none, as for the frame after the baseline.
func (c *Client[S]) basisFrame(f uint32) (uint32, bool) {
	for k := f - 1; k > c.confirmed; k-- {
		if _, st := c.slot(k); st == confApplied {
			return k, true
		}
	}
	if c.confirmed > c.baseline && c.confirmed < f {
		return c.confirmed, true
	}
	return 0, false
}

// loadBasis makes the prediction basis the other peers' state-writing
// inputs of the newest authoritative frame before f. It runs before f's
// slot is begun or reopened (beginning f may recycle the slot of the
// oldest frame the ring holds). The copy is kept while that frame's log
// slot is unchanged, so a tick predicting several frames copies once.
func (c *Client[S]) loadBasis(f uint32) {
	p := &c.pred
	k, ok := c.basisFrame(f)
	if !ok {
		p.ok = false
		return
	}
	v, err := c.log.Frame(k)
	if err != nil {
		p.ok = false
		return
	}
	if p.ok && p.frame == k && p.epoch == v.s.epoch {
		return
	}
	p.basis.reset()
	p.frame, p.epoch, p.ok = k, v.s.epoch, true
	sl := v.s
	for i, sender := range sl.sender {
		if !sender.IsPeer() || sender == c.peer || c.reg.types[sl.typ[i]].IsEvent() {
			continue
		}
		off, n := sl.payOff[i], sl.payLen[i]
		p.basis.recs = append(p.basis.recs, copiedRec{sender: sender, typ: sl.typ[i], e: sl.entity[i], off: uint32(len(p.basis.buf)), n: n})
		p.basis.buf = append(p.basis.buf, sl.arena[off:off+n]...)
	}
}

// execPredicted executes the inputs of predicted frame f in the order the
// server's sort by sender gives them: each other peer's predicted inputs
// (from the basis loadBasis left) and, in its place, the client's own.
func (c *Client[S]) execPredicted(f uint32) {
	own := false
	if p := &c.pred; c.cfg.Predict != nil && p.ok {
		recs := p.basis.recs
		for i := 0; i < len(recs); {
			sender := recs[i].sender
			p.last = p.last[:0]
			for ; i < len(recs) && recs[i].sender == sender; i++ {
				r := &recs[i]
				p.last = append(p.last, Input{Frame: p.frame, Sender: sender, Type: r.typ, Entity: r.e, Payload: p.basis.payload(i)})
			}
			if !own && sender > c.peer {
				c.execOwn(f)
				own = true
			}
			p.out = c.cfg.Predict(p.out[:0], sender, f, p.last)
			for j := range p.out {
				in := &p.out[j]
				c.stats.RemoteInputsPredicted++
				if err := c.x.Execute(sender, in.Type, in.Entity, in.Payload); err != nil {
					c.stats.RemoteInputsRejected++
				}
			}
			clear(p.out) // drop the payload references until the next call
		}
	}
	if !own {
		c.execOwn(f)
	}
}

// execOwn executes the client's own inputs for f.
func (c *Client[S]) execOwn(f uint32) {
	lo, hi := c.in.run(f)
	for i := lo; i < hi; i++ {
		r := &c.in.recs[i]
		if err := c.x.Execute(c.peer, r.typ, r.e, c.in.payload(r)); err != nil {
			c.stats.InputsRejected++
		}
	}
}
