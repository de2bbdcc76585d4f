package wire

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"time"
)

// Sizes of an encoded ChannelHeader.
const (
	// ChannelHeaderMinLen is the smallest header: prefix and seq of a
	// NoAck header, sent before anything has been received from the peer.
	ChannelHeaderMinLen = 3
	// ChannelHeaderSteadyLen is the size in a lossless steady stream:
	// prefix, seq, one-byte ack distance, all four ack-bits bytes omitted.
	ChannelHeaderSteadyLen = 4
	// ChannelHeaderMaxLen is the worst case: prefix, seq, full ack, and all
	// four ack-bits bytes present (or three of them and an ack delay): a
	// header never exceeds it, so an AckDelay that would make it 10 bytes
	// is dropped (see ChannelHeader).
	ChannelHeaderMaxLen = 9
)

// AckDelayUnit is the unit of ChannelHeader.AckDelay: 100 µs, so the
// one-byte field spans 0.1 ms to 25.5 ms (MaxAckDelay).
const AckDelayUnit = 100 * time.Microsecond

// MaxAckDelay is the largest ack delay the header can state (255 units).
const MaxAckDelay = 255 * AckDelayUnit

// AckDelayUnits converts a duration to the header's AckDelay field:
// rounded down to whole AckDelayUnits, clamped to [0, 255].
func AckDelayUnits(d time.Duration) uint8 {
	if d <= 0 {
		return 0
	}
	return uint8(min(d/AckDelayUnit, 255))
}

// Bits of the channel header's prefix byte.
const (
	chanBitsPresent = 0x0F // bit i set: ack-bits byte i follows
	chanShortAck    = 0x10 // ack sent as one byte: seq − ack
	chanNoAck       = 0x20 // no ack field and no ack bits follow
	chanAckDelay    = 0x40 // an ack-delay byte follows the ack bits
	chanReserved    = 0x80 // must be zero
)

// ChannelHeader is the per-datagram reliability header every session
// datagram carries after its SessionHeader: the sender's own sequence
// number and an acknowledgement of the newest 33 seqs it received from the
// peer.
//
// Seq is this datagram's sequence number in the sender's space. Ack is the
// newest seq the sender has received from the peer (in the peer's space),
// and bit i of AckBits (i = 0..31) reports that seq Ack−1−i was received
// too. So one header acknowledges a 33-seq window.
//
// NoAck says the sender has not received anything from the peer yet, so
// there is nothing to acknowledge: the header is then just prefix and seq,
// the encoder ignores Ack and AckBits, and the decoder returns them as 0.
// The receiver must not treat Ack as received when NoAck is set.
//
// AckDelay is how long the datagram named by Ack waited at the sender of
// this header before this ack left, in AckDelayUnits (100 µs), clamped to
// 255: the peer subtracts it from its RTT sample, as QUIC does with
// ack_delay, so a receiver that delays its acks does not inflate the
// RTT. 0 (the ack left at once) costs no byte; any other value costs one,
// if the header has it to spare: a header with a full ack and all four
// ack-bits bytes present is already ChannelHeaderMaxLen (9) bytes, and
// there AckDelay is not sent (the encoder writes 0 for it; the decoder
// returns 0: a receiver tells that 0 from a stated one only by the
// header's length, ParseChannelHeader's n == ChannelHeaderMaxLen). It is
// ignored (and decoded as 0) with NoAck.
//
// It is a small comparable value; the zero value is a valid header (seq 0
// acknowledging seq 0 and nothing before it).
type ChannelHeader struct {
	Seq      Seq
	Ack      Seq
	AckBits  uint32
	AckDelay uint8
	NoAck    bool
}

// ChannelHeaderLen returns the exact number of bytes AppendChannelHeader
// writes for h: 3 for a NoAck header; otherwise 4, plus one if the ack is
// too far from seq for a one-byte distance, plus one per ack-bits byte that
// is not 0xFF, plus one for a non-zero AckDelay. It allocates nothing.
func ChannelHeaderLen(h ChannelHeader) int {
	if h.NoAck {
		return ChannelHeaderMinLen
	}
	n := ChannelHeaderSteadyLen + bits.OnesCount8(presentMask(h.AckBits))
	if uint16(h.Seq-h.Ack) > 0xFF {
		n++
	}
	if h.AckDelay != 0 && n < ChannelHeaderMaxLen {
		n++
	}
	return n
}

// presentMask returns bit i set for each byte i of ackBits that is not
// 0xFF. Branch-free: fold each inverted byte onto its low bit, then gather
// the four low bits (at 0, 8, 16, 24) into bits 24–27 with one multiply —
// the partial products land on distinct bits, so nothing carries.
func presentMask(ackBits uint32) uint8 {
	x := ^ackBits
	x |= x >> 4
	x |= x >> 2
	x |= x >> 1
	x &= 0x01010101
	return uint8((x * 0x01020408) >> 24)
}

// AppendChannelHeader appends the compressed encoding of h to dst and
// returns the extended slice: 4 bytes in a lossless steady stream, 9 at
// most, 3 for a NoAck header (see docs/WIRE.md for the layout). The compression is not optional:
// an ack within 255 of seq is always sent as a distance and an ack-bits
// byte of 0xFF is always omitted, and an AckDelay of 0 is always omitted, so
// each header has exactly one encoding.
// It allocates only if dst lacks capacity.
func AppendChannelHeader(dst []byte, h ChannelHeader) []byte {
	// A lossless header — all 32 ack bits set, no ack-bits byte — is
	// written at once; appendChannelHeader writes every other one.
	if !h.NoAck && h.AckBits == ^uint32(0) {
		d := uint16(h.Seq - h.Ack)
		switch {
		case d <= 0xFF && h.AckDelay == 0:
			return append(dst, chanShortAck, byte(h.Seq), byte(h.Seq>>8), byte(d))
		case d <= 0xFF:
			return append(dst, chanShortAck|chanAckDelay, byte(h.Seq), byte(h.Seq>>8), byte(d), h.AckDelay)
		case h.AckDelay == 0:
			return append(dst, 0, byte(h.Seq), byte(h.Seq>>8), byte(h.Ack), byte(h.Ack>>8))
		default:
			return append(dst, chanAckDelay, byte(h.Seq), byte(h.Seq>>8), byte(h.Ack), byte(h.Ack>>8), h.AckDelay)
		}
	}
	return appendChannelHeader(dst, h)
}

// appendChannelHeader is AppendChannelHeader for any header.
func appendChannelHeader(dst []byte, h ChannelHeader) []byte {
	if h.NoAck {
		return append(dst, chanNoAck, byte(h.Seq), byte(h.Seq>>8))
	}
	m := presentMask(h.AckBits)
	d := uint16(h.Seq - h.Ack)
	n := ChannelHeaderSteadyLen + bits.OnesCount8(m)
	if d > 0xFF {
		n++
	} else {
		m |= chanShortAck
	}
	if h.AckDelay != 0 && n < ChannelHeaderMaxLen {
		m |= chanAckDelay
		n++
	}
	l := len(dst)
	if cap(dst)-l < n {
		dst = slices.Grow(dst, n)
	}
	dst = dst[:l+n]
	b := dst[l:]
	_ = b[3]
	b[0] = m
	b[1] = byte(h.Seq)
	b[2] = byte(h.Seq >> 8)
	off := 4
	if m&chanShortAck != 0 {
		b[3] = byte(d)
	} else {
		b[3] = byte(h.Ack)
		b[4] = byte(h.Ack >> 8)
		off = 5
	}
	switch m & chanBitsPresent {
	case 0: // lossless: nothing to write
	case chanBitsPresent:
		binary.LittleEndian.PutUint32(b[off:], h.AckBits)
	default:
		if m&1 != 0 {
			b[off] = byte(h.AckBits)
			off++
		}
		if m&2 != 0 {
			b[off] = byte(h.AckBits >> 8)
			off++
		}
		if m&4 != 0 {
			b[off] = byte(h.AckBits >> 16)
			off++
		}
		if m&8 != 0 {
			b[off] = byte(h.AckBits >> 24)
		}
	}
	if m&chanAckDelay != 0 {
		b[n-1] = h.AckDelay
	}
	return dst
}

// ParseChannelHeader decodes a channel header from the front of b and
// returns it with the number of bytes read (3 to 9). Reserved prefix bits
// set, a NoAck prefix with any other bit set, an ack-bits byte of 0xFF
// that was sent instead of omitted, an ack-delay byte of 0 (which must be
// omitted) or one that makes the header 10 bytes, or a full ack whose distance from seq would have fit in one
// byte return ErrMalformed; input shorter than the prefix
// says returns ErrShort. It never allocates.
func ParseChannelHeader(b []byte) (ChannelHeader, int, error) {
	// A lossless header (AppendChannelHeader's first cases) is read at
	// once, with the checks that apply to it; parseChannelHeader reads,
	// and checks, every other one, and every error.
	if len(b) >= 4 {
		seq := Seq(b[1]) | Seq(b[2])<<8
		switch b[0] {
		case chanShortAck:
			return ChannelHeader{Seq: seq, Ack: seq - Seq(b[3]), AckBits: ^uint32(0)}, 4, nil
		case chanShortAck | chanAckDelay:
			if len(b) >= 5 && b[4] != 0 {
				return ChannelHeader{Seq: seq, Ack: seq - Seq(b[3]), AckBits: ^uint32(0), AckDelay: b[4]}, 5, nil
			}
		case 0, chanAckDelay:
			n := 5 + int(b[0]>>6&1) // a full ack, and the ack delay if flagged
			if len(b) < n {
				break
			}
			h := ChannelHeader{Seq: seq, Ack: Seq(b[3]) | Seq(b[4])<<8, AckBits: ^uint32(0)}
			if uint16(seq-h.Ack) <= 0xFF {
				break // it should have been a distance
			}
			if n == 6 {
				if h.AckDelay = b[5]; h.AckDelay == 0 {
					break
				}
			}
			return h, n, nil
		}
	}
	return parseChannelHeader(b)
}

// parseChannelHeader is ParseChannelHeader for any input.
func parseChannelHeader(b []byte) (ChannelHeader, int, error) {
	if len(b) == 0 {
		return ChannelHeader{}, 0, ErrShort
	}
	p := b[0]
	if p&chanReserved != 0 {
		return ChannelHeader{}, 0, ErrMalformed
	}
	if p&chanNoAck != 0 {
		if p != chanNoAck {
			return ChannelHeader{}, 0, ErrMalformed
		}
		if len(b) < ChannelHeaderMinLen {
			return ChannelHeader{}, 0, ErrShort
		}
		return ChannelHeader{Seq: Seq(b[1]) | Seq(b[2])<<8, NoAck: true}, ChannelHeaderMinLen, nil
	}
	n := ChannelHeaderSteadyLen + bits.OnesCount8(p&chanBitsPresent) + int(^p>>4&1) + int(p>>6&1)
	if n > ChannelHeaderMaxLen {
		return ChannelHeader{}, 0, ErrMalformed
	}
	if len(b) < n {
		return ChannelHeader{}, 0, ErrShort
	}
	var h ChannelHeader
	h.Seq = Seq(b[1]) | Seq(b[2])<<8
	off := 4
	if p&chanShortAck != 0 {
		h.Ack = h.Seq - Seq(b[3])
	} else {
		h.Ack = Seq(b[3]) | Seq(b[4])<<8
		if uint16(h.Seq-h.Ack) <= 0xFF {
			return ChannelHeader{}, 0, ErrMalformed
		}
		off = 5
	}
	ackBits := ^uint32(0)
	if pm := p & chanBitsPresent; pm != 0 {
		if pm == chanBitsPresent {
			ackBits = binary.LittleEndian.Uint32(b[off:n])
		} else {
			if pm&1 != 0 {
				ackBits = ackBits&^0x000000FF | uint32(b[off])
				off++
			}
			if pm&2 != 0 {
				ackBits = ackBits&^0x0000FF00 | uint32(b[off])<<8
				off++
			}
			if pm&4 != 0 {
				ackBits = ackBits&^0x00FF0000 | uint32(b[off])<<16
				off++
			}
			if pm&8 != 0 {
				ackBits = ackBits&^0xFF000000 | uint32(b[off])<<24
			}
		}
		// A byte that was sent must differ from 0xFF, or it would have
		// been omitted: the bytes that are not 0xFF are exactly the
		// present ones.
		if presentMask(ackBits) != pm {
			return ChannelHeader{}, 0, ErrMalformed
		}
	}
	h.AckBits = ackBits
	if p&chanAckDelay != 0 {
		if h.AckDelay = b[n-1]; h.AckDelay == 0 {
			return ChannelHeader{}, 0, ErrMalformed
		}
	}
	return h, n, nil
}
