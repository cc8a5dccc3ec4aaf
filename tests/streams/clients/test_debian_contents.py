"""Which Debian package holds a file: a suite's Contents-amd64 and Contents-all read from an
archive on 127.0.0.1 serving recorded lines of the real ones, kept in a SQLite file, read again once
it is older than its age (a 304 keeps it), an old one serving while the archive is down."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.clients.debian_contents import ContentsUnavailable, DebianContents, Holder, kept
from tests.fakes.debian_archive import debian_archive

pytestmark = pytest.mark.unit


def test_the_files_a_build_looks_for_and_their_packages(tmp_path: Path) -> None:
    with debian_archive() as archive:
        contents = DebianContents(archive.mirror, tmp_path)
        found = contents.holders(
            "bookworm",
            [
                "zlib.h",
                "usr/include/zlib.h",
                "curl/curl.h",
                "copyright",
                "x.h",
                "doctest/doctest.h",
            ],
        )
    assert found["zlib.h"] == [
        Holder("usr/include/Poco/zlib.h", ("libpoco-dev",)),
        Holder("usr/include/zlib.h", ("zlib1g-dev",)),
    ]
    assert found["usr/include/zlib.h"] == [Holder("usr/include/zlib.h", ("zlib1g-dev",))]
    assert found["curl/curl.h"] == [
        Holder(
            "usr/include/x86_64-linux-gnu/curl/curl.h",
            ("libcurl4-gnutls-dev", "libcurl4-nss-dev", "libcurl4-openssl-dev"),
        )
    ]
    assert found["copyright"] == [] and found["x.h"] == []  # documentation is not kept
    # a header-only library is an architecture-independent package: Contents-all's alone
    assert found["doctest/doctest.h"] == [Holder("usr/include/doctest/doctest.h", ("doctest-dev",))]
    assert archive.served == [
        ("/debian/dists/bookworm/main/Contents-amd64.gz", 200),
        ("/debian/dists/bookworm/main/Contents-all.gz", 200),
    ]


def test_a_list_is_read_again_when_old_and_an_old_one_serves_while_the_archive_is_down(
    tmp_path: Path,
) -> None:
    with debian_archive() as archive:
        fresh = DebianContents(archive.mirror, tmp_path)
        fresh.holders("bookworm", ["zlib.pc"])
        fresh.holders("bookworm", ["zlib.pc"])  # within a day: not asked again
        stale = DebianContents(archive.mirror, tmp_path, max_age_seconds=0)
        assert stale.holders("bookworm", ["zlib.pc"])["zlib.pc"][0].packages == ("zlib1g-dev",)
        lists = [f"/debian/dists/bookworm/main/Contents-{arch}.gz" for arch in ("amd64", "all")]
        assert archive.served == [
            (lists[0], 200),
            (lists[1], 200),
            (lists[0], 304),
            (lists[1], 304),
        ]
        with pytest.raises(ContentsUnavailable, match="sid's file list could not be read"):
            fresh.holders("sid", ["zlib.pc"])  # the archive has no such list: 404
        down = archive.mirror
    # the archive is gone: the list on disk serves, a suite never read cannot be had
    offline = DebianContents(down, tmp_path, max_age_seconds=0)
    assert offline.holders("bookworm", ["zlib.pc"])["zlib.pc"][0].packages == ("zlib1g-dev",)
    with pytest.raises(ContentsUnavailable):
        offline.holders("trixie", ["zlib.pc"])


@pytest.mark.parametrize(
    ("path", "wanted"),
    [
        ("usr/include/zlib.h", True),
        ("usr/lib/x86_64-linux-gnu/cmake/fmt/fmt-config.cmake", True),
        ("usr/lib/x86_64-linux-gnu/pkgconfig/zlib.pc", True),
        ("usr/lib/x86_64-linux-gnu/libz.so", True),
        ("usr/lib/x86_64-linux-gnu/libz.so.1", False),
        ("usr/bin/doxygen", True),
        ("usr/bin/x/y", False),
        ("usr/share/doc/zlib1g-dev/copyright", False),
        ("usr/share/zsh/functions/config.pc", False),
    ],
)
def test_only_the_files_a_build_looks_for_are_kept(path: str, wanted: bool) -> None:
    assert kept(path) is wanted
