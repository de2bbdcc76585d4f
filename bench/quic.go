package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// quicMode is how a quic peer carries echo messages.
type quicMode int

const (
	// quicOneStream: one bidirectional stream, each message prefixed by
	// its length (2 bytes, little-endian).
	quicOneStream quicMode = iota
	// quicStreamPerMessage: a new bidirectional stream per message, the
	// message alone on it; the echo comes back on the same stream.
	quicStreamPerMessage
	// quicDatagrams: each message one RFC 9221 DATAGRAM frame.
	quicDatagrams
)

// ALPN protocol names: the server offers them all, the client asks for
// its mode's, and the server serves each connection by what was
// negotiated. One server therefore serves every quic peer.
const (
	quicALPNStream  = "tickwire-bench-stream"
	quicALPNStreams = "tickwire-bench-streams"
	quicALPNDgram   = "tickwire-bench-dgram"
	quicALPNBulk    = "tickwire-bench-bulk"
)

func (m quicMode) alpn() string {
	switch m {
	case quicStreamPerMessage:
		return quicALPNStreams
	case quicDatagrams:
		return quicALPNDgram
	}
	return quicALPNStream
}

// quic settings.
const (
	// quicMinPacket is the smallest datagram QUIC runs on (RFC 9000
	// §14.1; quic-go refuses an InitialPacketSize below it).
	quicMinPacket = 1200
	// quicIdleTimeout is Config.MaxIdleTimeout (quic-go's default, stated).
	quicIdleTimeout = 30 * time.Second
	// quicMaxStreams is Config.MaxIncomingStreams: how many streams the
	// peer may have open at once. quic-go's default is 100; a stream per
	// message at 60 Hz through a lossy link keeps more than that open
	// while retransmissions are pending, and the limit would then pace
	// the sender.
	quicMaxStreams = 1000
	// quicServerName is the certificate's DNS name, verified by clients.
	quicServerName = "tickwire-bench"
	// quicFrameHeader is the one-stream mode's length prefix.
	quicFrameHeader = 2
)

// quicFits returns nil if quic runs at mtu, or an error wrapping
// ErrNotSupported.
func quicFits(mtu int) error {
	if mtu < quicMinPacket {
		return fmt.Errorf("%w at --mtu %d: QUIC needs %d-byte datagrams (RFC 9000 §14.1) and quic-go refuses a smaller InitialPacketSize", ErrNotSupported, mtu, quicMinPacket)
	}
	return nil
}

// quicConfig returns the quic-go configuration of both ends of a row at
// mtu: packets of exactly mtu bytes (InitialPacketSize, path MTU
// discovery off, so that --mtu means the same for every peer),
// datagrams enabled, quic-go's default idle timeout and flow-control
// windows (512 KiB initial, auto-tuned up to 6 MiB per stream and 15 MiB
// per connection: its docs' advice is to leave them to the auto-tuning),
// and room for quicMaxStreams concurrent streams.
func quicConfig(mtu int) *quic.Config {
	return &quic.Config{
		InitialPacketSize:       uint16(mtu),
		DisablePathMTUDiscovery: true,
		EnableDatagrams:         true,
		MaxIdleTimeout:          quicIdleTimeout,
		MaxIncomingStreams:      quicMaxStreams,
	}
}

// quicSettings returns quicConfig's settings as Result.Config settings
// for a row of mode on profile.
func quicSettings(mode quicMode, profile string, mtu int) map[string]string {
	set := map[string]string{
		"implementation":       quicModule + " " + moduleVersion(quicModule),
		"initial_packet_size":  strconv.Itoa(mtu) + " (--mtu)",
		"path_mtu_discovery":   "off (DisablePathMTUDiscovery)",
		"max_idle_timeout":     quicIdleTimeout.String(),
		"max_incoming_streams": strconv.Itoa(quicMaxStreams),
		"flow_control":         "quic-go defaults: 512 KiB initial, auto-tuned up to 6 MiB per stream, 15 MiB per connection",
		"congestion_control":   "quic-go's (NewReno-style, RFC 9002)",
		"tls":                  "TLS 1.3, self-signed ECDSA P-256 certificate generated at start, verified by the client",
		"udp_buffers":          "quic-go sets SO_RCVBUF/SO_SNDBUF to 7 MiB (SO_RCVBUFFORCE where permitted); " + quicBufferReport(),
	}
	if profile == ProfileBulk {
		set["carriage"] = "one bidirectional stream, 1 KiB Writes; the receiver reads 1 KiB chunks with io.ReadFull"
		return set
	}
	switch mode {
	case quicOneStream:
		set["carriage"] = "one bidirectional stream, each message prefixed by its 2-byte length"
	case quicStreamPerMessage:
		set["carriage"] = "a new bidirectional stream per message (OpenStreamSync, Write, Close); the echo on the same stream"
	case quicDatagrams:
		set["carriage"] = "RFC 9221 DATAGRAM frames (EnableDatagrams), no retransmission"
	}
	return set
}

// quicBufs records the receive buffer the kernel reports for the last
// quic socket opened (after quic-go's own setting), for quicBufferReport.
var quicBufs atomic.Int64

// quicBufferReport says what receive buffer quic-go obtained.
func quicBufferReport() string {
	n := quicBufs.Load()
	if n <= 0 {
		return "obtained: not measured yet in this process"
	}
	return fmt.Sprintf("obtained: SO_RCVBUF reads %d, i.e. %d usable (Linux reports twice the size set; quic-go compares the reported value with its 7 MiB, so it does not warn when rmem_max gives it 3.5 MiB or more)", n, n/2)
}

// noteBuffers records udp's receive buffer in quicBufs.
func noteBuffers(udp *net.UDPConn) {
	if n, err := recvBuffer(udp); err == nil {
		quicBufs.Store(int64(n))
	}
}

// quicCertificate is the process's self-signed certificate.
type quicCertificate struct {
	cert tls.Certificate
	pem  []byte // the certificate, PEM
}

var (
	quicCertOnce sync.Once
	quicCert     *quicCertificate
	quicCertErr  error
)

// benchCertificate returns the process's certificate, generated at the
// first call (newCertificate).
func benchCertificate() (*quicCertificate, error) {
	quicCertOnce.Do(func() { quicCert, quicCertErr = newCertificate() })
	return quicCert, quicCertErr
}

// newCertificate generates a certificate: ECDSA P-256, self-signed, for
// quicServerName, valid from an hour ago for a week.
func newCertificate() (*quicCertificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: quicServerName},
		DNSNames:              []string{quicServerName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &quicCertificate{
		cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}, nil
}

// quicServerTLS is the servers' TLS configuration: the process's
// certificate, every ALPN.
func quicServerTLS() (*tls.Config, error) {
	c, err := benchCertificate()
	if err != nil {
		return nil, fmt.Errorf("bench: quic certificate: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{c.cert},
		NextProtos:   []string{quicALPNStream, quicALPNStreams, quicALPNDgram, quicALPNBulk},
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// ErrCertificate is wrapped when a quic client has no usable server
// certificate to verify the server against.
var ErrCertificate = errors.New("bench: quic server certificate")

// quicClientTLS is a client's TLS configuration: it trusts only the
// certificate certPEM (nil: the process's own, for a server in the same
// process) and asks for alpn.
func quicClientTLS(certPEM []byte, alpn string) (*tls.Config, error) {
	if certPEM == nil {
		c, err := benchCertificate()
		if err != nil {
			return nil, fmt.Errorf("bench: quic certificate: %w", err)
		}
		certPEM = c.pem
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, fmt.Errorf("%w: no PEM certificate in %d bytes", ErrCertificate, len(certPEM))
	}
	return &tls.Config{RootCAs: pool, ServerName: quicServerName, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13}, nil
}

// quicTransport is quic-go in one mode.
type quicTransport struct {
	name string
	mode quicMode
}

func (t quicTransport) Name() string { return t.name }

// quicServer is the server half: a quic-go listener serving every mode
// (by ALPN), a goroutine per connection and per stream.
type quicServer struct {
	udp    *net.UDPConn
	tr     *quic.Transport
	l      *quic.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	echoed atomic.Uint64

	mu       sync.Mutex
	accepted uint64
	conns    map[*quic.Conn]struct{}
}

// listen implements Transport.
func (t quicTransport) listen(cfg listenConfig) (serverHalf, error) {
	if err := quicFits(cfg.mtu); err != nil {
		return nil, err
	}
	tlsConf, err := quicServerTLS()
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.addr))
	if err != nil {
		return nil, fmt.Errorf("bench: quic listen: %w", err)
	}
	tr := &quic.Transport{Conn: udp}
	l, err := tr.Listen(tlsConf, quicConfig(cfg.mtu))
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, fmt.Errorf("bench: quic listen: %w", err)
	}
	noteBuffers(udp)
	ctx, cancel := context.WithCancel(context.Background())
	s := &quicServer{udp: udp, tr: tr, l: l, ctx: ctx, cancel: cancel, conns: map[*quic.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// accept serves every connection until the listener closes.
func (s *quicServer) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.l.Accept(s.ctx)
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			conn.CloseWithError(0, "server closed")
			return
		}
		s.conns[conn] = struct{}{}
		s.accepted++
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(conn)
	}
}

// serve echoes conn's messages in the mode its ALPN names, until conn or
// the server closes.
func (s *quicServer) serve(conn *quic.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.CloseWithError(0, "")
	}()
	switch conn.ConnectionState().TLS.NegotiatedProtocol {
	case quicALPNStream:
		st, err := conn.AcceptStream(s.ctx)
		if err != nil {
			return
		}
		buf := make([]byte, quicFrameHeader+MaxSize)
		for {
			if _, err := io.ReadFull(st, buf[:quicFrameHeader]); err != nil {
				return
			}
			n := int(binary.LittleEndian.Uint16(buf))
			if n > MaxSize {
				return
			}
			if _, err := io.ReadFull(st, buf[quicFrameHeader:quicFrameHeader+n]); err != nil {
				return
			}
			if _, err := st.Write(buf[:quicFrameHeader+n]); err != nil {
				return
			}
			s.echoed.Add(1)
		}
	case quicALPNStreams:
		var streams sync.WaitGroup
		defer streams.Wait()
		for {
			st, err := conn.AcceptStream(s.ctx)
			if err != nil {
				return
			}
			streams.Add(1)
			go func() {
				defer streams.Done()
				b, err := io.ReadAll(io.LimitReader(st, MaxSize+1))
				if err != nil || len(b) > MaxSize {
					st.CancelRead(1)
					st.CancelWrite(1)
					return
				}
				if _, err := st.Write(b); err == nil {
					s.echoed.Add(1)
				}
				st.Close()
			}()
		}
	case quicALPNDgram:
		for {
			b, err := conn.ReceiveDatagram(s.ctx)
			if err != nil {
				return
			}
			if conn.SendDatagram(b) == nil {
				s.echoed.Add(1)
			}
		}
	}
}

func (s *quicServer) addr() netip.AddrPort { return s.udp.LocalAddr().(*net.UDPAddr).AddrPort() }

func (s *quicServer) stats() ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ServerStats{Sessions: s.accepted, Echoed: s.echoed.Load()}
}

// certPEM returns the certificate the server presents, PEM.
func (s *quicServer) certPEM() []byte {
	c, _ := benchCertificate() // listen generated it
	return c.pem
}

func (s *quicServer) close() error {
	s.mu.Lock()
	s.cancel()
	s.l.Close()
	for c := range s.conns {
		c.CloseWithError(0, "server closed")
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.tr.Close()
	s.udp.Close()
	return nil
}

// quicClient is the client half.
type quicClient struct {
	mode   quicMode
	udp    *net.UDPConn
	tr     *quic.Transport
	conn   *quic.Conn
	st     *quic.Stream // quicOneStream
	ctx    context.Context
	cancel context.CancelFunc
	onEcho func([]byte)
	echoMu sync.Mutex // serialises onEcho across the per-stream goroutines
	wg     sync.WaitGroup
	frame  []byte // quicOneStream's send buffer
	mtu    int
	once   sync.Once
}

// dial implements Transport: it returns once the handshake is done (and,
// for quicOneStream, the stream is open).
func (t quicTransport) dial(ctx context.Context, cfg dialConfig) (clientHalf, error) {
	if err := quicFits(cfg.mtu); err != nil {
		return nil, err
	}
	tlsConf, err := quicClientTLS(cfg.serverCert, t.mode.alpn())
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(clientBind(cfg.server)))
	if err != nil {
		return nil, fmt.Errorf("bench: quic client socket: %w", err)
	}
	tr := &quic.Transport{Conn: udp}
	dctx, dcancel := context.WithTimeout(ctx, cfg.connectTimeout)
	conn, err := tr.Dial(dctx, net.UDPAddrFromAddrPort(cfg.server), tlsConf, quicConfig(cfg.mtu))
	dcancel()
	if err != nil {
		tr.Close()
		udp.Close()
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) || isIdleTimeout(err) {
			return nil, fmt.Errorf("%w: quic: no handshake with %v after %v: %w", ErrConnectTimeout, cfg.server, cfg.connectTimeout, err)
		}
		return nil, fmt.Errorf("bench: quic: connecting to %v: %w", cfg.server, err)
	}
	noteBuffers(udp)
	cctx, cancel := context.WithCancel(context.Background())
	c := &quicClient{mode: t.mode, udp: udp, tr: tr, conn: conn, ctx: cctx, cancel: cancel, onEcho: cfg.onEcho,
		frame: make([]byte, quicFrameHeader+MaxSize), mtu: cfg.mtu}
	switch t.mode {
	case quicOneStream:
		if c.st, err = conn.OpenStreamSync(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("bench: quic: opening the stream: %w", err)
		}
		c.wg.Add(1)
		go c.readStream()
	case quicDatagrams:
		if !conn.ConnectionState().SupportsDatagrams.Remote {
			c.Close()
			return nil, fmt.Errorf("%w: quic: %v does not accept datagrams", ErrNotSupported, cfg.server)
		}
		c.wg.Add(1)
		go c.readDatagrams()
	}
	return c, nil
}

// isIdleTimeout reports whether err is quic-go's handshake or idle
// timeout.
func isIdleTimeout(err error) bool {
	var ie *quic.IdleTimeoutError
	var he *quic.HandshakeTimeoutError
	return errors.As(err, &ie) || errors.As(err, &he)
}

// echo hands p to onEcho, one call at a time.
func (c *quicClient) echo(p []byte) {
	c.echoMu.Lock()
	c.onEcho(p)
	c.echoMu.Unlock()
}

// readStream reads the one stream's echoes until it or the connection
// ends.
func (c *quicClient) readStream() {
	defer c.wg.Done()
	buf := make([]byte, quicFrameHeader+MaxSize)
	for {
		if _, err := io.ReadFull(c.st, buf[:quicFrameHeader]); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint16(buf))
		if n > MaxSize {
			return
		}
		if _, err := io.ReadFull(c.st, buf[quicFrameHeader:quicFrameHeader+n]); err != nil {
			return
		}
		c.echo(buf[quicFrameHeader : quicFrameHeader+n])
	}
}

// readDatagrams reads echoed datagrams until the connection ends.
func (c *quicClient) readDatagrams() {
	defer c.wg.Done()
	for {
		b, err := c.conn.ReceiveDatagram(c.ctx)
		if err != nil {
			return
		}
		c.echo(b)
	}
}

// Send implements clientHalf. quicStreamPerMessage may wait for stream
// credit (OpenStreamSync); its echo is read on a goroutine of the
// stream's own.
func (c *quicClient) Send(p []byte) error {
	switch c.mode {
	case quicOneStream:
		binary.LittleEndian.PutUint16(c.frame, uint16(len(p)))
		n := copy(c.frame[quicFrameHeader:], p)
		_, err := c.st.Write(c.frame[:quicFrameHeader+n])
		return err
	case quicStreamPerMessage:
		st, err := c.conn.OpenStreamSync(c.ctx)
		if err != nil {
			return err
		}
		if _, err := st.Write(p); err != nil {
			return err
		}
		if err := st.Close(); err != nil {
			return err
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			b, err := io.ReadAll(io.LimitReader(st, MaxSize+1))
			if err == nil {
				c.echo(b)
			}
		}()
		return nil
	}
	err := c.conn.SendDatagram(p)
	var tl *quic.DatagramTooLargeError
	if errors.As(err, &tl) {
		return fmt.Errorf("%w at --mtu %d: a %d B message is above quic-go's datagram payload limit of %d B", ErrNotSupported, c.mtu, len(p), tl.MaxDatagramPayloadSize)
	}
	return err
}

// Close implements clientHalf.
func (c *quicClient) Close() error {
	c.once.Do(func() {
		c.cancel()
		c.conn.CloseWithError(0, "done")
		c.wg.Wait()
		c.tr.Close()
		c.udp.Close()
	})
	return nil
}

// wireBytes implements clientHalf: quic-go's count of the UDP payload
// bytes the connection sent and received.
func (c *quicClient) wireBytes() int64 {
	st := c.conn.ConnectionStats()
	return int64(st.BytesSent + st.BytesReceived)
}
