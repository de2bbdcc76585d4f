package transport

import (
	"testing"
	"unsafe"
)

// TestPeerLayout checks the cache-line layout Peer's comment promises:
// what a sealed datagram's receive path reads (ep through prevLive) is in
// the first line, what each datagram and tick read (through wireSecret)
// in the first two, and the size is a multiple of 64, so that the
// allocator's size class puts every Peer on a line (a Peer holds no
// allocation header: it is under 512 bytes).
func TestPeerLayout(t *testing.T) {
	var p Peer
	if end := unsafe.Offsetof(p.prevLive) + 1; end > 64 {
		t.Errorf("Peer's receive-path fields end at byte %d, past its first cache line", end)
	}
	if end := unsafe.Offsetof(p.wireSecret) + unsafe.Sizeof(p.wireSecret); end > 128 {
		t.Errorf("Peer's per-datagram fields end at byte %d, past its second cache line", end)
	}
	if n := unsafe.Sizeof(p); n%64 != 0 || n > 512 {
		t.Errorf("Peer is %d bytes, want a multiple of 64 and at most 512", n)
	}
	for range 4 {
		peerSink = new(Peer)
		if a := uintptr(unsafe.Pointer(peerSink)) % 64; a != 0 {
			t.Errorf("a Peer starts %d bytes past a cache line", a)
		}
	}
	peerSink = nil
}

// peerSink makes TestPeerLayout's Peers escape to the heap.
var peerSink *Peer
