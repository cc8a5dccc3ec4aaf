module example.com/old

go 1.16

require (
	github.com/pkg/errors v0.9.1
)
