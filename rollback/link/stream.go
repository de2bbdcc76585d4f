package link

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/rollback"
	"github.com/tickwire/tickwire/transport"
	"github.com/tickwire/tickwire/wire"
)

// linkStream is a link's reliable-ordered stream: it sends the link's
// messages and checks the ids the channel hands back. A stream numbers its
// messages 0, 1, 2, …, so the link's own messages get consecutive ids from
// 0 on as long as nothing else sends on the stream; a gap is a message
// someone else (the game) sent on it — the transport cannot refuse it, but
// the link can say so (ErrStreamShared, from the next Flush). The peer's
// link parses every message on the stream whole and drops, counted, what
// does not parse, so a foreign message never corrupts the link.
type linkStream struct {
	id   uint8
	auto bool     // id is a default: an adapter may move it to the channel's highest stream
	next wire.Seq // the id the link's next message should get
	// foreign counts the messages others sent on the stream (the gaps);
	// err describes the first gap not yet reported.
	foreign uint64
	err     error
}

func newLinkStream(cfg LinkConfig) linkStream {
	s := linkStream{id: cfg.Stream, auto: cfg.Stream == 0}
	if s.auto {
		s.id = DefaultLinkStream
	}
	return s
}

// bind settles the stream on a channel with ordered ordered streams: a
// default stream becomes the highest of them; a stream beyond them is an
// error (ErrInvalidConfig, wrapped, with the numbers).
func (s *linkStream) bind(ordered int) error {
	if s.auto {
		s.id, s.auto = uint8(min(max(ordered, 1), 255)), false
	}
	if int(s.id) > ordered {
		return fmt.Errorf("%w: link stream %d beyond the channel's %d ordered streams (LinkConfig.Stream, transport.Config.OrderedStreams)", rollback.ErrInvalidConfig, s.id, ordered)
	}
	return nil
}

// send queues p on the stream (the channel copies it). Errors are the
// channel's; a gap in the ids is noted for takeErr.
func (s *linkStream) send(ch StreamChannel, p []byte) error {
	id, err := ch.SendReliable(s.id, p)
	if err != nil {
		return err
	}
	if id != s.next {
		gap := uint64(id - s.next)
		s.foreign += gap
		if s.err == nil {
			s.err = fmt.Errorf("%w: stream %d: the link's message got id %d, expected %d: %d message(s) the link did not send went out on its stream (%d in all); the game must use another stream (LinkConfig.Stream)",
				ErrStreamShared, s.id, id, s.next, gap, s.foreign)
		}
	}
	s.next = id + 1
	return nil
}

// offer sends p like send, treating a full window as back-pressure: it
// counts it in *full and reports sent false with no error, for a later
// Flush to retry. Any other error is returned.
func (s *linkStream) offer(ch StreamChannel, p []byte, full *uint64) (sent bool, err error) {
	if err := s.send(ch, p); err != nil {
		if errors.Is(err, transport.ErrQueueFull) {
			*full++
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// takeErr returns the gap not yet reported, if any, and forgets it.
func (s *linkStream) takeErr() error {
	err := s.err
	s.err = nil
	return err
}
