"""A GitHub REST look-alike on 127.0.0.1 serving the real recordings, with fault injection.

It loads the betamax cassettes in ``fixtures/github_api/recorded/`` and answers each recorded
``GET`` with the recorded status, headers (``ETag``, ``X-RateLimit-*``, ``Content-Encoding``,
...) and body bytes (gzip as recorded); the newest recording wins when several share a URL.
``If-None-Match`` with the current ETag answers ``304`` as GitHub does. Tests add routes
(``add_json``) and faults, and read what was asked (``requests``)::

    github_server.fail("/repos/o/r/pulls/1", status=500, times=2)
    github_server.rate_limit("/repos/o/r/pulls/1", reset_in=3)   # 403, X-RateLimit-Remaining: 0
    github_server.delay("/repos/o/r/pulls/1", seconds=2)         # slower than the client's timeout
    github_server.chaos(rate=0.2, seed=7)   # 20% of all requests fail, each in one of FAULTS

Chaos (``tests.fakes.chaos``) draws per request, from the seed, the route and how often the
route was asked: ``http_5xx`` (500 / 502 / 503), ``timeout`` (no answer for ``delay`` s, longer
than the client's timeout), ``rate_limit`` (403, ``X-RateLimit-Remaining: 0``, reset ``reset_in`` s
ahead), ``secondary_rate_limit`` (403 with ``Retry-After``), ``drop`` (the connection closed
without an answer) and ``malformed_json`` (200 with a body cut short). Scripted faults come
first; ``.chaos(...).injected`` counts what was injected, per kind.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from agents.linked_issues import parse_linked_issues
from schemas import RawPullRequestEvent
from streams.offline.local_http import LocalServer, running
from tests.fakes.chaos import Chaos

# hop-by-hop or recomputed: never replayed from the recording
_SKIPPED_HEADERS = {"content-length", "transfer-encoding", "connection", "keep-alive"}


def route_key(path_and_query: str) -> str:
    """``/path?b=2&a=1`` -> ``/path?a=1&b=2``: recordings and requests compare equal."""
    parts = urlsplit(path_and_query)
    query = urlencode(sorted(parse_qsl(parts.query)))
    return f"{parts.path}?{query}" if query else parts.path


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""

    @property
    def etag(self) -> str | None:
        return next((v for k, v in self.headers if k.lower() == "etag"), None)


@dataclass(frozen=True)
class SeenRequest:
    path: str  # normalised path?query
    headers: dict[str, str]
    at: float  # epoch seconds when it arrived

    @property
    def if_none_match(self) -> str | None:
        return self.headers.get("if-none-match")


@dataclass
class _Fault:
    kind: str  # status / rate_limit / delay / drop
    times: int
    status: int = 500
    seconds: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


# the faults chaos injects (see the module's docstring)
FAULTS = (
    "http_5xx",
    "timeout",
    "rate_limit",
    "secondary_rate_limit",
    "drop",
    "malformed_json",
)


@dataclass(frozen=True)
class _ChaosTiming:
    delay: float  # "timeout": seconds before the connection is closed unanswered
    reset_in: float  # "rate_limit": the reset is this far ahead
    retry_after: int  # "secondary_rate_limit": Retry-After, in whole seconds as GitHub sends


def load_cassettes(directory: Path) -> dict[str, Answer]:
    """Every recorded JSON ``GET`` of the betamax cassettes, newest recording per route."""
    found: dict[str, tuple[str, Answer]] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            continue  # octokit fixtures have another format
        for interaction in data.get("http_interactions", []):
            request, response = interaction["request"], interaction["response"]
            accept = " ".join(_values(request["headers"].get("Accept", "")))
            if request["method"].upper() != "GET" or "diff" in accept or "patch" in accept:
                continue
            body_spec = response["body"]
            if body_spec.get("base64_string"):
                body = base64.b64decode(body_spec["base64_string"])
            else:
                body = (body_spec.get("string") or "").encode(body_spec.get("encoding") or "utf-8")
            headers = [
                (name, value)
                for name, values in response["headers"].items()
                if name.lower() not in _SKIPPED_HEADERS
                for value in _values(values)
            ]
            # newer betamax: status {code, message}; older: status_code
            status = response.get("status", {}).get("code", response.get("status_code"))
            answer = Answer(int(status), headers, body)
            key = route_key(urlsplit(request["uri"]).path + _query(request["uri"]))
            recorded_at = interaction.get("recorded_at", "")
            if key not in found or recorded_at >= found[key][0]:
                found[key] = (recorded_at, answer)
    return {key: answer for key, (_, answer) in found.items()}


def _values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _query(uri: str) -> str:
    query = urlsplit(uri).query
    return f"?{query}" if query else ""


class FakeGitHub:
    """State of the fake API (thread-safe): routes, faults and the requests it saw."""

    def __init__(self, routes: dict[str, Answer]):
        self.routes = dict(routes)
        self.requests: list[SeenRequest] = []
        self.base_url = ""  # set once listening
        self._faults: dict[str, list[_Fault]] = {}
        self._chaos: tuple[Chaos, _ChaosTiming] | None = None
        self._lock = threading.Lock()

    # routes ---------------------------------------------------------------------------------

    def add_json(
        self,
        path: str,
        data: Any,
        *,
        status: int = 200,
        etag: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        body = json.dumps(data).encode()
        etag = etag or f'W/"{hashlib.sha256(body).hexdigest()[:32]}"'
        all_headers = {
            "Content-Type": "application/json; charset=utf-8",
            "ETag": etag,
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Reset": str(int(time.time()) + 3600),
            **(headers or {}),
        }
        with self._lock:
            self.routes[route_key(path)] = Answer(status, list(all_headers.items()), body)

    # faults (each applies to the next `times` requests of the route) -------------------------

    def _add_fault(self, path: str, fault: _Fault) -> None:
        with self._lock:
            self._faults.setdefault(route_key(path), []).append(fault)

    def fail(
        self,
        path: str,
        *,
        status: int = 500,
        times: int = 1,
        headers: dict[str, str] | None = None,
        message: str = "injected failure",
    ) -> None:
        body = json.dumps({"message": message}).encode()
        self._add_fault(path, _Fault("status", times, status, headers=headers or {}, body=body))

    def rate_limit(self, path: str, *, reset_in: float, times: int = 1) -> float:
        """403 with ``X-RateLimit-Remaining: 0`` and a reset ``reset_in`` s ahead; returns it."""
        reset_at = int(time.time() + reset_in + 0.999)
        headers = {
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(reset_at),
            "X-RateLimit-Resource": "core",
        }
        body = json.dumps(
            {
                "message": "API rate limit exceeded for user ID 1.",
                "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
            }
        ).encode()
        self._add_fault(path, _Fault("status", times, 403, headers=headers, body=body))
        return float(reset_at)

    def delay(self, path: str, *, seconds: float, times: int = 1) -> None:
        self._add_fault(path, _Fault("delay", times, seconds=seconds))

    def chaos(
        self,
        rate: float = 0.2,
        seed: int = 0,
        *,
        kinds: tuple[str, ...] = FAULTS,
        delay: float = 2.0,
        reset_in: float = 1.0,
        retry_after: int = 1,
    ) -> Chaos:
        """From now on fail ``rate`` of the requests at random (see the module docstring);
        returns the ``Chaos`` whose ``injected`` counts the faults per kind."""
        unknown = sorted(set(kinds) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; known: {FAULTS}")
        chaos = Chaos(rate, seed, tuple(kinds))
        with self._lock:
            self._chaos = (chaos, _ChaosTiming(delay, reset_in, retry_after))
        return chaos

    def calm(self) -> None:
        """No more chaos (scripted faults stay)."""
        with self._lock:
            self._chaos = None

    # inspection -------------------------------------------------------------------------------

    def requests_for(self, path: str) -> list[SeenRequest]:
        key = route_key(path)
        with self._lock:
            return [r for r in self.requests if r.path == key]

    # used by the handler ----------------------------------------------------------------------

    def _take_fault(self, key: str) -> _Fault | None:
        with self._lock:
            faults = self._faults.get(key) or []
            while faults and faults[0].times <= 0:
                faults.pop(0)
            if not faults:
                return None
            faults[0].times -= 1
            return faults[0]

    def _seen(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _chaos_fault(self, key: str) -> tuple[str, Any, _ChaosTiming] | None:
        with self._lock:
            chaos = self._chaos
        if chaos is None:
            return None
        kind, rng = chaos[0].draw(key)
        return (kind, rng, chaos[1]) if kind is not None else None

    def _route(self, key: str) -> Answer | None:
        with self._lock:
            return self.routes.get(key)


# Routes for a whole GH Archive hour (tests and benchmarks): what GitHub would answer for each
# PR of the hour, built from the hour's full payloads (real data) plus synthetic file lists.
EXTENSIONS = {"Python": "py", "JavaScript": "js", "Java": "java", "Ruby": "rb", "Go": "go"}


def synthetic_files(pr: dict[str, Any]) -> list[dict[str, Any]]:
    count = max(1, int(pr.get("changed_files") or 1))
    additions = int(pr.get("additions") or 0)
    language = ((pr.get("base") or {}).get("repo") or {}).get("language") or "Python"
    ext = EXTENSIONS.get(language, "c")
    return [
        {
            "filename": f"src/module_{i}.{ext}",
            "status": "modified",
            "additions": additions // count + (1 if i < additions % count else 0),
            "deletions": 0,
            "changes": additions // count,
        }
        for i in range(count)
    ]


def serve_hour(server: FakeGitHub, events: list[RawPullRequestEvent]) -> None:
    """Routes for every PR of the (full) hour: PR, repository, files, linked issues."""
    for event in events:
        pr = event.pull_request
        if pr is None:
            continue
        server.add_json(f"/repos/{event.repo}/pulls/{event.number}", pr)
        server.add_json(f"/repos/{event.repo}", pr["base"]["repo"])
        server.add_json(
            f"/repos/{event.repo}/pulls/{event.number}/files?per_page=100", synthetic_files(pr)
        )
        for ref in parse_linked_issues(pr.get("body"), event.repo):
            server.add_json(
                f"/repos/{ref.repo}/issues/{ref.number}",
                {"number": ref.number, "title": f"issue {ref.number}", "body": "synthetic"},
            )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        fake = self.server.fake
        key = route_key(self.path)
        fake._seen(SeenRequest(key, {k.lower(): v for k, v in self.headers.items()}, time.time()))
        fault = fake._take_fault(key)
        if fault is not None and fault.kind == "delay":
            time.sleep(fault.seconds)
        elif fault is not None:
            self._send(
                Answer(
                    fault.status,
                    [("Content-Type", "application/json; charset=utf-8"), *fault.headers.items()],
                    fault.body,
                )
            )
            return
        elif (chaotic := fake._chaos_fault(key)) is not None:
            self._chaos(*chaotic)
            return
        answer = fake._route(key)
        if answer is None:
            body = json.dumps(
                {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            ).encode()
            self._send(Answer(404, [("Content-Type", "application/json; charset=utf-8")], body))
            return
        if answer.etag and self.headers.get("If-None-Match") == answer.etag:
            kept = [
                (k, v)
                for k, v in answer.headers
                if k.lower() in {"etag", "last-modified", "cache-control", "vary"}
                or k.lower().startswith("x-ratelimit")
            ]
            self._send(Answer(304, kept))
            return
        self._send(answer)

    def _chaos(self, kind: str, rng: Any, timing: _ChaosTiming) -> None:
        json_type = ("Content-Type", "application/json; charset=utf-8")
        if kind in ("timeout", "drop"):
            if kind == "timeout":
                time.sleep(timing.delay)  # the client gives up first
            self.close_connection = True  # hang up without a word
            return
        if kind == "http_5xx":
            status = rng.choice([500, 502, 503])
            body = json.dumps({"message": f"injected {status}"}).encode()
            self._send(Answer(status, [json_type], body))
        elif kind == "rate_limit":
            reset_at = int(time.time() + timing.reset_in + 0.999)
            headers = [
                json_type,
                ("X-RateLimit-Limit", "5000"),
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Reset", str(reset_at)),
                ("X-RateLimit-Resource", "core"),
            ]
            body = json.dumps({"message": "API rate limit exceeded for user ID 1."}).encode()
            self._send(Answer(403, headers, body))
        elif kind == "secondary_rate_limit":
            message = (
                "You have exceeded a secondary rate limit. Please wait a few minutes before "
                "you try again."
            )
            headers = [json_type, ("Retry-After", str(timing.retry_after))]
            self._send(Answer(403, headers, json.dumps({"message": message}).encode()))
        elif kind == "malformed_json":
            # a 200 whose body was cut short (a proxy or the network lost the rest)
            headers = [json_type, ("X-RateLimit-Remaining", "4999")]
            self._send(Answer(200, headers, b'{"id": 1, "number": 1, "title": "cut sh'))
        else:
            raise AssertionError(f"unknown fault {kind}")

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        for name, value in answer.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if answer.body and answer.status != 304:
            self.wfile.write(answer.body)


@contextlib.contextmanager
def serve_github(routes: dict[str, Answer]) -> Iterator[FakeGitHub]:
    """Run a fake GitHub API with ``routes`` until the block ends (tests and benchmarks)."""
    fake = FakeGitHub(routes)
    server = LocalServer(_Handler, fake)
    fake.base_url = server.base_url
    with running(server, "fake-github"):
        yield fake


@pytest.fixture
def github_server(fixtures_dir: Path) -> Iterator[FakeGitHub]:
    """A fresh GitHub look-alike per test, serving ``fixtures/github_api/recorded``."""
    with serve_github(load_cassettes(fixtures_dir / "github_api" / "recorded")) as fake:
        yield fake
