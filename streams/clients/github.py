"""The GitHub REST client: frugal with the 5,000 requests/hour a token gets.

- Conditional requests: every 200 with an ``ETag`` is remembered (bounded LRU); asking again
  sends ``If-None-Match`` and a ``304`` (which costs no quota) returns the remembered body.
- Budget: ``X-RateLimit-Remaining/Reset`` of every response are tracked per token; a token at
  or below ``rate_limit_reserve`` rests until its reset, and the request goes to another token
  of the pool (round-robin) or waits for the earliest reset.
- Limits hit anyway: a 403/429 with ``X-RateLimit-Remaining: 0`` waits for the reset;
  ``Retry-After`` (seconds or an HTTP date; an unreadable one is ignored) is obeyed, up to
  ``max_rate_limit_wait_seconds``; a secondary rate limit (403/429 with a message) backs off.
- 5xx, timeouts, dropped connections and 2xx bodies that are not JSON (cut short) are retried
  with exponential backoff and jitter (``streams.clients.retry``; a 5xx's ``Retry-After`` is
  a lower bound up to ``max_backoff_seconds``); 404/410/422 are final.
- At most ``concurrency`` requests are in flight.

Tokens never reach logs or metrics: tokens are labelled ``token-<i>`` by their pool index.
The base URL is a setting, so tests point the client at a local server.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from pydantic import SecretStr

from streams.clients.retry import backoff_delay, retry_after
from streams.core import metrics
from streams.core.errors import GITHUB, DependencyError, ServiceUnavailable
from streams.core.settings import GitHubSettings

log = logging.getLogger("swe_stream.github")

API_VERSION = "2022-11-28"
USER_AGENT = "swe-stream (+https://github.com/swe-stream)"
_LINK_NEXT_RE = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
_SECONDARY_RE = re.compile(r"secondary rate limit|abuse", re.IGNORECASE)


class GitHubError(DependencyError):
    """A request that did not succeed; ``reason`` is a short, metric-safe label."""

    reason = "error"

    def __init__(self, message: str, *, endpoint: str, status: int | None = None):
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status


class GitHubNotFound(GitHubError):
    """404/410: the PR, issue or repository does not exist (or is no longer visible)."""

    reason = "not_found"


class GitHubClientError(GitHubError):
    """A 4xx other than rate limits: retrying the same request cannot help."""

    reason = "client_error"


class GitHubUnavailable(GitHubError):
    """5xx, timeouts or rate limits still failing after every allowed attempt."""

    reason = "unavailable"


class GitHubUnreachable(GitHubUnavailable, ServiceUnavailable):
    """Every attempt ended without an answer (connection refused, no route, connect timeout):
    not a verdict on the request, the stage waits for GitHub."""

    reason = "unreachable"

    def __init__(self, message: str, *, endpoint: str):
        GitHubUnavailable.__init__(self, message, endpoint=endpoint)
        self.service = GITHUB


@dataclass
class GitHubResponse:
    """A successful answer. ``not_modified`` is True when a 304 confirmed ``etag``."""

    data: Any
    etag: str | None
    not_modified: bool = False
    headers: httpx.Headers = field(default_factory=httpx.Headers)


@dataclass
class TokenState:
    """One token's budget as the last response reported it."""

    index: int
    secret: SecretStr | None
    remaining: int | None = None
    reset_at: float | None = None  # epoch seconds

    @property
    def label(self) -> str:
        return f"token-{self.index}" if self.secret is not None else "anonymous"

    def headers(self) -> dict[str, str]:
        if self.secret is None:
            return {}
        return {"Authorization": f"Bearer {self.secret.get_secret_value()}"}

    def resting_until(self, reserve: int, now: float) -> float | None:
        """When this token may be used again, or None if it may be used now."""
        if self.remaining is None or self.remaining > reserve:
            return None
        if self.reset_at is None or self.reset_at <= now:
            return None
        return self.reset_at


class TokenPool:
    """Round-robin over the tokens, skipping those resting until their reset."""

    def __init__(self, secrets: list[SecretStr], reserve: int):
        states = [TokenState(i, s) for i, s in enumerate(secrets)]
        self.states = states or [TokenState(0, None)]
        self.reserve = reserve
        self._next = 0

    def pick(self, now: float) -> tuple[TokenState | None, float]:
        """The next usable token, or (None, seconds until the earliest reset)."""
        earliest: float | None = None
        for step in range(len(self.states)):
            state = self.states[(self._next + step) % len(self.states)]
            until = state.resting_until(self.reserve, now)
            if until is None:
                self._next = (state.index + 1) % len(self.states)
                return state, 0.0
            earliest = until if earliest is None else min(earliest, until)
        assert earliest is not None
        return None, max(0.0, earliest - now)

    def observe(self, state: TokenState, headers: httpx.Headers) -> None:
        remaining = _int_header(headers, "x-ratelimit-remaining")
        reset = _int_header(headers, "x-ratelimit-reset")
        if remaining is not None:
            state.remaining = remaining
            metrics.GITHUB_RATE_LIMIT_REMAINING.labels(token=state.label).set(remaining)
        if reset is not None:
            state.reset_at = float(reset)


def _int_header(headers: httpx.Headers, name: str) -> int | None:
    value = headers.get(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def next_page_url(headers: httpx.Headers) -> str | None:
    """The ``rel="next"`` URL of a paginated answer's ``Link`` header."""
    match = _LINK_NEXT_RE.search(headers.get("link", ""))
    return match[1] if match else None


class GitHubClient:
    """Async GitHub REST client; create once per worker and ``await aclose()`` at the end."""

    def __init__(
        self,
        settings: GitHubSettings,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ):
        self.settings = settings
        self.base_url = settings.api_url.rstrip("/")
        self.pool = TokenPool(settings.token_pool(), settings.rate_limit_reserve)
        self._clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._semaphore = asyncio.Semaphore(settings.concurrency)
        self._etags: OrderedDict[str, tuple[str, Any]] = OrderedDict()
        self._http: httpx.AsyncClient | None = None
        self.requests_sent = 0  # every HTTP request, 304s included (benchmarks read this)

    @property
    def http(self) -> httpx.AsyncClient:
        # created lazily: an AsyncClient binds to the running event loop's transports
        if self._http is None:
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.settings.timeout_seconds),
                headers={
                    "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": API_VERSION,
                    "User-Agent": USER_AGENT,
                },
                limits=httpx.Limits(max_connections=self.settings.concurrency),
                follow_redirects=True,
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # endpoints ----------------------------------------------------------------------------

    async def pull_request(self, repo: str, number: int) -> dict[str, Any]:
        response = await self.get(f"/repos/{repo}/pulls/{number}", endpoint="pulls.get")
        return _expect(response.data, dict, "pulls.get")

    async def pull_request_files(
        self, repo: str, number: int, *, max_pages: int = 30
    ) -> list[dict[str, Any]]:
        """Every changed file (GitHub lists at most 3,000, 100 per page)."""
        return await self.paginate(
            f"/repos/{repo}/pulls/{number}/files", endpoint="pulls.files", max_pages=max_pages
        )

    async def repository(self, repo: str, *, etag: str | None = None) -> GitHubResponse:
        """The repository; with ``etag`` a 304 answers ``not_modified`` and no data."""
        return await self.get(f"/repos/{repo}", endpoint="repos.get", etag=etag)

    async def issue(self, repo: str, number: int) -> dict[str, Any]:
        response = await self.get(f"/repos/{repo}/issues/{number}", endpoint="issues.get")
        return _expect(response.data, dict, "issues.get")

    async def paginate(
        self, path: str, *, endpoint: str, per_page: int = 100, max_pages: int = 30
    ) -> list[dict[str, Any]]:
        url: str | None = f"{self.base_url}{path}?per_page={per_page}"
        items: list[dict[str, Any]] = []
        pages = 0
        while url is not None and pages < max_pages:
            response = await self.get(url, endpoint=endpoint)
            items.extend(_expect(response.data, list, endpoint))
            url = next_page_url(response.headers)
            pages += 1
        return items

    # the request loop -----------------------------------------------------------------------

    async def get(
        self, path_or_url: str, *, endpoint: str, etag: str | None = None
    ) -> GitHubResponse:
        """GET with conditional requests, budget tracking, retries and backoff.

        Without ``etag`` the client's own ETag cache is used and a 304 returns the cached
        body; with ``etag`` (the caller keeps the body) a 304 returns ``not_modified``.
        """
        url = path_or_url if "://" in path_or_url else f"{self.base_url}{path_or_url}"
        cached = None if etag is not None else self._etags.get(url)
        send_etag = etag if etag is not None else (cached[0] if cached else None)
        failures = 0
        waited = 0.0
        while True:
            state, wait = self.pool.pick(self._clock())
            if state is None:
                waited = await self._wait_for_budget(wait, waited, endpoint, url)
                continue
            headers = state.headers()
            if send_etag:
                headers["If-None-Match"] = send_etag
            try:
                async with self._semaphore:
                    self.requests_sent += 1
                    response = await self.http.get(url, headers=headers)
            except httpx.TimeoutException as exc:
                metrics.GITHUB_REQUESTS.labels(endpoint=endpoint, status="timeout").inc()
                failures = await self._backoff(failures, endpoint, "timeout", exc, url)
                continue
            # DecodingError: a body whose gzip is cut or corrupt, as a dropped connection leaves it
            except (httpx.TransportError, httpx.DecodingError) as exc:
                metrics.GITHUB_REQUESTS.labels(endpoint=endpoint, status="error").inc()
                failures = await self._backoff(failures, endpoint, "connection", exc, url)
                continue

            status = response.status_code
            metrics.GITHUB_REQUESTS.labels(endpoint=endpoint, status=str(status)).inc()
            self.pool.observe(state, response.headers)

            if status == 304 and send_etag:
                metrics.GITHUB_CONDITIONAL_HITS.labels(endpoint=endpoint).inc()
                if cached is not None:
                    self._etags.move_to_end(url)
                    return GitHubResponse(cached[1], cached[0], True, response.headers)
                return GitHubResponse(None, send_etag, True, response.headers)
            if 200 <= status < 300:
                try:
                    data = orjson.loads(response.content) if response.content else None
                except orjson.JSONDecodeError as exc:  # a body cut short: ask again
                    error = GitHubUnavailable(
                        f"GET {url}: {status} with malformed JSON: {exc}",
                        endpoint=endpoint,
                        status=status,
                    )
                    failures = await self._backoff(failures, endpoint, "malformed_json", error, url)
                    continue
                new_etag = response.headers.get("etag")
                if new_etag and etag is None:
                    self._remember(url, new_etag, data)
                return GitHubResponse(data, new_etag, False, response.headers)
            if status in (403, 429):
                if await self._rate_limited(state, response, endpoint, url):
                    failures += 1  # a secondary limit counts as a failed attempt
                    if failures >= self.settings.max_attempts:
                        raise GitHubUnavailable(
                            f"GET {url}: still rate limited after {failures} attempts",
                            endpoint=endpoint,
                            status=status,
                        )
                continue
            if status in (404, 410):
                raise GitHubNotFound(
                    f"GET {url}: {status} {_message(response)}", endpoint=endpoint, status=status
                )
            if status >= 500:
                error = GitHubUnavailable(f"GET {url}: {status}", endpoint=endpoint, status=status)
                # a 503 may say when the service is back: wait at least that long
                hint = retry_after(response.headers.get("retry-after"), self._clock())
                failures = await self._backoff(
                    failures, endpoint, f"http_{status}", error, url, hint=hint
                )
                continue
            raise GitHubClientError(
                f"GET {url}: {status} {_message(response)}", endpoint=endpoint, status=status
            )

    def _remember(self, url: str, etag: str, data: Any) -> None:
        size = self.settings.etag_cache_size
        if size <= 0:
            return
        self._etags[url] = (etag, data)
        self._etags.move_to_end(url)
        while len(self._etags) > size:
            self._etags.popitem(last=False)

    async def _rate_limited(
        self, state: TokenState, response: httpx.Response, endpoint: str, url: str
    ) -> bool:
        """Wait as the answer asks. True for a secondary limit (counted as an attempt),
        False for an exhausted primary budget (the pool rests the token until reset).
        Raises for a plain 403 (forbidden)."""
        now = self._clock()
        headers = response.headers
        # garbage in Retry-After reads as None: handled as if the header were absent
        wait = retry_after(headers.get("retry-after"), now)
        message = _message(response)
        if headers.get("x-ratelimit-remaining") == "0" and wait is None:
            state.remaining = 0
            if state.reset_at is None or state.reset_at <= now:
                # no usable reset: rest for a minute rather than hammer the API
                state.reset_at = now + self.settings.secondary_limit_seconds
            metrics.GITHUB_RETRIES.labels(endpoint=endpoint, reason="rate_limit").inc()
            log.warning(
                "GitHub rate limit reached on %s; %s rests until %s",
                endpoint,
                state.label,
                time.strftime("%H:%M:%S", time.gmtime(state.reset_at)),
            )
            return False
        if wait is not None or response.status_code == 429 or _SECONDARY_RE.search(message):
            # GitHub's own wait is obeyed exactly (no jitter) and may exceed the backoff cap:
            # retrying sooner only extends the limit. Capped by the longest wait for a reset,
            # so an absurd header cannot park the worker for days.
            if wait is not None:
                delay = min(wait, self.settings.max_rate_limit_wait_seconds)
            else:
                delay = self.settings.secondary_limit_seconds
            metrics.GITHUB_RETRIES.labels(endpoint=endpoint, reason="secondary_rate_limit").inc()
            log.warning("GitHub secondary rate limit on %s: waiting %.1f s", endpoint, delay)
            await self._sleep_counted(delay)
            return True
        raise GitHubClientError(
            f"GET {url}: {response.status_code} {message}",
            endpoint=endpoint,
            status=response.status_code,
        )

    async def _wait_for_budget(self, wait: float, waited: float, endpoint: str, url: str) -> float:
        if waited + wait > self.settings.max_rate_limit_wait_seconds:
            raise GitHubUnavailable(
                f"GET {url}: every token is out of budget for {wait:.0f} s more",
                endpoint=endpoint,
                status=403,
            )
        # one second past the reset: GitHub's clock and ours are not the same clock
        delay = wait + 1.0
        log.info("every GitHub token is resting; waiting %.1f s for the reset", delay)
        await self._sleep_counted(delay)
        return waited + delay

    async def _backoff(
        self,
        failures: int,
        endpoint: str,
        reason: str,
        exc: Exception,
        url: str,
        *,
        hint: float | None = None,
    ) -> int:
        failures += 1
        if failures >= self.settings.max_attempts:
            if isinstance(exc, GitHubError):
                raise exc
            if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                raise GitHubUnreachable(
                    f"GET {url}: {type(exc).__name__} after {failures} attempts: {exc}",
                    endpoint=endpoint,
                ) from exc
            raise GitHubUnavailable(
                f"GET {url}: {type(exc).__name__} after {failures} attempts: {exc}",
                endpoint=endpoint,
            ) from exc
        metrics.GITHUB_RETRIES.labels(endpoint=endpoint, reason=reason).inc()
        # a 5xx is no rate limit: its Retry-After is honoured up to the backoff cap only
        delay = backoff_delay(
            failures,
            self.settings.backoff_seconds,
            self.settings.max_backoff_seconds,
            self._rng,
            hint=hint,
        )
        log.info("GitHub %s on %s; retry %d in %.2f s", reason, endpoint, failures, delay)
        await self._sleep(delay)
        return failures

    async def _sleep_counted(self, seconds: float) -> None:
        metrics.GITHUB_RATE_LIMIT_WAIT_SECONDS.inc(seconds)
        await self._sleep(seconds)


def _message(response: httpx.Response) -> str:
    """GitHub's error message (``{"message": ...}``), else the first bytes of the body."""
    try:
        body = orjson.loads(response.content)
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            return str(body["message"])[:300]
    except orjson.JSONDecodeError:
        pass
    return response.text[:300]


def _expect(data: Any, kind: type, endpoint: str) -> Any:
    if not isinstance(data, kind):
        raise GitHubClientError(
            f"{endpoint}: expected a JSON {kind.__name__}, got {type(data).__name__}",
            endpoint=endpoint,
        )
    return data
