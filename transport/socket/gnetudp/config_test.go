package gnetudp_test

import (
	"errors"
	"testing"

	"github.com/tickwire/tickwire/transport/socket"
	"github.com/tickwire/tickwire/transport/socket/gnetudp"
)

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []gnetudp.Config{
		{},
		{EventLoops: 1, QueueLen: 1, MaxDatagramSize: 1},
		{EventLoops: gnetudp.MaxEventLoops, QueueLen: gnetudp.MaxQueueLen, MaxDatagramSize: socket.MaxDatagramSize},
		{RecvBuffer: gnetudp.MaxSocketBuffer, SendBuffer: 1, DisableDrain: true},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", cfg, err)
		}
	}
	for _, cfg := range []gnetudp.Config{
		{EventLoops: -1},
		{EventLoops: gnetudp.MaxEventLoops + 1},
		{QueueLen: -1},
		{QueueLen: gnetudp.MaxQueueLen + 1},
		{MaxDatagramSize: -1},
		{MaxDatagramSize: socket.MaxDatagramSize + 1},
		{RecvBuffer: -1},
		{SendBuffer: gnetudp.MaxSocketBuffer + 1},
	} {
		if err := cfg.Validate(); !errors.Is(err, gnetudp.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
		if _, err := gnetudp.Open(lo4, cfg); !errors.Is(err, gnetudp.ErrInvalidConfig) {
			t.Errorf("Open with %+v = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
