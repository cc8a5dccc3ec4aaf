"""The GH Archive client against a real HTTP server on 127.0.0.1 serving the fixture hours."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from streams.clients.gharchive import (
    DownloadError,
    GHArchiveClient,
    HourNotPublished,
    HourSource,
    hour_name,
    hour_url,
    hours_between,
    parse_hour,
    resolve_sources,
    sources_for_hours,
)
from streams.offline.local_http import LocalServer, running
from tests.fakes.gharchive_server import FakeGHArchive

pytestmark = pytest.mark.unit

HOURS = ("2015-01-01-0", "2015-01-01-1")
CHUNK = 64 * 1024


def client_for(server: FakeGHArchive, **options: float) -> GHArchiveClient:
    settings: dict[str, float] = {"backoff_seconds": 0.01, "max_backoff_seconds": 0.05}
    settings.update(options)
    unknown = set(settings) - {"backoff_seconds", "max_backoff_seconds", "max_attempts"}
    assert not unknown, f"client_for does not pass {unknown}"
    return GHArchiveClient(
        server.base_url,
        timeout=10.0,
        chunk_size=CHUNK,
        max_attempts=int(settings.pop("max_attempts", 5)),
        backoff_seconds=settings.pop("backoff_seconds"),
        max_backoff_seconds=settings.pop("max_backoff_seconds"),
    )


def source(server: FakeGHArchive, hour: str) -> HourSource:
    return sources_for_hours([hour], server.base_url)[0]


async def download(client: GHArchiveClient, src: HourSource) -> bytes:
    chunks = [chunk async for chunk in client.stream(src)]
    assert all(0 < len(chunk) <= client.chunk_size for chunk in chunks)
    return b"".join(chunks)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------------ download


@pytest.mark.parametrize("hour", HOURS)
async def test_full_download_equals_the_file(
    gharchive_server: FakeGHArchive, fixtures_dir: Path, hour: str
) -> None:
    expected = (fixtures_dir / "gharchive" / f"{hour}.json.gz").read_bytes()
    async with client_for(gharchive_server) as client:
        data = await download(client, source(gharchive_server, hour))
    assert sha(data) == sha(expected)
    assert client.stats.requests == 1
    assert client.stats.retries == client.stats.resumes == 0
    assert client.stats.bytes_received == len(expected)
    [request] = gharchive_server.requests_for(hour)
    assert request.method == "GET" and request.range is None


async def test_dropped_connection_is_resumed_with_a_range_request(
    gharchive_server: FakeGHArchive,
) -> None:
    hour = HOURS[0]
    cut = 16 * CHUNK  # a whole number of chunks: every byte before the cut reaches the consumer
    gharchive_server.drop(hour, after=cut, times=1)
    async with client_for(gharchive_server) as client:
        data = await download(client, source(gharchive_server, hour))
    assert sha(data) == sha(gharchive_server.data(hour))
    first, second = gharchive_server.requests_for(hour)
    assert first.range is None
    assert second.range == f"bytes={cut}-"
    assert second.if_range == FakeGHArchive.etag(gharchive_server.data(hour))
    assert (client.stats.requests, client.stats.retries, client.stats.resumes) == (2, 1, 1)
    assert client.stats.bytes_received == len(data)


async def test_repeated_drops_at_odd_offsets_resume_without_repeating_a_byte(
    gharchive_server: FakeGHArchive,
) -> None:
    hour = HOURS[1]
    gharchive_server.drop(hour, after=100_003, times=3)  # each response cut 100,003 bytes in
    async with client_for(gharchive_server) as client:
        data = await download(client, source(gharchive_server, hour))
    assert sha(data) == sha(gharchive_server.data(hour))
    requests = gharchive_server.requests_for(hour)
    assert len(requests) == 4
    starts = [int(r.range.removeprefix("bytes=").rstrip("-")) for r in requests[1:] if r.range]
    assert len(starts) == 3 and starts == sorted(starts) and 0 < starts[0] <= 100_003
    assert client.stats.resumes == 3


async def test_503_twice_then_success(gharchive_server: FakeGHArchive) -> None:
    hour = HOURS[0]
    gharchive_server.fail(hour, status=503, times=2)
    async with client_for(gharchive_server) as client:
        data = await download(client, source(gharchive_server, hour))
    assert data == gharchive_server.data(hour)
    requests = gharchive_server.requests_for(hour, "GET")
    assert len(requests) == 3 and all(r.range is None for r in requests)
    assert (client.stats.retries, client.stats.resumes) == (2, 0)


async def test_404_is_hour_not_published_without_retries(gharchive_server: FakeGHArchive) -> None:
    async with client_for(gharchive_server) as client:
        with pytest.raises(HourNotPublished, match="2015-01-02-0"):
            await download(client, source(gharchive_server, "2015-01-02-0"))
    assert len(gharchive_server.requests_for("2015-01-02-0")) == 1
    assert client.stats.retries == 0


async def test_an_hour_becomes_available_once_published(gharchive_server: FakeGHArchive) -> None:
    hour = HOURS[1]
    gharchive_server.unpublish(hour)
    async with client_for(gharchive_server) as client:
        assert not await client.exists(hour)
        with pytest.raises(HourNotPublished):
            await download(client, source(gharchive_server, hour))
        gharchive_server.publish(hour)
        assert await client.exists(hour)
        assert await download(client, source(gharchive_server, hour)) == gharchive_server.data(hour)


async def test_retries_give_up_with_url_status_and_attempts(
    gharchive_server: FakeGHArchive,
) -> None:
    hour = HOURS[0]
    gharchive_server.fail(hour, status=503, times=10)
    async with client_for(gharchive_server, max_attempts=3) as client:
        with pytest.raises(DownloadError) as caught:
            await download(client, source(gharchive_server, hour))
    message = str(caught.value)
    assert gharchive_server.url(hour) in message and "503" in message and "3 attempt" in message
    assert len(gharchive_server.requests_for(hour)) == 3


async def test_other_4xx_fails_at_once(gharchive_server: FakeGHArchive) -> None:
    hour = HOURS[0]
    gharchive_server.fail(hour, status=403, times=5)
    async with client_for(gharchive_server) as client:
        with pytest.raises(DownloadError, match="403"):
            await download(client, source(gharchive_server, hour))
    assert len(gharchive_server.requests_for(hour)) == 1


async def test_no_range_server_dropping_before_any_byte_restarts_from_zero(
    gharchive_server: FakeGHArchive,
) -> None:
    hour = HOURS[1]
    gharchive_server.range_support = False
    gharchive_server.drop(hour, after=0, times=1)
    async with client_for(gharchive_server) as client:
        data = await download(client, source(gharchive_server, hour))
    assert sha(data) == sha(gharchive_server.data(hour))
    requests = gharchive_server.requests_for(hour)
    assert len(requests) == 2 and all(r.range is None for r in requests)
    assert (client.stats.retries, client.stats.resumes) == (1, 0)


async def test_no_range_server_dropping_mid_file_requires_a_restart(
    gharchive_server: FakeGHArchive,
) -> None:
    hour = HOURS[0]
    gharchive_server.range_support = False
    gharchive_server.drop(hour, after=4 * CHUNK, times=1)
    received = bytearray()
    async with client_for(gharchive_server) as client:
        with pytest.raises(DownloadError, match="restart required"):
            async for chunk in client.stream(source(gharchive_server, hour)):
                received += chunk
    assert 0 < len(received) <= 4 * CHUNK
    assert bytes(received) == gharchive_server.data(hour)[: len(received)]
    assert len(gharchive_server.requests_for(hour)) == 1  # no pointless retry


async def test_a_server_ignoring_the_range_it_advertised_requires_a_restart(
    gharchive_server: FakeGHArchive,
) -> None:
    hour = HOURS[0]
    gharchive_server.drop(hour, after=4 * CHUNK, times=1)
    async with client_for(gharchive_server) as client:
        with pytest.raises(DownloadError, match="restart required"):
            async for _ in client.stream(source(gharchive_server, hour)):
                gharchive_server.range_support = False  # the retry gets a full 200
    first, second = gharchive_server.requests_for(hour)
    assert first.range is None and second.range == f"bytes={4 * CHUNK}-"


async def test_a_body_shorter_than_its_content_length_is_resumed() -> None:
    """Through the transport hook: a response that ends early without a protocol error."""
    data = bytes(range(256)) * 40
    seen: list[str | None] = []

    async def body(part: bytes) -> AsyncIterator[bytes]:
        yield part  # a streamed body, as a network transport gives (bytes would be pre-read)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("range"))
        common = {"Accept-Ranges": "bytes", "ETag": '"v1"'}
        if request.headers.get("range") is None:
            headers = {**common, "Content-Length": str(len(data))}
            return httpx.Response(200, headers=headers, content=body(data[:1000]))
        start = int(request.headers["range"].removeprefix("bytes=").rstrip("-"))
        assert request.headers["if-range"] == '"v1"'
        range_ = {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}
        length = {"Content-Length": str(len(data) - start)}
        return httpx.Response(
            206, headers={**common, **range_, **length}, content=body(data[start:])
        )

    client = GHArchiveClient(
        "http://gharchive.test", backoff_seconds=0.01, transport=httpx.MockTransport(handler)
    )
    async with client:
        got = await download(client, sources_for_hours(["2015-01-01-0"], client.base_url)[0])
    assert got == data
    assert seen == [None, "bytes=1000-"]
    assert client.stats.resumes == 1


async def test_retries_are_logged_without_credentials(
    gharchive_server: FakeGHArchive, caplog: pytest.LogCaptureFixture
) -> None:
    hour = HOURS[0]
    gharchive_server.fail(hour, status=503, times=1)
    base = gharchive_server.base_url.replace("http://", "http://user:s3cret@")
    caplog.set_level(logging.WARNING, logger="swe_stream.gharchive")
    async with client_for(gharchive_server) as client:
        data = await download(client, sources_for_hours([hour], base)[0])
    assert data == gharchive_server.data(hour)
    [record] = [r for r in caplog.records if r.name == "swe_stream.gharchive"]
    assert "503" in record.getMessage() and "1/5" in record.getMessage()
    assert "s3cret" not in caplog.text and "Authorization" not in caplog.text


async def test_a_consumer_may_stop_early(gharchive_server: FakeGHArchive) -> None:
    async with client_for(gharchive_server) as client:
        stream = client.stream(source(gharchive_server, HOURS[0]))
        first = await anext(stream)
        await stream.aclose()
    assert first == gharchive_server.data(HOURS[0])[:CHUNK]


async def test_http_needs_an_open_client(gharchive_server: FakeGHArchive) -> None:
    client = client_for(gharchive_server)
    with pytest.raises(RuntimeError, match="async with"):
        await download(client, source(gharchive_server, HOURS[0]))


async def test_file_sources_stream_in_chunks_without_a_network_client(
    fixtures_dir: Path,
) -> None:
    path = fixtures_dir / "gharchive" / "2015-01-01-1.json.gz"
    [src] = resolve_sources([str(path)], "http://unused.test")
    assert src == HourSource(name="2015-01-01-1", url=path.resolve().as_uri(), hour="2015-01-01-1")
    client = GHArchiveClient("http://unused.test", chunk_size=CHUNK)
    data = await download(client, src)
    assert sha(data) == sha(path.read_bytes())
    assert client.stats.bytes_received == len(data) and client.stats.requests == 0
    missing = HourSource(name="x", url=(path.parent / "nope.json.gz").as_uri(), hour=None)
    with pytest.raises(FileNotFoundError):
        await download(client, missing)


# ------------------------------------------------------------------------------------ discovery


async def test_exists_and_latest_hours(gharchive_server: FakeGHArchive) -> None:
    now = datetime(2015, 1, 1, 3, 10, tzinfo=UTC)
    async with client_for(gharchive_server) as client:
        assert await client.exists("2015-01-01-0")
        assert await client.exists("2015-01-01-1")
        assert not await client.exists("2015-01-01-2")
        assert await client.latest_hours(2, now=now) == ["2015-01-01-0", "2015-01-01-1"]
        assert await client.latest_hours(1, now=now) == ["2015-01-01-1"]
        assert await client.latest_hours(3, now=now.replace(hour=2, tzinfo=None)) == [
            "2014-12-31-23",
            "2015-01-01-0",
            "2015-01-01-1",
        ]
        with pytest.raises(HourNotPublished, match="3 hours"):
            await client.latest_hours(1, now=datetime(2015, 1, 2, 9, tzinfo=UTC), search_back=3)
        with pytest.raises(ValueError):
            await client.latest_hours(0, now=now)
    heads = [r.path for r in gharchive_server.requests if r.method == "HEAD"]
    assert heads[3:5] == ["/2015-01-01-2.json.gz", "/2015-01-01-1.json.gz"]


async def test_exists_retries_5xx(gharchive_server: FakeGHArchive) -> None:
    gharchive_server.fail(HOURS[0], status=502, times=2)
    async with client_for(gharchive_server) as client:
        assert await client.exists(HOURS[0])
    assert len(gharchive_server.requests_for(HOURS[0], "HEAD")) == 3
    assert client.stats.retries == 2


# ------------------------------------------------------------------------------------ sources


def test_resolve_sources_files_globs_dirs_and_urls(tmp_path: Path) -> None:
    day = tmp_path / "day"
    day.mkdir()
    for name in ("2015-01-01-10.json.gz", "2015-01-01-2.json.gz", "notes.json.gz", "x.txt"):
        (day / name).write_bytes(b"gz")
    other = tmp_path / "other.json.gz"
    other.write_bytes(b"gz")
    base = "https://data.gharchive.org"

    by_dir = resolve_sources([str(day)], base)
    assert [s.name for s in by_dir] == ["2015-01-01-2", "2015-01-01-10", "notes.json.gz"]
    assert [s.hour for s in by_dir] == ["2015-01-01-2", "2015-01-01-10", None]
    assert all(s.url.startswith("file:///") for s in by_dir)

    mixed = resolve_sources(
        [
            str(day / "2015-*.json.gz"),
            (day / "2015-01-01-2.json.gz").as_uri(),  # the same file again, as a URL
            str(other),
            f"{base}/2015-01-01-0.json.gz",
            str(day),
        ],
        base,
    )
    assert [s.name for s in mixed] == [
        "2015-01-01-0",
        "2015-01-01-2",
        "2015-01-01-10",
        "notes.json.gz",
        "other.json.gz",
    ]
    assert len({s.url for s in mixed}) == len(mixed)
    assert mixed[0] == HourSource(
        name="2015-01-01-0", url=f"{base}/2015-01-01-0.json.gz", hour="2015-01-01-0"
    )
    assert mixed[-1].url == other.resolve().as_uri()

    assert resolve_sources([f"file://{day}"], base) == by_dir

    for missing in (
        str(tmp_path / "nope.json.gz"),
        str(tmp_path / "*.json"),
        f"file://{tmp_path}/z",
    ):
        with pytest.raises(FileNotFoundError, match=r"nope|json|z"):
            resolve_sources([str(other), missing], base)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="empty"):
        resolve_sources([str(empty)], base)


def test_sources_for_hours() -> None:
    sources = sources_for_hours(["2015-01-01-5", "2015-01-01T05", "2015-01-01T23"], "http://h/x/")
    assert sources == [
        HourSource("2015-01-01-5", "http://h/x/2015-01-01-5.json.gz", "2015-01-01-5"),
        HourSource("2015-01-01-23", "http://h/x/2015-01-01-23.json.gz", "2015-01-01-23"),
    ]


# ------------------------------------------------------------------------------------ hours


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-01-01T00", datetime(2025, 1, 1, 0, tzinfo=UTC)),
        ("2025-01-01T5", datetime(2025, 1, 1, 5, tzinfo=UTC)),
        ("2025-01-01T05:00", datetime(2025, 1, 1, 5, tzinfo=UTC)),
        ("2025-01-01T23:00:00Z", datetime(2025, 1, 1, 23, tzinfo=UTC)),
        ("2025-01-01-5", datetime(2025, 1, 1, 5, tzinfo=UTC)),
        ("2025-01-01-23", datetime(2025, 1, 1, 23, tzinfo=UTC)),
        ("2024-02-29-0", datetime(2024, 2, 29, 0, tzinfo=UTC)),
    ],
)
def test_parse_hour(text: str, expected: datetime) -> None:
    parsed = parse_hour(text)
    assert parsed == expected and parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    ["", "2025-01-01", "2025-01-01T24", "2025-01-01-24", "2025-13-01T00", "2023-02-29-0",
     "2025-01-01T05:30", "2025-01-01T5h", "yesterday", "2025-1-1T5"],
)  # fmt: skip
def test_parse_hour_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid hour"):
        parse_hour(text)


def test_hour_names_urls_and_ranges() -> None:
    assert hour_name(datetime(2025, 1, 1, 5, 59, tzinfo=UTC)) == "2025-01-01-5"
    assert hour_name(datetime(2025, 1, 1, 5)) == "2025-01-01-5"
    assert hour_url("https://data.gharchive.org/", "2025-01-01-5") == (
        "https://data.gharchive.org/2025-01-01-5.json.gz"
    )
    first = datetime(2014, 12, 31, 22, 30, tzinfo=UTC)
    assert hours_between(first, datetime(2015, 1, 1, 1, tzinfo=UTC)) == [
        "2014-12-31-22",
        "2014-12-31-23",
        "2015-01-01-0",
        "2015-01-01-1",
    ]
    assert hours_between(first, first) == ["2014-12-31-22"]
    assert len(hours_between(datetime(2024, 2, 28), datetime(2024, 3, 1, 23))) == 72
    with pytest.raises(ValueError, match="before"):
        hours_between(datetime(2015, 1, 1, 1, tzinfo=UTC), datetime(2015, 1, 1, 0, tzinfo=UTC))


# ------------------------------------------------------------------------------------ Retry-After


class _RetryAfterState:
    """What the Retry-After server answers: ``faults`` (status, Retry-After) first, then
    ``data``; it records the method of every request it saw."""

    def __init__(self, data: bytes, faults: list[tuple[int, str]]) -> None:
        self.data = data
        self.faults = list(faults)
        self.seen: list[str] = []
        self.lock = threading.Lock()
        self.base_url = ""  # set once listening


class _RetryAfterHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _answer(self, head: bool) -> None:
        state: _RetryAfterState = self.server.fake
        with state.lock:
            state.seen.append(self.command)
            fault = state.faults.pop(0) if state.faults else None
        status, retry_after = fault if fault is not None else (200, None)
        body = f"busy ({status})\n".encode() if fault is not None else state.data
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        if not head:
            self.wfile.write(body)


@contextlib.contextmanager
def retry_after_server(data: bytes, faults: list[tuple[int, str]]) -> Iterator[_RetryAfterState]:
    """A real HTTP server on 127.0.0.1 whose failures carry a ``Retry-After`` header (the
    shared GH Archive fake answers failures without one)."""
    state = _RetryAfterState(data, faults)
    server = LocalServer(_RetryAfterHandler, state)
    with running(server, "fake-retry-after"):
        state.base_url = server.base_url
        yield state


class RecordedSleeps:
    """The client's injectable sleep: records each wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.mark.parametrize("status", [503, 429])
async def test_an_http_date_retry_after_makes_the_download_wait(status: int) -> None:
    data = bytes(range(256)) * 8
    when = formatdate(time.time() + 30, usegmt=True)
    with retry_after_server(data, [(status, when)]) as server:
        sleeps = RecordedSleeps()
        client = GHArchiveClient(
            server.base_url,
            backoff_seconds=0.01,
            max_backoff_seconds=60.0,
            sleep=sleeps,
        )
        async with client:
            got = await download(client, sources_for_hours(["2015-01-01-0"], client.base_url)[0])
    assert got == data
    assert server.seen == ["GET", "GET"]
    [wait] = sleeps.waits
    # the date is whole seconds, 30 s ahead of a moment a little before the client read it
    assert 28.0 <= wait <= 30.0, wait


async def test_a_retry_after_is_capped_by_max_backoff_seconds() -> None:
    with retry_after_server(b"x", [(503, "3600")]) as server:
        sleeps = RecordedSleeps()
        client = GHArchiveClient(
            server.base_url,
            backoff_seconds=0.01,
            max_backoff_seconds=5.0,
            sleep=sleeps,
        )
        async with client:
            assert await client.exists("2015-01-01-0")
    assert sleeps.waits == [5.0]


@pytest.mark.parametrize("garbage", ["soon", "1.5e9x", ""])
async def test_a_garbage_retry_after_is_ignored(garbage: str) -> None:
    with retry_after_server(b"x", [(503, garbage)]) as server:
        sleeps = RecordedSleeps()
        client = GHArchiveClient(
            server.base_url,
            backoff_seconds=0.01,
            max_backoff_seconds=5.0,
            sleep=sleeps,
        )
        async with client:
            assert await client.exists("2015-01-01-0")
    [wait] = sleeps.waits
    assert 0.005 <= wait <= 0.01  # the plain first backoff
