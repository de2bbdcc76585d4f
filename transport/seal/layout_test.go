package seal

import (
	"testing"
	"unsafe"
)

// TestSessionLayout checks the cache-line layout Session's comment
// promises: a server with hundreds of peers finds each session cold at
// every datagram, so each line Seal or Open touches is a miss. Seal's
// per-datagram fields are one line, and the hot half of every keyState
// (aead, iv, gen) one line; Open's fields and the window's top and
// word one line. Offsets are relative to the Session; the allocator puts
// it on a line or, with its 8-byte header (Go ≥ 1.22, objects over 512
// bytes holding pointers), 8 bytes past one, so each group must lie in
// the first 56 bytes of a line of the struct.
func TestSessionLayout(t *testing.T) {
	const line = 64
	var s Session
	base := uintptr(unsafe.Pointer(&s))
	off := func(p unsafe.Pointer) uintptr { return uintptr(p) - base }
	same := func(what string, from, to uintptr) {
		t.Helper()
		if from/line != (to-1)/line || to-from > line-8 || (to-1)%line >= line-8 {
			t.Errorf("%s spans bytes [%d, %d): more than one cache line", what, from, to)
		}
	}
	same("sealLine", off(unsafe.Pointer(&s.sealLine)), off(unsafe.Pointer(&s.sealNonce))+NonceLen)
	hot := unsafe.Offsetof(s.sendKey.gen) + unsafe.Sizeof(s.sendKey.gen)
	same("sendKey's aead, iv, gen", off(unsafe.Pointer(&s.sendKey)), off(unsafe.Pointer(&s.sendKey))+hot)
	for i := range s.keys {
		same("a receive key's aead, iv, gen", off(unsafe.Pointer(&s.keys[i])), off(unsafe.Pointer(&s.keys[i]))+hot)
	}
	same("openLine and the window's top and word", off(unsafe.Pointer(&s.openLine)), off(unsafe.Pointer(&s.win.word))+8)

	// A live Session's address: its size class is a multiple of 64, so
	// every Session of a span starts at the same offset in its line.
	c, _ := pair(t, Config{}, testSecret())
	if a := uintptr(unsafe.Pointer(c)) % line; a != 0 && a != 8 {
		t.Errorf("Session %d bytes past a cache line (size %d), want 0 or 8", a, unsafe.Sizeof(*c))
	}
	// The size class: 1792 bytes (1784 and the header) with the layout
	// padding, as without it.
	if n := unsafe.Sizeof(s); n > 1784 {
		t.Errorf("Session is %d bytes, more than the 1784 of its size class", n)
	}
}
