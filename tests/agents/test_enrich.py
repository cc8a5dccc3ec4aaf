"""enrich: the local filter rules (unit), and the stage against a real HTTP server on
127.0.0.1 serving the recorded GitHub answers for sigmavirus24/github3.py#235."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr

from agents.enrich import (
    ADDITIONS_OUT_OF_RANGE,
    DOCS_ONLY,
    FILES_OUT_OF_RANGE,
    LANGUAGE,
    NO_SOURCE_CHANGE,
    NOT_MERGED,
    TESTS_ONLY,
    TOO_FEW_STARS,
    Enricher,
    EnrichRules,
    RepositoryCache,
    changed_files,
    check_files,
    check_repository,
    check_size,
    repository_info,
)
from agents.prefilter import PrefilterRules, prefilter_event
from schemas import DeadLetter, EnrichedPullRequest, LedgerEntry, PullRequestCandidate
from streams.clients.github import GitHubClient
from streams.core.settings import EnrichSettings, GitHubSettings
from streams.kafka.topics import CANDIDATES, ENRICHED, LEDGER
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Stage, StageRunner
from tests.agents.conftest import ingest_file, start_stage_worker, wait_for
from tests.agents.test_prefilter import HOUR0
from tests.fakes.github_server import FakeGitHub, serve_github, serve_hour
from tests.workers import stop, wait_for_metrics

REPO = "sigmavirus24/github3.py"
PR_PATH = f"/repos/{REPO}/pulls/235"
FILES_PATH = f"/repos/{REPO}/pulls/235/files?per_page=100"
REPO_PATH = f"/repos/{REPO}"
MERGE_COMMIT = "8af3fd28fce3cb8d824b3c7242d73c4727d6cb38"


@pytest.fixture(scope="module")
def decoded(fixtures_dir: Path) -> dict[str, Any]:
    base = fixtures_dir / "github_api" / "decoded"
    return {
        "pr": json.loads((base / "pulls_235.json").read_text()),
        "files": json.loads((base / "pulls_235_files.json").read_text()),
        "repo": json.loads((base / "repos_sigmavirus24_github3.py.json").read_text()),
    }


def candidate(pr: dict[str, Any], *, slim: bool) -> PullRequestCandidate:
    """What prefilter emits for PR #235, from a slim or a full payload."""
    return PullRequestCandidate(
        pipeline_version=1,
        repo=REPO,
        number=235,
        event_id="2014050314412300",
        payload_format="slim" if slim else "full",
        merged=None if slim else True,
        base_sha=pr["base"]["sha"],
        head_sha=pr["head"]["sha"],
        merge_commit_sha=None if slim else pr["merge_commit_sha"],
        actor_login="sigmavirus24",
        pull_request=None if slim else pr,
        created_at=pr["closed_at"],
    )


# --- unit: the local filter ---------------------------------------------------------------


@pytest.mark.unit
def test_size_rules_bound_files_and_added_lines() -> None:
    rules = EnrichRules()
    assert check_size(2, 18, rules) is None  # PR #235
    assert check_size(0, 18, rules) == FILES_OUT_OF_RANGE
    assert check_size(51, 18, rules) == FILES_OUT_OF_RANGE
    assert check_size(50, 1000, rules) is None
    assert check_size(2, 2, rules) == ADDITIONS_OUT_OF_RANGE
    assert check_size(2, 1001, rules) == ADDITIONS_OUT_OF_RANGE
    assert check_size(2, 2, EnrichRules(min_added_lines=0)) is None


@pytest.mark.unit
def test_repository_rules_on_the_recorded_repository(decoded: dict[str, Any]) -> None:
    info = repository_info(decoded["repo"])
    assert (info.stars, info.language, info.license, info.default_branch) == (
        1064,
        "Python",
        "NOASSERTION",
        "main",
    )
    assert not info.archived and not info.fork
    assert check_repository(info, EnrichRules()) is None
    assert check_repository(info, EnrichRules(languages=frozenset({"python", "go"}))) is None
    assert check_repository(info, EnrichRules(languages=frozenset({"rust"}))) == LANGUAGE
    assert check_repository(info, EnrichRules(min_stars=1065)) == TOO_FEW_STARS


@pytest.mark.unit
def test_languages_take_javascript_and_typescript(
    decoded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default keeps the languages validation can prove (the registered ones: Go, Rust,
    Java, Python, JavaScript, TypeScript, C and C++: tests/streams/evaluation/
    test_js_validate.py, test_go_validate.py, test_rust_validate.py, test_java_validate.py,
    test_cpp_validate.py);
    the setting takes the names GitHub gives, from YAML or a comma list."""
    from streams.core.settings import load_settings

    assert EnrichSettings().languages is None
    assert EnrichRules.from_settings(EnrichSettings()).languages == {
        "go", "rust", "java", "python", "javascript", "typescript", "c", "c++", "cpp", "cxx"
    }  # fmt: skip
    monkeypatch.setenv("SWE_STREAM_ENRICH_LANGUAGES", "Python,TypeScript")
    assert load_settings().enrich.languages == ["Python", "TypeScript"]
    monkeypatch.setenv("SWE_STREAM_ENRICH_LANGUAGES", "Python,JavaScript,TypeScript")
    settings = load_settings().enrich
    assert settings.languages == ["Python", "JavaScript", "TypeScript"]
    rules = EnrichRules.from_settings(settings)
    info = repository_info(decoded["repo"])
    for language in ("JavaScript", "TypeScript", "Python"):
        assert check_repository(info.model_copy(update={"language": language}), rules) is None
    assert check_repository(info.model_copy(update={"language": "Go"}), rules) == LANGUAGE
    assert EnrichRules.from_settings(EnrichSettings(languages=["TypeScript"])).languages == {
        "typescript"
    }


@pytest.mark.unit
def test_file_rules_need_a_non_test_source_change(decoded: dict[str, Any]) -> None:
    files = changed_files(decoded["files"])
    assert [f.filename for f in files] == [
        "github3/repos/release.py",
        "tests/unit/test_repos_release.py",
    ]
    assert files[0].patch and files[0].patch.startswith("@@ -22,6 +22,8 @@")
    rules = EnrichRules()
    assert check_files(files, rules) is None
    assert check_files(files[1:], rules) == TESTS_ONLY
    docs = changed_files([{"filename": "README.rst"}, {"filename": "docs/api.md"}])
    assert check_files(docs, rules) == DOCS_ONLY
    config = changed_files([{"filename": "setup.cfg"}, {"filename": "tests/test_x.py"}])
    assert check_files(config, rules) == NO_SOURCE_CHANGE
    assert check_files(config, EnrichRules(require_source_change=False)) is None
    # Rust's tests live in the source files too: a PR changing only src/*.rs is kept
    assert check_files(changed_files([{"filename": "src/lib.rs"}]), rules) is None


@pytest.mark.unit
def test_full_payload_rules_on_hour0(hour_events: Any) -> None:
    """Every merged PR of hour 0 meets the size rules or fails one with a named reason."""
    rules = EnrichRules()
    reasons = set()
    for event in hour_events("2015-01-01-0"):
        if event.merged and event.pull_request:
            pr = event.pull_request
            reasons.add(check_size(pr["changed_files"], pr["additions"], rules))
    assert None in reasons and reasons <= {None, FILES_OUT_OF_RANGE, ADDITIONS_OUT_OF_RANGE}
    assert len(reasons) > 1, "hour 0 holds PRs the size rules reject"


# --- integration: the stage against the recorded API --------------------------------------


def settings_for(server: FakeGitHub, **overrides: Any) -> GitHubSettings:
    values: dict[str, Any] = {
        "api_url": server.base_url,
        "token": SecretStr("ghp_enrich_test_token"),
        "backoff_seconds": 0.05,
        "max_backoff_seconds": 0.2,
        "timeout_seconds": 0.5,
        "rate_limit_reserve": 0,
    }
    return GitHubSettings(**(values | overrides))


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def github(github_server: FakeGitHub) -> AsyncIterator[GitHubClient]:
    client = GitHubClient(settings_for(github_server))
    yield client
    await client.aclose()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def enricher(github: GitHubClient, clock: Clock) -> Enricher:
    cache = RepositoryCache({}, github, ttl_seconds=3600, clock=clock)
    return Enricher(github, cache, EnrichRules(), pipeline_version=1)


def cache_count(result: str) -> float:
    return REGISTRY.get_sample_value("swe_stream_enrich_repo_cache_total", {"result": result}) or 0


def paths(server: FakeGitHub) -> list[str]:
    return [r.path for r in server.requests]


@pytest.mark.integration
async def test_slim_candidate_is_enriched_from_the_recorded_api(
    enricher: Enricher, github_server: FakeGitHub, decoded: dict[str, Any]
) -> None:
    outcome = await enricher(candidate(decoded["pr"], slim=True))
    assert outcome.status == "accepted"
    (record,) = outcome.outputs
    assert isinstance(record, EnrichedPullRequest)
    assert record.title == "Add Release.assets attribute"
    assert record.merge_commit_sha == MERGE_COMMIT
    assert record.repo_info.stars == 1064 and record.repo_info.language == "Python"
    assert [f.filename for f in record.files] == [f["filename"] for f in decoded["files"]]
    assert (record.additions, record.deletions, record.changed_files) == (18, 0, 2)
    assert record.base_sha == decoded["pr"]["base"]["sha"] and record.base_ref == "develop"
    assert record.author_login == "bgilbert"
    assert record.problem_statement.startswith("Add Release.assets attribute\nThe JSON")
    assert EnrichedPullRequest.from_json(record.to_json()) == record
    assert paths(github_server) == [PR_PATH, REPO_PATH, FILES_PATH]


@pytest.mark.integration
async def test_second_enrichment_reuses_the_repository_and_sends_etags(
    enricher: Enricher, github_server: FakeGitHub, decoded: dict[str, Any], clock: Clock
) -> None:
    hits = cache_count("hit")
    first = await enricher(candidate(decoded["pr"], slim=True))
    second = await enricher(candidate(decoded["pr"], slim=True))
    assert first.outputs == second.outputs
    assert paths(github_server).count(REPO_PATH) == 1, "the repository was fetched twice"
    assert cache_count("hit") == hits + 1
    again = github_server.requests_for(PR_PATH)[1]
    assert (
        again.if_none_match
        == 'W/"f72c03b1024568eec3262f551682e466fc6f45b7db74d50f51746dca0fd5b1db"'
    )
    assert github_server.requests_for(FILES_PATH)[1].if_none_match is not None

    # past the TTL the repository is revalidated with its ETag: a 304, no quota spent
    clock.now += 3601
    revalidated = cache_count("revalidated")
    await enricher(candidate(decoded["pr"], slim=True))
    repo_requests = github_server.requests_for(REPO_PATH)
    assert len(repo_requests) == 2 and repo_requests[1].if_none_match == repo_requests[
        0
    ].headers.get(
        "if-none-match", 'W/"777c2e1d4972ad88b3acdde84f1d8575be0f8b642cad0a132e6bdc8ed131bf7e"'
    )
    assert cache_count("revalidated") == revalidated + 1


@pytest.mark.integration
async def test_full_payload_costs_only_the_files_call_and_links_issues(
    enricher: Enricher, github_server: FakeGitHub, decoded: dict[str, Any]
) -> None:
    pr = dict(decoded["pr"], body="Fixes #230, see also #12.\n\n<!-- closes #999 -->")
    github_server.add_json(
        f"/repos/{REPO}/issues/230",
        {"number": 230, "title": "Release assets need a request each", "body": "Slow."},
    )
    outcome = await enricher(candidate(pr, slim=False))
    (record,) = outcome.outputs
    assert isinstance(record, EnrichedPullRequest)
    assert paths(github_server) == [FILES_PATH, f"/repos/{REPO}/issues/230"]
    assert [(i.repo, i.number) for i in record.linked_issues] == [(REPO, 230)]
    assert record.problem_statement == "Release assets need a request each\nSlow."
    assert record.repo_info.stars == 1064  # from the payload's base.repo, no call


@pytest.mark.integration
async def test_slim_closed_but_unmerged_is_rejected_after_one_call(
    enricher: Enricher, github_server: FakeGitHub, decoded: dict[str, Any]
) -> None:
    github_server.add_json(PR_PATH, dict(decoded["pr"], merged=False, merged_at=None))
    outcome = await enricher(candidate(decoded["pr"], slim=True))
    assert (outcome.status, outcome.reason) == ("rejected", NOT_MERGED)
    assert paths(github_server) == [PR_PATH]


@pytest.mark.integration
async def test_rate_limit_5xx_and_timeout_are_waited_out(
    enricher: Enricher, github_server: FakeGitHub, decoded: dict[str, Any]
) -> None:
    reset_at = github_server.rate_limit(PR_PATH, reset_in=2)
    github_server.fail(REPO_PATH, status=500, times=2)
    github_server.delay(FILES_PATH, seconds=1.0)  # the client times out after 0.5 s
    outcome = await enricher(candidate(decoded["pr"], slim=True))
    assert outcome.status == "accepted"
    pr_requests = github_server.requests_for(PR_PATH)
    assert len(pr_requests) == 2 and pr_requests[1].at >= reset_at
    assert len(github_server.requests_for(REPO_PATH)) == 3
    assert len(github_server.requests_for(FILES_PATH)) == 2


@pytest.mark.integration
async def test_404_ends_in_the_dlq_and_the_ledger_with_its_reason(
    enricher: Enricher, github_server: FakeGitHub, decoded: dict[str, Any]
) -> None:
    missing = candidate(decoded["pr"], slim=True).model_copy(update={"number": 99999})
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), 1)
    runner: StageRunner[Any] = StageRunner(
        Stage("enrich", CANDIDATES, ENRICHED, enricher), sink, 1, ledger
    )
    assert await runner.process(missing.key.encode(), missing.to_json(), 2, 17) is None
    (letter,) = [DeadLetter.from_json(v) for _, v in sink.on(CANDIDATES.dlq_name)]
    assert letter.source_offset == 17 and "404" in letter.error
    assert letter.error_type == "GitHubNotFound"
    assert PullRequestCandidate.from_json(letter.original_value()) == missing
    (entry,) = [LedgerEntry.from_json(v) for _, v in sink.on(LEDGER.name)]
    assert (entry.stage, entry.status) == ("enrich", "failed")
    assert entry.reason and "GitHubNotFound" in entry.reason and "404" in entry.reason
    assert sink.on(ENRICHED.name) == []
    assert len(github_server.requests_for(f"/repos/{REPO}/pulls/99999")) == 1


@pytest.mark.integration
async def test_concurrent_lookups_of_one_repository_make_one_call(
    github: GitHubClient, github_server: FakeGitHub
) -> None:
    github_server.delay(REPO_PATH, seconds=0.2)  # slow enough for the lookups to overlap
    cache = RepositoryCache({}, github, ttl_seconds=3600)
    infos = await asyncio.gather(*(cache.get(REPO) for _ in range(5)))
    assert {info.stars for info in infos} == {1064}
    assert len(github_server.requests_for(REPO_PATH)) == 1


@pytest.mark.integration
def test_prefilter_and_enrich_workers_over_the_slim_hour(
    bootstrap: str, fixtures_dir: Path, hour_events: Any, tmp_path: Path
) -> None:
    """The stages in a Faust worker (Faust tables for the ledger and the repository cache)
    produce what the same logic produces in-process, each repository fetched once."""
    slim = f"{HOUR0}.slim"
    with serve_github({}) as server:
        serve_hour(server, hour_events(HOUR0))  # what GitHub would answer for the hour's PRs
        expected = asyncio.run(enrich_in_process(hour_events(slim), server))
        server.requests.clear()

        ingest_file(bootstrap, fixtures_dir / "gharchive" / f"{slim}.json.gz")
        log = tmp_path / "worker.log"
        env = {
            "SWE_STREAM_GITHUB_API_URL": server.base_url,
            "SWE_STREAM_GITHUB_BACKOFF_SECONDS": "0.05",
        }
        process, metrics_port = start_stage_worker(bootstrap, "prefilter,enrich", log, env)
        try:
            wait_for_metrics(metrics_port, process, log)
            values = asyncio.run(wait_for(bootstrap, ENRICHED.name, len(expected), process, log))
            enriched = {EnrichedPullRequest.from_json(v).key for v in values}
            assert enriched == expected
            repo_calls = Counter(
                r.path
                for r in server.requests
                if r.path.count("/") == 3  # /repos/{o}/{r}
            )
            assert repo_calls and max(repo_calls.values()) == 1, repo_calls.most_common(3)
        finally:
            if process.poll() is None:
                assert stop(process) == 0, log.read_text()[-3000:]


async def enrich_in_process(events: list[Any], server: FakeGitHub) -> set[str]:
    github = GitHubClient(settings_for(server))
    # the rules a worker gets from the default settings (Python repositories only)
    rules = EnrichRules.from_settings(EnrichSettings())
    enricher = Enricher(github, RepositoryCache({}, github, 3600), rules, 1)
    try:
        keys = set()
        for event in events:
            result = prefilter_event(event, PrefilterRules(), 1)
            if isinstance(result, PullRequestCandidate):
                outcome = await enricher(result)
                keys |= {o.key for o in outcome.outputs if isinstance(o, EnrichedPullRequest)}
        return keys
    finally:
        await github.aclose()
