package wire

// MaxFragments is the most fragments one message may be split into.
const MaxFragments = 255

// FragmentFrame carries one piece of a message too large for one datagram.
//
// The message that is split is a complete frame encoding (type byte
// included) of type Mode — an Unreliable, Sequenced, Reliable or
// ActionStream frame — so once the receiver has all Count pieces of
// MessageID, concatenated in Index order, it parses the result with the
// ordinary frame parser and checks that it is exactly one frame of type
// Mode (SkipFrame does both). Carrying Mode in every piece lets the
// receiver apply the right policy to a partial assembly before it is
// complete (e.g. drop an unreliable one when a newer message starts, keep a
// reliable one).
//
// MessageID is a per-channel sequence of fragmented messages, compared with
// Seq arithmetic; Index is 0..Count−1 and Count is 1..MaxFragments.
// Delivery is all-or-nothing: a message with a piece missing is never
// delivered in part.
//
// Payload aliases the decoded input (see the package doc).
type FragmentFrame struct {
	Mode      FrameType
	MessageID Seq
	Index     uint8
	Count     uint8
	Payload   []byte
}

// AppendFragmentFrame appends f — FrameFragment, mode, message id (u16 LE),
// index, count, payload length varint, payload — to dst and returns the
// extended slice. It copies the payload and allocates only if dst lacks
// capacity. Fields outside their ranges (Count 0, Index ≥ Count, a Mode
// that cannot be fragmented) are written as given and rejected by
// ParseFragmentFrame; the fragmenter never produces them.
func AppendFragmentFrame(dst []byte, f FragmentFrame) []byte {
	dst = append(dst, byte(FrameFragment), byte(f.Mode), byte(f.MessageID), byte(f.MessageID>>8), f.Index, f.Count)
	return appendPayload(dst, f.Payload)
}

// FragmentFrameLen returns the exact encoded size of f.
func FragmentFrameLen(f FragmentFrame) int { return payloadFrameLen(fragmentFixed, len(f.Payload)) }

// ParseFragmentFrame decodes a fragment frame from the front of b and
// returns it with the bytes consumed. The payload aliases b. A Count of 0,
// an Index not below Count, or a Mode that is not a payload-carrying,
// non-fragment frame type returns ErrMalformed; length errors are those of
// ParseUnreliableFrame. It never allocates.
func ParseFragmentFrame(b []byte) (FragmentFrame, int, error) {
	if len(b) == 0 {
		return FragmentFrame{}, 0, ErrShort
	}
	if FrameType(b[0]) != FrameFragment {
		return FragmentFrame{}, 0, ErrMalformed
	}
	if len(b) > 1 {
		if m := FrameType(b[1]); !m.Fragmentable() {
			return FragmentFrame{}, 0, ErrMalformed
		}
	}
	if len(b) < fragmentFixed {
		return FragmentFrame{}, 0, ErrShort
	}
	index, count := b[4], b[5]
	if count == 0 || index >= count {
		return FragmentFrame{}, 0, ErrMalformed
	}
	p, n, err := parsePayload(b, fragmentFixed, MaxMessageLen)
	if err != nil {
		return FragmentFrame{}, 0, err
	}
	return FragmentFrame{
		Mode:      FrameType(b[1]),
		MessageID: Seq(b[2]) | Seq(b[3])<<8,
		Index:     index,
		Count:     count,
		Payload:   p,
	}, n, nil
}
