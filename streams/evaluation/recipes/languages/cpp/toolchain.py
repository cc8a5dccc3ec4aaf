"""C and C++'s toolchain images: Debian's own compilers and build tools on each suite's base
image, with the test frameworks a project finds installed (``find_package(GTest)``, Catch2,
doctest) and their sources where a build fetches them (``/usr/src/googletest``).

What each suite packages (``apt-cache policy`` on the base images):

=========  =====  =======  =====  ======  ==========  ======  =======  ======
suite      gcc    CMake    Ninja  Meson   GoogleTest  Catch2  doctest  ccache
=========  =====  =======  =====  ======  ==========  ======  =======  ======
bookworm   12.2   3.25.1   1.11   1.0.1   1.12.1      2.13    2.4.9    4.7.5
trixie     14.2   3.31.6   1.12   1.7.0   1.16.0      3.7.1   2.4.11   4.11.2
forky      16.1   4.3.4    1.13   1.12.1  1.18.0      3.7.1   2.5.3    4.14.2
=========  =====  =======  =====  ======  ==========  ======  =======  ======

An image is known by its gcc's major (``12``); CMake 4 refuses a project whose
``cmake_minimum_required`` is older than 3.5 unless told the policy version to use
(``CMAKE_POLICY_VERSION_MINIMUM``), which the recipe says where it must.
"""

from __future__ import annotations

from streams.evaluation.recipes.languages import ToolchainImages, debian_install_steps

# Debian suite -> the gcc its package installs (oldest suite first)
DEBIAN_GCC_RELEASE = {"bookworm": "12.2", "trixie": "14.2", "forky": "16.1"}
DEBIAN_GCC = {suite: version.split(".")[0] for suite, version in DEBIAN_GCC_RELEASE.items()}
SUITE_OF_GCC = {gcc: suite for suite, gcc in DEBIAN_GCC.items()}
DEBIAN_CMAKE = {"bookworm": "3.25.1", "trixie": "3.31.6", "forky": "4.3.4"}
# the compiler cache: in the host's package cache (``image_builds.PACKAGE_CACHE_MOUNT``, mounted
# while an image builds), so a repository's next PR, and the next gcc image tried, compile only
# what changed; a test run, which has no such mount, keeps its objects in its container
CCACHE_DIR = "/var/cache/swe-stream/ccache"

CXX_IMAGES = ToolchainImages(
    prefix="swe-stream/cxx",
    label="org.swe-stream.gcc",
    by_suite=DEBIAN_GCC,
    steps=debian_install_steps(
        "gcc g++ make cmake ninja-build meson pkg-config autoconf automake libtool ccache "
        "googletest libgtest-dev libgmock-dev catch2 doctest-dev",
        "gcc --version && cmake --version && ninja --version && meson --version",
    ),
    environment=(
        ("CCACHE_DIR", CCACHE_DIR),
        ("CMAKE_GENERATOR", "Ninja"),
        ("CMAKE_C_COMPILER_LAUNCHER", "ccache"),
        ("CMAKE_CXX_COMPILER_LAUNCHER", "ccache"),
    ),
    note="every CMake build compiles through ccache, whose cache is the host's package cache",
)
