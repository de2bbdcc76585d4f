package wire

import (
	"bytes"
	"testing"
)

// datagramModel is a whole session datagram as a receiver walks it.
type datagramModel struct {
	Session SessionHeader
	Channel ChannelHeader
	Frames  [][]byte // each frame's raw encoding, validated by SkipFrame
}

func appendDatagram(dst []byte, d datagramModel) []byte {
	dst = AppendSessionHeader(dst, d.Session)
	dst = AppendChannelHeader(dst, d.Channel)
	for _, f := range d.Frames {
		dst = append(dst, f...)
	}
	return dst
}

// parseDatagram walks a session datagram the way the transport does:
// kind, session header, channel header, then frames to the end, each
// validated before any is acted on.
func parseDatagram(b []byte) (datagramModel, int, error) {
	var d datagramModel
	k, _, err := ParsePacketKind(b)
	if err != nil {
		return datagramModel{}, 0, err
	}
	if k != KindSession {
		return datagramModel{}, 0, ErrMalformed
	}
	d.Session, _, err = ParseSessionHeader(b)
	if err != nil {
		return datagramModel{}, 0, err
	}
	off := SessionHeaderLen
	var n int
	d.Channel, n, err = ParseChannelHeader(b[off:])
	if err != nil {
		return datagramModel{}, 0, err
	}
	off += n
	for off < len(b) {
		_, n, err := SkipFrame(b[off:])
		if err != nil {
			return datagramModel{}, 0, err
		}
		d.Frames = append(d.Frames, b[off:off+n:off+n])
		off += n
	}
	return d, off, nil
}

var datagramCodec = codec[datagramModel]{app: appendDatagram, parse: parseDatagram, whole: true}

// reencodeFrame parses one frame with its type's parser and encodes the
// result again.
func reencodeFrame(t *testing.T, b []byte) []byte {
	ft, err := PeekFrameType(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	var perr error
	switch ft {
	case FrameUnreliable:
		var f UnreliableFrame
		f, _, perr = ParseUnreliableFrame(b)
		out = AppendUnreliableFrame(nil, f)
	case FrameSequenced:
		var f SequencedFrame
		f, _, perr = ParseSequencedFrame(b)
		out = AppendSequencedFrame(nil, f)
	case FrameReliable:
		var f ReliableFrame
		f, _, perr = ParseReliableFrame(b)
		out = AppendReliableFrame(nil, f)
	case FrameFragment:
		var f FragmentFrame
		f, _, perr = ParseFragmentFrame(b)
		out = AppendFragmentFrame(nil, f)
	case FrameReliablePiece:
		var f ReliablePieceFrame
		f, _, perr = ParseReliablePieceFrame(b)
		out = AppendReliablePieceFrame(nil, f)
	case FrameActionStream:
		var f ActionStreamFrame
		f, _, perr = ParseActionStreamFrame(b)
		out = AppendActionStreamFrame(nil, f)
	case FrameKeepAlive:
		var f KeepAliveFrame
		f, _, perr = ParseKeepAliveFrame(b)
		out = AppendKeepAliveFrame(nil, f)
	case FrameDisconnect:
		var f DisconnectFrame
		f, _, perr = ParseDisconnectFrame(b)
		out = AppendDisconnectFrame(nil, f)
	}
	if perr != nil {
		t.Fatalf("type parser rejects a frame SkipFrame accepted: %v", perr)
	}
	return out
}

func datagramSamples() []datagramModel {
	return []datagramModel{
		// Ack-only datagram: no frames (scenario S-B8).
		{Session: SessionHeader{Secret: 0x0123456789ABCDEF}, Channel: ChannelHeader{Seq: 10, Ack: 20, AckBits: 0xFFFFFFFF}},
		// The worked example in docs/WIRE.md.
		exampleDatagram(),
		{
			Session: SessionHeader{Secret: 1},
			Channel: ChannelHeader{Seq: 1000, Ack: 30000},
			Frames: [][]byte{
				AppendKeepAliveFrame(nil, KeepAliveFrame{}),
				AppendUnreliableFrame(nil, UnreliableFrame{Payload: []byte("u")}),
				AppendSequencedFrame(nil, SequencedFrame{Stream: 1, Seq: 5, Payload: []byte("s")}),
				AppendFragmentFrame(nil, FragmentFrame{Mode: FrameSequenced, MessageID: 3, Index: 0, Count: 2, Payload: []byte("frag")}),
				AppendReliablePieceFrame(nil, ReliablePieceFrame{Stream: 2, MessageID: 9, Index: 1, Count: 2, Payload: []byte("piece")}),
				AppendActionStreamFrame(nil, ActionStreamFrame{Payload: writeSlice(nil, actionSliceSamples()[1])}),
				AppendDisconnectFrame(nil, DisconnectFrame{Reason: DisconnectClosed}),
			},
		},
	}
}

// exampleDatagram is the session datagram with one reliable frame worked
// through in docs/WIRE.md.
func exampleDatagram() datagramModel {
	return datagramModel{
		Session: SessionHeader{Secret: 0x8877665544332211},
		Channel: ChannelHeader{Seq: 0x0102, Ack: 0x00FA, AckBits: 0xFFFFFFFF},
		Frames: [][]byte{AppendReliableFrame(nil, ReliableFrame{
			Stream: 1, MessageID: 0x0007, Payload: []byte("hi!"),
		})},
	}
}

func TestDatagramExample(t *testing.T) {
	want := "06 11 22 33 44 55 66 77 88 10 02 01 08 03 01 07 00 03 68 69 21"
	if got := hexs(datagramCodec.roundTrip(t, exampleDatagram())); got != want {
		t.Fatalf("datagram\n%s\nwant\n%s", got, want)
	}
}

func TestDatagramWalk(t *testing.T) {
	for _, d := range datagramSamples() {
		enc := datagramCodec.roundTrip(t, d)
		got, _, _ := parseDatagram(enc)
		if len(got.Frames) != len(d.Frames) {
			t.Fatalf("%d frames, want %d", len(got.Frames), len(d.Frames))
		}
	}
	// Garbage after the last frame fails the whole datagram.
	enc := appendDatagram(nil, exampleDatagram())
	for _, tail := range [][]byte{{0x00}, {0x08}, {0x03, 0x01}} {
		if _, _, err := parseDatagram(append(append([]byte(nil), enc...), tail...)); err == nil {
			t.Fatalf("tail % x accepted", tail)
		}
	}
}

func seedsDatagram() [][]byte { return encodeAll(datagramCodec, datagramSamples()) }

// FuzzParseDatagram walks arbitrary bytes as a session datagram: every
// frame SkipFrame accepts must parse with its type's parser, re-encode to
// the same bytes, and the whole datagram must re-encode exactly.
func FuzzParseDatagram(f *testing.F) {
	for _, s := range seedsDatagram() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		datagramCodec.fuzzCheck(t, b)
		d, _, err := parseDatagram(b)
		if err != nil {
			return
		}
		for _, fr := range d.Frames {
			if out := reencodeFrame(t, fr); !bytes.Equal(out, fr) {
				t.Fatalf("frame % x re-encodes as % x", fr, out)
			}
		}
	})
}
