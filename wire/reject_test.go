package wire

import "testing"

var rejectCodec = codec[Reject]{
	app: AppendReject, parse: ParseReject,
	size: func(Reject) int { return RejectLen },
}

func TestReject(t *testing.T) {
	for i := 0; i < 256; i++ {
		rejectCodec.roundTrip(t, Reject{Nonce: uint64(i) * 0x0101010101010101, Reason: RejectReason(i)})
		if RejectReason(i).String() == "" {
			t.Fatalf("empty String for %d", i)
		}
	}
	if got := hexs(AppendReject(nil, Reject{Nonce: 0x0807060504030201, Reason: RejectServerFull})); got != "05 01 02 03 04 05 06 07 08 01" {
		t.Fatalf("encoding %s", got)
	}
	if RejectVersionMismatch.String() != "version mismatch" || RejectReason(99).String() != "RejectReason(99)" {
		t.Fatal("String")
	}
	mustErr(t, "ParseReject", ParseReject, []byte{byte(KindAccept), 0, 0, 0, 0, 0, 0, 0, 0, 0}, ErrMalformed)
}

func seedsReject() [][]byte {
	return [][]byte{
		AppendReject(nil, Reject{Reason: RejectServerFull}),
		AppendReject(nil, Reject{Nonce: ^uint64(0), Reason: RejectReason(0xFF)}),
	}
}

func FuzzParseReject(f *testing.F) {
	for _, s := range seedsReject() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { rejectCodec.fuzzCheck(t, b) })
}
