"""A Debian archive on 127.0.0.1 serving recorded lines of real ``Contents-amd64`` and
``Contents-all`` files (``tests/data/debian/<suite>-Contents-<arch>.txt``, copied from
deb.debian.org) gzipped at ``/debian/dists/<suite>/main/Contents-<arch>.gz``, answering
``If-Modified-Since`` with 304 as the archive does, and counting what it served."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "debian"
PUBLISHED = 1_764_000_000.0  # when the recorded lists say they were published


class DebianArchive:
    def __init__(self) -> None:
        self.served: list[tuple[str, int]] = []  # (path, status) of each request
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    @property
    def mirror(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/debian"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        archive = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = archive.answer(self.path, self.headers.get("If-Modified-Since"))
                archive.served.append((self.path, status))
                self.send_response(status)
                self.send_header("Last-Modified", formatdate(PUBLISHED, usegmt=True))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def answer(self, path: str, since: str | None) -> tuple[int, bytes]:
        parts = path.strip("/").split("/")
        lists = {"Contents-amd64.gz": "Contents-amd64", "Contents-all.gz": "Contents-all"}
        if len(parts) != 5 or parts[:2] != ["debian", "dists"] or parts[3] != "main":
            return 404, b""
        recorded = DATA / f"{parts[2]}-{lists.get(parts[4], '-')}.txt"
        if not recorded.exists():
            return 404, b""
        if since is not None and parsedate_to_datetime(since).timestamp() >= PUBLISHED:
            return 304, b""
        return 200, gzip.compress(recorded.read_bytes())


@contextmanager
def debian_archive() -> Iterator[DebianArchive]:
    archive = DebianArchive()
    thread = threading.Thread(target=archive.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield archive
    finally:
        archive.server.shutdown()
        archive.server.server_close()
