package wire

import "testing"

func TestFrameType(t *testing.T) {
	names := map[FrameType]string{
		FrameUnreliable: "Unreliable", FrameSequenced: "Sequenced", FrameReliable: "Reliable",
		FrameFragment: "Fragment", FrameActionStream: "ActionStream",
		FrameKeepAlive: "KeepAlive", FrameDisconnect: "Disconnect", FrameReliablePiece: "ReliablePiece",
	}
	for i := 0; i < 256; i++ {
		ft := FrameType(i)
		name, ok := names[ft]
		if ft.Valid() != ok {
			t.Fatalf("FrameType(%d).Valid() = %v", i, ft.Valid())
		}
		got, err := PeekFrameType([]byte{byte(i), 0})
		if ok {
			if err != nil || got != ft || ft.String() != name {
				t.Fatalf("%d: %v %v %q", i, got, err, ft.String())
			}
		} else if err != ErrMalformed {
			t.Fatalf("PeekFrameType(%d) = %v", i, err)
		}
		wantPayload := ok && ft != FrameKeepAlive && ft != FrameDisconnect
		if ft.HasPayload() != wantPayload {
			t.Fatalf("%d: HasPayload %v", i, ft.HasPayload())
		}
	}
	if _, err := PeekFrameType(nil); err != ErrShort {
		t.Fatal("PeekFrameType(nil)")
	}
	if FrameType(0).String() != "FrameType(0)" {
		t.Fatal(FrameType(0).String())
	}
}

// TestFrameLen checks FrameLen against each type's encoder.
func TestFrameLen(t *testing.T) {
	for _, l := range []int{0, 1, 127, 128, 16383, 16384, 100000} {
		p := make([]byte, l)
		checks := map[FrameType]int{
			FrameUnreliable:   len(AppendUnreliableFrame(nil, UnreliableFrame{Payload: p})),
			FrameSequenced:    len(AppendSequencedFrame(nil, SequencedFrame{Payload: p})),
			FrameReliable:     len(AppendReliableFrame(nil, ReliableFrame{Payload: p})),
			FrameFragment:     len(AppendFragmentFrame(nil, FragmentFrame{Payload: p})),
			FrameActionStream: len(AppendActionStreamFrame(nil, ActionStreamFrame{Payload: p})),
			FrameKeepAlive:    len(AppendKeepAliveFrame(nil, KeepAliveFrame{})),
			FrameDisconnect:   len(AppendDisconnectFrame(nil, DisconnectFrame{})),
		}
		for ft, want := range checks {
			if got := FrameLen(ft, l); got != want {
				t.Fatalf("FrameLen(%v, %d) = %d, want %d", ft, l, got, want)
			}
		}
	}
	if FrameLen(0, 5) != 0 || FrameLen(FrameReliable, -1) != 0 {
		t.Fatal("FrameLen of invalid input")
	}
}

// TestFramePayloadRoom compares with a brute-force search for every room
// size around the varint boundaries.
func TestFramePayloadRoom(t *testing.T) {
	for _, ft := range []FrameType{FrameUnreliable, FrameSequenced, FrameReliable, FrameFragment, FrameActionStream} {
		for room := -2; room < 20000; room++ {
			want := -1
			for l := room; l >= 0; l-- {
				if FrameLen(ft, l) <= room {
					want = l
					break
				}
			}
			if got := FramePayloadRoom(ft, room); got != want {
				t.Fatalf("FramePayloadRoom(%v, %d) = %d, want %d", ft, room, got, want)
			}
		}
		if got := FramePayloadRoom(ft, 1<<30); got != MaxMessageLen {
			t.Fatalf("cap: %d", got)
		}
	}
	if FramePayloadRoom(FrameKeepAlive, 100) != -1 || FramePayloadRoom(0, 100) != -1 {
		t.Fatal("payload-less types")
	}
	// A 1200-byte datagram with a 9-byte session header and a 9-byte
	// worst-case channel header leaves this much per fragment.
	if got := FramePayloadRoom(FrameFragment, 1200-SessionHeaderLen-ChannelHeaderMaxLen); got != 1174 {
		t.Fatalf("fragment room in a 1200-byte datagram: %d", got)
	}
}

// skipFrameDifferential checks SkipFrame against the type's own parser.
func skipFrameDifferential(t *testing.T, b []byte) {
	ft, n, err := SkipFrame(b)
	if err != nil {
		if !isSentinel(err) || n != 0 || ft != 0 {
			t.Fatalf("SkipFrame(% x) = %v %d %v", b, ft, n, err)
		}
	}
	var wn int
	var werr error
	pt, perr := PeekFrameType(b)
	if perr != nil {
		wn, werr = 0, perr
	} else {
		switch pt {
		case FrameUnreliable:
			_, wn, werr = ParseUnreliableFrame(b)
		case FrameSequenced:
			_, wn, werr = ParseSequencedFrame(b)
		case FrameReliable:
			_, wn, werr = ParseReliableFrame(b)
		case FrameFragment:
			_, wn, werr = ParseFragmentFrame(b)
		case FrameActionStream:
			_, wn, werr = ParseActionStreamFrame(b)
		case FrameKeepAlive:
			_, wn, werr = ParseKeepAliveFrame(b)
		case FrameDisconnect:
			_, wn, werr = ParseDisconnectFrame(b)
		case FrameReliablePiece:
			_, wn, werr = ParseReliablePieceFrame(b)
		}
	}
	if n != wn || err != werr || (err == nil && ft != pt) {
		t.Fatalf("SkipFrame(% x) = %v %d %v; type parser %v %d %v", b, ft, n, err, pt, wn, werr)
	}
}

func TestSkipFrame(t *testing.T) {
	for _, s := range seedsSkipFrame() {
		ft, n, err := SkipFrame(s)
		if err != nil || n != len(s) || byte(ft) != s[0] {
			t.Fatalf("SkipFrame(% x) = %v %d %v", s, ft, n, err)
		}
		skipFrameDifferential(t, s)
		for k := 0; k < len(s); k++ {
			if _, n, err := SkipFrame(s[:k]); err == nil || n != 0 {
				t.Fatalf("prefix %d of % x accepted", k, s)
			}
		}
	}
}

func seedsSkipFrame() [][]byte {
	var s [][]byte
	s = append(s, seedsUnreliableFrame()[:3]...)
	s = append(s, seedsSequencedFrame()[:3]...)
	s = append(s, seedsReliableFrame()[:3]...)
	s = append(s, seedsFragmentFrame()[:3]...)
	s = append(s, seedsReliablePieceFrame()[:3]...)
	s = append(s, seedsActionStreamFrame()[:2]...)
	s = append(s, seedsKeepAliveFrame()[0], seedsDisconnectFrame()[0])
	return s
}

func FuzzSkipFrame(f *testing.F) {
	for _, s := range seedsSkipFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { skipFrameDifferential(t, b) })
}
