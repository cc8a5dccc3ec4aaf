"""Which Debian package holds a file, as ``apt-file`` answers it: each suite's
``dists/<suite>/main/Contents-amd64.gz`` and ``Contents-all.gz`` (every file of every package:
``path  section/pkg,...``; the architecture-independent packages, header-only libraries such
as doctest's and nlohmann/json's, are in the second list alone) read once a day from the
archive (``docker.debian_mirror``) into a SQLite file per suite.

Only the files a build looks for are kept (about 300,000 of a suite's 1.6 million lines):
headers (``usr/include/...``), CMake package files (``<Name>Config.cmake``,
``<name>-config.cmake``), pkg-config modules (``.pc``), shared libraries' link names
(``lib<name>.so``) and programs (``usr/bin``). A file is asked for by the end of its path
(``zlib.h``, ``openssl/ssl.h``, ``ZLIBConfig.cmake``): the answer is every path that ends so,
with the packages holding it. Which one a build wants is the caller's decision.

Many threads and processes share one directory: a suite's index is written to a temporary
file and renamed into place, and one thread of a process reads the archive at a time.
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from email.utils import formatdate
from pathlib import Path
from typing import NamedTuple

import httpx

log = logging.getLogger("swe_stream.debian")

DEFAULT_MIRROR = "http://deb.debian.org/debian"
CONTENTS = ("dists/{suite}/main/Contents-amd64.gz", "dists/{suite}/main/Contents-all.gz")
MAX_AGE_SECONDS = 86_400.0  # the archive publishes a suite's lists a few times a day
TIMEOUT_SECONDS = 120.0
_SCHEMA = 2  # the index's layout (2: with Contents-all): an older file is read again
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
        ``suite`` whose path ends so (``usr/include/zlib.h``) and their packages. Raises
        ``ContentsUnavailable`` when the suite's list cannot be had."""
        wanted = list(dict.fromkeys(end.strip("/") for end in ends if end.strip("/")))
        index = self.index(suite)
        found: dict[str, list[Holder]] = {}
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as db:
            for end in wanted:
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

    def index(self, suite: str) -> Path:
        """Blocking: the SQLite file of ``suite``'s list, read from the archive when it is
        missing or older than ``max_age_seconds`` (an old one serves while the archive does not
        answer)."""
        path = self.directory / f"{suite}-main-amd64.v{_SCHEMA}.sqlite"
        with self._lock:
            if _age(path) < self.max_age_seconds:
                return path
            try:
                self._refresh(suite, path)
            except (httpx.HTTPError, OSError, EOFError, sqlite3.Error) as error:
                if path.exists():
                    log.warning("Debian %s's file list not refreshed (%s): the old one serves",
                                suite, error)  # fmt: skip
                    return path
                raise ContentsUnavailable(
                    f"Debian {suite}'s file list could not be read from {self.mirror}: {error}"
                ) from error
        return path

    def _refresh(self, suite: str, path: Path) -> None:
        urls = [f"{self.mirror}/{contents.format(suite=suite)}" for contents in CONTENTS]
        self.directory.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with (
            httpx.Client(
                transport=self._transport, timeout=TIMEOUT_SECONDS, follow_redirects=True
            ) as client,
            contextlib.ExitStack() as downloads,
        ):
            if path.exists():  # the archive answers 304 when nothing changed since
                since = formatdate(path.stat().st_mtime, usegmt=True)
                if all(_unchanged(client, url, since) for url in urls):
                    os.utime(path)
                    return
            files = []
            for url in urls:
                download = downloads.enter_context(
                    tempfile.NamedTemporaryFile(dir=self.directory, suffix=".gz")
                )
                with client.stream("GET", url) as response:
                    response.raise_for_status()
                    for chunk in response.iter_bytes(1 << 20):
                        download.write(chunk)
                download.flush()
                files.append(Path(download.name))
            count = _write_index(files, path)
        log.info("Debian %s's file list read: %d files kept in %.1f s",
                 suite, count, time.monotonic() - started)  # fmt: skip


def _unchanged(client: httpx.Client, url: str, since: str) -> bool:
    """Whether the archive says the file at ``url`` is unchanged since ``since`` (its body
    is not read when it has changed)."""
    with client.stream("GET", url, headers={"If-Modified-Since": since}) as response:
        if response.status_code == 304:
            return True
        response.raise_for_status()
        return False


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def _write_index(contents: Sequence[Path], path: Path) -> int:
    """Writes the kept lines of the gzip files ``contents`` to a new SQLite file, renamed to
    ``path`` once whole; the number of files kept."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, suffix=".sqlite")
    os.close(fd)
    try:
        with sqlite3.connect(temporary) as db:
            db.execute("CREATE TABLE files (name TEXT, path TEXT, packages TEXT)")
            for listed in contents:
                with gzip.open(listed, "rt", encoding="utf-8", errors="replace") as lines:
                    db.executemany("INSERT INTO files VALUES (?, ?, ?)", contents_lines(lines))
            db.execute("CREATE INDEX files_by_name ON files (name)")
            count = int(db.execute("SELECT count(*) FROM files").fetchone()[0])
        db.close()
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return count
