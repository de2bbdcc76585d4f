package transport_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/transport/socket/udp"
	"github.com/tickwire/tickwire/transport/token"
)

// TestTokenOverUDP: a client holding a connect token with the full 256
// bytes of user data (a 490-byte ConnectResponse) and no pinned server key
// joins a server that requires tokens, over real loopback UDP; the
// admission hook sees the token's client id and user data, the token is
// bound at the client's first datagram, and a reliable message crosses
// each way. Bounded by 10 s of wall time, normally a few milliseconds.
func TestTokenOverUDP(t *testing.T) {
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	ss, err := udp.Open(loop, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := udp.Open(loop, udp.Config{})
	if err != nil {
		ss.Close()
		t.Fatal(err)
	}
	key, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	v, err := token.NewVerifier(7, key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	user := bytes.Repeat([]byte("u"), token.MaxUserData)
	tok, err := token.Issue(key, token.Params{ProtocolID: 7, ClientID: 1234, Created: now, Expires: now.Add(30 * time.Second),
		Servers: []netip.AddrPort{ss.LocalAddr()}, UserData: user}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The client gets the public token as it would from its backend.
	public, err := tok.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got token.Token
	if err := got.UnmarshalBinary(public); err != nil {
		t.Fatal(err)
	}

	var admitted []transport.AdmitRequest
	sLog, cLog := newUDPPeerLog(t), newUDPPeerLog(t)
	srv, err := transport.Listen(ss, transport.EndpointConfig{
		Tokens: transport.TokenConfig{Verifier: v, Required: true},
		Admit: func(r transport.AdmitRequest) error {
			r.UserData = bytes.Clone(r.UserData)
			admitted = append(admitted, r)
			return nil
		},
	}, sLog)
	if err != nil {
		ss.Close()
		cs.Close()
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := transport.Dial(cs, ss.LocalAddr(), transport.EndpointConfig{Token: &got}, cLog, 0)
	if err != nil {
		cs.Close()
		t.Fatal(err)
	}
	defer cl.Close()
	p := &udpPair{t: t, start: time.Now(), srv: srv, cl: cl, sLog: sLog, cLog: cLog}
	p.until(10*time.Second, "the token client connects", func() bool { return len(cLog.connects) == 1 && len(sLog.connects) == 1 })
	if len(admitted) != 1 || admitted[0].ClientID != 1234 || !bytes.Equal(admitted[0].UserData, user) || admitted[0].Addr != cs.LocalAddr() {
		t.Fatalf("the hook saw %+v", admitted)
	}
	if _, err := cLog.connects[0].Channel().SendReliable(1, udpPayload(1, 0, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := sLog.connects[0].Channel().SendReliable(1, udpPayload(1, 0, 100)); err != nil {
		t.Fatal(err)
	}
	p.until(10*time.Second, "a message each way", func() bool { return sLog.got[[2]uint32{1, 0}] == 1 && cLog.got[[2]uint32{1, 0}] == 1 })
	if st := srv.Stats(); st.TokensVerified != 1 || st.TokensBound != 1 || st.TokenRefusalsTotal() != 0 {
		t.Fatalf("verified %d, bound %d, refused %d", st.TokensVerified, st.TokensBound, st.TokenRefusalsTotal())
	}
	if id, ok := sLog.connects[0].ClientID(); !ok || id != 1234 {
		t.Fatalf("client id %d, %v", id, ok)
	}
}
