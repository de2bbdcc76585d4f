package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// codec ties one wire format's encoder, decoder and size function together
// so every format gets the same round-trip, truncation, fuzz and
// allocation checks.
type codec[T any] struct {
	app   func([]byte, T) []byte
	parse func([]byte) (T, int, error)
	size  func(T) int // nil when the format has no XLen
	eq    func(a, b T) bool
	// whole marks a format that runs to the end of its input (a whole
	// datagram): it is not self-delimiting, so the trailing-bytes and
	// strict-prefix checks do not apply and n must be len(input).
	whole bool
}

func (c codec[T]) equal(a, b T) bool {
	if c.eq != nil {
		return c.eq(a, b)
	}
	return reflect.DeepEqual(a, b)
}

// isSentinel reports whether err is one of the package's sentinel errors,
// returned unwrapped.
func isSentinel(err error) bool {
	switch err {
	case ErrShort, ErrMalformed, ErrOverflow, ErrTooLarge, ErrVersion:
		return true
	}
	return false
}

// roundTrip encodes v after a non-empty prefix and checks: the prefix is
// untouched, the size function agrees, decoding gives back v and consumes
// exactly the encoding, trailing bytes are ignored, and every strict prefix
// of the encoding is rejected.
func (c codec[T]) roundTrip(t testing.TB, v T) []byte {
	t.Helper()
	prefix := []byte{0xA5, 0x5A}
	out := c.app(append([]byte(nil), prefix...), v)
	if !bytes.Equal(out[:2], prefix) {
		t.Fatalf("%+v: encoder overwrote dst's existing bytes", v)
	}
	enc := out[2:]
	if c.size != nil {
		if got := c.size(v); got != len(enc) {
			t.Fatalf("%+v: size function says %d, encoder wrote %d bytes", v, got, len(enc))
		}
	}
	got, n, err := c.parse(enc)
	if err != nil {
		t.Fatalf("%+v: parse of its own encoding % x failed: %v", v, enc, err)
	}
	if n != len(enc) {
		t.Fatalf("%+v: parse consumed %d of %d bytes", v, n, len(enc))
	}
	if !c.equal(got, v) {
		t.Fatalf("round trip changed the value:\n in  %+v\n out %+v\n enc % x", v, got, enc)
	}
	if c.whole {
		return enc
	}
	trailing := append(append([]byte(nil), enc...), 0xEE, 0x01, 0x00)
	got2, n2, err := c.parse(trailing)
	if err != nil || n2 != len(enc) || !c.equal(got2, v) {
		t.Fatalf("%+v: parse with trailing bytes: n=%d err=%v", v, n2, err)
	}
	c.checkPrefixes(t, enc)
	return enc
}

// checkPrefixes checks that every strict prefix of a valid encoding is
// rejected with ErrShort or ErrMalformed, n = 0 and the zero value. Each
// check parses up to len(enc) bytes, so for long encodings (big payloads)
// it checks the first and last 256 prefixes and every 61st in between.
func (c codec[T]) checkPrefixes(t testing.TB, enc []byte) {
	t.Helper()
	var zero T
	for k := 0; k < len(enc); k++ {
		if len(enc) > 1024 && k > 256 && k < len(enc)-256 && k%61 != 0 {
			continue
		}
		v, n, err := c.parse(enc[:k:k])
		if err != ErrShort && err != ErrMalformed {
			t.Fatalf("prefix %d/%d of % x: err = %v, want ErrShort or ErrMalformed", k, len(enc), enc, err)
		}
		if n != 0 || !reflect.DeepEqual(v, zero) {
			t.Fatalf("prefix %d/%d of % x: failed parse returned n=%d v=%+v", k, len(enc), enc, n, v)
		}
	}
}

// fuzzCheck asserts the properties every decoder must have on arbitrary
// input b: no panic; on failure a sentinel error with n = 0; on success
// 0 < n ≤ len(b), the value re-encodes to exactly b[:n] (canonical
// encodings), the size function agrees, decoding b[:n] alone gives the same
// value, and strict prefixes of b[:n] are rejected.
func (c codec[T]) fuzzCheck(t *testing.T, b []byte) {
	t.Helper()
	v, n, err := c.parse(b)
	if err != nil {
		if !isSentinel(err) {
			t.Fatalf("parse(% x): non-sentinel error %v", b, err)
		}
		if n != 0 {
			t.Fatalf("parse(% x): error %v with n = %d", b, err, n)
		}
		return
	}
	if n <= 0 || n > len(b) || (c.whole && n != len(b)) {
		t.Fatalf("parse(% x): n = %d out of range", b, n)
	}
	enc := c.app(nil, v)
	if !bytes.Equal(enc, b[:n]) {
		t.Fatalf("decode→encode not canonical:\n in  % x\n out % x\n v   %+v", b[:n], enc, v)
	}
	if c.size != nil && c.size(v) != n {
		t.Fatalf("size(%+v) = %d, consumed %d", v, c.size(v), n)
	}
	v2, n2, err := c.parse(b[:n:n])
	if err != nil || n2 != n || !c.equal(v, v2) {
		t.Fatalf("re-parse of exactly b[:n] differs: n=%d err=%v", n2, err)
	}
	if !c.whole {
		c.checkPrefixes(t, b[:n])
	}
}

// testRand returns a deterministic source for randomized tests.
func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x7469636b77697265)) }

// Edge-biased generators.

func randUint64(r *rand.Rand) uint64 {
	switch r.IntN(6) {
	case 0:
		return uint64(r.IntN(128))
	case 1:
		k := uint(r.IntN(10)) * 7
		return (uint64(1) << k) - uint64(r.IntN(2)) // group boundaries
	case 2:
		return ^uint64(0) - uint64(r.IntN(3))
	case 3:
		return uint64(r.Uint32())
	default:
		return r.Uint64() >> uint(r.IntN(64))
	}
}

func randUint16(r *rand.Rand) uint16 {
	switch r.IntN(4) {
	case 0:
		return uint16(r.IntN(128))
	case 1:
		return []uint16{127, 128, 255, 256, 16383, 16384, 32767, 32768, 65535}[r.IntN(9)]
	default:
		return uint16(r.Uint32())
	}
}

func randPayload(r *rand.Rand, max int) []byte {
	var n int
	switch r.IntN(5) {
	case 0:
		n = 0
	case 1:
		n = []int{1, 127, 128}[r.IntN(3)]
	default:
		n = r.IntN(64)
	}
	n = min(n, max)
	p := make([]byte, n) // never nil, so reflect.DeepEqual matches parsed payloads
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

func randToken(r *rand.Rand) (t Token) {
	for i := range t {
		t[i] = byte(r.Uint32())
	}
	return t
}

func randCookie(r *rand.Rand) Cookie {
	c := Cookie{Bucket: r.Uint32()}
	for i := range c.Tag {
		c.Tag[i] = byte(r.Uint32())
	}
	return c
}

// mustErr fails unless parse rejects b with want.
func mustErr[T any](t *testing.T, name string, parse func([]byte) (T, int, error), b []byte, want error) {
	t.Helper()
	_, n, err := parse(b)
	if !errors.Is(err, want) || n != 0 {
		t.Errorf("%s(% x): n=%d err=%v, want %v", name, b, n, err, want)
	}
}

func hexs(b []byte) string { return fmt.Sprintf("% x", b) }
