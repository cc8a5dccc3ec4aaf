"""classify: the heuristic on real PRs, the difficulty filter with ledger entries, the backend
choice, and the LLM backend against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from agents.classify import (
    BANDS,
    CLASSIFY_TOOL,
    Classify,
    DifficultyVerdict,
    HeuristicClassifier,
    LLMClassifier,
    band_score,
    classify_messages,
    classify_stage,
    count_test_files,
    heuristic_difficulty,
    make_classifier,
)
from agents.enrich import Enricher, EnrichRules, RepositoryCache
from agents.prefilter import PrefilterRules, prefilter_event
from schemas import (
    ChangedFile,
    ClassifiedPullRequest,
    DeadLetter,
    EnrichedPullRequest,
    LedgerEntry,
    PullRequestCandidate,
)
from streams.clients.github import GitHubClient
from streams.clients.llm import LLMClient
from streams.core.settings import ClassifySettings, GitHubSettings, LLMSettings
from streams.kafka.topics import CLASSIFIED, ENRICHED, LEDGER
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import StageRunner
from tests.fakes.github_server import serve_github, serve_hour

HOUR0 = "2015-01-01-0"


@pytest.fixture(scope="module")
def hour0_enriched(hour_events: Any) -> list[EnrichedPullRequest]:
    """Hour 0's merged PRs through the real prefilter and enrich (local GitHub stand-in: the
    hour's real PR and repository objects, synthetic file lists)."""
    return asyncio.run(enrich_hour(hour_events(HOUR0)))


async def enrich_hour(events: list[Any]) -> list[EnrichedPullRequest]:
    with serve_github({}) as server:
        serve_hour(server, events)
        github = GitHubClient(GitHubSettings(api_url=server.base_url, rate_limit_reserve=0))
        enricher = Enricher(github, RepositoryCache({}, github, 3600), EnrichRules(), 1)
        records: list[EnrichedPullRequest] = []
        try:
            for event in events:
                candidate = prefilter_event(event, PrefilterRules(org_only=False), 1)
                if isinstance(candidate, PullRequestCandidate):
                    outcome = await enricher(candidate)
                    records += [o for o in outcome.outputs if isinstance(o, EnrichedPullRequest)]
        finally:
            await github.aclose()
    return records


@pytest.mark.unit
def test_band_score_stays_inside_the_swe_forge_bands() -> None:
    for complexity in [i / 100 for i in range(0, 101)] + [-1.0, 2.0]:
        label, score = band_score(complexity)
        low, high = BANDS[label]
        assert low <= score <= high, (complexity, label, score)
    assert band_score(0.0)[0] == "easy" and band_score(0.5)[0] == "medium"
    assert band_score(0.99)[0] == "hard"


@pytest.mark.unit
def test_verdict_outside_its_band_fails_validation() -> None:
    DifficultyVerdict(classification="easy", score=0.2, reasoning="one line")
    with pytest.raises(ValidationError, match="outside the hard band"):
        DifficultyVerdict(classification="hard", score=0.2, reasoning="one line")


@pytest.mark.unit
def test_heuristic_on_the_recorded_pr(enriched_235: EnrichedPullRequest) -> None:
    verdict = heuristic_difficulty(enriched_235)
    assert verdict.classification == "easy"  # 18 lines: one attribute and its test
    assert "1 source files" in verdict.reasoning and "test/code line ratio" in verdict.reasoning
    assert heuristic_difficulty(enriched_235.model_copy()) == verdict


@pytest.mark.unit
def test_tests_inside_rust_source_files_count_as_tests(
    enriched_235: EnrichedPullRequest,
) -> None:
    fix = "@@ -3,7 +3,7 @@ pub fn add(a: i32, b: i32) -> i32 {\n     x;\n-    a - b\n+    a + b\n"
    test = "@@ -40,3 +40,7 @@ mod tests {\n     }\n+    #[test]\n+    fn adds() {\n+    }\n+\n"
    lib = ChangedFile(
        filename="src/lib.rs", status="modified", additions=5, deletions=1, changes=6,
        patch=fix + test,
    )  # fmt: skip
    plain = lib.model_copy(update={"patch": fix})
    rust_info = enriched_235.repo_info.model_copy(update={"language": "Rust"})
    pr = enriched_235.model_copy(update={"files": [lib], "repo_info": rust_info})
    untested = pr.model_copy(update={"files": [plain]})
    assert count_test_files(pr) == 1 and count_test_files(untested) == 0
    assert "test/code line ratio 2.00" in heuristic_difficulty(pr).reasoning  # 4 test, 2 code
    assert "test/code line ratio 0.00" in heuristic_difficulty(untested).reasoning
    assert "test files: 1" in classify_messages(pr)[1]["content"]


@pytest.mark.integration
async def test_heuristic_labels_real_prs_deterministically(
    hour0_enriched: list[EnrichedPullRequest],
) -> None:
    assert len(hour0_enriched) >= 20
    first = [heuristic_difficulty(pr) for pr in hour0_enriched]
    again = [heuristic_difficulty(pr.model_copy(deep=True)) for pr in reversed(hour0_enriched)]
    assert first == list(reversed(again))
    labels = Counter(v.classification for v in first)
    assert len(labels) >= 2, f"every PR got the same label: {labels}"


@pytest.mark.integration
async def test_difficulty_filter_drops_the_other_levels_with_ledger_entries(
    hour0_enriched: list[EnrichedPullRequest],
) -> None:
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), 1)
    stage = classify_stage(
        ClassifySettings(backend="heuristic", difficulties=["easy"]), LLMClient(LLMSettings()), 1
    )
    runner: StageRunner[Any] = StageRunner(stage, sink, 1, ledger)
    for offset, pr in enumerate(hour0_enriched):
        await runner.process(pr.key.encode(), pr.to_json(), 0, offset)
    expected = Counter(heuristic_difficulty(pr).classification for pr in hour0_enriched)
    kept = [ClassifiedPullRequest.from_json(v) for _, v in sink.on(CLASSIFIED.name)]
    assert len(kept) == expected["easy"] > 0
    assert all(c.classification == "easy" and c.classified_by == "heuristic" for c in kept)
    entries = [LedgerEntry.from_json(v) for _, v in sink.on(LEDGER.name)]
    assert len(entries) == len(hour0_enriched)
    dropped = Counter(e.reason for e in entries if e.status == "rejected")
    assert dropped == {f"difficulty_{label}": n for label, n in expected.items() if label != "easy"}


@pytest.mark.integration
async def test_score_thresholds_reject_outside_the_range(
    hour0_enriched: list[EnrichedPullRequest],
) -> None:
    scores = sorted(heuristic_difficulty(pr).score for pr in hour0_enriched)
    low, high = scores[len(scores) // 4], scores[3 * len(scores) // 4]
    sink = MemorySink()
    settings = ClassifySettings(backend="heuristic", min_score=low, max_score=high)
    stage = classify_stage(settings, LLMClient(LLMSettings()), 1)
    runner: StageRunner[Any] = StageRunner(stage, sink, 1, Ledger(SinkLedgerStore(sink), 1))
    for offset, pr in enumerate(hour0_enriched):
        await runner.process(pr.key.encode(), pr.to_json(), 0, offset)
    kept = [ClassifiedPullRequest.from_json(v).score for _, v in sink.on(CLASSIFIED.name)]
    assert kept and all(low <= score <= high for score in kept)
    reasons = Counter(
        LedgerEntry.from_json(v).reason
        for _, v in sink.on(LEDGER.name)
        if LedgerEntry.from_json(v).status == "rejected"
    )
    assert reasons == {
        "score_below_min": sum(s < low for s in scores),
        "score_above_max": sum(s > high for s in scores),
    }
    assert len(reasons) == 2 and all(reasons.values())  # both thresholds did reject
    assert len(kept) + sum(reasons.values()) == len(hour0_enriched)
    with pytest.raises(ValidationError, match="above max_score"):
        ClassifySettings(min_score=0.6, max_score=0.5)


@pytest.mark.unit
def test_auto_backend_announces_the_heuristic_without_a_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="swe_stream.backends"):
        classifier = make_classifier("auto", LLMClient(LLMSettings()))
    assert isinstance(classifier, HeuristicClassifier) and classifier.name == "heuristic"
    assert "no LLM API key configured" in caplog.text
    keyed = LLMClient(LLMSettings(api_key=SecretStr("sk-or-test-key"), model="m/x"))
    llm_backed = make_classifier("auto", keyed)
    assert isinstance(llm_backed, LLMClassifier) and llm_backed.name == "llm:m/x"
    assert isinstance(make_classifier("heuristic", keyed), HeuristicClassifier)


@pytest.mark.integration
async def test_llm_backend_classifies_and_reasks_out_of_band_scores(
    llm_server: Any, enriched_235: EnrichedPullRequest
) -> None:
    llm = LLMClient(llm_settings(llm_server))
    llm_server.reply_tool_call(
        CLASSIFY_TOOL.name, {"classification": "hard", "score": 0.2, "reasoning": "x"}
    )
    llm_server.reply_tool_call(
        CLASSIFY_TOOL.name,
        {"classification": "easy", "score": 0.2, "reasoning": "Adds one attribute."},
    )
    try:
        outcome = await Classify(LLMClassifier(llm), [], 1)(enriched_235)
    finally:
        await llm.aclose()
    (record,) = outcome.outputs
    assert isinstance(record, ClassifiedPullRequest)
    assert (record.classification, record.score) == ("easy", 0.2)
    assert record.classified_by == "llm:test/model"
    first, second = (request_body(r) for r in llm_server.requests)
    assert first["tool_choice"] == "required"
    assert first["tools"][0]["function"]["name"] == "classify_difficulty"
    user = first["messages"][1]["content"]
    assert "sigmavirus24/github3.py (Python)" in user and "Add Release.assets" in user
    assert "outside the hard band" in second["messages"][-1]["content"]


@pytest.mark.integration
async def test_llm_failure_goes_to_the_dlq_and_ledger_never_to_the_heuristic(
    llm_server: Any, enriched_235: EnrichedPullRequest
) -> None:
    for _ in range(3):
        llm_server.reply_tool_call(
            CLASSIFY_TOOL.name, {"classification": "easy", "score": "low", "reasoning": "x"}
        )
    llm = LLMClient(llm_settings(llm_server))
    sink = MemorySink()
    stage = classify_stage(ClassifySettings(backend="llm"), llm, 1)
    runner: StageRunner[Any] = StageRunner(stage, sink, 1, Ledger(SinkLedgerStore(sink), 1))
    try:
        result = await runner.process(enriched_235.key.encode(), enriched_235.to_json(), 1, 5)
    finally:
        await llm.aclose()
    assert result is None and sink.on(CLASSIFIED.name) == []
    (letter,) = [DeadLetter.from_json(v) for _, v in sink.on(ENRICHED.dlq_name)]
    assert letter.error_type == "LLMOutputError" and "score" in letter.error
    (entry,) = [LedgerEntry.from_json(v) for _, v in sink.on(LEDGER.name)]
    assert entry.status == "failed" and entry.reason and "LLMOutputError" in entry.reason
    assert len(llm_server.requests) == 3


def llm_settings(server: Any) -> LLMSettings:
    return LLMSettings(
        base_url=server.base_url,
        model="test/model",
        api_key=SecretStr("sk-or-test-classify"),
        backoff_seconds=0.05,
        max_backoff_seconds=0.2,
        timeout_seconds=2,
    )


def request_body(request: Any) -> dict[str, Any]:
    return request.body if hasattr(request, "body") else request["body"]
