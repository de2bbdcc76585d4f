package udp

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg encodes one control message as the kernel lays it out: the header,
// data, and padding to CmsgSpace.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	l := uint64(unix.CmsgLen(len(data)))
	if cmsgLenSize == 8 {
		binary.NativeEndian.PutUint64(b, l)
	} else {
		binary.NativeEndian.PutUint32(b, uint32(l))
	}
	binary.NativeEndian.PutUint32(b[cmsgLevelOff:], uint32(level))
	binary.NativeEndian.PutUint32(b[cmsgTypeOff:], uint32(typ))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func groCmsg(seg int32) []byte {
	return cmsg(unix.IPPROTO_UDP, unix.UDP_GRO, binary.NativeEndian.AppendUint32(nil, uint32(seg)))
}

// stampNewCmsg is SO_TIMESTAMPNS_NEW's SCM: a __kernel_timespec.
func stampNewCmsg(sec, nsec int64) []byte {
	d := binary.NativeEndian.AppendUint64(nil, uint64(sec))
	return cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, binary.NativeEndian.AppendUint64(d, uint64(nsec)))
}

// stampOldCmsg is SO_TIMESTAMPNS_OLD's SCM: the native struct timespec.
func stampOldCmsg(sec, nsec int64) []byte {
	var d []byte
	if timespecWord == 8 {
		d = binary.NativeEndian.AppendUint64(d, uint64(sec))
		d = binary.NativeEndian.AppendUint64(d, uint64(nsec))
	} else {
		d = binary.NativeEndian.AppendUint32(d, uint32(sec))
		d = binary.NativeEndian.AppendUint32(d, uint32(nsec))
	}
	return cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_OLD, d)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

const (
	tSec  = 1_700_000_000
	tNsec = 123_456_789
	tNano = tSec*1e9 + tNsec
)

// TestParseControl parses GRO segment sizes and timestamps, alone, together,
// after an unrelated message, and in malformed buffers.
func TestParseControl(t *testing.T) {
	tos := cmsg(unix.SOL_IP, unix.IP_TOS, []byte{7, 0, 0, 0})
	for _, tc := range []struct {
		name  string
		ctrl  []byte
		seg   int
		stamp int64
		ok    bool
	}{
		{"empty", nil, 0, 0, false},
		{"GRO", groCmsg(1200), 1200, 0, false},
		{"GRO after IP_TOS", cat(tos, groCmsg(500)), 500, 0, false},
		{"IP_TOS only", tos, 0, 0, false},
		{"stamp new", stampNewCmsg(tSec, tNsec), 0, tNano, true},
		{"stamp old", stampOldCmsg(tSec, tNsec), 0, tNano, true},
		{"GRO then stamp", cat(groCmsg(1200), stampNewCmsg(tSec, tNsec)), 1200, tNano, true},
		{"stamp then GRO", cat(stampOldCmsg(tSec, tNsec), groCmsg(64)), 64, tNano, true},
		{"all three", cat(tos, stampNewCmsg(tSec, tNsec), groCmsg(9)), 9, tNano, true},
		{"zero stamp", stampNewCmsg(0, 0), 0, 0, false},
		{"negative stamp", stampNewCmsg(-5, 0), 0, 0, false},
		{"nsec out of range", stampNewCmsg(tSec, 1e9), 0, 0, false},
		{"short stamp", cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, make([]byte, 8)), 0, 0, false},
		{"short GRO", cmsg(unix.IPPROTO_UDP, unix.UDP_GRO, []byte{1, 2}), 0, 0, false},
		{"short buffer", groCmsg(1200)[:10], 0, 0, false},
	} {
		seg, stamp, ok := parseControl(tc.ctrl)
		if seg != tc.seg || stamp != tc.stamp || ok != tc.ok {
			t.Errorf("%s: parseControl = %d, %d, %v; want %d, %d, %v", tc.name, seg, stamp, ok, tc.seg, tc.stamp, tc.ok)
		}
	}

	// A header whose length runs past the buffer, or is shorter than a
	// header, ends the walk: what came before it still counts.
	for _, l := range []uint64{1000, 3, 1 << 63} {
		bad := groCmsg(77)
		if cmsgLenSize == 8 {
			binary.NativeEndian.PutUint64(bad, l)
		} else {
			binary.NativeEndian.PutUint32(bad, uint32(l))
		}
		if seg, _, ok := parseControl(bad); seg != 0 || ok {
			t.Errorf("length %d: seg %d ok %v, want 0, false", l, seg, ok)
		}
		if seg, stamp, ok := parseControl(cat(stampNewCmsg(tSec, tNsec), bad)); seg != 0 || stamp != tNano || !ok {
			t.Errorf("stamp then length %d: %d, %d, %v; want the stamp alone", l, seg, stamp, ok)
		}
	}

	// Every prefix of a valid buffer parses without panicking, and finds
	// a message only once all of it is there.
	full := cat(groCmsg(1200), stampNewCmsg(tSec, tNsec))
	gro := unix.CmsgLen(4)
	for n := range len(full) + 1 {
		seg, stamp, ok := parseControl(full[:n:n])
		if (seg != 0) != (n >= gro) {
			t.Errorf("prefix %d: seg %d", n, seg)
		}
		if ok != (n >= unix.CmsgSpace(4)+unix.CmsgLen(16)) || (ok && stamp != tNano) {
			t.Errorf("prefix %d: stamp %d, %v", n, stamp, ok)
		}
	}

	// The control buffer of one receive holds both messages.
	if n := len(full); n > sizeofRecvCmsg {
		t.Errorf("GRO + timestamp need %d bytes, sizeofRecvCmsg is %d", n, sizeofRecvCmsg)
	}
	if allocs := testing.AllocsPerRun(100, func() { parseControl(full) }); allocs != 0 {
		t.Errorf("parseControl allocates %v times", allocs)
	}
}

// TestStampAge clamps ages to [0, maxAge] and dates no stamp at 0.
func TestStampAge(t *testing.T) {
	now := int64(tNano)
	for _, tc := range []struct {
		stamp int64
		want  time.Duration
	}{
		{now - 30e6, 30 * time.Millisecond},
		{now, 0},
		{now + 1e6, 0},                // stamped after the read: a clock step
		{now - int64(maxAge), maxAge}, // as old as plausible
		{now - int64(maxAge) - 1, 0},  // older: a clock step
		{0, 0},                        // no stamp
	} {
		if got := stampAge(now, tc.stamp); got != tc.want {
			t.Errorf("stampAge(%d, %d) = %v, want %v", now, tc.stamp, got, tc.want)
		}
	}
}

// parseControlRef is the oracle: the x/sys/unix parser, which allocates and
// fails on any malformed message.
func parseControlRef(b []byte) (seg int, stamp int64, ok, valid bool) {
	msgs, err := unix.ParseSocketControlMessage(b)
	if err != nil {
		return 0, 0, false, false
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.IPPROTO_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 4:
			seg = int(int32(binary.NativeEndian.Uint32(m.Data)))
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS_NEW && len(m.Data) >= 16:
			stamp, ok = timespecNano(int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:])))
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS_OLD && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})):
			ts := *(*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			stamp, ok = timespecNano(int64(ts.Sec), int64(ts.Nsec))
		}
	}
	return seg, stamp, ok, true
}

// FuzzParseControl feeds parseControl arbitrary bytes: it must not panic,
// must parse an unaligned copy the same, and on every buffer the
// x/sys/unix parser accepts it must find what that parser finds.
func FuzzParseControl(f *testing.F) {
	f.Add([]byte{})
	f.Add(groCmsg(1200))
	f.Add(stampNewCmsg(tSec, tNsec))
	f.Add(stampOldCmsg(tSec, tNsec))
	f.Add(cat(groCmsg(1200), stampNewCmsg(tSec, tNsec)))
	f.Add(cat(cmsg(unix.SOL_IP, unix.IP_TOS, []byte{7, 0, 0, 0}), stampOldCmsg(tSec, tNsec), groCmsg(9)))
	f.Fuzz(func(t *testing.T, b []byte) {
		// An 8-aligned copy, as the kernel's buffers are (the oracle
		// casts pointers into it); parseControl itself needs no alignment,
		// so it also gets the bytes at an odd offset.
		buf := make([]byte, len(b)+1)
		odd := buf[1 : len(b)+1 : len(b)+1]
		copy(odd, b)
		aligned := make([]byte, len(b))
		copy(aligned, b)

		seg, stamp, ok := parseControl(aligned)
		if s2, st2, ok2 := parseControl(odd); s2 != seg || st2 != stamp || ok2 != ok {
			t.Fatalf("unaligned copy parsed differently: %d %d %v vs %d %d %v", s2, st2, ok2, seg, stamp, ok)
		}
		if !ok && stamp != 0 {
			t.Fatalf("stamp %d without ok", stamp)
		}
		if rseg, rstamp, rok, valid := parseControlRef(aligned); valid && (rseg != seg || rstamp != stamp || rok != ok) {
			t.Fatalf("parseControl = %d, %d, %v; x/sys/unix finds %d, %d, %v", seg, stamp, ok, rseg, rstamp, rok)
		}
	})
}

// BenchmarkParseControl is the reader's cost of a timestamp per receive
// header: parsing a GRO + timestamp control buffer and dating it.
func BenchmarkParseControl(b *testing.B) {
	ctrl := cat(groCmsg(1200), stampNewCmsg(tSec, tNsec))
	now := int64(tNano + 5e6)
	b.ReportAllocs()
	for b.Loop() {
		seg, stamp, ok := parseControl(ctrl)
		if seg != 1200 || !ok || stampAge(now, stamp) != 5*time.Millisecond {
			b.Fatal("parse")
		}
	}
}

// BenchmarkTimeNow is the clock read each read call adds.
func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	var sink int64
	for b.Loop() {
		sink += time.Now().UnixNano()
	}
	if sink == 0 {
		b.Fatal("clock")
	}
}
