package rollback

import (
	"errors"
	"testing"
)

// serverFrame builds the records a server would hold for frame f with the
// given inputs and no step: the inputs sorted by sender (stable), as the
// server's merge orders them.
func serverFrame(t *testing.T, ins ...Input) []Record {
	t.Helper()
	w, s := newServerWorld(t, LogConfig{}, ServerConfig{FirstFrame: 1}, false)
	for _, in := range ins {
		in.Frame = 1
		mustSubmit(t, s, in)
	}
	mustTick(t, s, 1)
	return frameRecords(t, w.log, 1)
}

// The client (peer 1) repeats the other peers' last known inputs into the
// frames it predicts — peer 0's move and peer 2's heal, in the server's
// sender order around its own input, never peer 2's pure event — so a
// confirmation that repeats them is a hit; one where a peer changed is a
// single rewind, after which the frames ahead repeat the new input.
func TestClientPredictsRemoteInputs(t *testing.T) {
	var w *world
	own := func(f uint32, in *InputBuffer) {
		_ = in.Add(w.ids.move.ID(), w.ents[2], w.ids.move.Encode(nil, Move{1, 0}))
	}
	w, c := newClientWorld(t, LogConfig{}, 1, own, false, ClientConfig{})
	var rewinds []RewindEvent
	c.SetHooks(ClientHooks{OnRewind: func(r RewindEvent) { rewinds = append(rewinds, r) }})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	ownIn := moveIn(w, 1, 0, 1, 0)
	move0 := moveIn(w, 0, 0, 3, 0)
	heal2 := healIn(w, 2, 0, 4)
	ping2 := Input{Sender: 2, Type: w.ids.ping, Entity: w.ents[4], Payload: []byte{9}}
	if err := c.Tick(1); err != nil {
		t.Fatal(err)
	}
	// Frame 1 as the server ran it: all three peers' inputs.
	if err := c.Confirm(1, serverFrame(t, move0, ownIn, heal2, ping2)); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(4); err != nil {
		t.Fatal(err)
	}
	if len(rewinds) != 1 || rewinds[0].From != 1 {
		t.Fatalf("frame 1 (nothing to repeat yet) must rewind once: %+v", rewinds)
	}
	// Frames 2..4 are predicted exactly as a server given the same inputs
	// again (the event left out) records them.
	want := serverFrame(t, move0, ownIn, heal2)
	for f := uint32(2); f <= 4; f++ {
		if got := frameRecords(t, w.log, f); !sameRecords(got, want) {
			t.Fatalf("predicted frame %d: %+v, want %+v", f, got, want)
		}
	}
	if st := c.Stats(); st.RemoteInputsPredicted != 6 || st.RemoteInputsRejected != 0 {
		t.Fatalf("stats %+v", st)
	}
	if err := c.Confirm(2, want); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(4); err != nil {
		t.Fatal(err)
	}
	if len(rewinds) != 1 || c.Confirmed() != 2 || c.Stats().PredictionHits != 1 {
		t.Fatalf("a repeated input must be a hit: rewinds %+v, confirmed %d", rewinds, c.Confirmed())
	}
	// Frame 3: peer 0 turned. One rewind from 3, and frame 4 now repeats
	// the new direction.
	move0b := moveIn(w, 0, 0, -2, 0)
	turned := serverFrame(t, move0b, ownIn, heal2)
	if err := c.Confirm(3, turned); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(4); err != nil {
		t.Fatal(err)
	}
	if len(rewinds) != 2 || rewinds[1].From != 3 || rewinds[1].Through != 4 {
		t.Fatalf("a turn must rewind once from frame 3: %+v", rewinds)
	}
	if got := frameRecords(t, w.log, 4); !sameRecords(got, turned) {
		t.Fatalf("frame 4 after the correction: %+v, want %+v", got, turned)
	}
	// Position: ents[0] starts at 0; frames 1, 2 move +3, frames 3, 4 −2.
	if x := i32(w.comp(t, w.ents[0], cPos)); x != 3+3-2-2 {
		t.Fatalf("peer 0's predicted x %d", x)
	}
}

// A custom PredictFunc sees each peer's last known inputs with their frame,
// and what it returns is what the client executes; NoRemotePrediction
// predicts nothing, and a Predict with it is refused.
func TestClientPredictFunc(t *testing.T) {
	type call struct {
		peer         Sender
		frame, known uint32
		n            int
	}
	var calls []call
	var w *world
	pred := func(dst []Input, peer Sender, frame uint32, last []Input) []Input {
		calls = append(calls, call{peer, frame, last[0].Frame, len(last)})
		if peer == 2 {
			return dst // peer 2 is predicted idle
		}
		return append(dst, last...)
	}
	w, c := newClientWorld(t, LogConfig{}, 1, nil, false, ClientConfig{Predict: pred})
	if err := c.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	move0, heal2 := moveIn(w, 0, 0, 3, 0), healIn(w, 2, 0, 4)
	if err := c.Tick(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Confirm(1, serverFrame(t, move0, heal2)); err != nil {
		t.Fatal(err)
	}
	if err := c.Tick(2); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0] != (call{0, 2, 1, 1}) || calls[1] != (call{2, 2, 1, 1}) {
		t.Fatalf("calls %+v", calls)
	}
	if got, want := frameRecords(t, w.log, 2), serverFrame(t, move0); !sameRecords(got, want) {
		t.Fatalf("frame 2: %+v, want %+v", got, want)
	}

	w2, c2 := newClientWorld(t, LogConfig{}, 1, nil, false, ClientConfig{NoRemotePrediction: true})
	if err := c2.InstallSnapshot(0); err != nil {
		t.Fatal(err)
	}
	if err := c2.Tick(1); err != nil {
		t.Fatal(err)
	}
	if err := c2.Confirm(1, serverFrame(t, moveIn(w2, 0, 0, 3, 0))); err != nil {
		t.Fatal(err)
	}
	if err := c2.Tick(2); err != nil {
		t.Fatal(err)
	}
	if got := frameRecords(t, w2.log, 2); len(got) != 0 || c2.Stats().RemoteInputsPredicted != 0 {
		t.Fatalf("prediction off, frame 2 holds %+v", got)
	}
	if err := (ClientConfig{Predict: RepeatLast, NoRemotePrediction: true}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Predict with NoRemotePrediction: %v", err)
	}
}
