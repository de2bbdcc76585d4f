package udp

import (
	"encoding/binary"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxAge bounds a plausible receive timestamp's age. Kernel stamps are
// CLOCK_REALTIME: a wall-clock step between the stamp and the read makes
// the difference meaningless, and an age longer than this (or negative)
// is reported as 0, not as a wait.
const maxAge = time.Minute

var (
	// sizeofStampCmsg is the room for SCM_TIMESTAMPNS: a timespec of two
	// 64-bit fields with SO_TIMESTAMPNS_NEW (the larger of the two forms).
	sizeofStampCmsg = unix.CmsgSpace(16)
	// sizeofRecvCmsg is the control buffer of one receive: UDP_GRO's
	// segment size and the timestamp.
	sizeofRecvCmsg = sizeofGROCmsg + sizeofStampCmsg
)

// The layout of a struct cmsghdr, read field by field so that the parser
// needs no alignment of the bytes it walks.
const (
	cmsgLenSize  = int(unsafe.Sizeof(unix.Cmsghdr{}.Len)) // size_t: 4 or 8
	cmsgLevelOff = int(unsafe.Offsetof(unix.Cmsghdr{}.Level))
	cmsgTypeOff  = int(unsafe.Offsetof(unix.Cmsghdr{}.Type))
	timespecWord = int(unsafe.Sizeof(unix.Timespec{}.Sec)) // long: 4 or 8
)

// enableTimestamps asks the kernel to stamp each datagram received on fd
// with its CLOCK_REALTIME arrival time in nanoseconds (SO_TIMESTAMPNS),
// preferring the y2038-safe SO_TIMESTAMPNS_NEW (Linux 5.1+) and falling
// back to SO_TIMESTAMPNS_OLD. It reports whether either was accepted.
func enableTimestamps(fd int) bool {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, 1) == nil {
		return true
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_OLD, 1) == nil
}

// setTimestamps is enableTimestamps through rc, unless disable.
func setTimestamps(rc syscall.RawConn, disable bool) bool {
	if disable {
		return false
	}
	on := false
	if err := rc.Control(func(fd uintptr) { on = enableTimestamps(int(fd)) }); err != nil {
		return false
	}
	return on
}

// parseControl walks the control messages of one receive and returns the
// UDP_GRO segment size (0 if absent) and the SCM_TIMESTAMPNS stamp in
// nanoseconds since the Unix epoch (ok false if absent). ctrl is the part
// of the control buffer the kernel filled (msg_controllen). Bytes that do
// not form a well-sized control message end the walk: it never reads
// outside ctrl, needs no alignment, and never panics.
func parseControl(ctrl []byte) (seg int, stamp int64, ok bool) {
	ne := binary.NativeEndian
	hdr := unix.CmsgLen(0) // the header, aligned: where the data starts
	for len(ctrl) >= hdr {
		var l int
		if cmsgLenSize == 8 {
			v := ne.Uint64(ctrl)
			if v > uint64(len(ctrl)) {
				break
			}
			l = int(v)
		} else {
			l = int(ne.Uint32(ctrl))
		}
		if l < hdr || l > len(ctrl) {
			break
		}
		level := int32(ne.Uint32(ctrl[cmsgLevelOff:]))
		typ := int32(ne.Uint32(ctrl[cmsgTypeOff:]))
		data := ctrl[hdr:l]
		switch {
		case level == unix.IPPROTO_UDP && typ == unix.UDP_GRO && len(data) >= 4:
			seg = int(int32(ne.Uint32(data)))
		case level == unix.SOL_SOCKET && typ == unix.SO_TIMESTAMPNS_NEW && len(data) >= 16:
			stamp, ok = timespecNano(int64(ne.Uint64(data)), int64(ne.Uint64(data[8:])))
		case level == unix.SOL_SOCKET && typ == unix.SO_TIMESTAMPNS_OLD && len(data) >= 2*timespecWord:
			if timespecWord == 8 {
				stamp, ok = timespecNano(int64(ne.Uint64(data)), int64(ne.Uint64(data[8:])))
			} else {
				stamp, ok = timespecNano(int64(int32(ne.Uint32(data))), int64(int32(ne.Uint32(data[4:]))))
			}
		}
		next := unix.CmsgSpace(l - hdr)
		if next <= 0 || next >= len(ctrl) {
			break
		}
		ctrl = ctrl[next:]
	}
	return seg, stamp, ok
}

// timespecNano converts a kernel timespec to nanoseconds since the epoch,
// refusing one that is not a valid time in int64 nanoseconds (a zero
// stamp means the kernel had none).
func timespecNano(sec, nsec int64) (int64, bool) {
	if sec <= 0 || sec >= 1<<33 || nsec < 0 || nsec >= 1e9 {
		return 0, false
	}
	return sec*1e9 + nsec, true
}

// stampAge is how long a datagram stamped at stamp (nanoseconds since the
// epoch, from parseControl; 0 for none) had waited at now
// (time.Now().UnixNano()): 0 for no stamp, a stamp after now, or one
// older than maxAge.
func stampAge(now, stamp int64) time.Duration {
	if stamp == 0 {
		return 0
	}
	d := time.Duration(now - stamp)
	if d < 0 || d > maxAge {
		return 0
	}
	return d
}
