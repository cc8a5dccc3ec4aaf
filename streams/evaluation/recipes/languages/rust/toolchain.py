"""Rust's toolchain images: Debian's own ``rustc`` and ``cargo`` on each suite's base image.

rustup's download host is not reachable here, so each image has the one rustc its suite
packages (checked with ``apt-cache policy rustc cargo`` on the base images: bookworm 1.63.0
with cargo 1.65, trixie 1.85.1, forky 1.97.1). Cargo reads crates.io through its sparse index
(the git index is not reachable either): the protocol is the default from cargo 1.70, and
bookworm's cargo, which knows it only as an unstable feature, is let use it by the channel
override (harmless to the newer cargos, checked on trixie's and forky's).
"""

from __future__ import annotations

import datetime as dt

from streams.evaluation.recipes.languages import ToolchainImages, debian_install_steps

# Debian suite -> the rustc its package installs (oldest suite first)
DEBIAN_RUST_PATCH = {"bookworm": "1.63.0", "trixie": "1.85.1", "forky": "1.97.1"}
# the version an image is known by (``docker.rust_images``): rustc's major.minor
DEBIAN_RUST = {suite: ".".join(v.split(".")[:2]) for suite, v in DEBIAN_RUST_PATCH.items()}
CARGO_HOME = "/usr/local/cargo"

RUST_IMAGES = ToolchainImages(
    prefix="swe-stream/rust",
    label="org.swe-stream.rust",
    by_suite=DEBIAN_RUST,
    # a C compiler, make and pkg-config: build scripts of -sys crates and of crates that build
    # C sources (the cc crate) use them
    steps=debian_install_steps(
        "rustc cargo gcc g++ make pkg-config libc6-dev",
        f"mkdir -p {CARGO_HOME}",
        "rustc --version && cargo --version",
    ),
    environment=(
        ("CARGO_HOME", CARGO_HOME),
        ("CARGO_REGISTRIES_CRATES_IO_PROTOCOL", "sparse"),
        ("CARGO_UNSTABLE_SPARSE_REGISTRY", "true"),
        ("__CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS", "nightly"),
        ("CARGO_TERM_COLOR", "never"),
        ("CARGO_INCREMENTAL", "0"),
    ),
    note="cargo reads crates.io's sparse index (bookworm's cargo through the channel override)",
)

# Rust releases on a Thursday every six weeks, counted from 1.0's week: 1.56 came out on
# 2021-10-21, 1.63 on 2022-08-11
_FIRST_RELEASE = dt.date(2015, 5, 14)


def released(version: str) -> dt.date:
    """The day rustc ``version`` (``1.63``) was released."""
    minor = int(version.split(".")[1])
    return _FIRST_RELEASE + dt.timedelta(weeks=6 * minor)
