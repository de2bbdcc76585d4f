package wire

import "encoding/binary"

// ConnectRequest is the client's first handshake message. The server
// answers with a Challenge (or a Reject) and keeps no state.
//
// Version is the client's protocol version (normally ProtocolVersion).
// Nonce is a fresh random value the client picks per connection attempt;
// every server reply echoes it, so the client can drop replies an off-path
// attacker forged. When Resume is set, Token is the session token of a
// session the client wants to resume; otherwise Token is ignored by the
// encoder and sent as zeros.
//
// The encoding is exactly ConnectRequestLen (64) bytes, zero-padded, so it
// outweighs any reply the server makes before the client proves its
// address. It is a plain comparable value.
type ConnectRequest struct {
	Version uint16
	Nonce   uint64
	Resume  bool
	// Cleartext: the client runs in insecure mode and asks for cleartext
	// session datagrams (flag bit 1), so a server that refuses them can
	// say so before any work.
	Cleartext bool
	Token     Token
}

// AppendConnectRequest appends the 64-byte encoding of r to dst and returns
// the extended slice. It allocates only if dst lacks capacity.
func AppendConnectRequest(dst []byte, r ConnectRequest) []byte {
	dst = appendHelloPrefix(dst, KindConnectRequest, r.Version, r.Nonce)
	dst = appendResume(dst, r.Resume, r.Cleartext, &r.Token, 0)
	var pad [ConnectRequestLen - helloPrefixLen - 1 - TokenLen]byte
	return append(dst, pad[:]...)
}

// ParseConnectRequest decodes a ConnectRequest from the front of b and
// returns it with n = ConnectRequestLen. A wrong kind byte or magic,
// reserved flag bits, a token without the resume flag, or non-zero padding
// return ErrMalformed; input shorter than 64 bytes ErrShort. A version
// other than ProtocolVersion returns ErrVersion with only Version and Nonce
// set (and n = 0), so the server can reply RejectVersionMismatch. It never
// allocates.
func ParseConnectRequest(b []byte) (ConnectRequest, int, error) {
	version, nonce, err := parseHelloPrefix(b, KindConnectRequest)
	if err != nil {
		return ConnectRequest{Version: version, Nonce: nonce}, 0, err
	}
	if len(b) < ConnectRequestLen {
		return ConnectRequest{}, 0, ErrShort
	}
	resume, clear, token, _, err := parseResume(b[helloPrefixLen:], requestFlags)
	if err != nil {
		return ConnectRequest{}, 0, err
	}
	if !allZero(b[helloPrefixLen+1+TokenLen : ConnectRequestLen]) {
		return ConnectRequest{}, 0, ErrMalformed
	}
	return ConnectRequest{Version: version, Nonce: nonce, Resume: resume, Cleartext: clear, Token: token}, ConnectRequestLen, nil
}

// ConnectResponse is the client's answer to a Challenge: the fields of its
// ConnectRequest again, the Cookie echoed verbatim, the cipher suite it
// wants, its ephemeral X25519 public key for this attempt and, when
// resuming, a proof that it holds the session's secret. A server that
// verifies the cookie knows the client receives at its source address, and
// only then does the key exchange, creates session state and sends Accept
// (docs/WIRE.md §9.4).
//
// Proof is a MAC over bytes 0–84 of this message (everything before it,
// the cookie included) under a key derived from the resumed session's
// secret; it must be all zero when Resume is not set. Suite is
// SuiteAES128GCM or SuiteChaCha20Poly1305.
//
// The encoding is exactly ConnectResponseLen (120) bytes, zero-padded, so
// it outweighs the Accept (109) — unless it carries a connect token
// (ConnectToken not nil, flag bit 2): then the token's bytes take the
// place of the proof and the padding, from offset 85 to the end of the
// datagram, 120 to MaxConnectResponseLen (561) bytes in all. A token and
// a resume exclude each other (a resume re-keys from the old session's
// secret and needs no token).
type ConnectResponse struct {
	Version   uint16
	Nonce     uint64
	Resume    bool
	Cleartext bool
	Token     Token
	Cookie    Cookie
	Suite     uint8
	Ephemeral PublicKey
	Proof     [ResumeProofLen]byte
	// ConnectToken is the sealed connect token the client presents
	// (ConnectTokenMinLen to ConnectTokenMaxLen bytes; nil: none). Parse
	// sets it to a window into its input; the encoder copies it.
	ConnectToken []byte
	// Unpinned (flag bit 3, only with a ConnectToken or a resume): the
	// client pins no server key, so the key schedule leaves es out and the
	// token's keys (or, for a resume, the session's secret) alone
	// authenticate the server (docs/WIRE.md §9.8).
	Unpinned bool
}

// Offsets inside a ConnectResponse.
const (
	respCookieOff = helloPrefixLen + 1 + TokenLen    // 32
	respSuiteOff  = respCookieOff + 4 + CookieTagLen // 52
	respKeyOff    = respSuiteOff + 1                 // 53
	respProofOff  = respKeyOff + PublicKeyLen        // 85
	respPadOff    = respProofOff + ResumeProofLen    // 101
	// ConnectResponseProofOff is where the resume proof starts: the proof
	// is a MAC of the bytes before it.
	ConnectResponseProofOff = respProofOff
)

// AppendConnectResponse appends the encoding of r to dst — 120 bytes, or
// 85 plus the connect token's — and returns the extended slice. It
// allocates only if dst lacks capacity.
func AppendConnectResponse(dst []byte, r ConnectResponse) []byte {
	var extra byte
	if r.ConnectToken != nil {
		extra |= helloFlagToken
	}
	if r.Unpinned {
		extra |= helloFlagUnpinned
	}
	dst = appendHelloPrefix(dst, KindConnectResponse, r.Version, r.Nonce)
	dst = appendResume(dst, r.Resume, r.Cleartext, &r.Token, extra)
	dst = binary.LittleEndian.AppendUint32(dst, r.Cookie.Bucket)
	dst = append(dst, r.Cookie.Tag[:]...)
	dst = append(dst, r.Suite)
	dst = append(dst, r.Ephemeral[:]...)
	if r.ConnectToken != nil {
		return append(dst, r.ConnectToken...)
	}
	dst = append(dst, r.Proof[:]...)
	var pad [ConnectResponseLen - respPadOff]byte
	return append(dst, pad[:]...)
}

// ParseConnectResponse decodes a ConnectResponse from the front of b and
// returns it with n = ConnectResponseLen, with the errors of
// ParseConnectRequest; besides, a suite other than the two defined, or a
// proof without the resume flag, is ErrMalformed. A ConnectResponse with
// the token flag is the whole of b: ConnectToken is b[85:], a window into
// b, of ConnectTokenMinLen to ConnectTokenMaxLen bytes (fewer ErrShort,
// more ErrMalformed), and n = len(b); the token flag with the resume flag,
// or the unpinned flag with neither, is ErrMalformed. The
// token's own format is not checked here (package transport/token does).
// It never allocates.
func ParseConnectResponse(b []byte) (ConnectResponse, int, error) {
	version, nonce, err := parseHelloPrefix(b, KindConnectResponse)
	if err != nil {
		return ConnectResponse{Version: version, Nonce: nonce}, 0, err
	}
	if len(b) < ConnectResponseLen {
		return ConnectResponse{}, 0, ErrShort
	}
	resume, clear, token, flags, err := parseResume(b[helloPrefixLen:], responseFlags)
	if err != nil {
		return ConnectResponse{}, 0, err
	}
	hasToken := flags&helloFlagToken != 0
	unpinned := flags&helloFlagUnpinned != 0
	switch {
	case b[respSuiteOff] > SuiteChaCha20Poly1305, unpinned && !hasToken && !resume, hasToken && resume:
		return ConnectResponse{}, 0, ErrMalformed
	case hasToken && len(b) > MaxConnectResponseLen:
		return ConnectResponse{}, 0, ErrMalformed
	case !hasToken && (!allZero(b[respPadOff:ConnectResponseLen]) || !resume && !allZero(b[respProofOff:respPadOff])):
		return ConnectResponse{}, 0, ErrMalformed
	}
	r := ConnectResponse{Version: version, Nonce: nonce, Resume: resume, Cleartext: clear, Token: token, Suite: b[respSuiteOff], Unpinned: unpinned}
	r.Cookie.Bucket = binary.LittleEndian.Uint32(b[respCookieOff:])
	copy(r.Cookie.Tag[:], b[respCookieOff+4:respSuiteOff])
	copy(r.Ephemeral[:], b[respKeyOff:respProofOff])
	if hasToken {
		r.ConnectToken = b[respProofOff:len(b):len(b)]
		return r, len(b), nil
	}
	copy(r.Proof[:], b[respProofOff:respPadOff])
	return r, ConnectResponseLen, nil
}
