"""The ledger API: one entry per PR, its latest transition."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiokafka.partitioner import DefaultPartitioner

from schemas import LedgerEntry
from streams.pipeline.ledger import (
    Funnel,
    Ledger,
    PrFileError,
    SinkLedgerStore,
    decided,
    latest,
    ledger_partition,
    of_version,
    read_pr_file,
    write_pr_file,
)
from streams.pipeline.sinks import MemorySink

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


async def test_transitions_keep_first_seen_and_count_attempts_per_stage() -> None:
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), pipeline_version=2, clock=Clock())
    first = await ledger.record("octo/hello", 5, stage="enrich", status="in_progress")
    retry = await ledger.record(
        "octo/hello", 5, stage="enrich", status="failed", reason="HTTP 502", previous=first
    )
    later = await ledger.record(
        "octo/hello", 5, stage="classify", status="rejected", reason="too-easy", previous=retry
    )
    assert (first.attempts, retry.attempts, later.attempts) == (1, 2, 1)
    assert first.first_seen_at == retry.first_seen_at == later.first_seen_at
    assert later.updated_at > retry.updated_at > first.updated_at
    assert later.is_final() and not first.is_final()
    sent = sink.on("swe.ledger")
    assert [key for key, _ in sent] == [b"octo/hello#5@v2"] * 3  # one compacted key per PR
    assert LedgerEntry.from_json(sent[-1][1]) == later
    assert later.pipeline_version == 2 and later.reason == "too-easy"


async def test_each_pipeline_version_keeps_its_own_entry_on_the_prs_partition() -> None:
    sink = MemorySink()
    store = SinkLedgerStore(sink)
    v1, v2 = Ledger(store, 1, clock=Clock()), Ledger(store, 2, clock=Clock())
    await v1.record("octo/hello", 5, stage="export", status="exported")
    assert v1.final_entry("octo/hello", 5) is not None
    assert v2.lookup("octo/hello", 5) is None  # version 2 starts the PR afresh
    await v2.record("octo/hello", 5, stage="classify", status="rejected", reason="score_above_max")
    # version 2's decision leaves version 1's entry as it was
    assert v1.lookup("octo/hello", 5).status == "exported"  # type: ignore[union-attr]
    entries = [LedgerEntry.from_json(v) for _, v in sink.on("swe.ledger")]
    assert sorted(latest(entries)) == ["octo/hello#5@v1", "octo/hello#5@v2"]
    assert [e.status for e in of_version(entries, 2)] == ["rejected"]
    # an entry belongs where Kafka's default partitioner puts the PR's own records
    for partitions in (1, 3, 12):
        expected = DefaultPartitioner()(b"octo/hello#5", list(range(partitions)), [])
        assert {ledger_partition(e, partitions) for e in entries} == {expected}


async def test_an_invalid_transition_is_refused_before_anything_is_sent() -> None:
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), 1)
    with pytest.raises(ValueError, match="status"):
        await ledger.record("octo/hello", 5, stage="enrich", status="maybe")
    with pytest.raises(ValueError, match="repo"):
        await ledger.record("../etc", 5, stage="enrich", status="accepted")
    assert sink.sent == []


async def _history() -> list[LedgerEntry]:
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), 1, clock=Clock())
    await ledger.record("octo/a", 1, stage="prefilter", status="accepted")
    await ledger.record("octo/a", 1, stage="enrich", status="failed", reason="GitHubNotFound: /1")
    await ledger.record("octo/b", 2, stage="prefilter", status="ignored", reason="not_closed")
    await ledger.record("octo/b", 2, stage="prefilter", status="accepted")
    await ledger.record("octo/b", 2, stage="enrich", status="failed", reason="GitHubNotFound: /2")
    await ledger.record("octo/c", 3, stage="prefilter", status="rejected", reason="not_org")
    await ledger.record("octo/d", 4, stage="prefilter", status="accepted")
    await ledger.record("octo/d", 4, stage="export", status="exported")
    return [LedgerEntry.from_json(v) for _, v in sink.on("swe.ledger")]


async def test_the_funnel_counts_transitions_and_latest_states() -> None:
    funnel = Funnel.of(await _history())
    assert funnel.decisions("prefilter") == 5
    assert funnel.count("prefilter", "accepted") == 3
    # failures are counted by error type: their messages name the PR
    assert funnel.transitions["enrich"] == {("failed", "GitHubNotFound"): 2}
    states = {(stage, status) for stage, status, _ in funnel.prs}
    assert states == {("enrich", "failed"), ("prefilter", "rejected"), ("export", "exported")}
    text = "\n".join(funnel.lines(["prefilter", "enrich", "export"]))
    assert "prefilter: 5" in text and "ignored: 1 (not_closed 1)" in text
    assert "PRs by latest state: 4 (exported 1, failed 2, rejected 1)" in text


async def test_a_pr_file_round_trips_and_reads_swe_forge_lines(tmp_path: Path) -> None:
    history = await _history()
    path = tmp_path / "processed.jsonl"
    assert write_pr_file(path, history) == len(history)
    assert read_pr_file(path, 1) == history
    first = json.loads(path.read_text().splitlines()[0])
    assert (first["repo"], first["pr"]) == ("octo/a", 1)  # what swe-forge reads
    forge = tmp_path / "forge.jsonl"
    forge.write_text('{"pr": 9, "repo": "octo/forge"}\n\n{"repo": "octo/x", "pr": 10}\n')
    imported = read_pr_file(forge, 3, now=T0)
    assert [(e.key, e.status, e.stage, e.pipeline_version) for e in imported] == [
        ("octo/forge#9", "exported", "import", 3),
        ("octo/x#10", "exported", "import", 3),
    ]
    assert all(e.is_final() for e in imported)


async def test_only_verdicts_go_to_swe_forges_pr_file() -> None:
    history = await _history()
    latest_states = latest(history).values()
    chosen = sorted(e.key for e in latest_states if decided(e))
    failed = sorted(e.key for e in latest_states if e.status == "failed")
    assert failed and not set(failed) & set(chosen)  # GitHubNotFound: it may answer later
    assert chosen == sorted(e.key for e in latest_states if e.status in {"exported", "rejected"})


@pytest.mark.parametrize(
    "line",
    ['{"repo": "octo/a"}', "not json", '{"repo": "../x", "pr": 1}', '{"repo": "o/r", "pr": 0}'],
)
def test_a_bad_pr_file_line_is_an_error_naming_it(tmp_path: Path, line: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"repo": "octo/ok", "pr": 1}\n' + line + "\n")
    with pytest.raises(PrFileError, match=r"bad.jsonl:2: "):
        read_pr_file(path, 1)


def test_the_ledger_changelog_is_no_stream_faust_should_watch() -> None:
    """Faust's monitor takes every acking topic of the app for a stream: swe.ledger (the
    table's changelog, no stream reads it) logged "Stream has not started processing" at
    ERROR every few seconds once a run passed five minutes. Its topic does not ack, as
    Faust's own changelogs do not; a stage's input does."""
    from tests.fakes.shout_app import app

    changelog = app.tables["swe-ledger"].changelog_topic
    assert changelog.get_topic_name() == "swe.ledger"
    assert changelog.acks is False
    # the stage's input acks: its offsets are committed as records are done
    (agent,) = [a for a in app.agents.values() if a.name.endswith("shout")]
    assert agent.channel.acks is True
