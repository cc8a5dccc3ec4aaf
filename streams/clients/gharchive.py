"""The GH Archive client: where hours are, and a streaming, retrying, resuming download.

GH Archive publishes one gzip file of events per UTC hour at
``{base_url}/YYYY-MM-DD-H.json.gz`` (hour without a leading zero). This module names hours,
resolves what to read (hours, local files, globs, directories, URLs) into :class:`HourSource`
values, and downloads their *compressed* bytes as a stream of chunks. Decompression and
parsing live elsewhere.

Downloads over HTTP retry 5xx / 429 answers, timeouts, connection errors and bodies cut short,
with exponential backoff and jitter (``streams.clients.retry``; ``Retry-After``, seconds or an
HTTP date, is honoured up to ``max_backoff_seconds``). A retry after some bytes were already
handed to the consumer resumes with ``Range: bytes=<received>-`` (and ``If-Range``), so the
consumer sees one seamless byte stream, never a repeated byte. That is only possible when the
server supports ranges (it advertised ``Accept-Ranges: bytes`` or answered 206): without range
support, or when a server answers a range request with the full file, bytes already yielded
cannot be taken back and the download fails with :class:`DownloadError` (``restart
required``); the caller restarts the hour from scratch. A failure *before* any byte was yielded
is always retried from zero.
"""

from __future__ import annotations

import asyncio
import glob
import logging
import random
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import unquote, urlsplit, urlunsplit
from urllib.request import url2pathname

import httpx

from schemas.base import GHARCHIVE_HOUR_RE, gharchive_hour, parse_gharchive_hour
from streams.clients.retry import backoff_delay, retry_after

__all__ = [
    "DEFAULT_BASE_URL",
    "DownloadError",
    "GHArchiveClient",
    "GHArchiveStats",
    "HourNotPublished",
    "HourSource",
    "hour_name",
    "hour_url",
    "hours_between",
    "parse_hour",
    "resolve_sources",
    "sources_for_hours",
]

DEFAULT_BASE_URL = "https://data.gharchive.org"

log = logging.getLogger("swe_stream.gharchive")

_ONE_HOUR = timedelta(hours=1)
_RETRYABLE_STATUS = frozenset({408, 425, 429})
# ISO-ish hour: 2025-01-01T00, 2025-01-01T5, 2025-01-01T05:00, 2025-01-01T05:00:00Z
_ISO_HOUR_RE = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<hour>\d{1,2})"
    r"(?::(?P<minute>\d{2})(?::(?P<second>\d{2}))?)?(?P<tz>[Zz]|[+-]00:?00)?"
)
_LOOSE_NAME_RE = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-(?P<hour>\d{1,2})")
_FILE_HOUR_RE = re.compile(rf"(?P<stem>{GHARCHIVE_HOUR_RE.pattern})(?:\.json)?(?:\.gz)?")


class HourNotPublished(Exception):
    """The server answered 404 for an hour: it is not (yet) published."""


class DownloadError(Exception):
    """A download gave up: retries exhausted, a non-retryable status, or a restart is required."""


# --------------------------------------------------------------------------------------------
# hours


def parse_hour(text: str) -> datetime:
    """Parse an hour into an aware UTC datetime on the hour.

    Accepts ``2025-01-01T00``, ``2025-01-01T5`` (optionally ``:00``, ``:00:00``, ``Z``) and the
    GH Archive name ``2025-01-01-5``.
    """
    value = text.strip() if isinstance(text, str) else text
    if not isinstance(value, str):
        raise ValueError(f"invalid hour {text!r}: expected a string like '2025-01-01T05'")
    match = _ISO_HOUR_RE.fullmatch(value) or _LOOSE_NAME_RE.fullmatch(value)
    if match is None:
        raise ValueError(
            f"invalid hour {text!r}: expected 'YYYY-MM-DDTHH' (e.g. 2025-01-01T05) "
            "or a GH Archive hour name 'YYYY-MM-DD-H' (e.g. 2025-01-01-5)"
        )
    groups = match.groupdict()
    hour = int(groups["hour"])
    if hour > 23:
        raise ValueError(f"invalid hour {text!r}: hour {hour} is not in 0..23")
    if int(groups.get("minute") or 0) or int(groups.get("second") or 0):
        raise ValueError(f"invalid hour {text!r}: not on an hour boundary (minutes must be 00)")
    try:
        day = datetime.strptime(groups["date"], "%Y-%m-%d")
    except ValueError as exc:
        raise ValueError(f"invalid hour {text!r}: {exc}") from None
    return day.replace(hour=hour, tzinfo=UTC)


def hour_name(moment: datetime) -> str:
    """The GH Archive name of the hour containing ``moment``: ``2025-01-01-5`` (naive = UTC)."""
    return gharchive_hour(moment)


def _floor_hour(moment: datetime) -> datetime:
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.replace(minute=0, second=0, microsecond=0)


def hours_between(first: datetime, last: datetime) -> list[str]:
    """Names of every hour from ``first``'s to ``last``'s, both included (naive = UTC)."""
    start, end = _floor_hour(first), _floor_hour(last)
    if end < start:
        raise ValueError(f"last hour {hour_name(end)} is before first hour {hour_name(start)}")
    names = []
    while start <= end:
        names.append(hour_name(start))
        start += _ONE_HOUR
    return names


def hour_url(base_url: str, hour: str) -> str:
    """The download URL of a GH Archive hour name."""
    return f"{base_url.rstrip('/')}/{hour}.json.gz"


# --------------------------------------------------------------------------------------------
# sources


@dataclass(frozen=True)
class HourSource:
    """One file of GH Archive events to read."""

    name: str
    """The hour name (``2015-01-01-0``) when known, else the file's name."""
    url: str
    """``https://...``, ``http://...`` or ``file:///abs/path``."""
    hour: str | None
    """The GH Archive hour if the file name is one (``2015-01-01-0.json.gz``), else None."""


def _hour_of_file_name(file_name: str) -> str | None:
    match = _FILE_HOUR_RE.fullmatch(file_name)
    return match["stem"] if match else None


def _source_for_name(file_name: str, url: str) -> HourSource:
    hour = _hour_of_file_name(file_name)
    return HourSource(name=hour or file_name, url=url, hour=hour)


def _file_source(path: Path) -> HourSource:
    path = path.resolve()
    return _source_for_name(path.name, path.as_uri())


def _path_of_file_url(url: str) -> Path:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise ValueError(f"unsupported file URL {url!r}: only local files (file:///path)")
    return Path(url2pathname(unquote(parts.path)))


def _local_files(spec: str, path_text: str) -> list[Path]:
    if any(char in path_text for char in "*?["):
        matches = sorted(glob.glob(str(Path(path_text).expanduser()), recursive=True))
        files = [Path(match) for match in matches if Path(match).is_file()]
    else:
        path = Path(path_text).expanduser()
        if path.is_dir():
            files = sorted(p for p in path.glob("*.json.gz") if p.is_file())
        elif path.is_file():
            files = [path]
        else:
            files = []
    if not files:
        raise FileNotFoundError(f"no GH Archive file matches {spec!r}")
    return files


def _sort_key(source: HourSource) -> tuple[int, str, str]:
    if source.hour is not None:
        return (0, parse_gharchive_hour(source.hour).isoformat(), source.url)
    return (1, source.name, source.url)


def resolve_sources(specs: Sequence[str], base_url: str) -> list[HourSource]:
    """Turn command-line specs into sources.

    A spec is a local file, a glob (``dir/*.json.gz``, ``**`` allowed), a directory (every
    ``*.json.gz`` in it), a ``file://`` URL (same rules as a path) or an ``http(s)://`` URL.
    ``base_url`` is accepted for symmetry with :func:`sources_for_hours` (URLs are used as
    given). The result is de-duplicated by URL and sorted: hours chronologically first, then
    other files by name. A spec matching nothing raises :class:`FileNotFoundError` naming it.
    """
    del base_url  # specs are files or full URLs; hours go through sources_for_hours
    by_url: dict[str, HourSource] = {}
    for spec in specs:
        scheme = urlsplit(spec).scheme.lower()
        if scheme in ("http", "https"):
            file_name = unquote(urlsplit(spec).path.rstrip("/").rsplit("/", 1)[-1])
            found = [_source_for_name(file_name or spec, spec)]
        elif scheme == "file":
            found = [_file_source(p) for p in _local_files(spec, str(_path_of_file_url(spec)))]
        else:
            found = [_file_source(p) for p in _local_files(spec, spec)]
        for source in found:
            by_url.setdefault(source.url, source)
    return sorted(by_url.values(), key=_sort_key)


def sources_for_hours(hours: Sequence[str], base_url: str) -> list[HourSource]:
    """Sources of GH Archive hours under ``base_url``, in the order given, without repeats.

    Hours may be GH Archive names or anything :func:`parse_hour` accepts.
    """
    sources: list[HourSource] = []
    seen: set[str] = set()
    for text in hours:
        name = hour_name(parse_hour(text))
        if name not in seen:
            seen.add(name)
            sources.append(HourSource(name=name, url=hour_url(base_url, name), hour=name))
    return sources


# --------------------------------------------------------------------------------------------
# client


@dataclass
class GHArchiveStats:
    """Running counters of one client (exported as Prometheus metrics elsewhere)."""

    requests: int = 0
    """HTTP requests sent (GET and HEAD, retries included)."""
    retries: int = 0
    """Requests repeated after a retryable failure."""
    resumes: int = 0
    """Retries that continued a download with a Range request instead of starting over."""
    bytes_received: int = 0
    """Compressed bytes handed to consumers (from HTTP and file:// sources)."""


class _Retryable(Exception):
    """A failure worth another attempt (retryable status or a body cut short)."""

    def __init__(self, message: str, status: int | None = None, delay: float | None = None):
        super().__init__(message)
        self.status = status
        self.delay = delay


# what is worth another attempt: retryable answers, bodies cut short, timeouts, broken connections
_RETRY_ON = (_Retryable, httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def _redact(url: str) -> str:
    """The URL without user info, so credentials never reach logs or error messages."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _hint(response: httpx.Response) -> float | None:
    """The answer's ``Retry-After`` in seconds (number or HTTP date), None if absent or bad."""
    return retry_after(response.headers.get("retry-after"))


def _content_range_start(response: httpx.Response) -> int | None:
    match = re.fullmatch(
        r"\s*bytes\s+(\d+)-\d+/(?:\d+|\*)\s*", response.headers.get("content-range", "")
    )
    return int(match[1]) if match else None


class GHArchiveClient:
    """Streams GH Archive hours (compressed) over HTTP or from ``file://`` URLs.

    Use as ``async with GHArchiveClient(base_url) as client:``; the client owns one
    ``httpx.AsyncClient``. ``file://`` sources work without entering it.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 60.0,
        max_attempts: int = 5,
        backoff_seconds: float = 1.0,
        max_backoff_seconds: float = 30.0,
        chunk_size: int = 1 << 20,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self.chunk_size = chunk_size
        self.stats = GHArchiveStats()
        self._transport = transport
        self._sleep = sleep  # injectable: tests read the waits instead of sitting through them
        self._rng = rng or random.Random()
        self._client: httpx.AsyncClient | None = None
        self._open = False

    async def __aenter__(self) -> Self:
        self._open = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._open = False
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    @property
    def http(self) -> httpx.AsyncClient:
        """The HTTP client, made on first use: ``file://`` sources never pay for TLS set-up."""
        if not self._open:
            raise RuntimeError("GHArchiveClient is not open: use `async with GHArchiveClient(...)`")
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout),
                follow_redirects=True,
                transport=self._transport,
                # the bytes as stored: a .json.gz must never be re-encoded or decoded in transit
                headers={"Accept-Encoding": "identity", "User-Agent": "swe-stream"},
            )
        return self._client

    # ---------------------------------------------------------------------------- backoff

    def _delay(self, attempt: int, hint: float | None) -> float:
        """Exponential backoff, half fixed and half random, capped; honours Retry-After up to
        the same cap: a longer wait would stall ingest, and the hour is better restarted."""
        return backoff_delay(
            attempt, self.backoff_seconds, self.max_backoff_seconds, self._rng, hint=hint
        )

    async def _before_retry(self, what: str, url: str, attempt: int, exc: Exception) -> None:
        delay = self._delay(attempt, exc.delay if isinstance(exc, _Retryable) else None)
        self.stats.retries += 1
        log.warning(
            "%s %s failed (attempt %d/%d): %s; retrying in %.2fs",
            what,
            _redact(url),
            attempt,
            self.max_attempts,
            _describe(exc),
            delay,
        )
        await self._sleep(delay)

    def _gave_up(self, url: str, attempt: int, exc: Exception) -> DownloadError:
        status = exc.status if isinstance(exc, _Retryable) else None
        return DownloadError(
            f"giving up on {_redact(url)} after {attempt} attempt(s)"
            f" (last status {status if status is not None else 'none'}): {_describe(exc)}"
        )

    # ---------------------------------------------------------------------------- streaming

    async def stream(self, source: HourSource) -> AsyncGenerator[bytes, None]:
        """The compressed bytes of ``source``, in chunks of at most ``chunk_size``.

        Raises :class:`HourNotPublished` on 404 (not retried), :class:`DownloadError` when it
        gives up, and :class:`FileNotFoundError` for a missing ``file://`` source.
        """
        scheme = urlsplit(source.url).scheme.lower()
        if scheme == "file":
            async for chunk in self._stream_file(_path_of_file_url(source.url)):
                yield chunk
        elif scheme in ("http", "https"):
            async for chunk in self._stream_http(source.url):
                yield chunk
        else:
            raise ValueError(f"unsupported source URL {source.url!r}: expected http(s) or file")

    async def _stream_file(self, path: Path) -> AsyncIterator[bytes]:
        handle = await asyncio.to_thread(path.open, "rb")
        try:
            while chunk := await asyncio.to_thread(handle.read, self.chunk_size):
                self.stats.bytes_received += len(chunk)
                yield chunk
        finally:
            handle.close()

    async def _stream_http(self, url: str) -> AsyncIterator[bytes]:
        received = 0  # bytes already yielded to the consumer
        ranges = False  # the server said it serves byte ranges
        validator: str | None = None  # ETag (or Last-Modified) of the first response
        attempt = 0
        while True:
            attempt += 1
            headers: dict[str, str] = {}
            if received:
                headers["Range"] = f"bytes={received}-"
                if validator is not None:
                    headers["If-Range"] = validator
            self.stats.requests += 1
            try:
                async with self.http.stream("GET", url, headers=headers) as response:
                    status = response.status_code
                    if status == 404:
                        raise HourNotPublished(f"{_redact(url)} is not published (404)")
                    if status in _RETRYABLE_STATUS or status >= 500:
                        raise _Retryable(f"HTTP {status}", status, _hint(response))
                    if received and status != 206:
                        raise DownloadError(
                            f"{_redact(url)}: resuming at byte {received} got HTTP {status}"
                            " instead of 206 Partial Content (the server ignored the range or"
                            " the file changed); restart required"
                        )
                    if not received and status != 200:
                        raise DownloadError(
                            f"{_redact(url)}: HTTP {status} after {attempt} attempt(s)"
                        )
                    if received and _content_range_start(response) != received:
                        raise DownloadError(
                            f"{_redact(url)}: asked for bytes from {received}, got Content-Range"
                            f" {response.headers.get('content-range')!r}; restart required"
                        )
                    if (
                        status == 206
                        or "bytes" in response.headers.get("accept-ranges", "").lower()
                    ):
                        ranges = True
                    if validator is None:
                        etag = response.headers.get("etag")
                        if etag and not etag.startswith("W/"):
                            validator = etag
                        else:
                            validator = response.headers.get("last-modified")
                    length = response.headers.get("content-length", "")
                    expected = received + int(length) if length.isdigit() else None
                    async for chunk in response.aiter_raw(self.chunk_size):
                        if not chunk:
                            continue
                        received += len(chunk)
                        self.stats.bytes_received += len(chunk)
                        yield chunk
                    if expected is not None and received < expected:
                        raise _Retryable(f"body cut short at byte {received} of {expected}")
                    return
            except _RETRY_ON as exc:
                if received and not ranges:
                    raise DownloadError(
                        f"{_redact(url)}: download failed after {received} bytes were delivered"
                        f" ({_describe(exc)}) and the server does not support ranges;"
                        " restart required"
                    ) from exc
                if attempt >= self.max_attempts:
                    raise self._gave_up(url, attempt, exc) from exc
                if received:
                    self.stats.resumes += 1
                await self._before_retry("GET", url, attempt, exc)
            except httpx.HTTPError as exc:  # not worth a retry (invalid URL, proxy, protocol...)
                raise DownloadError(
                    f"GET {_redact(url)} failed after {attempt} attempt(s): {_describe(exc)}"
                ) from exc

    # ---------------------------------------------------------------------------- discovery

    async def exists(self, hour: str) -> bool:
        """Whether ``hour`` is published (HEAD: 2xx True, 404 False; 5xx etc. retried)."""
        url = hour_url(self.base_url, hour)
        attempt = 0
        while True:
            attempt += 1
            self.stats.requests += 1
            try:
                response = await self.http.head(url)
                status = response.status_code
                if status == 404:
                    return False
                if 200 <= status < 300:
                    return True
                if status in _RETRYABLE_STATUS or status >= 500:
                    raise _Retryable(f"HTTP {status}", status, _hint(response))
                raise DownloadError(
                    f"HEAD {_redact(url)}: HTTP {status} after {attempt} attempt(s)"
                )
            except _RETRY_ON as exc:
                if attempt >= self.max_attempts:
                    raise self._gave_up(url, attempt, exc) from exc
                await self._before_retry("HEAD", url, attempt, exc)
            except httpx.HTTPError as exc:
                raise DownloadError(
                    f"HEAD {_redact(url)} failed after {attempt} attempt(s): {_describe(exc)}"
                ) from exc

    async def latest_hours(
        self, count: int, now: datetime | None = None, search_back: int = 48
    ) -> list[str]:
        """The last ``count`` published hours, oldest first.

        Starts at the hour before ``now`` (UTC; the current hour is still being written) and
        walks back with HEAD requests, at most ``search_back`` hours, to the newest published
        hour; returns it and the ``count - 1`` hours before it (not checked one by one).
        Raises :class:`HourNotPublished` when no hour in that window is published.
        """
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        if search_back < 1:
            raise ValueError(f"search_back must be at least 1, got {search_back}")
        newest = _floor_hour(now if now is not None else datetime.now(UTC)) - _ONE_HOUR
        candidate = newest
        for _ in range(search_back):
            if await self.exists(hour_name(candidate)):
                return hours_between(candidate - (count - 1) * _ONE_HOUR, candidate)
            candidate -= _ONE_HOUR
        raise HourNotPublished(
            f"no published GH Archive hour at {_redact(self.base_url)} among the {search_back}"
            f" hours from {hour_name(newest)} back to {hour_name(candidate + _ONE_HOUR)}"
        )


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, _Retryable):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
