// Package link runs the rollback action stream over a tickwire transport:
// a ServerLink per peer on the server and a ClientLink on each client are
// the transport.Handler of that peer's Channel, and ServerLinks /
// ClientLinks adapt them to a transport.Endpoint's handler.
//
// ServerLink and ClientLink are the transport.Handler of a peer's channel
// on each side: inputs travel as reliable messages to rollback.Server.Submit,
// and every input it refuses is reported back (rollback.Client.Refused takes it
// out of the prediction); slices go out with Channel.SendRecord each tick
// (ServerLink.Flush) and come back as record verdicts; checksums of final
// frames are verified on the client. With a Snapshotter on each side
// (ServerLink.SetSnapshots, ClientLink.SetSnapshots), the server link also sends the joining client its
// snapshot — the store at a final frame, scoped, with handles and owners,
// zstd-compressed, announced first with where the server is — and a state
// burst whenever the client can no longer be corrected from the stream
// (rollback.Replicator or rollback.Receiver NeedsResync), its checksum does not match, or
// the game asks (ClientLink.RequestResync). The stream goes on while a
// snapshot is on its way; the client holds it, each frame once, until the
// snapshot is in, so a join settles with one snapshot whatever its size,
// and a joiner samples only frames the server still accepts.
//
// # Clock sync
//
// The server link tells its client where it starts — the snapshot that
// follows, or, without one, the baseline it starts from (frame 0, the
// initial state it built like the server's; the link installs it) — and,
// at once and every 30 frames, the server's clock: its newest frame, its
// tick period (LinkConfig.TickPeriod) and the lead the client should keep
// (a round trip plus ServerConfig.TargetBufferFrames, so its inputs arrive
// in time), with the time-dilation feedback. The client link keeps the
// client's frame clock from them (ClientLink.Frame): each side runs on its
// own clock, nothing is shared but what the links send, and a client clock
// that runs fast or slow is steered back by the dilation.
//
// # The loops
//
// The server, on its own clock (any monotonic time; here since start):
//
//	links := link.NewServerLinks(srv, repl, link.LinkConfig{}, snapshots) // snapshots: nil, or a *rollback.Snapshotter for joins
//	ep, _ := transport.Listen(sock, transport.EndpointConfig{}, links)
//	for {
//		now := time.Since(start)
//		ep.Poll(now)
//		if f := uint32(now/link.DefaultTickPeriod) + 1; f > frame { // LinkConfig.TickPeriod
//			frame = f
//			srv.Tick(f)
//			links.Flush()
//		}
//		ep.Flush(now)
//		ep.Wait(…) // or sleep until the next tick
//	}
//
// A client, on its own clock — it never sets a frame and never installs
// frame 0 itself:
//
//	h := link.NewClientLinks(func(p rollback.Sender) (*link.ClientLink[*rollback.Store], error) {
//		c, err := rollback.NewClient(x, p, sample, step, rollback.ClientConfig{}) // x: a world built like the server's
//		if err != nil {
//			return nil, err
//		}
//		l, err := link.NewClientLink(c, link.LinkConfig{})
//		if err == nil && joining {
//			l.SetSnapshots(sink) // a *rollback.Snapshotter of the client's store
//		}
//		return l, err
//	})
//	ep, _ := transport.Dial(sock, server, transport.EndpointConfig{ServerKey: serverKey}, h, time.Since(start))
//	for {
//		now := time.Since(start)
//		ep.Poll(now)
//		h.Tick(now) // the link's frame for now: Client.Tick, then the link's Flush
//		ep.Flush(now)
//		ep.Wait(…)
//	}
//
// Example runs a server and two clients so, over loopback UDP.
//
// # The link's stream
//
// The links' messages travel on one reliable-ordered stream, the link's
// alone: by default the channel's highest ordered stream
// (transport.Config.OrderedStreams; the game keeps the others). A game
// message sent on it makes the link's next Flush return ErrStreamShared;
// the peer's link drops it, counted Malformed. Every link message is
// parsed whole by one codec (docs/ROLLBACK.md, "Links", has every byte).
//
// # Concurrency and cost
//
// A link belongs to the goroutine that drives its Channel (the endpoint's
// loop) and is not safe for concurrent use. In steady state its message
// handling, Tick and Flush allocate nothing (TestNoAllocsLinks).
//
// docs/ROLLBACK.md has the formats and the measurements. Scenario ids
// (S-xx) in comments refer to docs/SCENARIOS.md.
package link
