"""Which Debian package holds a file: a suite's Contents-amd64 and Contents-all read from an
archive on 127.0.0.1 serving recorded lines of the real ones, kept in a SQLite file, read again once
it is older than its age (a 304 keeps it), an old one serving while the archive is down."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from streams.clients.debian_contents import (
    ContentsUnavailable,
    DebianContents,
    Holder,
    kept,
    main,
)
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
        # zlib.pc is amd64's: the architecture-independent list is not read
        amd64 = "/debian/dists/bookworm/main/Contents-amd64.gz"
        assert archive.served == [(amd64, 200), (amd64, 304)]
        with pytest.raises(ContentsUnavailable, match="sid's file list could not be read"):
            fresh.holders("sid", ["zlib.pc"])  # the archive has no such list: 404
        down = archive.mirror
    # the archive is gone: the list on disk serves, a suite never read cannot be had
    offline = DebianContents(down, tmp_path, max_age_seconds=0)
    assert offline.holders("bookworm", ["zlib.pc"])["zlib.pc"][0].packages == ("zlib1g-dev",)
    with pytest.raises(ContentsUnavailable):
        offline.holders("trixie", ["zlib.pc"])


def test_processes_wanting_a_list_at_once_download_it_once(tmp_path: Path) -> None:
    with debian_archive() as archive:
        # two readers of one directory, each with its own lock in memory, as two processes are
        readers = [DebianContents(archive.mirror, tmp_path) for _ in range(2)]
        with ThreadPoolExecutor(2) as pool:
            answers = list(
                pool.map(lambda r: r.holders("bookworm", ["doctest/doctest.h"]), readers)
            )
    assert answers[0] == answers[1] and answers[0]["doctest/doctest.h"]
    assert sorted(archive.served) == [
        ("/debian/dists/bookworm/main/Contents-all.gz", 200),
        ("/debian/dists/bookworm/main/Contents-amd64.gz", 200),
    ]


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


def test_the_set_up_step_reads_both_lists_of_each_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with debian_archive() as archive:
        assert main(["bookworm", "--mirror", archive.mirror, "--directory", str(tmp_path)]) == 0
        assert main(["sid", "--mirror", archive.mirror, "--directory", str(tmp_path)]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in printed] == ["bookworm amd64", "bookworm all"]
    assert sorted(p.name for p in tmp_path.glob("*.sqlite")) == [
        "bookworm-main-all.v1.sqlite",
        "bookworm-main-amd64.v1.sqlite",
    ]
