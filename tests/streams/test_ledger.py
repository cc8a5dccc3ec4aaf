"""The ledger API: one entry per PR, its latest transition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schemas import LedgerEntry
from streams.ledger import Ledger, SinkLedgerStore
from streams.sinks import MemorySink

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
    assert [key for key, _ in sent] == [b"octo/hello#5"] * 3  # one compacted key per PR
    assert LedgerEntry.from_json(sent[-1][1]) == later
    assert later.pipeline_version == 2 and later.reason == "too-easy"


async def test_an_invalid_transition_is_refused_before_anything_is_sent() -> None:
    sink = MemorySink()
    ledger = Ledger(SinkLedgerStore(sink), 1)
    with pytest.raises(ValueError, match="status"):
        await ledger.record("octo/hello", 5, stage="enrich", status="maybe")
    with pytest.raises(ValueError, match="repo"):
        await ledger.record("../etc", 5, stage="enrich", status="accepted")
    assert sink.sent == []
