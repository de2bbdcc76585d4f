// Package wire holds tickwire's byte codecs: little-endian fixed-width
// integers, LEB128 varints, 16-bit serial-number arithmetic ([Seq]), a
// [Reader] and [Writer] over caller-owned buffers, and one encoder/decoder
// pair per wire format — packet kind, session header, channel header,
// frames, fragment and reliable-stream headers, the action-stream slice and
// its records, and the handshake messages. docs/WIRE.md documents every
// byte.
//
// # Shape of the API
//
// Every encoder appends: AppendX(dst []byte, v X) []byte writes the encoding
// of v after len(dst) and returns the extended slice, exactly like
// strconv.AppendInt. Every decoder parses from the front: ParseX(b []byte)
// (X, int, error) returns the value and n, the number of bytes it consumed;
// bytes after b[:n] belong to the caller (usually the next frame). Where a
// caller must budget bytes before encoding there is an XLen function that
// returns exactly len(AppendX(nil, v)).
//
// # Ownership
//
// Encoders never keep dst or any slice in v; they copy payload bytes into
// dst. Decoders never copy: a decoded payload (UnreliableFrame.Payload,
// ActionRecord.Payload, the body of an ActionSlice, Reader.Bytes …) is a
// sub-slice of the input and aliases it, so it is valid only as long as the
// caller keeps the input buffer unchanged. A caller that recycles its
// receive buffer and needs the bytes later copies them first. Aliased
// payloads are returned with their capacity clipped to their length, so an
// append to one reallocates instead of overwriting the bytes that follow it
// in the datagram.
//
// # Cost
//
// Nothing in this package allocates when dst has enough spare capacity:
// encoders append into it, decoders return values and sub-slices, and the
// structs use fixed-size arrays for tokens and tags. TestNoAllocs checks
// every format with testing.AllocsPerRun. No function keeps state between
// calls, so all of them are safe for concurrent use on distinct buffers;
// Reader, Writer, ActionSliceIter and ActionSliceWriter are small values that
// one goroutine uses at a time.
//
// # Errors
//
// Decoders treat their input as hostile. Truncated or malformed input
// returns one of the sentinel errors ([ErrShort], [ErrMalformed],
// [ErrOverflow], [ErrTooLarge], [ErrVersion]) with the zero value and n = 0;
// no input makes a decoder panic, read out of bounds, or loop longer than
// the input is long. Decoders are strict: each value has exactly one valid
// encoding (varints are minimal, the channel header's compression is
// mandatory, padding and reserved bits are zero), so for every successful
// ParseX, AppendX(nil, v) reproduces b[:n] byte for byte. The fuzz targets
// check that property.
//
// Encoders cannot fail: they take any value of their Go types. Where a
// format narrows a type (a fragment count of 0, a peer id above 253, a
// payload above its cap), the encoder writes the value as given, and the
// matching decoder rejects it; callers validate their own configuration.
//
// Scenario ids (S-xx) in comments refer to docs/SCENARIOS.md.
package wire
