package wire

import "testing"

var packetKindCodec = codec[PacketKind]{
	app:   func(dst []byte, k PacketKind) []byte { return append(dst, byte(k)) },
	parse: ParsePacketKind,
	size:  func(PacketKind) int { return 1 },
}

func TestPacketKind(t *testing.T) {
	valid := map[PacketKind]string{
		KindConnectRequest: "ConnectRequest", KindChallenge: "Challenge",
		KindConnectResponse: "ConnectResponse", KindAccept: "Accept",
		KindReject: "Reject", KindSession: "Session",
	}
	for i := 0; i < 256; i++ {
		k := PacketKind(i)
		name, ok := valid[k]
		if k.Valid() != ok {
			t.Fatalf("PacketKind(%d).Valid() = %v", i, k.Valid())
		}
		if ok {
			packetKindCodec.roundTrip(t, k)
			if k.String() != name {
				t.Errorf("String = %q, want %q", k.String(), name)
			}
		} else {
			mustErr(t, "ParsePacketKind", ParsePacketKind, []byte{byte(i)}, ErrMalformed)
			if k.String() == "" {
				t.Errorf("empty String for %d", i)
			}
		}
	}
	mustErr(t, "ParsePacketKind", ParsePacketKind, nil, ErrShort)
}

func seedsPacketKind() [][]byte {
	return [][]byte{{byte(KindConnectRequest)}, {byte(KindSession)}, {0}, {0xFF}}
}

func FuzzParsePacketKind(f *testing.F) {
	for _, s := range seedsPacketKind() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		packetKindCodec.fuzzCheck(t, b)
		if k, _, err := ParsePacketKind(b); err == nil && !k.Valid() {
			t.Fatalf("accepted invalid kind %d", k)
		}
	})
}
