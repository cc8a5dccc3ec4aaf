"""What the local look-alike servers share: a threaded HTTP server on 127.0.0.1 that keeps
quiet about clients hanging up, run in a daemon thread for the length of a ``with`` block."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LocalServer(ThreadingHTTPServer):
    """``fake`` is the server's state, shared with its request handlers."""

    daemon_threads = True

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], fake: Any, host: str = "127.0.0.1"
    ) -> None:
        super().__init__((host, 0), handler)
        self.fake = fake
        self.requests = 0  # requests its handler counted (tests count calls to a service)
        self._count_lock = threading.Lock()

    def count_request(self) -> None:
        with self._count_lock:
            self.requests += 1

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up mid-body (timeouts, dropped connections) are part of tests


@contextlib.contextmanager
def running(server: LocalServer, name: str) -> Iterator[LocalServer]:
    """Serve until the block ends, then shut down and close the socket."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
