"""Go: detection, go.mod and go.work (``gomod``), Debian's golang per suite and fetched
toolchains (``toolchain``), recipes per module (``recipe``), ``go test -json`` read into
per-test statuses (``runners.gotest``), validated with three runs (a compiled language)."""

from streams.evaluation.recipes.languages.go.language import Go

LANGUAGE = Go()
