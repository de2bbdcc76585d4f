package soak

import (
	"encoding/binary"
	"fmt"
)

// SizeClass is one band of message sizes the soak sends. The bands are
// derived from the channel's config, so they sit on the thresholds that
// change how a reliable message travels: RedundancyBytes (the largest
// message that rides again in the next datagrams until acked), the
// largest payload that fits one datagram (Channel.MaxSinglePayload), and
// several fragment pieces.
type SizeClass struct {
	// Name is a short label for reports.
	Name string `json:"name"`
	// Min and Max bound the payload, in bytes, inclusive.
	Min int `json:"min"`
	Max int `json:"max"`
	// Weight is the class's relative share of the messages.
	Weight int `json:"weight"`
	// About says which threshold the class exercises.
	About string `json:"about"`
}

// Large-message bounds: 8 to 16 KiB is 7 to 14 pieces at the default MTU.
const (
	largeMin = 8 << 10
	largeMax = 16 << 10
	// multiMax ends the "a few pieces" class.
	multiMax = 4000
	// edgeSpan is how far the "one datagram" class reaches either side of
	// the largest single-datagram payload.
	edgeSpan = 48
)

// sizeClasses returns the size bands for a channel whose redundant copies
// carry messages of at most redundancy bytes (16 or less: none) and whose
// largest single-datagram reliable payload is single bytes. Every message
// size from 1 B to largeMax falls in at most one band; a band the
// thresholds leave empty is left out.
func sizeClasses(redundancy, single int) []SizeClass {
	r := min(max(redundancy, 16), single-edgeSpan-1)
	all := []SizeClass{
		{"tiny", 1, 16, 20, "1–16 B, one frame among many in a datagram"},
		{"redundant", 17, r, 24, "up to RedundancyBytes: rides again until acked"},
		{"medium", r + 1, single - edgeSpan - 1, 20, "above RedundancyBytes, one datagram: recovered only by re-send"},
		{"datagram", single - edgeSpan, single + edgeSpan, 14, fmt.Sprintf("MaxSinglePayload %d ± %d: one datagram or two pieces", single, edgeSpan)},
		{"pieces", single + edgeSpan + 1, multiMax, 14, "2–4 fragment pieces"},
		{"large", largeMin, largeMax, 8, "8–16 KiB: 7–14 fragment pieces at the default MTU"},
	}
	out := all[:0]
	for _, c := range all {
		if c.Min <= c.Max && c.Min >= 1 {
			out = append(out, c)
		}
	}
	return out
}

// mix64 is SplitMix64's finaliser: a bijective hash of x.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// flowKey names one stream of one direction of one phase of one run: the
// sizes and bytes of its messages are a function of it and the message's
// sequence number, so the receiver recomputes what the sender sent.
func flowKey(seed uint64, phase, dir, stream int) uint64 {
	return mix64(seed ^ mix64(uint64(phase)<<16|uint64(dir)<<8|uint64(stream)|0x50A4<<32))
}

// sizer picks each message's size class and size from its flow key and
// sequence number.
type sizer struct {
	classes []SizeClass
	total   int
}

func newSizer(classes []SizeClass) sizer {
	s := sizer{classes: classes}
	for _, c := range classes {
		s.total += c.Weight
	}
	return s
}

// size returns message seq's class index and payload length.
func (s sizer) size(key, seq uint64) (class, n int) {
	h := mix64(key + seq*0x9e3779b97f4a7c15)
	w := int(h % uint64(s.total))
	for i, c := range s.classes {
		if w < c.Weight {
			return i, c.Min + int((h>>24)%uint64(c.Max-c.Min+1))
		}
		w -= c.Weight
	}
	panic("soak: size class weights do not sum to their total") // unreachable: w < total
}

// fill appends message seq's n payload bytes: the sequence number, little
// endian (its first n bytes if n < 8), then a filler derived from the key
// and the number, so a truncated, corrupted or misnumbered payload shows.
func fill(dst []byte, key, seq uint64, n int) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq)
	dst = append(dst, b[:min(n, 8)]...)
	for i := 8; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[:], mix64(key^seq<<20^uint64(i)))
		dst = append(dst, b[:min(n-i, 8)]...)
	}
	return dst
}

// intact reports whether p is exactly message seq's payload of n bytes.
func intact(p []byte, key, seq uint64, n int) bool {
	if len(p) != n {
		return false
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq)
	if string(p[:min(n, 8)]) != string(b[:min(n, 8)]) {
		return false
	}
	for i := 8; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[:], mix64(key^seq<<20^uint64(i)))
		if string(p[i:min(n, i+8)]) != string(b[:min(n-i, 8)]) {
			return false
		}
	}
	return true
}
