package wire

import (
	"encoding/binary"
	"testing"
)

// TestHandshakeAmplification pins the anti-amplification invariant of
// scenario S-E3: every reply a server can send to an address it has not
// verified is no larger than the client message that triggers it.
func TestHandshakeAmplification(t *testing.T) {
	for _, reply := range []int{ChallengeLen, RejectLen} {
		if reply > ConnectRequestLen {
			t.Errorf("reply of %d bytes to a %d-byte ConnectRequest", reply, ConnectRequestLen)
		}
	}
	for _, reply := range []int{AcceptLen, RejectLen} {
		if reply > ConnectResponseLen {
			t.Errorf("reply of %d bytes to a %d-byte ConnectResponse", reply, ConnectResponseLen)
		}
	}
	// A foreign-version request may be as short as the stable prefix; the
	// Reject the server answers it with must still be smaller.
	if RejectLen > helloPrefixLen {
		t.Errorf("Reject (%d) larger than the version prefix (%d)", RejectLen, helloPrefixLen)
	}
	// The declared sizes are what the encoders write.
	sizes := map[string][2]int{
		"ConnectRequest":  {len(AppendConnectRequest(nil, ConnectRequest{})), ConnectRequestLen},
		"Challenge":       {len(AppendChallenge(nil, Challenge{})), ChallengeLen},
		"ConnectResponse": {len(AppendConnectResponse(nil, ConnectResponse{})), ConnectResponseLen},
		"Accept":          {len(AppendAccept(nil, Accept{})), AcceptLen},
		"Reject":          {len(AppendReject(nil, Reject{})), RejectLen},
		"AcceptBody":      {len(AppendAcceptBody(nil, AcceptBody{})), AcceptBodyLen},
	}
	// The table of docs/WIRE.md §9.1: 64 → 29 or 10, 120 → 109 or 10.
	if ConnectRequestLen != 64 || ChallengeLen != 29 || ConnectResponseLen != 120 || AcceptLen != 109 || RejectLen != 10 {
		t.Errorf("handshake sizes %d/%d/%d/%d/%d, WIRE.md §9.1 says 64/29/120/109/10",
			ConnectRequestLen, ChallengeLen, ConnectResponseLen, AcceptLen, RejectLen)
	}
	for name, s := range sizes {
		if s[0] != s[1] {
			t.Errorf("%s: encoder writes %d bytes, constant says %d", name, s[0], s[1])
		}
	}
	if got := string(AppendUint32(nil, ProtocolMagic)); got != "twir" {
		t.Errorf("magic bytes %q", got)
	}
}

// versionedPrefix returns a hello prefix with the given kind and version,
// followed by filler up to size bytes.
func versionedPrefix(k PacketKind, version uint16, nonce uint64, size int) []byte {
	b := appendHelloPrefix(nil, k, version, nonce)
	for len(b) < size {
		b = append(b, 0xAB)
	}
	return b
}

// TestHelloVersion: a foreign version is reported with ErrVersion, Version
// and Nonce, whatever follows the stable prefix, so the server can answer
// RejectVersionMismatch with the right nonce.
func TestHelloVersion(t *testing.T) {
	for _, size := range []int{helloPrefixLen, 40, 64, 200} {
		b := versionedPrefix(KindConnectRequest, 1, 0x1122334455667788, size) // the first version
		r, n, err := ParseConnectRequest(b)
		if err != ErrVersion || n != 0 || r.Version != 1 || r.Nonce != 0x1122334455667788 || r.Resume {
			t.Fatalf("request size %d: %+v %d %v", size, r, n, err)
		}
		b[0] = byte(KindConnectResponse)
		resp, n, err := ParseConnectResponse(b)
		if err != ErrVersion || n != 0 || resp.Version != 1 || resp.Nonce != 0x1122334455667788 {
			t.Fatalf("response size %d: %+v %d %v", size, resp, n, err)
		}
	}
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, versionedPrefix(KindConnectRequest, 0, 1, 64), ErrVersion)
}

// TestHelloMagic: the wrong magic is malformed as soon as it is readable.
func TestHelloMagic(t *testing.T) {
	b := AppendConnectRequest(nil, ConnectRequest{Version: ProtocolVersion, Nonce: 1})
	binary.LittleEndian.PutUint32(b[1:], ProtocolMagic^1)
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, b, ErrMalformed)
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, b[:5], ErrMalformed)
	mustErr(t, "ParseConnectRequest", ParseConnectRequest, b[:4], ErrShort)
	c := AppendConnectResponse(nil, ConnectResponse{Version: ProtocolVersion})
	c[4] ^= 0x80
	mustErr(t, "ParseConnectResponse", ParseConnectResponse, c, ErrMalformed)
}
