package rollback

// RewindPlan describes a rewind before it happens: which frames it undoes
// and how much work that is. PlanRewind computes it without changing the
// state or the log; CommitRewind carries it out. A plan is valid only for
// the log exactly as it was when planned: any change in between (a frame
// begun, closed or reopened, an action executed, another rewind) makes
// CommitRewind refuse it with ErrStalePlan, so a rewind is either fully
// scheduled against the current log or not at all.
//
// The zero RewindPlan is stale. Plans are plain values; copying one is fine.
type RewindPlan struct {
	// From is the first (oldest) frame undone; meaningful only when
	// Frames > 0.
	From uint32
	// Through is the last (newest) frame undone; meaningful only when
	// Frames > 0.
	Through uint32
	// Frames is the number of frames undone; 0 for an empty plan.
	Frames int
	// Records is the number of records with captured state to restore
	// (records that captured nothing, such as events, are not counted).
	Records int
	// Captures is the number of (entity, component) pairs to restore.
	Captures int

	log     *ActionLog
	version uint64
}

// Empty reports whether the plan undoes nothing.
func (p RewindPlan) Empty() bool { return p.Frames == 0 }

// RewindResult reports what a committed rewind did.
type RewindResult struct {
	// Frames is the number of frames undone, as planned.
	Frames int
	// Records is the number of records whose captures were walked.
	Records int
	// Captures is the number of captures walked (restored + Failed).
	Captures int
	// Failed counts captures that could not be restored (see
	// ExecutorStats.RestoreFailures); they are also reported to
	// ExecutorHooks.OnRestoreFailed.
	Failed int
}

// PlanRewind plans undoing every frame from `from` through the newest: after
// the commit the state is as it was at the end of frame from−1 (the rewind
// "to target = from−1" of the architecture brief; naming the first undone
// frame instead of the target keeps a log that starts at frame 0 fully
// rewindable without a signed frame type).
//
// While a previous rewind is still being replayed, only the frames already
// replayed are undone again (the rest are undone already), so rewinds nest.
// A `from` newer than anything undoable gives an empty plan, as does a log
// that holds no frame.
//
// Errors: ErrFrameOpen (rewind between frames only), ErrReentrant, and
// ErrAgedOut when `from` is older than the oldest frame the ring holds — the
// state that far back can no longer be reconstructed. An aged-out request
// is counted in ExecutorStats.AgedOut and reported to ExecutorHooks.OnAgedOut (S-F4);
// nothing else changes. Cost: O(frames in the plan); allocates nothing.
func (x *Executor[S]) PlanRewind(from uint32) (RewindPlan, error) {
	if x.busy {
		return RewindPlan{}, ErrReentrant
	}
	x.busy = true
	defer x.idle()
	l := x.log
	if l.open != nil {
		return RewindPlan{}, ErrFrameOpen
	}
	plan := RewindPlan{log: l, version: l.version}
	if !l.held {
		return plan, nil
	}
	if oldest := l.oldest(); from < oldest {
		x.stats.AgedOut++
		if x.hooks.OnAgedOut != nil {
			x.hooks.OnAgedOut(AgedOut{From: from, Oldest: oldest, Newest: l.head})
		}
		return RewindPlan{}, ErrAgedOut
	}
	through := l.head
	if l.replaying {
		if from >= l.replayNext {
			return plan, nil
		}
		through = l.replayNext - 1
	} else if from > through {
		return plan, nil
	}
	for f := from; ; f++ {
		s := l.slotFor(f)
		if s.num != f || s.state != slotClosed {
			panic("rollback: frame in the rewind range is not held")
		}
		plan.Frames++
		plan.Records += s.captured
		plan.Captures += s.captures
		if f == through {
			break
		}
	}
	plan.From, plan.Through = from, through
	return plan, nil
}

// CommitRewind carries out p: for each frame from p.Through down to p.From,
// for each record newest first, it restores the record's captures newest
// first. Cost is proportional to the captured bytes, never to the size of
// the world. A capture whose entity is no longer live is skipped, counted
// and reported (RewindResult.Failed, ExecutorHooks.OnRestoreFailed): a rewind never
// writes into a recycled entity.
//
// Afterwards the log is replaying: the caller reads each undone frame's
// records, reopens it (ActionLog.ReopenFrame), executes what it should
// hold now and closes it, oldest first, until the newest frame is closed
// again. Committing an empty plan does nothing.
//
// Errors: ErrStalePlan (the log changed since p was planned, p was already
// committed, or p belongs to another log), ErrReentrant. Allocates nothing.
func (x *Executor[S]) CommitRewind(p RewindPlan) (RewindResult, error) {
	if x.busy {
		return RewindResult{}, ErrReentrant
	}
	l := x.log
	if p.log != l || p.version != l.version {
		return RewindResult{}, ErrStalePlan
	}
	if p.Frames == 0 {
		return RewindResult{}, nil
	}
	x.busy = true
	defer x.idle()
	res := RewindResult{Frames: p.Frames, Records: p.Records, Captures: p.Captures}
	restored := 0
	for f := p.Through; ; f-- {
		s := l.slotFor(f)
		for r := len(s.sender) - 1; r >= 0; r-- {
			n := s.priLen[r]
			if n == 0 {
				continue
			}
			off := s.priOff[r]
			restored += x.restoreSpan(f, s.arena[off:off+n])
		}
		if f == p.From {
			break
		}
	}
	res.Failed = p.Captures - restored
	l.replaying = true
	l.replayNext = p.From
	l.version++
	x.stats.Rewinds++
	x.stats.FramesUndone += uint64(p.Frames)
	x.stats.RecordsUndone += uint64(p.Records)
	x.stats.CapturesRestored += uint64(restored)
	return res, nil
}

// Rewind plans and commits in one call; see PlanRewind and CommitRewind.
func (x *Executor[S]) Rewind(from uint32) (RewindResult, error) {
	p, err := x.PlanRewind(from)
	if err != nil {
		return RewindResult{}, err
	}
	return x.CommitRewind(p)
}
