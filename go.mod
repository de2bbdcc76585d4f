module github.com/tickwire/tickwire

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4
	golang.org/x/crypto v0.58.0
	golang.org/x/sys v0.50.0
)
