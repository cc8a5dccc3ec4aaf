"""Go's toolchain images: Debian's own ``golang-go`` on each suite's base image.

Each suite packages one go (checked with ``apt-cache policy golang-go`` on the base images:
bookworm 1.19.8, trixie 1.24.4, forky 1.27.3). A module that needs a newer one (its ``go`` or
``toolchain`` line) runs on the newest image with ``GOTOOLCHAIN`` naming the exact toolchain,
which go (1.21 and later) fetches through the module proxy into the module cache of the env
image, like any module: the tests then run it without network.
"""

from __future__ import annotations

from streams.evaluation.recipes.languages import ToolchainImages, debian_install_steps

# Debian suite -> the go its golang-go package installs (oldest suite first)
DEBIAN_GO_PATCH = {"bookworm": "1.19.8", "trixie": "1.24.4", "forky": "1.27.3"}
# the version an image is known by (``docker.go_images``): go's major.minor
DEBIAN_GO = {suite: ".".join(v.split(".")[:2]) for suite, v in DEBIAN_GO_PATCH.items()}
PATCH_OF = {DEBIAN_GO[suite]: patch for suite, patch in DEBIAN_GO_PATCH.items()}

GO_IMAGES = ToolchainImages(
    prefix="swe-stream/go",
    label="org.swe-stream.go",
    by_suite=DEBIAN_GO,
    # std compiled into the image's build cache: go ships it as source (1.20 on), and each
    # test build in a fresh container compiled the part it imports again (a test of
    # "testing" alone: 32 s of CPU, against 0.4 with the cache); cgo off, as recipes default
    steps=debian_install_steps("golang-go", "go version", "CGO_ENABLED=0 go build std"),
    # go never fetches a toolchain of its own accord (a recipe names the one it fetches);
    # the module cache is writable, so a layer of it can be removed and rebuilt
    environment=(("GOTOOLCHAIN", "local"), ("GOFLAGS", "-modcacherw")),
    note="a toolchain is fetched only where a recipe names it (GOTOOLCHAIN)",
)
