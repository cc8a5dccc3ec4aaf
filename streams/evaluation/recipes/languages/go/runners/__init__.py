"""Go's test runner: ``go test -json`` (``gotest``)."""
