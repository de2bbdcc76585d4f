package udp_test

import (
	"testing"

	"github.com/tickwire/tickwire/transport/socket/udp"
)

// TestSocketBuffers checks that RecvBuffer and SendBuffer reach the kernel
// (Linux reports the granted sizes; elsewhere the request is the standard
// library's).
func TestSocketBuffers(t *testing.T) {
	small, err := udp.Open(lo4, udp.Config{RecvBuffer: 4096, SendBuffer: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	s := small.Stats()
	// Linux doubles the request and applies a floor of a few KiB.
	if s.RecvBufferBytes > 16384 || s.SendBufferBytes > 16384 {
		t.Fatalf("4 KiB buffers requested, kernel reports %d / %d", s.RecvBufferBytes, s.SendBufferBytes)
	}
}
