package seal

import (
	"encoding/binary"
	"fmt"
)

// The sealed datagram's header and overhead (docs/WIRE.md §13).
const (
	// HeaderLen is the cleartext header: the kind byte with the key phase
	// in bit 0, then the low 16 bits of the packet number (u16). It is the
	// AEAD's associated data.
	HeaderLen = 3
	// TagLen is the AEAD tag after the ciphertext, for both suites.
	TagLen = 16
	// Overhead is what sealing adds to a datagram's plaintext: 19 bytes.
	Overhead = HeaderLen + TagLen

	// KindPhase0 is the first byte of a datagram sealed under an
	// even key generation; KindPhase1 under an odd one. Bits 1–6 are
	// reserved (zero); bit 7 set keeps sealed kinds apart from the
	// handshake kinds, which count up from 0x01.
	KindPhase0 = 0x80
	// KindPhase1 is KindPhase0 with the key phase bit set.
	KindPhase1 = 0x81
)

// Stats counts what a Session sealed and opened, and every datagram Open
// refused, by reason. Each refused datagram is counted exactly once. A
// plain value: Session.Stats returns a copy.
type Stats struct {
	Sealed uint64 // datagrams sealed
	Opened uint64 // datagrams authenticated and decrypted

	Short            uint64 // shorter than Overhead (ErrShort)
	Malformed        uint64 // first byte not KindPhase0/KindPhase1 (ErrMalformed)
	AuthFailed       uint64 // tag did not verify: tampered, truncated, wrong key (ErrAuth)
	Replayed         uint64 // packet number already opened (ErrReplayed)
	TooOld           uint64 // packet number below the replay window (ErrTooOld)
	WrongPhase       uint64 // previous key generation, already discarded (ErrKeyPhase)
	IntegrityLimited uint64 // refused after the integrity limit (ErrIntegrityLimit)

	KeyUpdatesSent      uint64 // key generations the sender moved to
	KeyUpdatesReceived  uint64 // key generations the receiver followed
	PreviousKeysDropped uint64 // previous receive keys discarded once useless
}

// Refused is the sum of the refusal counters.
func (s Stats) Refused() uint64 {
	return s.Short + s.Malformed + s.AuthFailed + s.Replayed + s.TooOld + s.WrongPhase + s.IntegrityLimited
}

// Session seals the datagrams one endpoint sends in a session and opens
// the ones it receives: one key per direction, key updates in band, a
// replay window. It is owned by one goroutine (the endpoint's); it is not
// safe for concurrent use. Its size is about 1.7 KiB, most of it the
// replay window.
//
// The fields are laid out for a server whose sessions are cold in cache
// at every datagram (hundreds of peers, each touched once per tick): what
// Seal reads and writes is in sealLine and sendKey's first cache line;
// what Open reads and writes is in openLine (with the window's current
// word), keys[ki]'s first line and, for a datagram that is late or the
// first of a new word of the window, one word of its ring (TestSessionLayout checks it). The AEAD's own
// state (key schedule, GHASH table) is a separate object either way.
type Session struct {
	sealLine
	sendKey keyState
	keys    [3]keyState // receive keys: current, previous, next, by openLine's indices
	openLine
	win window // its first words (top, word) share openLine's cache line

	// cold: read at key updates and refusals, and by Stats
	sendDir direction
	recvDir direction
	stats   counters
}

// counters are the Stats a Session keeps outside sealLine and openLine.
type counters struct {
	Short, Malformed, AuthFailed, Replayed, TooOld, WrongPhase, IntegrityLimited uint64
	KeyUpdatesSent, KeyUpdatesReceived, PreviousKeysDropped                      uint64
}

// sealLine is what Seal reads and writes on every datagram but the key.
// Its first 56 bytes hold it all: one cache line whether the Session
// starts on a line or 8 bytes past one (the allocator's header).
type sealLine struct {
	pn        uint64 // next packet number to seal
	genStart  uint64 // first packet number of sendKey's generation
	interval  uint64 // the key update interval
	sealed    uint64 // Stats.Sealed
	sealNonce [NonceLen]byte
	_         [20]byte // to the end of the line: sendKey starts on the next
}

// openLine is what Open reads and writes on every datagram but the key
// and the ring of the window; with the window's top and word after it,
// 56 bytes, in one cache line as sealLine is.
type openLine struct {
	forgeries uint64 // datagrams that failed authentication, all keys
	curLow    uint64 // lowest packet number authenticated under keys[cur]
	opened    uint64 // Stats.Opened
	openNonce [NonceLen]byte
	cur       int8
	prev      int8 // -1 when the previous generation is discarded
	next      int8
	suite     Suite
}

// New returns the Session of one end (role) of the session whose master
// secret is secret. Both ends call New with the same secret and suite and
// opposite roles. It derives three keys (send; receive current and next)
// and allocates about 12 KiB (101 allocations, 15 µs with AES-GCM on the
// development machine); it runs once per handshake.
func New(cfg Config, role Role, secret *Secret) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if role > Server {
		return nil, fmt.Errorf("%w: Role %d is neither Client (0) nor Server (1)", ErrInvalidConfig, uint8(role))
	}
	cfg = cfg.WithDefaults()
	s := &Session{sendDir: clientToServer, recvDir: serverToClient}
	s.suite, s.interval = cfg.Suite, cfg.KeyUpdateInterval
	s.cur, s.prev, s.next = 0, -1, 1
	if role == Server {
		s.sendDir, s.recvDir = serverToClient, clientToServer
	}
	ts, err := trafficSecret0(secret, s.sendDir)
	if err != nil {
		return nil, err
	}
	if err := s.sendKey.install(s.suite, ts, 0); err != nil {
		return nil, err
	}
	if ts, err = trafficSecret0(secret, s.recvDir); err != nil {
		return nil, err
	}
	if err := s.keys[s.cur].install(s.suite, ts, 0); err != nil {
		return nil, err
	}
	if err := s.deriveNext(); err != nil {
		return nil, err
	}
	return s, nil
}

// deriveNext installs the generation after keys[cur] in keys[next], so a
// key update costs the receiver no key derivation on a datagram that
// might be forged.
func (s *Session) deriveNext() error {
	c := &s.keys[s.cur]
	ts, err := nextTrafficSecret(&c.ts, s.recvDir, c.gen+1)
	if err != nil {
		return err
	}
	return s.keys[s.next].install(s.suite, ts, c.gen+1)
}

// Suite returns the session's AEAD.
func (s *Session) Suite() Suite { return s.suite }

// Stats returns a copy of the counters.
func (s *Session) Stats() Stats {
	c := &s.stats
	return Stats{Sealed: s.sealed, Opened: s.opened,
		Short: c.Short, Malformed: c.Malformed, AuthFailed: c.AuthFailed, Replayed: c.Replayed,
		TooOld: c.TooOld, WrongPhase: c.WrongPhase, IntegrityLimited: c.IntegrityLimited,
		KeyUpdatesSent: c.KeyUpdatesSent, KeyUpdatesReceived: c.KeyUpdatesReceived, PreviousKeysDropped: c.PreviousKeysDropped}
}

// SendGeneration is the key generation the next Seal uses (0 first).
func (s *Session) SendGeneration() uint64 { return s.sendKey.gen }

// RecvGeneration is the newest key generation the receiver has followed.
func (s *Session) RecvGeneration() uint64 { return s.keys[s.cur].gen }

// NextPacketNumber is the packet number the next Seal uses.
func (s *Session) NextPacketNumber() uint64 { return s.pn }

// sealHook, when set (by tests), sees every key and nonce Seal passes to
// the AEAD.
var sealHook func(key, nonce []byte)

// Seal seals one datagram in place. buf is the datagram as it will be
// sent, with HeaderLen bytes of room at the front (their contents are
// overwritten) and the plaintext after them, and must have at least
// TagLen bytes of capacity beyond its length. Seal writes the header,
// encrypts the plaintext in place and appends the tag inside buf's
// capacity; it returns buf[:len(buf)+TagLen]. The buffer stays the
// caller's. It allocates nothing, except that once every
// KeyUpdateInterval datagrams it first moves to the next key generation
// (an HKDF chain and a new AEAD: about 3.4 KiB and 4.5 µs).
//
// Errors: ErrNoRoom (buf too short or without room for the tag),
// ErrExhausted (packet numbers used up); nothing is sealed then, and no
// packet number is spent.
func (s *Session) Seal(buf []byte) ([]byte, error) {
	n := len(buf)
	if n < HeaderLen || cap(buf)-n < TagLen {
		return nil, ErrNoRoom
	}
	if s.pn > MaxPacketNumber {
		return nil, ErrExhausted
	}
	if s.pn-s.genStart >= s.interval {
		if err := s.updateSendKey(); err != nil {
			return nil, err
		}
	}
	k := &s.sendKey
	pn := s.pn
	buf[0] = KindPhase0 | byte(k.gen&1)
	binary.LittleEndian.PutUint16(buf[1:HeaderLen], uint16(pn))
	nonce := k.nonce(&s.sealNonce, pn)
	if sealHook != nil {
		sealHook(k.key[:s.suite.keyLen()], nonce)
	}
	k.aead.Seal(buf[HeaderLen:HeaderLen], nonce, buf[HeaderLen:n], buf[:HeaderLen])
	s.pn++
	s.sealed++
	return buf[:n+TagLen], nil
}

// updateSendKey moves the sender to its next key generation.
func (s *Session) updateSendKey() error {
	k := &s.sendKey
	ts, err := nextTrafficSecret(&k.ts, s.sendDir, k.gen+1)
	if err != nil {
		return err
	}
	if err := k.install(s.suite, ts, k.gen+1); err != nil {
		return err
	}
	s.genStart = s.pn
	s.stats.KeyUpdatesSent++
	return nil
}

// Open authenticates and decrypts one received datagram in place and
// returns its plaintext, datagram[HeaderLen:len(datagram)-TagLen], a
// window into the caller's buffer. The buffer stays the caller's; on
// error its bytes after the header are undefined (an AEAD may clear
// them). Any input is safe: Open never panics, reads nothing outside
// datagram, and spends at most one AEAD open on it.
//
// In order: a datagram shorter than Overhead is ErrShort; a first byte
// other than KindPhase0/KindPhase1 ErrMalformed. The packet number is
// reconstructed from its low 16 bits around the highest authenticated
// one; a number already opened is ErrReplayed, one WindowSize or more
// behind ErrTooOld — both before any decryption. The key is the current
// generation's when the phase bit matches it; otherwise the previous
// generation's for a number below the current generation's lowest (or
// ErrKeyPhase if it was discarded), else the next generation's, which a
// successful open then makes current. A tag that does not verify is
// ErrAuth. Only a datagram that authenticates marks the replay window or
// changes key state. After the suite's integrity limit of failures every
// Open is ErrIntegrityLimit. Each outcome is counted in Stats.
//
// It allocates nothing, except when it follows a key update (once per
// KeyUpdateInterval datagrams of the peer), when it derives the
// generation after the new one.
func (s *Session) Open(datagram []byte) ([]byte, error) {
	if s.forgeries >= s.suite.integrityLimit() {
		s.stats.IntegrityLimited++
		return nil, ErrIntegrityLimit
	}
	if len(datagram) < Overhead {
		s.stats.Short++
		return nil, ErrShort
	}
	kind := datagram[0]
	if kind&^1 != KindPhase0 {
		s.stats.Malformed++
		return nil, ErrMalformed
	}
	pn := reconstruct(s.win.expected(), uint64(binary.LittleEndian.Uint16(datagram[1:HeaderLen])))
	switch s.win.check(pn) {
	case replayed:
		s.stats.Replayed++
		return nil, ErrReplayed
	case tooOld:
		s.stats.TooOld++
		return nil, ErrTooOld
	}
	// Key generations cover increasing ranges of packet numbers, so the
	// phase bit and the number together name the key: the previous
	// generation's numbers are all below the current one's lowest, the
	// next one's all above the highest authenticated — and at least
	// WindowSize above the current one's lowest, since a peer updates no
	// sooner than MinKeyUpdateInterval (> WindowSize) after the update
	// before: a peer that updated on every datagram would otherwise make
	// this end derive a key on each. A phase bit that fits no generation
	// costs no AEAD open. (The one legitimate update refused is one whose
	// first MinKeyUpdateInterval − WindowSize datagrams of the generation
	// before were all lost.)
	ki := s.cur
	if uint64(kind&1) != s.keys[s.cur].gen&1 {
		switch {
		case pn < s.curLow && s.prev >= 0:
			ki = s.prev
		case s.win.top == 0 || pn >= s.win.top && pn >= s.curLow+WindowSize:
			ki = s.next
		default:
			s.stats.WrongPhase++
			return nil, ErrKeyPhase
		}
	}
	k := &s.keys[ki]
	nonce := k.nonce(&s.openNonce, pn)
	plain, err := k.aead.Open(datagram[HeaderLen:HeaderLen], nonce, datagram[HeaderLen:], datagram[:HeaderLen])
	if err != nil {
		s.forgeries++
		s.stats.AuthFailed++
		return nil, ErrAuth
	}
	s.win.mark(pn)
	switch {
	case ki == s.next:
		s.followKeyUpdate(pn)
	case ki == s.cur && pn < s.curLow:
		s.curLow = pn
	}
	// A previous-generation datagram has a packet number below curLow;
	// once curLow−1 is below the window, none can be accepted again, so
	// its key is useless and goes.
	if s.prev >= 0 && s.win.top >= s.curLow+WindowSize {
		s.keys[s.prev].wipe()
		s.prev = -1
		s.stats.PreviousKeysDropped++
	}
	s.opened++
	return plain, nil
}

// followKeyUpdate makes the next generation current after a datagram
// with packet number pn authenticated under it: the current becomes the
// previous (replacing any older one), and the generation after the new
// current is derived.
func (s *Session) followKeyUpdate(pn uint64) {
	old := s.prev
	if old < 0 {
		old = 3 - s.cur - s.next // the free slot
	}
	s.keys[old].wipe()
	s.prev, s.cur, s.next = s.cur, s.next, old
	s.keys[s.prev].ts = [32]byte{} // the previous generation derives nothing more
	s.curLow = pn
	s.stats.KeyUpdatesReceived++
	if err := s.deriveNext(); err != nil {
		// HKDF-SHA256 and the AEAD constructors fail only on key sizes
		// this package never passes; a failure is a broken invariant.
		panic("seal: deriving the next receive key: " + err.Error())
	}
}
