"""Go: ``go test -json`` read into per-test statuses (``runners.gotest``). The language itself
(detection, go.mod, toolchain images, recipes) is not registered yet: this folder has no
``LANGUAGE``, so the registry passes it by."""
