package link

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/wire"
)

const codecPeer = 3

// codecSamples returns one valid message of every kind, encoded by the
// codec's append functions, with whether the kind's last field runs to
// the end of the message (a body: a longer message is still valid).
func codecSamples() []struct {
	name string
	msg  []byte
	tail bool
} {
	rec := wire.ActionRecord{Sender: codecPeer, Type: 300, Entity: 1 << 40, Payload: []byte{1, 2, 3}}
	ins := []rollback.Input{
		{Frame: 7, Sender: codecPeer, Type: 1, Entity: 9, Payload: []byte{5, 0, 0, 0}},
		{Frame: 7, Sender: codecPeer, Type: 2, Entity: 10, Payload: nil},
	}
	return []struct {
		name string
		msg  []byte
		tail bool
	}{
		{"inputs", appendInputs(nil, 7, codecPeer, ins), false},
		{"checksum", checksumMsg{frame: 0xDEADBEEF, sum: 0x0123456789ABCDEF, own: 300}.append(nil), false},
		{"snapshot", []byte{msgSnapshot, 0x28, 0xB5, 0x2F, 0xFD}, true},
		{"resync", resyncMsg{refusedBaseline}.append(nil), false},
		{"clock", clockMsg{frame: 123456, period: uint32(DefaultTickPeriod), lead: 6, dilation: -321}.append(nil), false},
		{"part", partMsg{frame: 99, index: 1, count: 3, data: []byte("chunk")}.append(nil), true},
		{"announce", announceMsg{frame: 40, size: 5000, newest: 52, rewind: 12}.append(nil), false},
		{"start", announceMsg{frame: 0, size: 0, newest: 3, rewind: 8}.append(nil), false},
		{"refused", refusedMsg{frame: 8, reason: rollback.DropTooOld, rec: rec}.append(nil), false},
	}
}

// parseAny parses b as the kind its first byte names, with the codec's
// parser for it; ok is false for a kind the codec does not know.
func parseAny(b []byte) (v any, f fault, ok bool) {
	switch kindOf(b) {
	case msgInputs:
		v, f = parseInputs(b, codecPeer)
	case msgChecksum:
		v, f = parseChecksum(b)
	case msgSnapshot:
		v, f = parseSnapshot(b)
	case msgResync:
		v, f = parseResync(b)
	case msgClock:
		v, f = parseClock(b)
	case msgSnapshotPart:
		v, f = parsePart(b)
	case msgAnnounce:
		v, f = parseAnnounce(b)
	case msgRefused:
		v, f = parseRefused(b, codecPeer)
	default:
		return nil, fault{}, false
	}
	return v, f, true
}

// reencode appends the message v (as parseAny returned it) again.
func reencode(v any) []byte {
	switch m := v.(type) {
	case inputsMsg:
		out := wire.AppendUint32([]byte{msgInputs}, m.frame)
		out = wire.AppendUvarint(out, uint64(m.count))
		return append(out, m.recs...)
	case checksumMsg:
		return m.append(nil)
	case []byte:
		return append([]byte{msgSnapshot}, m...)
	case resyncMsg:
		return m.append(nil)
	case clockMsg:
		return m.append(nil)
	case partMsg:
		return m.append(nil)
	case announceMsg:
		return m.append(nil)
	case refusedMsg:
		return m.append(nil)
	}
	panic(fmt.Sprintf("reencode: %T", v))
}

// Every kind round-trips: append, parse, append again gives the same
// bytes, and parsing gives back the fields.
func TestCodecRoundTrip(t *testing.T) {
	for _, s := range codecSamples() {
		v, f, ok := parseAny(s.msg)
		if !ok || f.bad() {
			t.Fatalf("%s % x: %v", s.name, s.msg, f.err())
		}
		if again := reencode(v); !bytes.Equal(again, s.msg) {
			t.Fatalf("%s: % x re-encodes as % x", s.name, s.msg, again)
		}
	}
	m, _ := parseClock(clockMsg{frame: 1 << 31, period: 1e6, lead: 65535, dilation: -32768}.append(nil))
	if m != (clockMsg{frame: 1 << 31, period: 1e6, lead: 65535, dilation: -32768}) {
		t.Fatalf("clock fields: %+v", m)
	}
	in, _ := parseInputs(codecSamples()[0].msg, codecPeer)
	if in.frame != 7 || in.count != 2 {
		t.Fatalf("inputs fields: %+v", in)
	}
	r, _ := parseRefused(codecSamples()[8].msg, codecPeer)
	if r.frame != 8 || r.reason != rollback.DropTooOld || r.rec.Type != 300 || r.rec.Entity != 1<<40 || !bytes.Equal(r.rec.Payload, []byte{1, 2, 3}) {
		t.Fatalf("refusal fields: %+v", r)
	}
}

// Every strict prefix of every valid message is refused with a fault (the
// kinds whose last field is a body stay valid down to one body byte), so
// is every message with a byte more (except bodies), and nothing panics.
func TestCodecEveryPrefix(t *testing.T) {
	for _, s := range codecSamples() {
		min := len(s.msg)
		if s.tail {
			min = map[byte]int{msgSnapshot: 2, msgSnapshotPart: partHeaderLen + 1}[s.msg[0]]
		}
		for n := range len(s.msg) {
			_, f, _ := parseAny(s.msg[:n])
			if n == 0 {
				if _, _, ok := parseAny(nil); ok {
					t.Fatalf("%s: the empty message has a kind", s.name)
				}
				continue
			}
			if bad := f.bad(); bad != (n < min) {
				t.Fatalf("%s: %d-byte prefix of %d: fault %v", s.name, n, len(s.msg), f.err())
			}
		}
		_, f, _ := parseAny(append(bytes.Clone(s.msg), 0))
		if f.bad() == s.tail {
			t.Fatalf("%s with a byte more: fault %v", s.name, f.err())
		}
	}
}

// Malformed messages, one per rule: each is refused, and its error wraps
// rollback.ErrMalformed and names the kind and the numbers.
func TestCodecMalformed(t *testing.T) {
	s := codecSamples()
	with := func(b []byte, off int, v ...byte) []byte {
		b = bytes.Clone(b)
		copy(b[off:], v)
		return b
	}
	other := appendInputs(nil, 7, codecPeer+1, []rollback.Input{{Type: 1, Entity: 9}})
	cases := []struct {
		name string
		msg  []byte
		want string // in the error
	}{
		{"inputs: count 0", with(s[0].msg, 5, 0), "record count 0, want 1"},
		{"inputs: count above the length", with(s[0].msg, 5, 0x7F), "record count above the message's length 127"},
		{"inputs: count a bad varint", append([]byte{msgInputs, 0, 0, 0, 0}, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01), "bad varint"},
		{"inputs: another sender", other, fmt.Sprintf("record's sender %d, want %d", codecPeer+1, codecPeer)},
		{"inputs: a byte more", append(bytes.Clone(s[0].msg), 9), fmt.Sprintf("length %d, want %d", len(s[0].msg)+1, len(s[0].msg))},
		{"checksum: short", s[1].msg[:13], "length below minimum 13, want 14"},
		{"checksum: own count overlong", append(bytes.Clone(s[1].msg[:13]), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF), "bad varint"},
		{"snapshot: empty", []byte{msgSnapshot}, "length below minimum 1, want 2"},
		{"resync: long", append(bytes.Clone(s[3].msg), 0), "length 6, want 5"},
		{"clock: period 0", with(s[4].msg, 5, 0, 0, 0, 0), fmt.Sprintf("tick period (ns) 0, want %d", minTickPeriod.Nanoseconds())},
		{"clock: short", s[4].msg[:12], "length 12, want 13"},
		{"part: count 0", with(s[5].msg, 7, 0, 0), "part count (1..MaxSnapshotParts) 0"},
		{"part: count above the limit", with(s[5].msg, 7, 0x01, 0x04), "part count (1..MaxSnapshotParts) 1025, want 1024"},
		{"part: index = count", with(s[5].msg, 5, 3, 0), "part index beyond count 3, want 2"},
		{"part: no data", s[5].msg[:partHeaderLen], "length below minimum 9, want 10"},
		{"part: data above the chunk", append(bytes.Clone(s[5].msg[:partHeaderLen]), make([]byte, maxSnapshotChunk+1)...), fmt.Sprintf("part data bytes %d, want %d", maxSnapshotChunk+1, maxSnapshotChunk)},
		{"announce: short", s[6].msg[:16], "length 16, want 17"},
		{"refused: another sender", with(s[8].msg, 6, codecPeer+1), fmt.Sprintf("record's sender %d, want %d", codecPeer+1, codecPeer)},
		{"refused: record cut", s[8].msg[:len(s[8].msg)-1], "action record does not parse"},
		{"refused: a byte more", append(bytes.Clone(s[8].msg), 0), fmt.Sprintf("length %d, want %d", len(s[8].msg)+1, len(s[8].msg))},
	}
	for _, c := range cases {
		_, f, ok := parseAny(c.msg)
		err := f.err()
		if !ok || err == nil || !errors.Is(err, rollback.ErrMalformed) || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), fmt.Sprintf("kind 0x%02x", c.msg[0])) {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
	if _, f := parseResync(s[4].msg); !f.bad() || !strings.Contains(f.err().Error(), "kind 5, want 4") {
		t.Errorf("a clock message parsed as a resync request: %v", f.err())
	}
	if (fault{}).err() != nil {
		t.Error("the zero fault is an error")
	}
}

// Parsing and appending allocate nothing (the buffers grown once).
func TestCodecNoAllocs(t *testing.T) {
	samples := codecSamples()
	buf := make([]byte, 0, 256)
	ins := []rollback.Input{{Frame: 7, Sender: codecPeer, Type: 1, Entity: 9, Payload: []byte{5, 0, 0, 0}}}
	n := testing.AllocsPerRun(100, func() {
		_, bad := parseInputs(samples[0].msg, codecPeer)
		_, f1 := parseChecksum(samples[1].msg)
		_, f2 := parseSnapshot(samples[2].msg)
		_, f3 := parseResync(samples[3].msg)
		_, f4 := parseClock(samples[4].msg)
		_, f5 := parsePart(samples[5].msg)
		_, f6 := parseAnnounce(samples[6].msg)
		_, f7 := parseRefused(samples[8].msg, codecPeer)
		_, f8 := parseClock(samples[4].msg[:5]) // a fault costs nothing either
		if bad.bad() || f1.bad() || f2.bad() || f3.bad() || f4.bad() || f5.bad() || f6.bad() || f7.bad() || !f8.bad() {
			t.Fatal("a sample did not parse")
		}
		buf = appendInputs(buf[:0], 7, codecPeer, ins)
		buf = checksumMsg{1, 2, 3}.append(buf[:0])
		buf = clockMsg{1, 2e6, 3, 4}.append(buf[:0])
		buf = announceMsg{1, 2, 3, 4}.append(buf[:0])
		buf = resyncMsg{1}.append(buf[:0])
		buf = partMsg{1, 0, 1, samples[0].msg}.append(buf[:0])
		buf = refusedMsg{1, rollback.DropTooOld, wire.ActionRecord{Sender: codecPeer, Type: 1}}.append(buf[:0])
	})
	if n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}

// The links drop every prefix, every byte flipped in the kind, and every
// message of the wrong direction on their stream, counted Malformed, and
// stay intact: a good message afterwards still takes effect.
func TestLinksDropMalformed(t *testing.T) {
	var w *world
	w, c := newClientWorld(t, rollback.LogConfig{FrameCapacity: 16}, codecPeer, func(f uint32, in *rollback.InputBuffer) {
		_ = in.Add(w.ids.heal, w.ents[7], le32(int32(f)))
	}, false, rollback.ClientConfig{})
	cl, err := NewClientLink(c, LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sw, srv := newServerWorld(t, rollback.LogConfig{FrameCapacity: 16}, rollback.ServerConfig{FirstFrame: 1}, false)
	repl, _ := rollback.NewReplicator(sw.log, nil)
	sl, err := NewServerLink(srv, repl, codecPeer, 0, LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	on := func(h transport.Handler, b []byte) {
		h.OnMessage(transport.Message{Delivery: transport.Reliable, Stream: DefaultLinkStream, Payload: b})
	}
	wantC, wantS := uint64(0), uint64(0)
	for _, s := range codecSamples() {
		toServer := s.msg[0] == msgInputs || s.msg[0] == msgResync
		for n := range len(s.msg) {
			if s.tail && n >= 2 {
				break // a shorter body is a valid message (a snapshot the sink would refuse)
			}
			on(cl, s.msg[:n])
			on(sl, s.msg[:n])
			wantC++
			wantS++
			if got := cl.Stats().Malformed; got != wantC {
				t.Fatalf("client: %s, %d-byte prefix: Malformed %d, want %d", s.name, n, got, wantC)
			}
			if got := sl.Stats().Malformed; got != wantS {
				t.Fatalf("server: %s, %d-byte prefix: Malformed %d, want %d", s.name, n, got, wantS)
			}
		}
		// The wrong direction (and, without SetSnapshots, snapshots).
		if toServer {
			on(cl, s.msg)
			wantC++
		} else {
			on(sl, s.msg)
			wantS++
		}
	}
	if cs, ss := cl.Stats(), sl.Stats(); cs.Malformed != wantC || ss.Malformed != wantS || ss.InputMessages != 0 || cs.Clocks != 0 || cs.Announcements != 0 {
		t.Fatalf("client %+v\nserver %+v", cs, ss)
	}
	// Still working: a clock message sets the clock, an input message is
	// submitted.
	on(cl, clockMsg{frame: 10, period: uint32(DefaultTickPeriod), lead: 2}.append(nil))
	on(sl, appendInputs(nil, 1, codecPeer, []rollback.Input{{Type: sw.ids.heal, Entity: sw.ents[7], Payload: le32(1)}}))
	if cl.Stats().Clocks != 1 || sl.Stats().InputMessages != 1 {
		t.Fatalf("after the malformed ones: client %+v\nserver %+v", cl.Stats(), sl.Stats())
	}
}

// FuzzLinkCodec: any bytes, parsed as the kind their first byte names,
// never panic; what parses re-encodes to bytes that parse to the same
// message (the codec round-trips); a fault is an ErrMalformed error.
// FuzzClientLinkMessage feeds the client link the same way. Seeds:
// testdata/fuzz/FuzzLinkCodec, one valid message of every kind.
func FuzzLinkCodec(f *testing.F) {
	for _, s := range codecSamples() {
		f.Add(s.msg)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, flt, ok := parseAny(b)
		if !ok {
			return
		}
		if flt.bad() {
			if flt.err() == nil || !errors.Is(flt.err(), rollback.ErrMalformed) {
				t.Fatalf("fault %+v without an ErrMalformed error", flt)
			}
			return
		}
		again := reencode(v)
		v2, f2, _ := parseAny(again)
		if f2.bad() || !reflect.DeepEqual(v, v2) {
			t.Fatalf("% x parses as %+v, re-encodes as % x, which parses as %+v (%v)", b, v, again, v2, f2.err())
		}
	})
}
