"""A Unix-socket proxy in front of the Docker engine that a test can cut and restore.

A worker given ``DOCKER_HOST=unix://<proxy.path>`` reaches the real engine through it; other
tests, which use the engine's own socket, are not touched. ``cut()`` closes every connection
(streams in flight end mid-way, as when dockerd goes away) and removes the socket, so new
connections fail; ``restore()`` listens again. The request lines seen (method and path) let a
test cut at a chosen moment, e.g. the first ``exec`` of a validation.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
import time
from pathlib import Path

ENGINE_SOCKET = "/var/run/docker.sock"
REQUEST_LINE = re.compile(rb"(GET|POST|PUT|DELETE|HEAD) (/[^ \r\n]*) HTTP/1\.[01]\r\n")


class DockerSocketProxy:
    def __init__(self, path: Path, upstream: str = ENGINE_SOCKET):
        self.path = path
        self.upstream = upstream
        self.requests: list[tuple[float, str, str]] = []  # (time, method, path)
        self.cuts: list[tuple[float, float | None]] = []  # (cut at, restored at)
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.restore()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    # -- the switch ----------------------------------------------------------------------------

    def cut(self) -> None:
        """Close every connection and stop listening: the engine is gone."""
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._connections = self._connections, set()
            self.cuts.append((time.monotonic(), None))
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                connection.close()

    def restore(self) -> None:
        """Listen again: the engine is back."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        listener.listen(64)
        with self._lock:
            self._listener = listener
            if self.cuts and self.cuts[-1][1] is None:
                self.cuts[-1] = (self.cuts[-1][0], time.monotonic())
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        self.cut()

    # -- what went through ---------------------------------------------------------------------

    def seen(self, method: str, path_pattern: str) -> int:
        """How many requests matched ``method`` and the regex ``path_pattern``."""
        pattern = re.compile(path_pattern)
        with self._lock:
            return sum(1 for _, m, p in self.requests if m == method and pattern.search(p))

    def wait_for(self, method: str, path_pattern: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.seen(method, path_pattern) == 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} {path_pattern} in {timeout:.0f} s")
            time.sleep(0.05)

    # -- the pumps -----------------------------------------------------------------------------

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed by cut()
                return
            engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                engine.connect(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    engine.close()
                    return
                self._connections.update((client, engine))
            threading.Thread(target=self._pump, args=(client, engine, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(engine, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, from_client: bool) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if from_client:
                    self._note(data)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    end.close()
            with self._lock:
                self._connections.discard(source)
                self._connections.discard(target)

    def _note(self, data: bytes) -> None:
        found = [(m[1].decode(), m[2].decode()) for m in REQUEST_LINE.finditer(data)]
        if found:
            now = time.monotonic()
            with self._lock:
                self.requests.extend((now, method, path) for method, path in found)
