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
// # Concurrency and cost
//
// A link belongs to the goroutine that drives its Channel (the endpoint's
// loop) and is not safe for concurrent use. In steady state its message
// handling and Flush allocate nothing (TestNoAllocsLinks).
//
// docs/ROLLBACK.md has the formats and the measurements.
package link
