package fragment_test

import (
	"fmt"
	"log"

	"github.com/tickwire/tickwire/transport/fragment"
	"github.com/tickwire/tickwire/wire"
)

// The sender splits a 3000-byte Reliable frame into pieces sized for the
// negotiated MTU; the receiver's Assembler, built for the same MTU, returns
// the whole frame when the last missing piece arrives, whatever the order.
func ExampleAssembler() {
	const mtu = 1200
	msg := wire.AppendSequencedFrame(nil, wire.SequencedFrame{Stream: 1, Seq: 9, Payload: make([]byte, 2994)})

	// Sender.
	ps := fragment.PieceSize(mtu)
	n, err := fragment.Count(len(msg), ps)
	if err != nil {
		log.Fatal(err) // ErrTooLarge: more than 255 pieces
	}
	var datagrams [][]byte
	for i := range n {
		// A real sender appends after the session and channel headers.
		datagrams = append(datagrams, fragment.AppendPiece(nil, msg, ps, wire.FrameSequenced, 42, i))
	}

	// Receiver: pieces arrive out of order.
	a, err := fragment.NewAssembler(fragment.AssemblerConfig{MTU: mtu})
	if err != nil {
		log.Fatal(err)
	}
	const tick = 1
	for _, i := range []int{2, 0, 1} {
		f, _, err := wire.ParseFragmentFrame(datagrams[i])
		if err != nil {
			log.Fatal(err)
		}
		whole, err := a.Add(f, tick)
		if err != nil {
			log.Fatal(err) // a refused piece; also counted in a.Stats()
		}
		if whole != nil {
			r, _, _ := wire.ParseSequencedFrame(whole)
			fmt.Printf("piece %d completes a %d-byte %v frame, payload %d bytes\n", i, len(whole), f.Mode, len(r.Payload))
		}
	}
	fmt.Printf("%d pieces of %d bytes; completed %d\n", n, ps, a.Stats().Completed)
	// Output:
	// piece 1 completes a 3000-byte Sequenced frame, payload 2994 bytes
	// 3 pieces of 1174 bytes; completed 1
}
