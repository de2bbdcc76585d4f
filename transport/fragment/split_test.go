package fragment

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/tickwire/tickwire/wire"
)

// worstHeader is a channel header of the largest encoding: an ack more than
// 255 behind seq and no ack-bits byte equal to 0xFF.
var worstHeader = wire.ChannelHeader{Seq: 1000, Ack: 1, AckBits: 0}

func TestPieceSizeArithmetic(t *testing.T) {
	if n := wire.ChannelHeaderLen(worstHeader); n != wire.ChannelHeaderMaxLen {
		t.Fatalf("worstHeader encodes in %d bytes, want %d", n, wire.ChannelHeaderMaxLen)
	}
	// docs/WIRE.md §7: 1174 bytes per piece at MTU 1200.
	if got := PieceSize(1200); got != 1174 {
		t.Errorf("PieceSize(1200) = %d, want 1174", got)
	}
	if got := MaxMessageSize(1200); got != 255*1174 {
		t.Errorf("MaxMessageSize(1200) = %d, want %d", got, 255*1174)
	}
	for _, mtu := range []int{-1, 0, 1, 18, 24, 25} {
		if got := PieceSize(mtu); got != 0 {
			t.Errorf("PieceSize(%d) = %d, want 0 (no room for a piece)", mtu, got)
		}
	}
	if got := PieceSize(26); got != 1 {
		t.Errorf("PieceSize(26) = %d, want 1", got)
	}
	if PieceSize(1<<40) != PieceSize(MaxMTU) {
		t.Errorf("PieceSize above MaxMTU is not clipped")
	}
	// P is the largest payload that fits, for every MTU from the smallest
	// that carries a piece to MaxMTU (this covers every varint-width step).
	for mtu := 26; mtu <= MaxMTU; mtu++ {
		p := PieceSize(mtu)
		if DatagramOverhead+wire.FrameLen(wire.FrameFragment, p) > mtu {
			t.Fatalf("MTU %d: a %d-byte piece does not fit", mtu, p)
		}
		if DatagramOverhead+wire.FrameLen(wire.FrameFragment, p+1) <= mtu {
			t.Fatalf("MTU %d: PieceSize %d is not the largest (%d fits)", mtu, p, p+1)
		}
	}
}

func TestCount(t *testing.T) {
	cases := []struct {
		msgLen, ps, want int
		err              error
	}{
		{1, 1, 1, nil},
		{10, 10, 1, nil},
		{11, 10, 2, nil},
		{2550, 10, 255, nil},
		{2551, 10, 0, ErrTooLarge},
		{1 << 62, 10, 0, ErrTooLarge},
		{1 << 62, 1 << 62, 1, nil},
		{0, 10, 0, ErrEmpty},
		{-5, 10, 0, ErrEmpty},
		{10, 0, 0, ErrInvalidConfig},
		{10, -1, 0, ErrInvalidConfig},
	}
	for _, c := range cases {
		got, err := Count(c.msgLen, c.ps)
		if got != c.want || err != c.err {
			t.Errorf("Count(%d, %d) = %d, %v; want %d, %v", c.msgLen, c.ps, got, err, c.want, c.err)
		}
	}
}

// TestSC1PieceBoundary: S-C1 at the piece level — a message of exactly
// PieceSize bytes is one fragment, one byte more gives two, and both are
// reassembled.
func TestSC1PieceBoundary(t *testing.T) {
	for _, mtu := range []int{576, 1200, 1472} {
		ps := PieceSize(mtu)
		a := newAssembler(t, AssemblerConfig{MTU: mtu})
		for _, c := range []struct{ size, pieces int }{{ps, 1}, {ps + 1, 2}} {
			msg, mode := frameOfLen(t, c.size, c.size)
			n, err := Count(len(msg), ps)
			if err != nil || n != c.pieces {
				t.Fatalf("MTU %d: Count(%d, %d) = %d, %v; want %d", mtu, c.size, ps, n, err, c.pieces)
			}
			pieces := split(t, msg, ps, mode, wire.Seq(c.size))
			if c.pieces == 2 && (len(pieces[0].Payload) != ps || len(pieces[1].Payload) != 1) {
				t.Fatalf("MTU %d: pieces of %d and %d bytes, want %d and 1", mtu, len(pieces[0].Payload), len(pieces[1].Payload), ps)
			}
			got := feed(t, a, pieces, 0)
			if len(got) != 1 || !bytes.Equal(got[0], msg) {
				t.Fatalf("MTU %d, %d-byte message: delivered %d messages, want it once", mtu, c.size, len(got))
			}
		}
	}
}

// TestSC2LargestMessage: S-C2 — a message of MaxMessageSize bytes
// round-trips through AppendPiece and Add; one byte more is refused by
// Count with ErrTooLarge. A lower negotiated limit is honoured the same way
// on the receiving side.
func TestSC2LargestMessage(t *testing.T) {
	for _, mtu := range []int{576, 1200, 1472} {
		ps, max := PieceSize(mtu), MaxMessageSize(mtu)
		msg, mode := frameOfLen(t, max, mtu)
		pieces := split(t, msg, ps, mode, 7)
		if len(pieces) != MaxPieces {
			t.Fatalf("MTU %d: %d pieces, want %d", mtu, len(pieces), MaxPieces)
		}
		a := newAssembler(t, AssemblerConfig{MTU: mtu})
		if a.Config().MaxMessageSize != max {
			t.Fatalf("MTU %d: assembler MaxMessageSize %d, want %d", mtu, a.Config().MaxMessageSize, max)
		}
		got := feed(t, a, pieces, 0)
		if len(got) != 1 || !bytes.Equal(got[0], msg) {
			t.Fatalf("MTU %d: largest message not delivered intact", mtu)
		}
		if n, err := Count(max+1, ps); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("MTU %d: Count(max+1) = %d, %v; want ErrTooLarge", mtu, n, err)
		}
	}

	// Negotiated limit below 255 × P: the receiver refuses the piece that
	// proves the message too large, and never delivers it.
	const ps, limit = 100, 1000
	a := newAssembler(t, AssemblerConfig{PieceSize: ps, MaxMessageSize: limit})
	ok, mode := frameOfLen(t, limit, 1)
	if got := feed(t, a, split(t, ok, ps, mode, 1), 0); len(got) != 1 {
		t.Fatalf("message of exactly the negotiated limit not delivered")
	}
	big, mode := frameOfLen(t, limit+1, 2)
	pieces := split(t, big, ps, mode, 2)
	for i, f := range pieces {
		msg, err := a.Add(f, 0)
		if msg != nil || !errors.Is(err, ErrTooLarge) {
			t.Fatalf("piece %d of a %d-byte message: %v, %v; want ErrTooLarge", i, len(big), len(msg), err)
		}
	}
	if s := a.Stats(); s.TooLarge != uint64(len(pieces)) || a.Partials() != 0 {
		t.Fatalf("TooLarge = %d, partials %d; want %d, 0", s.TooLarge, a.Partials(), len(pieces))
	}
}

// TestSC3SizesAgree: S-C3 — for every MTU in [576, 1472], every message
// the sender accepts (Count succeeds) at the boundary sizes is assembled by
// an assembler configured with the same MTU, and every fragment datagram
// (session header + worst-case channel header + fragment frame) fits the
// MTU; one byte beyond the largest is refused by Count.
//
// Under the race detector, which makes the gigabytes this copies cost
// 20× more, the round trips of the 254- and 255-piece sizes run for every
// 16th MTU and both ends; the arithmetic and every other size still cover
// every MTU.
func TestSC3SizesAgree(t *testing.T) {
	dgram := make([]byte, 0, 2048)
	msgBuf := make([]byte, 0, len(randBytes)+16)
	for mtu := 576; mtu <= 1472; mtu++ {
		ps := PieceSize(mtu)
		max := MaxPieces * ps
		a := newAssembler(t, AssemblerConfig{MTU: mtu})
		if c := a.Config(); c.PieceSize != ps || c.MaxMessageSize != max || max != MaxMessageSize(mtu) {
			t.Fatalf("MTU %d: assembler PieceSize %d, MaxMessageSize %d; sender %d, %d", mtu, c.PieceSize, c.MaxMessageSize, ps, max)
		}
		if _, err := Count(max+1, ps); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("MTU %d: Count(%d) = %v, want ErrTooLarge", mtu, max+1, err)
		}
		// Each boundary of the piece arithmetic: the largest, a full and a
		// one-byte last piece, the first split, one piece. Largest first,
		// so the assembler allocates its buffer once.
		sizes := []int{max, 254*ps + 1, 254 * ps, 2*ps + 1, 2 * ps, ps + 1, ps, ps - 1, 2}
		for k, size := range sizes {
			n, err := Count(size, ps)
			if err != nil {
				t.Fatalf("MTU %d: Count(%d) = %v; the sender refuses a size below its limit %d", mtu, size, err, max)
			}
			// The arithmetic, without building anything: every piece is
			// ps bytes but the last, which is 1..ps, and its frame fits.
			lastLen := size - (n-1)*ps
			if lastLen < 1 || lastLen > ps || DatagramOverhead+wire.FrameLen(wire.FrameFragment, ps) > mtu {
				t.Fatalf("MTU %d, %d-byte message: %d pieces, last %d bytes", mtu, size, n, lastLen)
			}
			if raceEnabled && n >= 254 && mtu%16 != 0 && mtu != 576 && mtu != 1472 {
				continue
			}
			id := wire.Seq(mtu*len(sizes) + k)
			msg, mode := appendFrameOfLen(t, msgBuf[:0], size, mtu+k)
			var got []byte
			for i := range n {
				dgram = wire.AppendSessionHeader(dgram[:0], wire.SessionHeader{Secret: ^uint64(0)})
				dgram = wire.AppendChannelHeader(dgram, worstHeader)
				hdr := len(dgram)
				dgram = AppendPiece(dgram, msg, ps, mode, id, i)
				if len(dgram) > mtu {
					t.Fatalf("MTU %d, %d-byte message, piece %d/%d: %d-byte datagram", mtu, size, i, n, len(dgram))
				}
				f, used, err := wire.ParseFragmentFrame(dgram[hdr:])
				if err != nil || used != len(dgram)-hdr {
					t.Fatalf("MTU %d piece %d: parse: %v", mtu, i, err)
				}
				m, err := a.Add(f, time.Duration(mtu))
				if err != nil {
					t.Fatalf("MTU %d, %d-byte message, piece %d/%d: Add: %v", mtu, size, i, n, err)
				}
				if m != nil {
					if i != n-1 || got != nil {
						t.Fatalf("MTU %d, %d-byte message: delivered at piece %d/%d", mtu, size, i, n)
					}
					got = m
				}
			}
			if !bytes.Equal(got, msg) {
				t.Fatalf("MTU %d: %d-byte message not delivered intact (%d bytes)", mtu, size, len(got))
			}
		}
	}
}

func TestPieceAndAppendPiece(t *testing.T) {
	msg, mode := frameOfLen(t, 25, 3)
	const ps = 10
	want := [][]byte{msg[:10], msg[10:20], msg[20:]}
	for i, w := range want {
		p := Piece(msg, ps, i)
		if !bytes.Equal(p, w) || cap(p) != len(p) {
			t.Errorf("Piece %d = %x (cap %d), want %x", i, p, cap(p), w)
		}
		enc := AppendPiece([]byte{0xEE}, msg, ps, mode, 0xFFFF, i)
		wantEnc := wire.AppendFragmentFrame([]byte{0xEE}, wire.FragmentFrame{
			Mode: mode, MessageID: 0xFFFF, Index: uint8(i), Count: 3, Payload: w,
		})
		if !bytes.Equal(enc, wantEnc) {
			t.Errorf("AppendPiece %d = %x, want %x", i, enc, wantEnc)
		}
	}
}

func TestAppendPiecePanicsOnCallerBugs(t *testing.T) {
	msg := make([]byte, 30)
	cases := map[string]func(){
		"Piece index -1":        func() { Piece(msg, 10, -1) },
		"Piece index 3":         func() { Piece(msg, 10, 3) },
		"Piece size 0":          func() { Piece(msg, 0, 0) },
		"Piece empty message":   func() { Piece(nil, 10, 0) },
		"AppendPiece index 3":   func() { AppendPiece(nil, msg, 10, wire.FrameUnreliable, 0, 3) },
		"AppendPiece too large": func() { AppendPiece(nil, msg, 0, wire.FrameUnreliable, 0, 0) },
		"AppendPiece 256 pieces": func() {
			AppendPiece(nil, make([]byte, 256), 1, wire.FrameUnreliable, 0, 0)
		},
	}
	for name, f := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
