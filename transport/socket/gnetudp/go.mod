module github.com/tickwire/tickwire/transport/socket/gnetudp

go 1.26.0

require (
	github.com/panjf2000/gnet/v2 v2.9.7
	github.com/tickwire/tickwire v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.50.0
)

require (
	github.com/panjf2000/ants/v2 v2.11.3 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sync v0.24.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)

replace github.com/tickwire/tickwire => ../../..
