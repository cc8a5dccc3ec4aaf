"""A real GH Archive look-alike on 127.0.0.1, serving the fixture hours, with fault injection.

``gharchive_server`` yields a :class:`FakeGHArchive`: ``.base_url`` is where it listens, every
request is recorded in ``.requests`` and faults are set per test::

    gharchive_server.drop("2015-01-01-0", after=65536, times=1)  # cut the body short
    gharchive_server.fail("2015-01-01-0", status=503, times=2)   # answer 503 twice
    gharchive_server.unpublish("2015-01-01-1")                    # 404 until publish()
    gharchive_server.range_support = False                        # ignore Range headers
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from streams.offline.local_http import LocalServer, running

_RANGE_RE = re.compile(r"bytes=(\d+)-(\d*)")
LAST_MODIFIED = formatdate(1420070400, usegmt=True)  # 2015-01-01T00:00:00Z


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    range: str | None
    if_range: str | None


class FakeGHArchive:
    """State of the fake server: files, faults and the requests it saw (thread-safe)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = {self.path(name): data for name, data in files.items()}
        self.requests: list[RecordedRequest] = []
        self.range_support = True
        self.base_url = ""  # set once listening
        self._lock = threading.Lock()
        self._drops: dict[str, tuple[int, int]] = {}  # path -> (bytes to send, times left)
        self._failures: dict[str, tuple[int, int]] = {}  # path -> (status, times left)
        self._unpublished: set[str] = set()

    @staticmethod
    def path(name: str) -> str:
        """URL path of an hour (``2015-01-01-0``), a file name, or a path."""
        if name.startswith("/"):
            return name
        return f"/{name}" if name.endswith(".gz") else f"/{name}.json.gz"

    def url(self, name: str) -> str:
        return f"{self.base_url}{self.path(name)}"

    def add(self, name: str, data: bytes) -> None:
        with self._lock:
            self.files[self.path(name)] = data

    def data(self, name: str) -> bytes:
        return self.files[self.path(name)]

    @staticmethod
    def etag(data: bytes) -> str:
        return f'"{hashlib.sha256(data).hexdigest()[:16]}"'

    # faults -------------------------------------------------------------------------------

    def drop(self, name: str, *, after: int, times: int = 1) -> None:
        """For the next ``times`` GETs: full headers, ``after`` body bytes, then a closed socket."""
        with self._lock:
            self._drops[self.path(name)] = (after, times)

    def fail(self, name: str, *, status: int = 503, times: int = 1) -> None:
        """Answer the next ``times`` requests (GET or HEAD) with ``status``."""
        with self._lock:
            self._failures[self.path(name)] = (status, times)

    def unpublish(self, name: str) -> None:
        """404 for this hour until :meth:`publish`."""
        with self._lock:
            self._unpublished.add(self.path(name))

    def publish(self, name: str) -> None:
        with self._lock:
            self._unpublished.discard(self.path(name))

    # inspection ---------------------------------------------------------------------------

    def requests_for(self, name: str, method: str | None = None) -> list[RecordedRequest]:
        path = self.path(name)
        with self._lock:
            return [r for r in self.requests if r.path == path and method in (None, r.method)]

    # used by the handler ------------------------------------------------------------------

    def _take(self, faults: dict[str, tuple[int, int]], path: str) -> int | None:
        with self._lock:
            value, times = faults.get(path, (0, 0))
            if times <= 0:
                return None
            faults[path] = (value, times - 1)
            return value

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _lookup(self, path: str) -> bytes | None:
        with self._lock:
            return None if path in self._unpublished else self.files.get(path)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def _plain(
        self, status: int, text: str, head: bool, extra: dict[str, str] | None = None
    ) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _serve(self, head: bool) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        range_header = self.headers.get("Range")
        fake._record(
            RecordedRequest(self.command, path, range_header, self.headers.get("If-Range"))
        )
        status = fake._take(fake._failures, path)
        if status is not None:
            self._plain(status, f"injected {status}\n", head)
            return
        data = fake._lookup(path)
        if data is None:
            self._plain(404, "not found\n", head)
            return

        etag = fake.etag(data)
        total = len(data)
        start, end, code = 0, total - 1, 200
        match = _RANGE_RE.fullmatch(range_header or "")
        if_range = self.headers.get("If-Range")
        if fake.range_support and match and if_range in (None, etag, LAST_MODIFIED):
            start = int(match[1])
            end = min(int(match[2]), total - 1) if match[2] else total - 1
            if start >= total or end < start:
                self._plain(416, "range not satisfiable\n", head, {"Content-Range": f"*/{total}"})
                return
            code = 206
        body = data[start : end + 1]

        self.send_response(code)
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", LAST_MODIFIED)
        if fake.range_support:
            self.send_header("Accept-Ranges", "bytes")
        if code == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        self.end_headers()
        if head:
            return
        cut = fake._take(fake._drops, path)
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)


@pytest.fixture
def gharchive_server(fixtures_dir: Path) -> Iterator[FakeGHArchive]:
    """A fresh GH Archive look-alike per test, serving ``fixtures/gharchive/*.json.gz``."""
    files = {p.name: p.read_bytes() for p in sorted((fixtures_dir / "gharchive").glob("*.json.gz"))}
    fake = FakeGHArchive(files)
    server = LocalServer(_Handler, fake)
    fake.base_url = server.base_url
    with running(server, "fake-gharchive"):
        yield fake
