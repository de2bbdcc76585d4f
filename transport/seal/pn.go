package seal

// Packet numbers.
const (
	// PacketNumberBits is how many low bits of the 64-bit packet number a
	// sealed datagram carries. The receiver reconstructs the rest from the
	// highest packet number it has authenticated (reconstruct), which is
	// right whenever the true number is within 2^15 of the next expected
	// one: any datagram the replay window accepts (WindowSize, 8128,
	// behind the highest) is well inside that, so 16 bits lose nothing to
	// reordering. What they cannot survive is a run of more than 2^15 − 1
	// lost datagrams in a row in one direction, after which every
	// datagram fails to authenticate; the session then ends at its idle
	// time-out. The channel's u16 sequence numbers (WIRE.md §1) already
	// assume no such gap is in play.
	PacketNumberBits = 16

	// MaxPacketNumber is the highest packet number a sender uses (2^62 −
	// 1, as in QUIC); Seal fails with ErrExhausted beyond it.
	MaxPacketNumber = 1<<62 - 1
)

// reconstruct returns the full packet number closest to expected (the
// highest authenticated number plus one, or 0 before any) whose low
// PacketNumberBits bits are truncated: the algorithm of RFC 9000 §A.3.
func reconstruct(expected, truncated uint64) uint64 {
	const (
		win  = 1 << PacketNumberBits
		hwin = win / 2
		mask = win - 1
	)
	candidate := expected&^mask | truncated&mask
	if candidate+hwin <= expected && candidate < (1<<62)-win {
		return candidate + win
	}
	if candidate > expected+hwin && candidate >= win {
		return candidate - win
	}
	return candidate
}
