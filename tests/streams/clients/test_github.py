"""The GitHub client against a real HTTP server on 127.0.0.1 serving the recorded answers."""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest
from pydantic import SecretStr

from streams.clients.github import (
    GitHubClient,
    GitHubClientError,
    GitHubNotFound,
    GitHubUnavailable,
    TokenPool,
    next_page_url,
)
from streams.core.settings import GitHubSettings
from tests.fakes.github_server import FakeGitHub

pytestmark = pytest.mark.integration

REPO = "sigmavirus24/github3.py"
PR_PATH = f"/repos/{REPO}/pulls/235"
FILES_PATH = f"/repos/{REPO}/pulls/235/files?per_page=100"
REPO_PATH = f"/repos/{REPO}"
TOKEN = "ghp_test0000000000000000000000000000secret"
OTHER_TOKEN = "ghp_test1111111111111111111111111111secret"


def settings_for(server: FakeGitHub, **overrides: Any) -> GitHubSettings:
    values: dict[str, Any] = {
        "api_url": server.base_url,
        "token": SecretStr(TOKEN),
        "backoff_seconds": 0.05,
        "max_backoff_seconds": 0.2,
        "timeout_seconds": 0.5,
        "secondary_limit_seconds": 0.3,
        "rate_limit_reserve": 0,
    }
    return GitHubSettings(**(values | overrides))


@pytest.fixture
async def client(github_server: FakeGitHub) -> AsyncIterator[GitHubClient]:
    github = GitHubClient(settings_for(github_server))
    yield github
    await github.aclose()


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_recorded_pull_request_files_and_repository(
    client: GitHubClient, github_server: FakeGitHub
) -> None:
    pr = await client.pull_request(REPO, 235)
    assert pr["title"] == "Add Release.assets attribute"
    assert pr["merge_commit_sha"] == "8af3fd28fce3cb8d824b3c7242d73c4727d6cb38"
    files = await client.pull_request_files(REPO, 235)
    assert [f["filename"] for f in files] == [
        "github3/repos/release.py",
        "tests/unit/test_repos_release.py",
    ]
    repository = await client.repository(REPO)
    assert repository.data["stargazers_count"] == 1064
    assert repository.etag and repository.etag.startswith('W/"777c2e1d')

    sent = github_server.requests_for(PR_PATH)[0].headers
    assert sent["authorization"] == f"Bearer {TOKEN}"
    assert sent["x-github-api-version"] == "2022-11-28"
    assert "if-none-match" not in sent
    assert client.requests_sent == 3


async def test_a_repeated_request_is_conditional_and_a_304_returns_the_cached_body(
    client: GitHubClient, github_server: FakeGitHub
) -> None:
    hits = sample("swe_stream_github_conditional_hits_total", endpoint="pulls.get")
    first = await client.pull_request(REPO, 235)
    again = await client.pull_request(REPO, 235)
    assert again == first
    seen = github_server.requests_for(PR_PATH)
    assert len(seen) == 2
    assert (
        seen[1].if_none_match
        == 'W/"f72c03b1024568eec3262f551682e466fc6f45b7db74d50f51746dca0fd5b1db"'
    )
    assert sample("swe_stream_github_conditional_hits_total", endpoint="pulls.get") == hits + 1
    assert sample("swe_stream_github_requests_total", endpoint="pulls.get", status="304") >= 1


async def test_a_caller_kept_etag_gets_not_modified(client: GitHubClient) -> None:
    first = await client.repository(REPO)
    again = await client.repository(REPO, etag=first.etag)
    assert again.not_modified and again.data is None and again.etag == first.etag


async def test_exhausted_budget_waits_for_the_reset_then_succeeds(
    client: GitHubClient, github_server: FakeGitHub
) -> None:
    reset_at = github_server.rate_limit(PR_PATH, reset_in=2)
    pr = await client.pull_request(REPO, 235)
    assert pr["number"] == 235
    _limited, retried = github_server.requests_for(PR_PATH)
    assert retried.at >= reset_at, "the retry came before the rate limit reset"
    assert sample("swe_stream_github_rate_limit_remaining", token="token-0") > 0


async def test_low_budget_pauses_before_it_is_gone(github_server: FakeGitHub) -> None:
    """A response saying 3 left (reserve 5) rests the token until the reset it names."""
    reset_at = int(time.time()) + 2
    github_server.add_json(
        "/repos/octo/low/pulls/1",
        {"number": 1},
        headers={"X-RateLimit-Remaining": "3", "X-RateLimit-Reset": str(reset_at)},
    )
    github = GitHubClient(settings_for(github_server, rate_limit_reserve=5))
    try:
        await github.pull_request("octo/low", 1)
        await github.pull_request("octo/low", 1)
    finally:
        await github.aclose()
    _first, second = github_server.requests_for("/repos/octo/low/pulls/1")
    assert second.at >= reset_at


async def test_secondary_rate_limit_honours_retry_after(
    client: GitHubClient, github_server: FakeGitHub
) -> None:
    github_server.fail(
        PR_PATH,
        status=403,
        headers={"Retry-After": "1"},
        message="You have exceeded a secondary rate limit. Please wait a few minutes.",
    )
    await client.pull_request(REPO, 235)
    limited, retried = github_server.requests_for(PR_PATH)
    assert retried.at - limited.at >= 0.95


async def test_5xx_and_timeouts_are_retried(
    client: GitHubClient, github_server: FakeGitHub
) -> None:
    before = sample("swe_stream_github_retries_total", endpoint="pulls.get", reason="http_502")
    github_server.fail(PR_PATH, status=502, times=2)
    github_server.delay(PR_PATH, seconds=1.0)  # longer than the client's 0.5 s timeout
    pr = await client.pull_request(REPO, 235)
    assert pr["number"] == 235
    assert len(github_server.requests_for(PR_PATH)) == 4
    assert sample("swe_stream_github_retries_total", endpoint="pulls.get", reason="http_502") == (
        before + 2
    )
    assert sample("swe_stream_github_requests_total", endpoint="pulls.get", status="timeout") >= 1


async def test_a_body_whose_gzip_is_corrupt_is_retried(
    client: GitHubClient, github_server: FakeGitHub
) -> None:
    before = sample("swe_stream_github_retries_total", endpoint="pulls.get", reason="connection")
    # a 200 announcing gzip whose bytes are not gzip: what a connection cut mid-body leaves
    github_server.fail(PR_PATH, status=200, headers={"Content-Encoding": "gzip"})
    pr = await client.pull_request(REPO, 235)
    assert pr["number"] == 235
    assert len(github_server.requests_for(PR_PATH)) == 2
    after = sample("swe_stream_github_retries_total", endpoint="pulls.get", reason="connection")
    assert after == before + 1


async def test_failures_end_after_max_attempts(github_server: FakeGitHub) -> None:
    github_server.fail(PR_PATH, status=503, times=10)
    github = GitHubClient(settings_for(github_server, max_attempts=3))
    try:
        with pytest.raises(GitHubUnavailable, match="503"):
            await github.pull_request(REPO, 235)
    finally:
        await github.aclose()
    assert len(github_server.requests_for(PR_PATH)) == 3


async def test_404_and_other_client_errors_are_final(
    client: GitHubClient, github_server: FakeGitHub
) -> None:
    with pytest.raises(GitHubNotFound, match="404"):
        await client.pull_request(REPO, 999999)
    assert len(github_server.requests_for(f"/repos/{REPO}/pulls/999999")) == 1
    github_server.add_json(
        "/repos/octo/blocked", {"message": "Repository access blocked"}, status=451
    )
    with pytest.raises(GitHubClientError, match="451 Repository access blocked"):
        await client.repository("octo/blocked")
    github_server.fail(PR_PATH, status=403, message="Resource not accessible by integration")
    with pytest.raises(GitHubClientError, match="403"):
        await client.pull_request(REPO, 235)


async def test_token_pool_moves_to_the_next_token_and_never_exposes_them(
    github_server: FakeGitHub,
) -> None:
    github_server.rate_limit(PR_PATH, reset_in=600)  # token 0 is out for ten minutes
    github = GitHubClient(
        settings_for(github_server, tokens=[SecretStr(OTHER_TOKEN)], rate_limit_reserve=0)
    )
    started = time.monotonic()
    try:
        await github.pull_request(REPO, 235)
        await github.repository(REPO)
    finally:
        await github.aclose()
    assert time.monotonic() - started < 60, "waited for token 0 instead of using token 1"
    auth = [r.headers["authorization"] for r in github_server.requests]
    assert auth == [f"Bearer {TOKEN}", f"Bearer {OTHER_TOKEN}", f"Bearer {OTHER_TOKEN}"]
    exposition = generate_latest(REGISTRY).decode()
    assert 'swe_stream_github_rate_limit_remaining{token="token-0"} 0.0' in exposition
    assert TOKEN not in exposition and OTHER_TOKEN not in exposition


async def test_pagination_follows_link_headers(
    client: GitHubClient, github_server: FakeGitHub
) -> None:
    base = github_server.base_url
    path = "/repos/octo/big/pulls/7/files"
    page2_url = f"{base}{path}?per_page=100&page=2"
    link = f'<{page2_url}>; rel="next", <{page2_url}>; rel="last"'
    page1 = [{"filename": f"src/f{i}.py"} for i in range(100)]
    page2 = [{"filename": "src/last.py"}]
    github_server.add_json(f"{path}?per_page=100", page1, headers={"Link": link})
    github_server.add_json(f"{path}?per_page=100&page=2", page2)
    files = await client.pull_request_files("octo/big", 7)
    assert [f["filename"] for f in files] == [f["filename"] for f in page1 + page2]


@pytest.mark.unit
def test_next_page_url_and_pool_round_robin() -> None:
    import httpx

    headers = httpx.Headers(
        {"link": '<https://x/a?page=3>; rel="next", <https://x/a?page=9>; rel="last"'}
    )
    assert next_page_url(headers) == "https://x/a?page=3"
    assert next_page_url(httpx.Headers({"link": '<https://x/a?page=1>; rel="prev"'})) is None
    pool = TokenPool([SecretStr("a"), SecretStr("b")], reserve=10)
    picks = [pool.pick(now=0)[0] for _ in range(3)]
    assert [p.index for p in picks if p] == [0, 1, 0]
    pool.states[0].remaining, pool.states[0].reset_at = 10, 100.0
    pool.states[1].remaining, pool.states[1].reset_at = 0, 50.0
    assert pool.pick(now=20) == (None, 30.0)  # both resting: wait for the earliest reset
    assert pool.pick(now=60)[0] is pool.states[1]  # b's window has reset


async def test_an_api_that_refuses_every_connection_is_an_outage_not_an_answer(
    github_server: FakeGitHub,
) -> None:
    """Connection refused on every attempt: GitHubUnreachable, a ServiceUnavailable the stage
    waits out (still a GitHubUnavailable for callers that knew that)."""
    from streams.clients.github import GitHubUnreachable
    from streams.core.errors import ServiceUnavailable
    from streams.kafka.broker import free_port

    github = GitHubClient(
        settings_for(github_server, api_url=f"http://127.0.0.1:{free_port()}", max_attempts=2)
    )
    try:
        with pytest.raises(GitHubUnreachable, match="ConnectError after 2 attempts") as refused:
            await github.pull_request(REPO, 235)
    finally:
        await github.aclose()
    assert isinstance(refused.value, ServiceUnavailable) and refused.value.service == "github"
    assert isinstance(refused.value, GitHubUnavailable)
    assert refused.value.reason == "unreachable"


class RecordedSleeps:
    """The client's injectable sleep: records each wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_a_429_with_an_http_date_retry_after_waits_until_that_date(
    github_server: FakeGitHub,
) -> None:
    now = float(int(time.time()))  # whole seconds: an HTTP date has no fraction
    github_server.fail(
        PR_PATH, status=429, headers={"Retry-After": formatdate(now + 30, usegmt=True)}
    )
    sleeps = RecordedSleeps()
    waited = sample("swe_stream_github_rate_limit_wait_seconds_total")
    github = GitHubClient(settings_for(github_server), clock=lambda: now, sleep=sleeps)
    try:
        pr = await github.pull_request(REPO, 235)
    finally:
        await github.aclose()
    assert pr["number"] == 235
    assert sleeps.waits == [30.0]  # the date, not secondary_limit_seconds (0.3) nor a backoff
    assert sample("swe_stream_github_rate_limit_wait_seconds_total") == waited + 30.0
    assert len(github_server.requests_for(PR_PATH)) == 2


async def test_a_503_with_an_http_date_retry_after_waits_at_least_until_that_date(
    github_server: FakeGitHub,
) -> None:
    now = float(int(time.time()))
    github_server.fail(
        PR_PATH, status=503, headers={"Retry-After": formatdate(now + 20, usegmt=True)}
    )
    sleeps = RecordedSleeps()
    github = GitHubClient(
        settings_for(github_server, max_backoff_seconds=60.0), clock=lambda: now, sleep=sleeps
    )
    try:
        await github.pull_request(REPO, 235)
    finally:
        await github.aclose()
    assert sleeps.waits == [20.0]  # the hint beats the 0.05 s first backoff


@pytest.mark.parametrize("garbage", ["soon", "1.5e9x", "", "-1", "Mon, 99 Foo 2023"])
async def test_a_garbage_retry_after_does_not_crash_the_client(
    github_server: FakeGitHub, garbage: str
) -> None:
    # a 429 with an unreadable hint: treated as a secondary limit without Retry-After
    github_server.fail(PR_PATH, status=429, headers={"Retry-After": garbage})
    # a 503 with one: a plain backoff
    github_server.fail(PR_PATH, status=503, headers={"Retry-After": garbage})
    sleeps = RecordedSleeps()
    github = GitHubClient(settings_for(github_server), sleep=sleeps)
    try:
        pr = await github.pull_request(REPO, 235)
    finally:
        await github.aclose()
    assert pr["number"] == 235
    assert len(github_server.requests_for(PR_PATH)) == 3
    secondary, backoff = sleeps.waits
    assert secondary == 0.3  # secondary_limit_seconds
    # the second failed attempt (the 429 counted): d = 2 x 0.05, half fixed, half random
    assert 0.05 <= backoff <= 0.1


@pytest.mark.parametrize("seed", range(3))
async def test_5xx_backoff_never_exceeds_max_backoff_seconds(
    github_server: FakeGitHub, seed: int
) -> None:
    """The old rule, min(cap, base) * uniform(0.5, 1.5), waited up to 1.5 x the cap."""
    github_server.fail(PR_PATH, status=503, times=9)
    sleeps = RecordedSleeps()
    settings = settings_for(
        github_server, backoff_seconds=1.0, max_backoff_seconds=4.0, max_attempts=10
    )
    github = GitHubClient(settings, sleep=sleeps, rng=random.Random(seed))
    try:
        await github.pull_request(REPO, 235)
    finally:
        await github.aclose()
    assert len(sleeps.waits) == 9
    assert max(sleeps.waits) <= 4.0
    assert min(sleeps.waits[2:]) >= 2.0  # at the cap, half of it is fixed
