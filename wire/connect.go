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
	Token   Token
}

// AppendConnectRequest appends the 64-byte encoding of r to dst and returns
// the extended slice. It allocates only if dst lacks capacity.
func AppendConnectRequest(dst []byte, r ConnectRequest) []byte {
	dst = appendHelloPrefix(dst, KindConnectRequest, r.Version, r.Nonce)
	dst = appendResume(dst, r.Resume, &r.Token)
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
	resume, token, err := parseResume(b[helloPrefixLen:])
	if err != nil {
		return ConnectRequest{}, 0, err
	}
	if !allZero(b[helloPrefixLen+1+TokenLen : ConnectRequestLen]) {
		return ConnectRequest{}, 0, ErrMalformed
	}
	return ConnectRequest{Version: version, Nonce: nonce, Resume: resume, Token: token}, ConnectRequestLen, nil
}

// ConnectResponse is the client's answer to a Challenge: the fields of its
// ConnectRequest again plus the Cookie echoed verbatim. A server that
// verifies the cookie knows the client receives at its source address, and
// only then creates session state and sends Accept.
//
// The encoding is exactly ConnectResponseLen (64) bytes, zero-padded. It is
// a plain comparable value.
type ConnectResponse struct {
	Version uint16
	Nonce   uint64
	Resume  bool
	Token   Token
	Cookie  Cookie
}

// AppendConnectResponse appends the 64-byte encoding of r to dst and
// returns the extended slice. It allocates only if dst lacks capacity.
func AppendConnectResponse(dst []byte, r ConnectResponse) []byte {
	dst = appendHelloPrefix(dst, KindConnectResponse, r.Version, r.Nonce)
	dst = appendResume(dst, r.Resume, &r.Token)
	dst = binary.LittleEndian.AppendUint32(dst, r.Cookie.Bucket)
	dst = append(dst, r.Cookie.Tag[:]...)
	var pad [ConnectResponseLen - helloPrefixLen - 1 - TokenLen - 4 - CookieTagLen]byte
	return append(dst, pad[:]...)
}

// ParseConnectResponse decodes a ConnectResponse from the front of b and
// returns it with n = ConnectResponseLen, with the errors of
// ParseConnectRequest. It never allocates.
func ParseConnectResponse(b []byte) (ConnectResponse, int, error) {
	version, nonce, err := parseHelloPrefix(b, KindConnectResponse)
	if err != nil {
		return ConnectResponse{Version: version, Nonce: nonce}, 0, err
	}
	if len(b) < ConnectResponseLen {
		return ConnectResponse{}, 0, ErrShort
	}
	resume, token, err := parseResume(b[helloPrefixLen:])
	if err != nil {
		return ConnectResponse{}, 0, err
	}
	const cookieOff = helloPrefixLen + 1 + TokenLen
	const padOff = cookieOff + 4 + CookieTagLen
	if !allZero(b[padOff:ConnectResponseLen]) {
		return ConnectResponse{}, 0, ErrMalformed
	}
	r := ConnectResponse{Version: version, Nonce: nonce, Resume: resume, Token: token}
	r.Cookie.Bucket = binary.LittleEndian.Uint32(b[cookieOff:])
	copy(r.Cookie.Tag[:], b[cookieOff+4:padOff])
	return r, ConnectResponseLen, nil
}
