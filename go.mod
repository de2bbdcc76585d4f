module github.com/tickwire/tickwire

go 1.26
