package wire

import "testing"

// TestNoAllocs runs every encoder and decoder through testing.AllocsPerRun
// with pre-sized buffers: the per-packet path of every format must not
// allocate (scenario S-F7 depends on it one layer up).
func TestNoAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	payload := []byte("0123456789abcdef0123456789abcdef")
	rec := ActionRecord{Sender: 4, Type: 300, Entity: 1 << 40, Payload: payload[:8]}
	slice := writeSlice(nil, actionSliceSamples()[1])
	datagram := appendDatagram(nil, exampleDatagram())

	cases := []struct {
		name string
		f    func()
	}{
		{"fixed", func() {
			b := AppendUint64(AppendUint32(AppendUint16(buf[:0], 1), 2), 3)
			_, _, _ = Uint16(b)
			_, _, _ = Uint32(b[2:])
			_, _, _ = Uint64(b[6:])
		}},
		{"varint", func() {
			b := AppendVarint(AppendUvarint(buf[:0], 1<<62), -12345)
			_, n, _ := Uvarint(b)
			_, _, _ = Varint(b[n:])
		}},
		{"reader/writer", func() {
			w := NewWriter(buf[:0])
			w.Uint8(1)
			w.Uint16(2)
			w.Uint32(3)
			w.Uint64(4)
			w.Seq(5)
			w.Uvarint(300)
			w.Varint(-3)
			w.Append(payload)
			r := NewReader(w.Bytes())
			_, _ = r.Uint8()
			_, _ = r.Uint16()
			_, _ = r.Uint32()
			_, _ = r.Uint64()
			_, _ = r.Seq()
			_, _ = r.Uvarint()
			_, _ = r.Varint()
			_, _ = r.Bytes(len(payload))
			_ = r.Rest()
		}},
		{"packet kind", func() { _, _, _ = ParsePacketKind(datagram) }},
		{"session header", func() {
			b := AppendSessionHeader(buf[:0], SessionHeader{Secret: 42})
			_, _, _ = ParseSessionHeader(b)
		}},
		{"channel header", func() {
			b := AppendChannelHeader(buf[:0], ChannelHeader{Seq: 9, Ack: 40000, AckBits: 0x12345678})
			_, _, _ = ParseChannelHeader(b)
			_ = ChannelHeaderLen(ChannelHeader{})
			b = AppendChannelHeader(buf[:0], ChannelHeader{Seq: 9, NoAck: true})
			_, _, _ = ParseChannelHeader(b)
		}},
		{"unreliable", func() {
			b := AppendUnreliableFrame(buf[:0], UnreliableFrame{Payload: payload})
			_, _, _ = ParseUnreliableFrame(b)
		}},
		{"sequenced", func() {
			b := AppendSequencedFrame(buf[:0], SequencedFrame{Stream: 1, Seq: 2, Payload: payload})
			_, _, _ = ParseSequencedFrame(b)
		}},
		{"reliable", func() {
			b := AppendReliableFrame(buf[:0], ReliableFrame{Stream: 1, MessageID: 2, Payload: payload})
			_, _, _ = ParseReliableFrame(b)
		}},
		{"fragment", func() {
			b := AppendFragmentFrame(buf[:0], FragmentFrame{Mode: FrameUnreliable, MessageID: 2, Index: 1, Count: 4, Payload: payload})
			_, _, _ = ParseFragmentFrame(b)
			_ = FramePayloadRoom(FrameFragment, 1182)
		}},
		{"keepalive/disconnect", func() {
			b := AppendDisconnectFrame(AppendKeepAliveFrame(buf[:0], KeepAliveFrame{}), DisconnectFrame{Reason: 1})
			_, _, _ = ParseKeepAliveFrame(b)
			_, _, _ = ParseDisconnectFrame(b[1:])
		}},
		{"skip frame", func() {
			_, _, _ = SkipFrame(datagram[SessionHeaderLen+4:])
		}},
		{"action record", func() {
			b := AppendActionRecord(buf[:0], rec)
			_, _, _ = ParseActionRecord(b)
			_ = ActionRecordLen(rec)
		}},
		{"action slice writer", func() {
			w := NewActionSliceWriter(buf[:0], 100)
			for f := uint32(100); f < 110; f++ {
				_ = w.BeginFrame(f)
				for i := 0; i < 3; i++ {
					_ = w.AppendRecord(rec)
				}
				if f == 105 {
					w.CancelFrame()
				}
			}
			_, _ = w.Finish(112)
		}},
		{"action slice parse+iterate", func() {
			s, _, _ := ParseActionSlice(slice)
			it := s.Iter()
			for _, _, ok := it.NextFrame(); ok; _, _, ok = it.NextFrame() {
				for _, ok := it.NextRecord(); ok; _, ok = it.NextRecord() {
				}
			}
		}},
		{"action stream frame", func() {
			b := AppendActionStreamFrame(buf[:0], ActionStreamFrame{Payload: slice})
			f, _, _ := ParseActionStreamFrame(b)
			_, _ = f.ParseSlice()
		}},
		{"connect request", func() {
			b := AppendConnectRequest(buf[:0], ConnectRequest{Version: ProtocolVersion, Nonce: 1, Resume: true, Token: Token{1}})
			_, _, _ = ParseConnectRequest(b)
		}},
		{"challenge", func() {
			b := AppendChallenge(buf[:0], Challenge{Nonce: 1, Cookie: Cookie{Bucket: 2}})
			_, _, _ = ParseChallenge(b)
		}},
		{"connect response", func() {
			b := AppendConnectResponse(buf[:0], ConnectResponse{Version: ProtocolVersion, Nonce: 1})
			_, _, _ = ParseConnectResponse(b)
		}},
		{"accept", func() {
			b := AppendAccept(buf[:0], Accept{Nonce: 3})
			_, _, _ = ParseAccept(b)
			b = AppendAcceptBody(buf[:0], AcceptBody{PeerID: 3, MTU: 1200, MaxMessage: 1 << 18, ReliableBytes: 1 << 20, MaxPartial: 8, ReliableWindow: 256, SequencedStreams: 4, OrderedStreams: 4})
			_, _, _ = ParseAcceptBody(b)
		}},
		{"reject", func() {
			b := AppendReject(buf[:0], Reject{Nonce: 1, Reason: RejectServerFull})
			_, _, _ = ParseReject(b)
		}},
		{"errors", func() {
			_, _, _ = ParseChannelHeader([]byte{0xFF})
			_, _, _ = Uvarint([]byte{0x80, 0x00})
			_, _, _ = ParseConnectRequest(datagram)
			_, _, _ = ParseFragmentFrame([]byte{4, 3, 0, 0, 5, 5})
		}},
		{"stringers", func() {
			_ = KindSession.String()
			_ = FrameReliable.String()
			_ = RejectServerFull.String()
			_ = DisconnectTimeout.String()
		}},
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(200, c.f); n != 0 {
			t.Errorf("%s: %.1f allocations per run, want 0", c.name, n)
		}
	}
}
