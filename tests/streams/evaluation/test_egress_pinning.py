"""The egress door pinned to the name it vetted, against a stand-in for a CDN: one address
(127.0.0.1) serving two sites, ``registry.test`` (allowed) and ``other.test`` (not), over plain
HTTP (by ``Host``) and TLS (by SNI, a certificate each). The proxy runs in this process on its
Unix socket; only the resolver and the private-address rule are swapped (so that both names
resolve to 127.0.0.1 and it may be reached), everything else is the program the container runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trustme

from streams.evaluation.egress_programs import proxy

pytestmark = pytest.mark.unit

ALLOWED, OTHER = "registry.test", "other.test"


@dataclass
class Cdn:
    """One address, two sites; what reached it."""

    http_port: int
    tls_port: int
    ca: trustme.CA
    requests: list[str] = field(default_factory=list)  # "METHOD path Host" of plain requests
    bodies: list[bytes] = field(default_factory=list)  # and their bodies
    tls_sites: list[str] = field(default_factory=list)  # the SNI of each TLS request served
    connections: list[int] = field(default_factory=list)  # bytes of each TLS-port connection


def _head(conn: Any) -> tuple[list[str], bytes]:
    """The request's head lines and its body (as long as its Content-Length says)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next((int(v) for n, _, v in (x.partition(":") for x in lines[1:])
                   if n.strip().lower() == "content-length"), 0)  # fmt: skip
    while len(body) < length and (chunk := conn.recv(4096)):
        body += chunk
    return lines, body


def _answer(conn: Any, site: str) -> None:
    body = f"site {site}".encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
    conn.sendall(body)


def _serve(listener: socket.socket, handle: Any) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn, contextlib.suppress(OSError, ssl.SSLError):
            handle(conn)


@pytest.fixture
def cdn() -> Iterator[Cdn]:
    ca = trustme.CA()
    contexts = {}
    for name in (ALLOWED, OTHER):
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(name).configure_cert(context)
        contexts[name] = context
    served = Cdn(0, 0, ca)

    names: list[str | None] = []  # the SNI of each handshake, in order (one thread serves)

    def pick(sock: ssl.SSLSocket, name: str | None, _: ssl.SSLContext) -> None:
        names.append(name)
        sock.context = contexts.get(name or "", contexts[ALLOWED])

    contexts[ALLOWED].sni_callback = pick

    def plain(conn: socket.socket) -> None:
        lines, body = _head(conn)
        served.bodies.append(body)
        host = next((v.strip() for n, _, v in (x.partition(":") for x in lines[1:])
                     if n.lower() == "host"), "")  # fmt: skip
        method, path, _ = lines[0].split(" ")
        served.requests.append(f"{method} {path} {host}")
        _answer(conn, host)

    def tls(conn: socket.socket) -> None:
        conn.settimeout(10)
        first = conn.recv(1, socket.MSG_PEEK)
        served.connections.append(len(first))
        if not first:
            return
        with contexts[ALLOWED].wrap_socket(conn, server_side=True) as secure:
            _head(secure)
            site = str(names[-1])
            served.tls_sites.append(site)
            _answer(secure, site)

    listeners = []
    for handler in (plain, tls):
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)
        threading.Thread(target=_serve, args=(listener, handler), daemon=True).start()
    served.http_port = listeners[0].getsockname()[1]
    served.tls_port = listeners[1].getsockname()[1]
    yield served
    for listener in listeners:
        listener.close()


@pytest.fixture
def door(cdn: Cdn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The proxy on a Unix socket, allowing ``registry.test`` on the CDN's two ports."""
    config = {
        "socket": str(tmp_path / "proxy.sock"),
        "log": str(tmp_path / "proxy.log"),
        "hosts": [ALLOWED],
        "ports": [cdn.http_port, cdn.tls_port],
        "trusted": [],
    }
    monkeypatch.setattr(proxy, "CONFIG", config)
    monkeypatch.setattr(proxy, "LOGGED", [0])

    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1"] if host in (ALLOWED, OTHER) else []

    monkeypatch.setattr(proxy, "resolve", resolve)
    monkeypatch.setattr(proxy, "refusal", lambda address, networks: None)
    loop = asyncio.new_event_loop()
    served = loop.create_task(proxy.serve())

    def run() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(served)
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    log = tmp_path / "proxy.log"
    deadline = time.monotonic() + 10
    while not (log.exists() and "ready" in log.read_text()):
        assert time.monotonic() < deadline and thread.is_alive(), "the proxy did not start"
        time.sleep(0.01)
    yield log
    loop.call_soon_threadsafe(served.cancel)
    thread.join(10)


def settled(values: list[int], count: int) -> list[int]:
    """``values`` once the CDN's thread has recorded ``count`` of them (or 10 s passed)."""
    deadline = time.monotonic() + 10
    while len(values) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return values


def through(door: Path, request: bytes) -> bytes:
    """What the door answers a raw request (everything until it closes)."""
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(20)
        conn.connect(str(door.parent / "proxy.sock"))
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def tunnel(door: Path, cdn: Cdn, sni: str | None) -> str:
    """A CONNECT to ``registry.test`` then TLS naming ``sni``: the site's answer, or the error."""
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(20)
        conn.connect(str(door.parent / "proxy.sock"))
        conn.sendall(f"CONNECT {ALLOWED}:{cdn.tls_port} HTTP/1.1\r\n\r\n".encode())
        status = b""
        while not status.endswith(b"\r\n\r\n"):
            status += conn.recv(1)
        assert status.startswith(b"HTTP/1.1 200"), status
        context = ssl.create_default_context()
        cdn.ca.configure_trust(context)
        context.check_hostname = sni is not None
        if sni is None:
            context.verify_mode = ssl.CERT_NONE
        try:
            with context.wrap_socket(conn, server_hostname=sni) as secure:
                secure.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = b""
                with contextlib.suppress(ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    while chunk := secure.recv(65536):
                        answer += chunk
                return answer.decode().rpartition("\r\n\r\n")[2]
        except (ssl.SSLError, OSError) as error:
            return f"error {error}"


def refusals(log: Path) -> list[str]:
    return [
        line.split(" ")[1] for line in log.read_text().splitlines() if line.startswith("refused")
    ]


def test_the_host_sent_on_is_the_vetted_name(door: Path, cdn: Cdn) -> None:
    url = f"http://{ALLOWED}:{cdn.http_port}/simple/six/"
    # no Host header, and the URL's own: both reach registry.test, named as the URL names it
    for extra in (b"", f"Host: {ALLOWED}:{cdn.http_port}\r\n".encode()):
        answer = through(door, f"GET {url} HTTP/1.1\r\n".encode() + extra + b"\r\n")
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert answer.endswith(f"site {ALLOWED}:{cdn.http_port}".encode())
    head = through(door, f"HEAD {url} HTTP/1.1\r\n\r\n".encode())
    assert head.startswith(b"HTTP/1.1 200"), head
    sent = f"/simple/six/ {ALLOWED}:{cdn.http_port}"
    assert cdn.requests == [f"GET {sent}", f"GET {sent}", f"HEAD {sent}"]
    assert refusals(door) == []


@pytest.mark.parametrize(
    ("request_text", "kind"),
    [
        ("GET {url} HTTP/1.1\r\nHost: other.test\r\n\r\n", "host_header_mismatch"),
        ("GET {url} HTTP/1.1\r\nHost: registry.test\r\nHost: other.test\r\n\r\n",
         "host_header_mismatch"),
        ("POST {url} HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "method_not_allowed"),
        ("PUT {url} HTTP/1.1\r\nContent-Length: 4\r\n\r\nsent", "method_not_allowed"),
        ("GET {url} HTTP/1.1\r\nContent-Length: 4\r\n\r\nsent", "request_body"),
        ("GET {url} HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nsent\r\n0\r\n\r\n",
         "request_body"),
        ("GET http://other.test:{port}/ HTTP/1.1\r\n\r\n", "host_not_allowed"),
    ],
    ids=["fronted-host", "two-hosts", "post", "put-upload", "get-body", "chunked-body",
         "other-site"],
)  # fmt: skip
def test_a_plain_request_to_another_site_or_with_a_body_is_refused(
    door: Path, cdn: Cdn, request_text: str, kind: str
) -> None:
    url = f"http://{ALLOWED}:{cdn.http_port}/upload"
    raw = request_text.format(url=url, port=cdn.http_port).encode()
    answer = through(door, raw)
    assert answer.startswith(b"HTTP/1.1 403 Forbidden (swe-stream egress: "), answer
    assert refusals(door) == [kind]
    assert cdn.requests == []  # nothing reached the CDN


def test_a_trusted_endpoint_takes_a_post_and_its_body_but_still_by_its_own_name(
    door: Path, cdn: Cdn
) -> None:
    """A model's API the user named (``trusted``): the calls are POSTs with a body."""
    proxy.CONFIG["trusted"] = [f"{ALLOWED}:{cdn.http_port}"]
    url = f"http://{ALLOWED}:{cdn.http_port}/v1/chat/completions"
    body = b'{"model": "m", "messages": []}'
    head = f"POST {url} HTTP/1.1\r\nContent-Length: {len(body)}\r\n"
    answer = through(door, head.encode() + b"\r\n" + body)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    assert cdn.requests == [f"POST /v1/chat/completions {ALLOWED}:{cdn.http_port}"]
    assert cdn.bodies == [body]
    fronted = through(door, f"{head}Host: {OTHER}\r\n\r\n".encode() + body)
    chunked = through(door, f"POST {url} HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
    assert fronted.startswith(b"HTTP/1.1 403") and chunked.startswith(b"HTTP/1.1 403")
    assert refusals(door) == ["host_header_mismatch", "request_body"]
    assert len(cdn.requests) == 1


def test_a_tunnel_naming_another_site_or_none_is_refused_before_any_byte_goes_on(
    door: Path, cdn: Cdn
) -> None:
    assert tunnel(door, cdn, ALLOWED) == f"site {ALLOWED}"  # the check can pass
    assert cdn.tls_sites == [ALLOWED] and cdn.connections == [1]
    fronted = tunnel(door, cdn, OTHER)
    assert "ACCESS_DENIED" in fronted.upper().replace(" ", "_"), fronted
    missing = tunnel(door, cdn, None)
    assert missing.startswith("error"), missing
    assert refusals(door) == ["sni_mismatch", "sni_missing"]
    # the refused tunnels' connections to the CDN carried no byte; no other site was served
    assert settled(cdn.connections, 3) == [1, 0, 0]
    assert cdn.tls_sites == [ALLOWED]


def test_a_tunnel_that_is_not_tls_is_refused(door: Path, cdn: Cdn) -> None:
    answer = through(
        door,
        f"CONNECT {ALLOWED}:{cdn.tls_port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: {OTHER}\r\n\r\n"
        .encode(),
    )  # fmt: skip
    assert answer == b"HTTP/1.1 200 Connection established\r\n\r\n"
    assert refusals(door) == ["not_tls"]
    assert settled(cdn.connections, 1) == [0] and cdn.tls_sites == []


@pytest.mark.parametrize("name", ["registry.test", "a" * 63 + ".example", "xn--bcher-kva.example"])
def test_the_server_name_is_read_from_a_real_client_hello(name: str) -> None:
    """Python's own ClientHello (TLS 1.3, key shares, many extensions), as a client sends it."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        client.do_handshake()
    records = outgoing.read()
    assert records[0] == proxy.TLS_HANDSHAKE
    handshake = records[5:]
    assert proxy.server_name(handshake) == name
    for cut in (0, 3, 40, len(handshake) // 2):  # truncated: an error or no name, never a wrong one
        with contextlib.suppress(ValueError, IndexError):
            assert proxy.server_name(handshake[:cut]) in (None, name)
