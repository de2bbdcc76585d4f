package token_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/transport/token"
)

// The whole life of a token: the backend issues it, the client decodes
// its public part, a server verifies the sealed part, checks that it is
// named, and binds the token to the client's address.
func Example() {
	const protocolID = 0x7469636b77697265
	fleetKey, err := token.GenerateKey() // shared by the backend and the servers
	if err != nil {
		panic(err)
	}
	now := time.Unix(1796083200, 0) // each side's injected clock
	server := netip.MustParseAddrPort("192.0.2.1:7000")

	// Backend: after authenticating the player.
	tok, err := token.Issue(fleetKey, token.Params{
		ProtocolID: protocolID,
		ClientID:   42,
		Created:    now,
		Expires:    now.Add(time.Minute),
		Timeout:    10 * time.Second,
		Servers:    []netip.AddrPort{server},
		UserData:   []byte("match 7"),
	}, nil)
	if err != nil {
		panic(err)
	}
	public, _ := tok.MarshalBinary() // sent to the client over HTTPS

	// Client.
	var got token.Token
	if err := got.UnmarshalBinary(public); err != nil {
		panic(err)
	}
	fmt.Println("client connects to", got.Servers[0], "and sends", len(got.Sealed), "sealed bytes")

	// Server: once, then per handshake.
	v, _ := token.NewVerifier(protocolID, fleetKey)
	guard, _ := token.NewReplayGuard(token.GuardConfig{})
	var priv token.Private
	if err := v.Open(got.Sealed, now.Add(time.Second), &priv); err != nil {
		panic(err)
	}
	if err := priv.CheckServer(server); err != nil {
		panic(err)
	}
	client := netip.MustParseAddrPort("198.51.100.7:5000")
	if err := guard.Admit(&priv, client, now.Add(time.Second)); err != nil {
		panic(err)
	}
	fmt.Printf("admitted client %d with %q; same keys on both ends: %v\n", priv.ClientID, priv.UserData(), priv.KeyMaterial() == got.KeyMaterial())

	// The same token replayed from elsewhere.
	err = guard.Admit(&priv, netip.MustParseAddrPort("203.0.113.9:5000"), now.Add(2*time.Second))
	fmt.Println(err)
	// Output:
	// client connects to 192.0.2.1:7000 and sends 156 sealed bytes
	// admitted client 42 with "match 7"; same keys on both ends: true
	// token: already used from another address: bound to 198.51.100.7:5000 until it expires in 58 s, now used from 203.0.113.9:5000
}
