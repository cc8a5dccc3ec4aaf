"""score: the heuristic quality gate on the real SWE-bench rows, the threshold with its ledger
entries, the LLM backend on a scripted server, and classify + score in a worker on the
embedded broker."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from agents.classify import heuristic_difficulty
from agents.score import (
    BELOW_THRESHOLD,
    SCORE_TOOL,
    LLMScorer,
    Score,
    changed_lines,
    heuristic_quality,
    score_stage,
)
from schemas import (
    ClassifiedPullRequest,
    EnrichedPullRequest,
    LedgerEntry,
    ScoredTask,
    ValidatedTask,
)
from streams.clients.llm import LLMClient
from streams.core.settings import LLMSettings, ScoreSettings
from streams.kafka.topics import CLASSIFIED, ENRICHED, LEDGER, SCORED, VALIDATED
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import StageRunner
from tests.agents.conftest import start_stage_worker, wait_for
from tests.agents.test_classify import llm_settings, request_body
from tests.workers import stop, wait_for_metrics


@pytest.mark.unit
def test_changed_lines_counts_diff_bodies_only(validated_tasks: list[ValidatedTask]) -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old\n+new\n context\n"
    assert changed_lines(diff) == 2
    django = next(t for t in validated_tasks if t.instance_id == "django__django-16255")
    assert changed_lines(django.patch) == 2  # SWE-bench's one-line fix of sitemaps


@pytest.mark.unit
def test_heuristic_quality_is_deterministic_and_discriminates(
    validated_tasks: list[ValidatedTask],
) -> None:
    verdicts = [heuristic_quality(t) for t in validated_tasks]
    assert verdicts == [heuristic_quality(t.model_copy(deep=True)) for t in validated_tasks]
    assert all(0 <= v.score <= 1 for v in verdicts)
    task = validated_tasks[0]
    vague = task.model_copy(update={"problem_statement": "it is broken"})
    assert heuristic_quality(vague).score < heuristic_quality(task).score
    assert "FAIL_TO_PASS" in verdicts[0].reasoning


@pytest.mark.unit
async def test_tasks_below_the_threshold_are_scored_and_rejected(
    validated_tasks: list[ValidatedTask],
) -> None:
    threshold = sorted(heuristic_quality(t).score for t in validated_tasks)[5]
    sink = MemorySink()
    stage = score_stage(
        ScoreSettings(backend="heuristic", min_quality=threshold), LLMClient(LLMSettings()), 1
    )
    runner: StageRunner[Any] = StageRunner(stage, sink, 1, Ledger(SinkLedgerStore(sink), 1))
    for offset, task in enumerate(validated_tasks):
        await runner.process(task.key.encode(), task.to_json(), 0, offset)
    scored = [ScoredTask.from_json(v) for _, v in sink.on(SCORED.name)]
    assert len(scored) == 10
    for record in scored:
        assert record.accepted == (record.quality_score >= threshold)
        assert record.quality_reasoning.startswith("[heuristic] ")
        assert (
            record.to_swebench()
            == next(t for t in validated_tasks if t.instance_id == record.instance_id).to_swebench()
        )
    entries = Counter((e.status, e.reason) for e in map(LedgerEntry.from_json, ledger_values(sink)))
    rejected = sum(1 for r in scored if not r.accepted)
    assert entries == {("accepted", None): 10 - rejected, ("rejected", BELOW_THRESHOLD): rejected}
    assert rejected == 5


def ledger_values(sink: MemorySink) -> list[bytes]:
    return [v for _, v in sink.on(LEDGER.name)]


@pytest.mark.integration
async def test_llm_scorer_uses_the_whole_task(
    llm_server: Any, validated_tasks: list[ValidatedTask]
) -> None:
    task = validated_tasks[0]
    llm_server.reply_tool_call(
        SCORE_TOOL.name,
        {"classification": "easy", "score": 0.9, "reasoning": "Clear report, focused fix."},
    )
    llm = LLMClient(llm_settings(llm_server))
    try:
        outcome = await Score(LLMScorer(llm), 0.5, 1)(task)
    finally:
        await llm.aclose()
    (record,) = outcome.outputs
    assert isinstance(record, ScoredTask) and record.accepted and record.quality_score == 0.9
    assert record.classification == "easy"
    assert record.quality_reasoning == "[llm:test/model] Clear report, focused fix."
    body = request_body(llm_server.requests[0])
    prompt = body["messages"][1]["content"]
    assert task.problem_statement[:200] in prompt and "Gold patch:" in prompt
    assert task.FAIL_TO_PASS[0] in prompt and body["tools"][0]["function"]["name"] == "score_task"


async def produce(bootstrap: str, topic: str, records: list[Any]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for record in records:
            await producer.send_and_wait(topic, key=record.key.encode(), value=record.to_json())
    finally:
        await producer.stop()


@pytest.mark.integration
def test_classify_and_score_run_between_their_topics_on_the_broker(
    bootstrap: str,
    tmp_path: Path,
    enriched_235: EnrichedPullRequest,
    validated_tasks: list[ValidatedTask],
) -> None:
    log = tmp_path / "worker.log"
    process, metrics_port = start_stage_worker(
        bootstrap, "classify,score", log, {"SWE_STREAM_SCORE_MIN_QUALITY": "0.0"}
    )
    try:
        wait_for_metrics(metrics_port, process, log)
        asyncio.run(produce(bootstrap, ENRICHED.name, [enriched_235]))
        asyncio.run(produce(bootstrap, VALIDATED.name, validated_tasks))
        classified = asyncio.run(wait_for(bootstrap, CLASSIFIED.name, 1, process, log))
        # the rows hold one PR twice (pylint-dev/astroid#1268, in both SWE-bench sets): its
        # second record is skipped, the PR being scored already (``Stage.done_at``)
        unique = {t.instance_id for t in validated_tasks}
        assert len(validated_tasks) == len(unique) + 1
        scored = asyncio.run(wait_for(bootstrap, SCORED.name, len(unique), process, log))
        deadline = time.monotonic() + 60
        while skipped_as_done(metrics_port) < 1:  # the duplicate, read and skipped
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        assert len(asyncio.run(wait_for(bootstrap, SCORED.name, 0, process, log))) == len(unique)
        (record,) = [ClassifiedPullRequest.from_json(v) for v in classified]
        assert record.pull_request == enriched_235 and record.classified_by == "heuristic"
        assert record.classification == heuristic_difficulty(enriched_235).classification
        tasks = {ScoredTask.from_json(v).instance_id: ScoredTask.from_json(v) for v in scored}
        assert set(tasks) == {t.instance_id for t in validated_tasks}
        assert all(t.accepted for t in tasks.values())  # min_quality 0 from the environment
        for task in validated_tasks:
            assert tasks[task.instance_id].quality_score == heuristic_quality(task).score
        assert log.read_text().count("no LLM API key") == 1  # said once, at start
    finally:
        if process.poll() is None:
            assert stop(process) == 0, log.read_text()[-3000:]


def skipped_as_done(metrics_port: int) -> float:
    """The score stage's records skipped as done, as the worker's /metrics serves them."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "swe_stream_stage_records_skipped_total"
        and sample.labels == {"stage": "score", "reason": "already_done"}
    )


@pytest.mark.unit
def test_validated_fixture_rows_round_trip(validated_tasks: list[ValidatedTask]) -> None:
    assert len(validated_tasks) == 10
    assert all(json.loads(t.to_json())["FAIL_TO_PASS"] for t in validated_tasks)
