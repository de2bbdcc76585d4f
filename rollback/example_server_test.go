package rollback_test

import (
	"encoding/binary"
	"fmt"

	"github.com/tickwire/tickwire/rollback"
)

// A server with three peers and a simulation step. Peer 2's input for
// frame 2 arrives while the server is at frame 4: the next Tick rewinds to
// the end of frame 1, replays frames 2–4 with the input merged in — the
// logged inputs reapplied, the step's derived records recomputed — and
// simulates frame 5. A retransmission of an input the log already holds
// forces nothing.
func ExampleServer() {
	const hp rollback.ComponentID = 0
	store, _ := rollback.NewStore(rollback.StoreConfig{
		Components: []rollback.ComponentSpec{{Name: "hp", Size: 4}},
	})
	var players [3]rollback.Entity
	for p := range players {
		players[p], _ = store.Create(rollback.Sender(p)) // owned by peer p
	}
	boss, _ := store.Create(rollback.SenderLocal) // owned by no peer
	get := func(e rollback.Entity) int32 {
		v, _ := store.Component(e, hp)
		return int32(binary.LittleEndian.Uint32(v))
	}
	add := func(e rollback.Entity, d int32) {
		v, _ := store.Component(e, hp)
		binary.LittleEndian.PutUint32(v, uint32(get(e)+d))
	}
	le := func(n int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(n)) }

	// "heal": +amount on the subject's hp.
	reg := rollback.NewRegistry[*rollback.Store]()
	heal, _ := reg.Register(rollback.ActionType[*rollback.Store]{
		Name: "heal", MinSize: 4, MaxSize: 4, Writes: []rollback.ComponentID{hp},
		Apply: func(w *rollback.Store, a rollback.Action) error {
			add(a.Entity, int32(binary.LittleEndian.Uint32(a.Payload)))
			return nil
		},
	})
	log, _ := rollback.NewActionLog(rollback.LogConfig{FrameCapacity: 16})
	x, _ := rollback.NewExecutor(reg, log, store)

	// The step: the boss loses 10 hp per frame. It is a derivation of the
	// state, executed as an action so a rewind undoes it and a replay
	// recomputes it (derived provenance), never applies it twice.
	poison := le(-10)
	step := func(frame uint32, replay bool) {
		_ = x.Execute(rollback.SenderLocal, heal, boss, poison)
	}
	server, _ := rollback.NewServer(x, step, rollback.ServerConfig{})
	server.SetHooks(rollback.ServerHooks{OnRewind: func(r rollback.RewindEvent) {
		fmt.Printf("rewind to the end of frame %d, replay %d..%d (peer %d's input)\n", r.From-1, r.From, r.Through, r.Sender)
	}})

	for f := uint32(0); f <= 4; f++ {
		for p := range 2 { // peers 0 and 1 are on time
			_ = server.Submit(f, rollback.Sender(p), heal, players[p], le(1))
		}
		_ = server.Tick(f)
	}
	fmt.Println("frame 4: boss", get(boss), "peer 2", get(players[2]))

	// Late: peer 2's heal for frame 2.
	_ = server.Submit(2, 2, heal, players[2], le(5))
	_ = server.Tick(5)
	fmt.Println("frame 5: boss", get(boss), "peer 2", get(players[2]))

	view, _ := log.Frame(2)
	for i := range view.Len() {
		r := view.Record(i)
		fmt.Printf("frame 2 record %d: %v heals %d\n", i, r.Sender, int32(binary.LittleEndian.Uint32(r.Payload)))
	}

	// A retransmission of the same input: the log holds it, no rewind.
	_ = server.Submit(2, 2, heal, players[2], le(5))
	_ = server.Tick(6)
	st := server.Stats()
	fmt.Println("rewinds:", st.Rewinds, "duplicates:", st.Duplicates, "boss", get(boss))

	// Output:
	// frame 4: boss -50 peer 2 0
	// rewind to the end of frame 1, replay 2..4 (peer 2's input)
	// frame 5: boss -60 peer 2 5
	// frame 2 record 0: peer 0 heals 1
	// frame 2 record 1: peer 1 heals 1
	// frame 2 record 2: peer 2 heals 5
	// frame 2 record 3: derived heals -10
	// rewinds: 1 duplicates: 1 boss -70
}
