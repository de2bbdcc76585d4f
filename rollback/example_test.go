package rollback_test

import (
	"encoding/binary"
	"fmt"

	"github.com/tickwire/tickwire/rollback"
)

// A late input forces a rollback: the server rewinds to the frame before it,
// then replays forward with the input merged in.
func Example() {
	// State: one component, "hp", 4 bytes.
	const hp rollback.ComponentID = 0
	store, _ := rollback.NewStore(rollback.StoreConfig{
		Components: []rollback.ComponentSpec{{Name: "hp", Size: 4}},
	})
	player, _ := store.Create(0) // owned by peer 0

	// One action type: "heal", payload = amount (int32 LE), writes hp.
	reg := rollback.NewRegistry[*rollback.Store]()
	heal, _ := reg.Register(rollback.ActionType[*rollback.Store]{
		Name: "heal", MinSize: 4, MaxSize: 4,
		Writes: []rollback.ComponentID{hp},
		Apply: func(w *rollback.Store, a rollback.Action) error {
			v, err := w.Component(a.Entity, hp)
			if err != nil {
				return err
			}
			sum := binary.LittleEndian.Uint32(v) + binary.LittleEndian.Uint32(a.Payload)
			binary.LittleEndian.PutUint32(v, sum)
			return nil
		},
	})
	log, _ := rollback.NewActionLog(rollback.LogConfig{}) // 64 frames
	x, _ := rollback.NewExecutor(reg, log, store)
	amount := func(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }
	hpOf := func() uint32 { v, _ := store.Component(player, hp); return binary.LittleEndian.Uint32(v) }

	// Frames 1..3, one heal of 10 per frame.
	for f := uint32(1); f <= 3; f++ {
		_ = log.BeginFrame(f)
		_ = x.Execute(0, heal, player, amount(10))
		_ = log.CloseFrame()
	}
	fmt.Println("hp after frame 3:", hpOf())

	// A heal of 100 for frame 2 arrives late. Rewind to the end of frame 1...
	plan, _ := x.PlanRewind(2)
	fmt.Println("undo frames", plan.From, "to", plan.Through, "records:", plan.Records)
	_, _ = x.CommitRewind(plan)
	fmt.Println("hp after rewind:", hpOf())

	// ...and replay frames 2 and 3: read each frame's records, reopen it,
	// execute them plus any late input, close it.
	for {
		f, replaying := log.Replaying()
		if !replaying {
			break
		}
		view, _ := log.Frame(f)
		type rec struct {
			sender  rollback.Sender
			typ     rollback.ActionTypeID
			e       rollback.Entity
			payload []byte
		}
		var recs []rec
		for i := range view.Len() {
			r := view.Record(i)
			recs = append(recs, rec{r.Sender, r.Type, r.Entity, append([]byte(nil), r.Payload...)})
		}
		_ = log.ReopenFrame(f)
		for _, r := range recs {
			_ = x.Execute(r.sender, r.typ, r.e, r.payload)
		}
		if f == 2 {
			_ = x.Execute(0, heal, player, amount(100)) // the late input
		}
		_ = log.CloseFrame()
	}
	fmt.Println("hp after replay:", hpOf())

	// Output:
	// hp after frame 3: 30
	// undo frames 2 to 3 records: 2
	// hp after rewind: 10
	// hp after replay: 130
}
