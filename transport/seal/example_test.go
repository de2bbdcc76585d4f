package seal_test

import (
	"crypto/rand"
	"fmt"

	"github.com/tickwire/tickwire/transport/seal"
)

// A client and a server seal and open one datagram. The handshake (not
// shown) gives both the key material and the server's fresh random; each
// derives the same Secret and makes its end's Session.
func Example() {
	ikm := make([]byte, 32)          // agreed by the handshake
	serverRandom := make([]byte, 16) // drawn by the server for this handshake only
	rand.Read(ikm)
	rand.Read(serverRandom)
	secret, err := seal.DeriveSecret(ikm, serverRandom, []byte("client nonce, protocol id"))
	if err != nil {
		panic(err)
	}
	client, _ := seal.New(seal.Config{}, seal.Client, &secret)
	server, _ := seal.New(seal.Config{}, seal.Server, &secret)

	// The sender writes its plaintext after HeaderLen bytes of room, in a
	// buffer with TagLen bytes to spare, and seals in place.
	buf := make([]byte, 0, 1200)
	buf = append(buf, make([]byte, seal.HeaderLen)...)
	buf = append(buf, "hello"...)
	datagram, _ := client.Seal(buf)

	// The receiver opens in place; the plaintext is a window into datagram.
	plain, err := server.Open(datagram)
	fmt.Printf("%d bytes on the wire, %q, %v\n", len(datagram), plain, err)

	// A replay is refused and counted.
	_, err = server.Open(datagram)
	fmt.Println(err, server.Stats().Replayed)
	// Output:
	// 24 bytes on the wire, "hello", <nil>
	// seal: replayed packet number 1
}
