"""Which Debian package holds a file, as ``apt-file`` answers it: each suite's
``dists/<suite>/main/Contents-amd64.gz`` and ``Contents-all.gz`` (every file of every package:
``path  section/pkg,...``; the architecture-independent packages, header-only libraries such
as doctest's and nlohmann/json's, are in the second list alone) read once a day from the
archive (``docker.debian_mirror``) into a SQLite file per list. The second list, three times
the first's size, is read only when a file asked for is not in the first.

Only the files a build looks for are kept (about 300,000 of a suite's 1.6 million lines):
headers (``usr/include/...``), CMake package files (``<Name>Config.cmake``,
``<name>-config.cmake``), pkg-config modules (``.pc``), shared libraries' link names
(``lib<name>.so``) and programs (``usr/bin``). A file is asked for by the end of its path
(``zlib.h``, ``openssl/ssl.h``, ``ZLIBConfig.cmake``): the answer is every path that ends so,
with the packages holding it. Which one a build wants is the caller's decision.

Many threads and processes share one directory: an index is written to a temporary file and
renamed into place, and one thread of all of them reads a list from the archive at a time (a
lock file beside it), so that a list is downloaded once, not once per process.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import logging
import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from email.utils import formatdate
from pathlib import Path
from typing import NamedTuple

import httpx

from streams.core.locks import file_lock

log = logging.getLogger("swe_stream.debian")

DEFAULT_MIRROR = "http://deb.debian.org/debian"
CONTENTS = "dists/{suite}/main/Contents-{architecture}.gz"
# amd64's packages, then the architecture-independent ones (header-only libraries)
ARCHITECTURES = ("amd64", "all")
ARCH_TRIPLET = "x86_64-linux-gnu"  # the file lists read are amd64's
MAX_AGE_SECONDS = 86_400.0  # the archive publishes a suite's lists a few times a day
TIMEOUT_SECONDS = 120.0
_SCHEMA = 1  # the index's layout: an older file is read again from the archive
_KEPT_NAMES = ("Config.cmake", "-config.cmake", ".pc")


class ContentsUnavailable(RuntimeError):
    """A suite's file list could neither be read from the archive nor found on disk."""


class Holder(NamedTuple):
    """A file of the archive and the packages that ship it."""

    path: str
    packages: tuple[str, ...]


def default_directory() -> Path:
    """Where the indexes live unless a setting says: the user's cache (``XDG_CACHE_HOME``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "swe-stream" / "debian-contents"


def kept(path: str) -> bool:
    """Whether a path of the archive is one a build may look for."""
    name = path.rsplit("/", 1)[-1]
    if path.startswith("usr/include/"):
        return True
    if path.startswith("usr/bin/"):
        return path.count("/") == 2
    if path.startswith("bin/"):
        return path.count("/") == 1
    if name.endswith(_KEPT_NAMES):
        return "/cmake/" in path or "/pkgconfig/" in path or path.startswith("usr/share/cmake")
    return name.startswith("lib") and name.endswith(".so") and path.startswith(("usr/lib", "lib"))


# where a native build looks (the compiler's, pkg-config's, CMake's and the linker's paths)
_NATIVE_ROOTS = ("usr/include/", "usr/lib/", "usr/lib64/", "usr/share/", "usr/bin/", "bin/", "lib/")


def native(path: str) -> bool:
    """Whether a file of the archive is one a native amd64 build finds: not a cross
    compiler's tree (``usr/x86_64-w64-mingw32/lib/pkgconfig/zlib.pc``, ``usr/lib/gcc-cross``)
    nor another architecture's (``usr/lib/i386-linux-gnu``), which only that target reads."""
    if not path.startswith(_NATIVE_ROOTS):
        return False
    parts = path.split("/")
    under_lib = parts[2] if parts[0] == "usr" and parts[1] == "lib" and len(parts) > 3 else ""
    return under_lib == ARCH_TRIPLET or not ("-linux-" in under_lib or "cross" in under_lib)


def contents_lines(lines: Iterable[str]) -> Iterator[tuple[str, str, str]]:
    """(name, path, packages) of each kept line of a Contents file: ``path  sec/pkg,sec/pkg2``
    (the path may hold spaces; the packages are the last word), packages without sections."""
    for line in lines:
        parts = line.rstrip("\n").rsplit(None, 1)
        if len(parts) != 2 or not kept(parts[0]):
            continue
        path, located = parts
        packages = ",".join(item.rsplit("/", 1)[-1] for item in located.split(","))
        yield path.rsplit("/", 1)[-1], path, packages


class DebianContents:
    """The file lists of Debian suites, read from ``mirror`` into ``directory``."""

    def __init__(
        self,
        mirror: str = DEFAULT_MIRROR,
        directory: Path | None = None,
        max_age_seconds: float = MAX_AGE_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.mirror = mirror.rstrip("/")
        self.directory = directory or default_directory()
        self.max_age_seconds = max_age_seconds
        self._transport = transport
        self._lock = threading.Lock()

    def holders(self, suite: str, ends: Sequence[str]) -> dict[str, list[Holder]]:
        """Blocking: for each path end asked (``zlib.h``, ``openssl/ssl.h``), the files of
        ``suite`` whose path ends so (``usr/include/zlib.h``) and their packages. The
        architecture-independent list (three times the other's size) is read only for the
        ends no native file of amd64's list has. Raises ``ContentsUnavailable`` when a list
        needed cannot be had."""
        wanted = list(dict.fromkeys(end.strip("/") for end in ends if end.strip("/")))
        found = _lookup(self.index(suite, ARCHITECTURES[0]), wanted)
        missing = [end for end in wanted if not any(native(h.path) for h in found[end])]
        if missing:
            for end, more in _lookup(self.index(suite, ARCHITECTURES[1]), missing).items():
                found[end] = sorted(found[end] + more)
        return found

    def index(self, suite: str, architecture: str = ARCHITECTURES[0]) -> Path:
        """Blocking: the SQLite file of ``suite``'s list of ``architecture`` (``amd64``,
        ``all``), read from the archive when it is missing or older than
        ``max_age_seconds`` (an old one serves while the archive does not answer). One
        thread of all processes sharing the directory reads a list at a time; the others
        then find it fresh."""
        path = self.directory / f"{suite}-main-{architecture}.v{_SCHEMA}.sqlite"
        if _age(path) < self.max_age_seconds:
            return path
        with self._lock, file_lock(path.with_suffix(".lock")):
            if _age(path) < self.max_age_seconds:
                return path
            try:
                self._refresh(CONTENTS.format(suite=suite, architecture=architecture), path)
            except (httpx.HTTPError, OSError, EOFError, sqlite3.Error) as error:
                if path.exists():
                    log.warning("Debian %s's %s file list not refreshed (%s): the old one serves",
                                suite, architecture, error)  # fmt: skip
                    return path
                raise ContentsUnavailable(
                    f"Debian {suite}'s file list could not be read from {self.mirror}: {error}"
                ) from error
        return path

    def _refresh(self, contents: str, path: Path) -> None:
        url = f"{self.mirror}/{contents}"
        started = time.monotonic()
        headers = {}
        if path.exists():  # the archive answers 304 when nothing changed since
            headers["If-Modified-Since"] = formatdate(path.stat().st_mtime, usegmt=True)
        with (
            httpx.Client(
                transport=self._transport, timeout=TIMEOUT_SECONDS, follow_redirects=True
            ) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            if response.status_code == 304:
                os.utime(path)
                return
            response.raise_for_status()
            with tempfile.NamedTemporaryFile(dir=self.directory, suffix=".gz") as download:
                for chunk in response.iter_bytes(1 << 20):
                    download.write(chunk)
                download.flush()
                count = _write_index(Path(download.name), path)
        log.info("Debian %s read: %d files kept in %.1f s",
                 contents, count, time.monotonic() - started)  # fmt: skip


def _lookup(index: Path, ends: Sequence[str]) -> dict[str, list[Holder]]:
    found: dict[str, list[Holder]] = {}
    with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as db:
        for end in ends:
            rows = db.execute(
                "SELECT path, packages FROM files WHERE name = ? ORDER BY path",
                (end.rsplit("/", 1)[-1],),
            ).fetchall()
            found[end] = [
                Holder(path, tuple(packages.split(",")))
                for path, packages in rows
                if path == end or path.endswith("/" + end)
            ]
    return found


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def _write_index(contents: Path, path: Path) -> int:
    """Writes the kept lines of the gzip file ``contents`` to a new SQLite file, renamed to
    ``path`` once whole; the number of files kept."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, suffix=".sqlite")
    os.close(fd)
    try:
        with sqlite3.connect(temporary) as db:
            db.execute("CREATE TABLE files (name TEXT, path TEXT, packages TEXT)")
            with gzip.open(contents, "rt", encoding="utf-8", errors="replace") as lines:
                db.executemany("INSERT INTO files VALUES (?, ?, ?)", contents_lines(lines))
            db.execute("CREATE INDEX files_by_name ON files (name)")
            count = int(db.execute("SELECT count(*) FROM files").fetchone()[0])
        db.close()
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return count


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m streams.clients.debian_contents SUITE ...``: read both file lists of each
    suite into the cache now (a set-up step, so that the first build does not wait on them);
    1 when one cannot be had."""
    parser = argparse.ArgumentParser(
        prog="python -m streams.clients.debian_contents",
        description="Read Debian suites' file lists (Contents-amd64, Contents-all) into the cache.",
    )
    parser.add_argument("suites", nargs="+", help="Debian suites (bookworm, trixie, ...)")
    parser.add_argument("--mirror", default=DEFAULT_MIRROR, help="the Debian archive's URL")
    parser.add_argument("--directory", type=Path, default=None, help="the cache's directory")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    contents = DebianContents(args.mirror, args.directory)
    failed = 0
    for suite in args.suites:
        for architecture in ARCHITECTURES:
            try:
                index = contents.index(suite, architecture)
            except ContentsUnavailable as error:
                log.error("%s", error)
                failed = 1
                continue
            print(f"{suite} {architecture}: {index} ({_age(index):.0f} s old)", flush=True)
    return failed


if __name__ == "__main__":
    sys.exit(main())
