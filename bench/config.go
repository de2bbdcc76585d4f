package bench

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/tickwire/tickwire/ackmap"
	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
)

// Module paths of the peers, for their versions in Result.Config.
const (
	kcpModule  = "github.com/xtaci/kcp-go/v5"
	quicModule = "github.com/quic-go/quic-go"
)

var (
	buildInfoOnce sync.Once
	buildDeps     map[string]string
)

// moduleVersion returns the version of module path the binary was built
// with, from its build information, or "(version unknown)".
func moduleVersion(path string) string {
	buildInfoOnce.Do(func() {
		buildDeps = map[string]string{}
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, d := range bi.Deps {
				if d.Replace != nil {
					d = d.Replace
				}
				buildDeps[d.Path] = d.Version
			}
		}
	})
	if v := buildDeps[path]; v != "" {
		return v
	}
	return "(version unknown)"
}

// kcpVersion is kcp-go's version, for Result.Config.
var kcpVersion = moduleVersion(kcpModule)

// unsupported returns an error wrapping ErrNotSupported if s (defaults
// applied) cannot run at its settings, or nil.
func unsupported(s Scenario) error {
	t, _ := NewTransport(s.Transport)
	switch t := t.(type) {
	case kcpTransport:
		switch s.Profile {
		case ProfileEcho, ProfilePPS:
			return t.fits(s.Size, s.MTU)
		case ProfileBulk:
			return t.fits(BulkChunk, s.MTU)
		}
	case quicTransport:
		return quicFits(s.MTU)
	}
	return nil
}

// peerConfig returns the configuration the row of s (defaults applied)
// runs with.
func peerConfig(s Scenario) PeerConfig {
	set := map[string]string{}
	inFlight := func(def int) string {
		if s.MaxInFlight != 0 {
			return strconv.Itoa(s.MaxInFlight) + " (--max-in-flight)"
		}
		return strconv.Itoa(def) + " (default)"
	}
	direct := s.Profile == ProfilePPS || s.Profile == ProfileBulk || s.Profile == ProfileLoad
	if direct {
		set["path"] = "direct on loopback, no relay"
	} else {
		set["path"] = "through the relay (link conditioner)"
	}
	t, _ := NewTransport(s.Transport)
	switch t := t.(type) {
	case tickwireTransport:
		set["implementation"] = "tickwire (this repository)"
		set["cipher"] = "aes128gcm: every session datagram sealed (19 B), keys from an X25519 handshake"
		set["mtu"] = strconv.Itoa(s.MTU)
		set["ack_max_in_flight"] = inFlight(ackmap.DefaultMaxInFlight)
		switch s.Profile {
		case ProfileEcho, ProfileLoad:
			if s.Profile == ProfileEcho {
				set["redundancy"] = s.Redundancy.String() + " (transport.Config.Redundancy)"
				set["redundancy_interval"] = transport.DefaultRedundancyInterval.String() + " (default)"
				if s.RedundancyInterval != 0 {
					set["redundancy_interval"] = s.RedundancyInterval.String() + " (--redundancy-interval)"
				}
			}
			set["loop"] = fmt.Sprintf("event-driven Poll/Flush per end (Endpoint.Wait until Endpoint.NextDeadline, at most %v)", loopTick())
			set["stream"] = "1, reliable-ordered"
			set["socket"] = "transport/socket/udp (batched), default buffers"
		case ProfileActions:
			set["loop"] = fmt.Sprintf("fixed-rate Poll/Flush every %v", TickInterval)
			fc := rollback.DefaultFrameCapacity
			if s.FrameCapacity != 0 {
				fc = s.FrameCapacity
			}
			set["frame_capacity"] = strconv.Itoa(fc)
		case ProfilePPS, ProfileBulk:
			set["loop"] = "both ends Polled and Flushed in lockstep on one goroutine, no sleeping"
			set["socket"] = fmt.Sprintf("transport/socket/udp (batched), SO_RCVBUF/SO_SNDBUF %d requested", throughputSocketBuffer)
			if s.Profile == ProfilePPS && s.Delivery == Unreliable {
				set["send"] = "SendUnreliable, packed into MTU-sized datagrams"
				set["unreliable_bytes"] = strconv.Itoa(transport.DefaultMaxDatagrams * s.MTU)
			} else {
				set["send"] = "SendReliable on stream 1 (reliable-ordered), packed into MTU-sized datagrams"
				set["reliable_window"] = "channel defaults (256 messages, 1 MiB per stream)"
			}
		}
	case kcpTransport:
		set["cipher"] = "none: kcp-go without encryption"
		window := s.MaxInFlight
		for k, v := range t.settings(s.MTU, window) {
			set[k] = v
		}
		if window == 0 {
			set["window"] += " (default)"
		} else {
			set["window"] += " (--max-in-flight)"
		}
		if direct {
			set["socket"] = fmt.Sprintf("SO_RCVBUF/SO_SNDBUF %d requested", throughputSocketBuffer)
		}
		if t.stream {
			set["framing"] = "stream mode: the receiver reads fixed-size messages with io.ReadFull"
		}
	case quicTransport:
		set["cipher"] = "TLS 1.3 (quic-go)"
		for k, v := range quicSettings(t.mode, s.Profile, s.MTU) {
			set[k] = v
		}
	case rawTransport:
		set["implementation"] = "net.UDPConn, one sendto and one recvfrom per datagram"
		set["socket"] = fmt.Sprintf("SO_RCVBUF/SO_SNDBUF %d requested", throughputSocketBuffer)
	}
	set["delivery"] = s.Delivery
	return PeerConfig{Name: s.Transport, Settings: set}
}
