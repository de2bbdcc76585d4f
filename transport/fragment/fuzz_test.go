package fragment

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// Parameters of FuzzAssembler: small pieces and few slots, so short inputs
// reach completion, eviction, expiry and the completed window.
const (
	fuzzPiece   = 8
	fuzzPartial = 3
	fuzzExpire  = 6
	fuzzMax     = 20 * fuzzPiece
	fuzzBase    = wire.Seq(65536 - 100) // message ids base+0 … base+255 wrap through 0
)

// fuzzMessage is the message the "valid piece" op sends for id: a valid
// Unreliable frame whose length and bytes depend on id only.
func fuzzMessage(id wire.Seq) []byte {
	p := int(id) * 37 % (fuzzMax - 2)
	p = min(p, wire.FramePayloadRoom(wire.FrameUnreliable, fuzzMax))
	msg := wire.AppendUvarint([]byte{byte(wire.FrameUnreliable)}, uint64(p))
	for i := range p {
		msg = append(msg, byte(int(id)+i))
	}
	return msg
}

// FuzzAssembler feeds arbitrary sequences of pieces and expiries to an
// Assembler and to the map-based reference. Each input byte starts an op:
//
//	op%4 == 0  advance the tick by op>>2 and call Expire
//	op%4 == 1  a piece from raw fields: mode, id, index, count, length,
//	           payload bytes (hostile values welcome)
//	op%4 == 2  a piece decoded from the following bytes with
//	           wire.ParseFragmentFrame (skipped if they do not decode)
//	op%4 == 3  piece (b1 mod count) of fuzzMessage(base + b0): a valid
//	           piece, so messages do complete
//
// Message ids are folded into 256 consecutive ids (fuzzBase + one byte),
// which all stay inside CompletedWindow of each other. It asserts: no
// panic; identical results to the reference at every step; every delivered
// message is one frame of its mode with a length its Count allows and at
// most MaxMessageSize; no id is ever delivered twice; memory and partial
// assemblies stay within their bounds.
func FuzzAssembler(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := AssemblerConfig{PieceSize: fuzzPiece, MaxPartial: fuzzPartial, Expiry: fuzzExpire, MaxMessageSize: fuzzMax}
		p := newPair(t, cfg)
		delivered := make(map[wire.Seq]bool)
		var tick time.Duration
		next := func() byte { // the next input byte, 0 past the end
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		for len(data) > 0 {
			op := next()
			var fr wire.FragmentFrame
			switch op % 4 {
			case 0:
				tick += time.Duration(op >> 2)
				p.expire(tick)
				continue
			case 1:
				fr = wire.FragmentFrame{Mode: wire.FrameType(next()), MessageID: fuzzBase + wire.Seq(next()), Index: next(), Count: next()}
				n := min(int(next()%(fuzzPiece+2)), len(data))
				fr.Payload, data = data[:n], data[n:]
			case 2:
				dec, n, err := wire.ParseFragmentFrame(data)
				if err != nil {
					continue
				}
				data = data[n:]
				fr = dec
				fr.MessageID = fuzzBase + wire.Seq(uint8(dec.MessageID))
			case 3:
				id := fuzzBase + wire.Seq(next())
				msg := fuzzMessage(id)
				n, err := Count(len(msg), fuzzPiece)
				if err != nil {
					t.Fatalf("fuzzMessage(%d): %v", id, err)
				}
				i := int(next()) % n
				fr = wire.FragmentFrame{Mode: wire.FrameUnreliable, MessageID: id, Index: uint8(i), Count: uint8(n), Payload: Piece(msg, fuzzPiece, i)}
			}
			msg := p.add(fr, tick)
			if msg == nil {
				continue
			}
			if lo, hi := (int(fr.Count)-1)*fuzzPiece+1, int(fr.Count)*fuzzPiece; len(msg) < lo || len(msg) > hi || len(msg) > fuzzMax {
				t.Fatalf("delivered %d bytes for count %d: outside [%d, %d] or above %d", len(msg), fr.Count, lo, hi, fuzzMax)
			}
			if typ, n, err := wire.SkipFrame(msg); err != nil || typ != fr.Mode || n != len(msg) {
				t.Fatalf("delivered bytes are not one %v frame: %v, %d of %d bytes, %v", fr.Mode, typ, n, len(msg), err)
			}
			if delivered[fr.MessageID] {
				t.Fatalf("message id %d delivered twice", fr.MessageID)
			}
			delivered[fr.MessageID] = true
			if p.a.Partials() > fuzzPartial {
				t.Fatalf("%d partial assemblies", p.a.Partials())
			}
		}
	})
}
