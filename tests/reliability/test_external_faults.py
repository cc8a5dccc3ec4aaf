"""External faults: the GitHub and LLM stand-ins fail 20% of the requests at random (5xx,
answers slower than the client's timeout, rate limits, dropped connections, malformed JSON),
and every candidate of the fixture hours still gets exactly the decision a fault-free run
gives it, once; every injected fault shows in the retry metrics.

The world: the three fixture hours (2015-01-01-0 full and slim, 2015-01-01-1) through the real
prefilter rules (365 candidates), then the real enrich stage (``GitHubClient``) against the
GitHub stand-in serving each PR's real PR and repository objects (synthetic file lists), then
the real classify stage with the LLM backend (``LLMClient``) against the LLM stand-in answering
every request with a valid ``classify_difficulty`` call computed from the PR. Each hour is
processed as the worker does: through ``StageRunner`` (ledger, DLQ) with the stage's
concurrency, one ledger per hour. Chaos is seeded per request identity (``tests.fakes.chaos``), so a
run is deterministic although requests run concurrently.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr

from agents.classify import classify_stage
from agents.enrich import RepositoryCache, enrich_stage
from agents.ingest_scan import HourScanner
from agents.prefilter import PrefilterRules, prefilter_event
from schemas import (
    DeadLetter,
    EnrichedPullRequest,
    LedgerEntry,
    PullRequestCandidate,
    RawPullRequestEvent,
    Record,
)
from streams.clients.github import GitHubClient
from streams.clients.llm import LLMClient
from streams.core.settings import (
    ClassifySettings,
    EnrichSettings,
    GitHubSettings,
    LLMSettings,
    PrefilterSettings,
)
from streams.kafka.topics import LEDGER
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Stage, StageRunner
from tests.fakes.github_server import FAULTS as GITHUB_FAULTS
from tests.fakes.github_server import FakeGitHub, serve_github, serve_hour
from tests.fakes.llm_server import FAULTS as LLM_FAULTS
from tests.fakes.llm_server import FakeLLM, serve_llm

pytestmark = pytest.mark.integration

HOURS = ("2015-01-01-0", "2015-01-01-0.slim", "2015-01-01-1")
RATE = 0.2
# fixed seeds, among the first tried, with every kind of fault injected at least 4 times
GITHUB_SEED = 3
LLM_SEED = 8
CLIENT_SEED = 12  # the clients' backoff jitter
CLIENT_TIMEOUT = 1.5  # seconds; the "timeout" faults answer after FAULT_DELAY
FAULT_DELAY = 2.5
# Retry budgets. At 20% faults a request fails one attempt with p = 0.2 * 5/6 (a primary rate
# limit rests the token without spending an attempt; a bad tool call spends an output attempt,
# not an HTTP one), so it exhausts n attempts with p = 0.167^n: about 1.3e-4 per request at
# the default n = 5, i.e. about 6% per run of ~450 requests - a legitimate failure that would
# make the outcome differ from the fault-free run. At 8 it is ~6e-7 per request, and with
# these seeds no request exhausts it (asserted: the runs equal the fault-free ones).
# `test_an_exhausted_budget_fails_the_pr_once` covers the budgets running out.
MAX_ATTEMPTS = 8
# a malformed tool call (1/6 of the LLM faults) is asked again: three in a row, p = 3.7e-5
MAX_OUTPUT_ATTEMPTS = 3


# --- the world -------------------------------------------------------------------------------


def hour_events(fixtures_dir: Path, name: str) -> list[RawPullRequestEvent]:
    scanner = HourScanner(name.split(".", 1)[0], pipeline_version=1)
    path = fixtures_dir / "gharchive" / f"{name}.json.gz"
    outputs = scanner.feed(path.read_bytes()) + scanner.close()
    return [RawPullRequestEvent.from_json(o[1]) for o in outputs if isinstance(o, tuple)]


@pytest.fixture(scope="module")
def events(fixtures_dir: Path) -> dict[str, list[RawPullRequestEvent]]:
    return {hour: hour_events(fixtures_dir, hour) for hour in HOURS}


@pytest.fixture(scope="module")
def candidates(events: dict[str, list[RawPullRequestEvent]]) -> dict[str, list[Any]]:
    """Every candidate of each hour, as the prefilter emits them (default rules but for
    ``org_only``, off as in the other stage tests: more PRs, more requests, more faults). A PR
    that is a candidate twice in an hour (closed twice) is kept once, its last event."""
    rules = PrefilterRules.from_settings(PrefilterSettings(org_only=False))
    found: dict[str, list[Any]] = {}
    for hour, hour_events_ in events.items():
        made = [prefilter_event(event, rules, 1) for event in hour_events_]
        latest = {c.key: c for c in made if isinstance(c, PullRequestCandidate)}
        found[hour] = list(latest.values())
    assert sum(map(len, found.values())) > 350
    return found


def serve_hours(server: FakeGitHub, events: dict[str, list[RawPullRequestEvent]]) -> None:
    for hour, hour_events_ in events.items():
        if not hour.endswith(".slim"):  # the slim hour's PRs are hour 0's
            serve_hour(server, hour_events_)


def github_settings(server: FakeGitHub, **overrides: Any) -> GitHubSettings:
    values: dict[str, Any] = {
        "api_url": server.base_url,
        # two tokens, as a production pool: a rate-limited one rests, the other goes on
        "token": SecretStr("ghp_chaos_token_one"),
        "tokens": [SecretStr("ghp_chaos_token_two")],
        "concurrency": 8,
        "max_attempts": MAX_ATTEMPTS,
        "backoff_seconds": 0.02,
        "max_backoff_seconds": 0.2,
        "timeout_seconds": CLIENT_TIMEOUT,
        "rate_limit_reserve": 0,
        "secondary_limit_seconds": 1.0,
    }
    return GitHubSettings(**(values | overrides))


def llm_settings(server: FakeLLM, **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "chaos/model",
        "api_key": SecretStr("sk-or-chaos-key"),
        "max_attempts": MAX_ATTEMPTS,
        "max_output_attempts": MAX_OUTPUT_ATTEMPTS,
        "backoff_seconds": 0.02,
        "max_backoff_seconds": 0.2,
        "timeout_seconds": CLIENT_TIMEOUT,
    }
    return LLMSettings(**(values | overrides))


# --- one stage over one hour, as a worker runs it ----------------------------------------------


@dataclass
class Decisions:
    """What a stage did with each input record of one hour, read back from what it sent."""

    entries: dict[str, list[LedgerEntry]] = field(default_factory=dict)  # key -> ledger
    outputs: dict[str, list[bytes]] = field(default_factory=dict)  # key -> output values
    letters: dict[str, list[DeadLetter]] = field(default_factory=dict)  # key -> dead letters

    def status(self) -> dict[str, tuple[str, str | None]]:
        """key -> (status, reason) of its one ledger entry (reasons of failures cut to the
        error type: the message names a URL that differs between runs)."""
        found = {}
        for key, (entry, *_) in self.entries.items():
            reason = entry.reason
            if entry.status == "failed" and reason:
                reason = reason.split(":", 1)[0]
            found[key] = (entry.status, reason)
        return found

    def output_bytes(self) -> dict[str, bytes]:
        return {key: values[0] for key, values in self.outputs.items()}


async def run_stage(stage: Stage[Any], records: Iterable[Record]) -> Decisions:
    """Every record through ``StageRunner`` at the stage's concurrency (as its Faust agent
    does), one fresh ledger; the decisions are read from what the runner sent."""
    sink = MemorySink()
    runner: StageRunner[Any] = StageRunner(stage, sink, 1, Ledger(SinkLedgerStore(sink), 1))
    slots = asyncio.Semaphore(stage.concurrency)

    async def one(offset: int, record: Record) -> None:
        async with slots:
            key = getattr(record, "key", None)
            await runner.process(str(key).encode(), record.to_json(), 0, offset)

    await asyncio.gather(*(one(offset, record) for offset, record in enumerate(records)))
    decisions = Decisions()
    for _, value in sink.on(LEDGER.name):
        entry = LedgerEntry.from_json(value)
        decisions.entries.setdefault(entry.key, []).append(entry)
    assert stage.output is not None
    for key, value in sink.on(stage.output.name):
        decisions.outputs.setdefault((key or b"").decode(), []).append(value)
    for _, value in sink.on(stage.source.dlq_name):
        letter = DeadLetter.from_json(value)
        decisions.letters.setdefault(letter.key or "", []).append(letter)
    return decisions


def assert_one_decision_each(records: list[Any], decisions: Decisions) -> None:
    """Every record has exactly one ledger entry; a failed one exactly one dead letter with
    its original bytes; an accepted one exactly one output; nothing else was sent."""
    keys = {record.key for record in records}
    assert set(decisions.entries) == keys, "a record got no decision, or a stranger got one"
    for record in records:
        (entry,) = decisions.entries[record.key]  # exactly one: none lost, none duplicated
        letters = decisions.letters.get(record.key, [])
        outputs = decisions.outputs.get(record.key, [])
        if entry.status == "failed":
            (letter,) = letters
            assert letter.original_value() == record.to_json()
            assert outputs == []
        else:
            assert letters == []
            assert len(outputs) == (1 if entry.status == "accepted" else 0), record.key
    assert set(decisions.letters) <= keys and set(decisions.outputs) <= keys


# --- metrics -----------------------------------------------------------------------------------


def counts(name: str, by: str, **labels: str) -> Counter[str]:
    """The samples of a counter, summed per value of the label ``by``."""
    found: Counter[str] = Counter()
    for family in REGISTRY.collect():
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                found[sample.labels[by]] += sample.value
    return found


def delta(after: Counter[str], before: Counter[str]) -> Counter[str]:
    return Counter({k: round(after[k] - before[k]) for k in after if after[k] != before[k]})


# GitHub retry reasons (swe_stream_github_retries_total) per injected fault
GITHUB_REASONS = {
    "timeout": "timeout",
    "rate_limit": "rate_limit",
    "secondary_rate_limit": "secondary_rate_limit",
    "drop": "connection",
    "malformed_json": "malformed_json",
}
# LLM retry reasons (swe_stream_llm_retries_total) per injected fault
LLM_REASONS = {
    "rate_limit": "http_429",
    "timeout": "timeout",
    "drop": "connection",
    "malformed_json": "malformed_json",
}


def github_retries_by_fault(retries: Counter[str]) -> Counter[str]:
    by_fault: Counter[str] = Counter()
    for reason, n in retries.items():
        if reason.startswith("http_5"):
            by_fault["http_5xx"] += n
        else:
            kinds = [kind for kind, r in GITHUB_REASONS.items() if r == reason]
            by_fault[kinds[0] if kinds else f"unexpected:{reason}"] += n
    return by_fault


def llm_retries_by_fault(retries: Counter[str]) -> Counter[str]:
    by_fault: Counter[str] = Counter()
    for reason, n in retries.items():
        if reason.startswith("http_5"):
            by_fault["http_5xx"] += n
        else:
            kinds = [kind for kind, r in LLM_REASONS.items() if r == reason]
            by_fault[kinds[0] if kinds else f"unexpected:{reason}"] += n
    return by_fault


# --- the runs ----------------------------------------------------------------------------------


async def enrich_hours(
    server: FakeGitHub, candidates: dict[str, list[Any]], **overrides: Any
) -> dict[str, Decisions]:
    """The real enrich stage over every hour's candidates (one client and repository cache
    for the whole run, as in one worker)."""
    settings = github_settings(server, **overrides)
    github = GitHubClient(settings, rng=random.Random(CLIENT_SEED))
    repositories = RepositoryCache({}, github, 3600)
    # every language: the more PRs get through enrich, the more the faults are tested on
    rules = EnrichSettings(languages=[])
    stage = enrich_stage(
        rules, github, repositories, 1, PrefilterSettings().bots, settings.concurrency
    )
    try:
        return {hour: await run_stage(stage, records) for hour, records in candidates.items()}
    finally:
        await github.aclose()


async def classify_hours(
    server: FakeLLM, enriched: dict[str, list[EnrichedPullRequest]], **overrides: Any
) -> dict[str, Decisions]:
    llm = LLMClient(llm_settings(server, **overrides), rng=random.Random(CLIENT_SEED))
    stage = classify_stage(ClassifySettings(backend="llm"), llm, 1)
    try:
        return {hour: await run_stage(stage, records) for hour, records in enriched.items()}
    finally:
        await llm.aclose()


@pytest.fixture(scope="module")
def fault_free(
    events: dict[str, list[RawPullRequestEvent]], candidates: dict[str, list[Any]]
) -> dict[str, Decisions]:
    """The reference: enrich over every candidate with no fault at all."""
    with serve_github({}) as server:
        serve_hours(server, events)
        before = counts("swe_stream_github_retries_total", "reason")
        decisions = asyncio.run(enrich_hours(server, candidates))
        retried = delta(counts("swe_stream_github_retries_total", "reason"), before)
    assert retried == Counter(), f"retries without faults: {retried}"
    for hour, records in candidates.items():
        assert_one_decision_each(records, decisions[hour])
    accepted = sum(len(d.outputs) for d in decisions.values())
    assert accepted >= 50, f"only {accepted} PRs enriched: the reference proves little"
    return decisions


def enriched_of(decisions: dict[str, Decisions]) -> dict[str, list[EnrichedPullRequest]]:
    return {
        hour: [EnrichedPullRequest.from_json(v) for v in d.output_bytes().values()]
        for hour, d in decisions.items()
    }


def report(title: str, rows: dict[str, Any]) -> None:
    print(f"\n{title}")
    for name, value in rows.items():
        print(f"  {name}: {value}")


async def test_enrich_gets_every_candidate_through_20_percent_github_faults(
    events: dict[str, list[RawPullRequestEvent]],
    candidates: dict[str, list[Any]],
    fault_free: dict[str, Decisions],
) -> None:
    retries_before = counts("swe_stream_github_retries_total", "reason")
    requests_before = counts("swe_stream_github_requests_total", "status")
    with serve_github({}) as server:
        serve_hours(server, events)
        chaos = server.chaos(RATE, GITHUB_SEED, delay=FAULT_DELAY, reset_in=1.0, retry_after=1)
        chaotic = await enrich_hours(server, candidates)
        served = len(server.requests)
    retries = delta(counts("swe_stream_github_retries_total", "reason"), retries_before)
    requests = delta(counts("swe_stream_github_requests_total", "status"), requests_before)

    total = sum(len(records) for records in candidates.values())
    report(
        "enrich under GitHub chaos",
        {
            "candidates": total,
            "requests (server)": served,
            "faults injected": dict(chaos.injected),
            "retries counted (reason)": dict(retries),
            "requests counted (status)": dict(requests),
            "decisions": dict(Counter(s for d in chaotic.values() for s, _ in d.status().values())),
        },
    )
    # faults were really injected, of every kind, at about the rate asked
    assert set(chaos.injected) == set(GITHUB_FAULTS) and min(chaos.injected.values()) >= 3
    assert chaos.requests == served and 0.12 < chaos.total / served < 0.3
    # every candidate: exactly one decision, the same as without faults, the same outputs
    for hour, records in candidates.items():
        assert_one_decision_each(records, chaotic[hour])
        assert chaotic[hour].status() == fault_free[hour].status(), hour
        assert chaotic[hour].output_bytes() == fault_free[hour].output_bytes(), hour
    # every fault was retried, and every retry counted under its reason
    assert github_retries_by_fault(retries) == chaos.injected
    # every request the server saw, the client counted (timeouts and drops included)
    assert sum(requests.values()) == served
    assert requests["timeout"] == chaos.injected["timeout"]
    assert requests["error"] == chaos.injected["drop"]


async def test_classify_gets_every_pr_through_20_percent_llm_faults(
    fault_free: dict[str, Decisions],
) -> None:
    enriched = enriched_of(fault_free)
    with serve_llm() as server:
        server.answer_tools()
        reference = await classify_hours(server, enriched)
        calm_requests = len(server.chat_requests())
        before = {
            "retries": counts("swe_stream_llm_retries_total", "reason", purpose="classify"),
            "requests": counts("swe_stream_llm_requests_total", "status", purpose="classify"),
            "invalid": counts("swe_stream_llm_invalid_outputs_total", "reason", purpose="classify"),
        }
        chaos = server.chaos(RATE, LLM_SEED, delay=FAULT_DELAY, retry_after=0.5)
        chaotic = await classify_hours(server, enriched)
        served = len(server.chat_requests()) - calm_requests
    retries = delta(
        counts("swe_stream_llm_retries_total", "reason", purpose="classify"), before["retries"]
    )
    requests = delta(
        counts("swe_stream_llm_requests_total", "status", purpose="classify"), before["requests"]
    )
    invalid = delta(
        counts("swe_stream_llm_invalid_outputs_total", "reason", purpose="classify"),
        before["invalid"],
    )

    total = sum(len(records) for records in enriched.values())
    report(
        "classify (llm) under LLM chaos",
        {
            "enriched PRs": total,
            "requests (server, fault-free run)": calm_requests,
            "requests (server, chaos run)": served,
            "faults injected": dict(chaos.injected),
            "retries counted (reason)": dict(retries),
            "invalid outputs counted (reason)": dict(invalid),
            "requests counted (status)": dict(requests),
            "decisions": dict(Counter(s for d in chaotic.values() for s, _ in d.status().values())),
        },
    )
    assert calm_requests == total, "the fault-free run needed one request per PR"
    assert set(chaos.injected) == set(LLM_FAULTS) and min(chaos.injected.values()) >= 3
    assert chaos.requests == served and 0.12 < chaos.total / served < 0.3
    for hour, records in enriched.items():
        assert_one_decision_each(records, reference[hour])
        assert_one_decision_each(records, chaotic[hour])
        assert chaotic[hour].status() == reference[hour].status(), hour
        assert chaotic[hour].output_bytes() == reference[hour].output_bytes(), hour
        assert all(status == "accepted" for status, _ in chaotic[hour].status().values())
    # HTTP faults are retried (and counted as retries); malformed tool calls are asked again
    # (counted as invalid outputs)
    assert llm_retries_by_fault(retries) == chaos.injected - Counter(
        bad_arguments=chaos.injected["bad_arguments"]
    )
    assert invalid == Counter(malformed_json=chaos.injected["bad_arguments"])
    assert sum(requests.values()) == served


async def test_an_exhausted_budget_fails_the_pr_once(
    events: dict[str, list[RawPullRequestEvent]],
    candidates: dict[str, list[Any]],
    fault_free: dict[str, Decisions],
) -> None:
    """Half the requests failing and two attempts each: many PRs fail for good. Each failed
    PR is exactly one dead letter (its original bytes) and one `failed` ledger entry; every
    other PR gets the fault-free decision and output."""
    kinds = ("http_5xx", "drop", "malformed_json", "secondary_rate_limit")
    with serve_github({}) as server:
        serve_hours(server, events)
        chaos = server.chaos(0.5, GITHUB_SEED, kinds=kinds)
        decided = await enrich_hours(server, candidates, max_attempts=2)
    failed: set[tuple[str, str]] = set()
    for hour, decisions in decided.items():
        assert_one_decision_each(candidates[hour], decisions)
        reference = fault_free[hour]
        for key, (status, reason) in decisions.status().items():
            if status == "failed":
                failed.add((hour, key))
                assert reason == "GitHubUnavailable", (key, reason)
            else:
                assert (status, reason) == reference.status()[key]
                assert decisions.outputs.get(key) == reference.outputs.get(key)
    report(
        "enrich with an exhausted retry budget",
        {
            "candidates": sum(map(len, candidates.values())),
            "faults injected": dict(chaos.injected),
            "failed (one dead letter and one failed entry each)": len(failed),
        },
    )
    assert len(failed) >= 10, "the budget was hardly exhausted: the test proves little"
