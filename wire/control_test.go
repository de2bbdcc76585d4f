package wire

import "testing"

var (
	keepAliveCodec = codec[KeepAliveFrame]{
		app: AppendKeepAliveFrame, parse: ParseKeepAliveFrame,
		size: func(KeepAliveFrame) int { return KeepAliveFrameLen },
	}
	disconnectCodec = codec[DisconnectFrame]{
		app: AppendDisconnectFrame, parse: ParseDisconnectFrame,
		size: func(DisconnectFrame) int { return DisconnectFrameLen },
	}
)

func TestKeepAliveFrame(t *testing.T) {
	if got := hexs(keepAliveCodec.roundTrip(t, KeepAliveFrame{})); got != "06" {
		t.Fatalf("encoding %s", got)
	}
	mustErr(t, "ParseKeepAliveFrame", ParseKeepAliveFrame, []byte{0x07}, ErrMalformed)
}

func TestDisconnectFrame(t *testing.T) {
	for i := 0; i < 256; i++ {
		enc := disconnectCodec.roundTrip(t, DisconnectFrame{Reason: DisconnectReason(i)})
		if enc[0] != 0x07 || enc[1] != byte(i) {
			t.Fatalf("encoding % x", enc)
		}
		if DisconnectReason(i).String() == "" {
			t.Fatalf("empty String for %d", i)
		}
	}
	if DisconnectTimeout.String() != "timeout" || DisconnectReason(200).String() != "DisconnectReason(200)" {
		t.Fatal("String")
	}
	mustErr(t, "ParseDisconnectFrame", ParseDisconnectFrame, []byte{0x06, 0x01}, ErrMalformed)
}

func seedsKeepAliveFrame() [][]byte  { return [][]byte{{0x06}, {0x06, 0x06}} }
func seedsDisconnectFrame() [][]byte { return [][]byte{{0x07, 0x01}, {0x07, 0xFF}} }

func FuzzParseKeepAliveFrame(f *testing.F) {
	for _, s := range seedsKeepAliveFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { keepAliveCodec.fuzzCheck(t, b) })
}

func FuzzParseDisconnectFrame(f *testing.F) {
	for _, s := range seedsDisconnectFrame() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { disconnectCodec.fuzzCheck(t, b) })
}
