// A module with every kind of line go.mod has.
module github.com/example/service/v2

go 1.22

toolchain go1.22.3

require (
	github.com/google/uuid v1.6.0
	golang.org/x/sync v0.7.0 // indirect
	"github.com/quoted/path" v1.0.0
	gopkg.in/yaml.v3 v3.0.1 // indirect; needed by tests
)

require github.com/single/line v0.1.0

replace github.com/example/lib => ../lib

replace (
	github.com/example/other v1.0.0 => ./third_party/other
	github.com/forked/thing => github.com/me/thing v1.2.3
)

exclude github.com/broken/dep v0.0.1

retract [v2.0.0, v2.0.5] // published by mistake
