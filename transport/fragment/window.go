package fragment

import "github.com/tickwire/tickwire/wire"

// CompletedWindow is how many message ids, counted back from the newest id
// completed, the Assembler remembers as completed. A piece of a message id
// in the window that was completed (delivered or found invalid) is a late
// duplicate and is ignored (Stats.LatePieces); a piece of an id at least
// CompletedWindow older than the newest completed id cannot be told apart
// from one, so it is ignored too (Stats.StalePieces). A sender issues
// message ids in order, so this only refuses a message overtaken by 256
// newer completed ones.
const CompletedWindow = 256

// idState is what the completed window knows about a message id.
type idState uint8

const (
	idFresh idState = iota // not completed (or newer than every completed id)
	idDone                 // completed within the window
	idStale                // older than the window: treated as completed
)

// completedWindow remembers which of the CompletedWindow ids up to and
// including newest have completed: bit (id mod CompletedWindow) of bits.
// Advancing newest clears the bits of the ids that enter the window, which
// are the ones leaving it modulo CompletedWindow.
type completedWindow struct {
	bits   [CompletedWindow / 64]uint64
	newest wire.Seq
	any    bool // false until the first completion
}

func (w *completedWindow) state(id wire.Seq) idState {
	if !w.any {
		return idFresh
	}
	d := id.Sub(w.newest)
	switch {
	case d > 0:
		return idFresh
	case d <= -CompletedWindow:
		return idStale
	case w.bits[id%CompletedWindow/64]&(1<<(id%64)) != 0:
		return idDone
	}
	return idFresh
}

// add records id as completed. An id older than the window is not
// recorded: state reports it idStale anyway.
func (w *completedWindow) add(id wire.Seq) {
	if !w.any {
		w.any, w.newest = true, id
	} else if d := id.Sub(w.newest); d > 0 {
		if d >= CompletedWindow {
			w.bits = [CompletedWindow / 64]uint64{}
		} else {
			for s := w.newest.Next(); s != id; s = s.Next() {
				w.bits[s%CompletedWindow/64] &^= 1 << (s % 64)
			}
		}
		w.newest = id
	} else if d <= -CompletedWindow {
		return
	}
	w.bits[id%CompletedWindow/64] |= 1 << (id % 64)
}
