"""Which Debian packages give what a C/C++ build finds: CMake's ``find_package`` names and
pkg-config modules, as Debian ships them (its ``-dev`` packages, as ``apt-file`` would find the
``Find<Name>.cmake`` / ``<name>-config.cmake`` / ``<module>.pc`` they install).

What the toolchain images already hold (GoogleTest, Catch2, doctest, Threads, the compilers'
OpenMP) needs nothing. A name not listed is not guessed (a package Debian does not have fails
the whole image's install): the recipe's notes say it, for a person or the set-up agent.
"""

from __future__ import annotations

# find_package name (as written; matched without case) -> Debian packages; () for a package
# the images have (or CMake itself provides)
FIND_PACKAGE: dict[str, tuple[str, ...]] = {
    "threads": (), "gtest": (), "googletest": (), "gmock": (), "catch2": (), "doctest": (),
    "openmp": (), "pkgconfig": (), "python": ("python3-dev",), "python3": ("python3-dev",),
    "pythoninterp": (), "pythonlibs": ("python3-dev",), "perl": (), "git": (),
    "zlib": ("zlib1g-dev",), "bzip2": ("libbz2-dev",), "liblzma": ("liblzma-dev",),
    "zstd": ("libzstd-dev",), "lz4": ("liblz4-dev",), "snappy": ("libsnappy-dev",),
    "openssl": ("libssl-dev",), "curl": ("libcurl4-openssl-dev",),
    "boost": ("libboost-all-dev",), "eigen3": ("libeigen3-dev",), "fmt": ("libfmt-dev",),
    "spdlog": ("libspdlog-dev",), "nlohmann_json": ("nlohmann-json3-dev",),
    "benchmark": ("libbenchmark-dev",), "protobuf": ("libprotobuf-dev", "protobuf-compiler"),
    "grpc": ("libgrpc++-dev", "protobuf-compiler-grpc"), "sqlite3": ("libsqlite3-dev",),
    "png": ("libpng-dev",), "jpeg": ("libjpeg-dev",), "tiff": ("libtiff-dev",),
    "freetype": ("libfreetype-dev",), "expat": ("libexpat1-dev",), "libxml2": ("libxml2-dev",),
    "iconv": (), "intl": (), "gettext": ("gettext",), "bison": ("bison",), "flex": ("flex",),
    "doxygen": ("doxygen",), "yaml-cpp": ("libyaml-cpp-dev",), "tbb": ("libtbb-dev",),
    "glib": ("libglib2.0-dev",), "libuv": ("libuv1-dev",), "libevent": ("libevent-dev",),
    "pcre2": ("libpcre2-dev",), "readline": ("libreadline-dev",), "curses": ("libncurses-dev",),
    "x11": ("libx11-dev",), "opengl": ("libgl-dev",), "sdl2": ("libsdl2-dev",),
    "lapack": ("liblapack-dev",), "blas": ("libblas-dev",), "gsl": ("libgsl-dev",),
    "hdf5": ("libhdf5-dev",), "mpi": ("libopenmpi-dev",), "cli11": ("libcli11-dev",),
    "range-v3": ("librange-v3-dev",), "ms-gsl": ("libmsgsl-dev",), "pugixml": ("libpugixml-dev",),
    "tinyxml2": ("libtinyxml2-dev",), "rapidjson": ("rapidjson-dev",), "cjson": ("libcjson-dev",),
    "jsoncpp": ("libjsoncpp-dev",), "libarchive": ("libarchive-dev",), "gmp": ("libgmp-dev",),
    "mpfr": ("libmpfr-dev",), "cmocka": ("libcmocka-dev",), "check": ("check",),
    "cunit": ("libcunit1-dev",), "unity": (), "microsoft.gsl": ("libmsgsl-dev",),
    "absl": ("libabsl-dev",), "re2": ("libre2-dev",), "glog": ("libgoogle-glog-dev",),
    "gflags": ("libgflags-dev",), "libffi": ("libffi-dev",), "uuid": ("uuid-dev",),
    "libssh2": ("libssh2-1-dev",), "mbedtls": ("libmbedtls-dev",), "utf8proc": ("libutf8proc-dev",),
}  # fmt: skip

# pkg-config module (without its version condition) -> Debian packages
PKG_CONFIG: dict[str, tuple[str, ...]] = {
    "glib-2.0": ("libglib2.0-dev",), "gio-2.0": ("libglib2.0-dev",),
    "gobject-2.0": ("libglib2.0-dev",), "gtk+-3.0": ("libgtk-3-dev",), "zlib": ("zlib1g-dev",),
    "openssl": ("libssl-dev",), "libssl": ("libssl-dev",), "libcrypto": ("libssl-dev",),
    "libcurl": ("libcurl4-openssl-dev",), "sqlite3": ("libsqlite3-dev",),
    "libpcre2-8": ("libpcre2-dev",), "cmocka": ("libcmocka-dev",), "check": ("check",),
    "cunit": ("libcunit1-dev",), "gtest": (), "gmock": (), "catch2": (), "doctest": (),
    "uuid": ("uuid-dev",), "ncurses": ("libncurses-dev",), "x11": ("libx11-dev",),
    "libxml-2.0": ("libxml2-dev",), "expat": ("libexpat1-dev",), "jansson": ("libjansson-dev",),
    "libuv": ("libuv1-dev",), "libevent": ("libevent-dev",), "yaml-0.1": ("libyaml-dev",),
    "fmt": ("libfmt-dev",), "libzstd": ("libzstd-dev",), "liblzma": ("liblzma-dev",),
}  # fmt: skip


def packages_for(found: list[str], modules: list[str]) -> tuple[list[str], list[str]]:
    """The Debian packages for ``found`` (find_package names) and ``modules`` (pkg-config
    modules, a version condition after them dropped: ``glib-2.0>=2.50``), and the names no
    package is known for."""
    packages: list[str] = []
    unknown: list[str] = []
    for name in found:
        known = FIND_PACKAGE.get(name.lower())
        if known is None:
            unknown.append(name)
            continue
        packages += [p for p in known if p not in packages]
    for written in modules:
        module = written.split(">", 1)[0].split("<", 1)[0].split("=", 1)[0].strip()
        if not module or "${" in module:
            continue
        known = PKG_CONFIG.get(module.lower())
        if known is None:
            unknown.append(module)
            continue
        packages += [p for p in known if p not in packages]
    return packages, unknown
