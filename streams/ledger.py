"""The processed-PR ledger API: every stage records a PR's transition here.

``swe.ledger`` is compacted and keyed ``owner/repo#number``; its value is the PR's latest
``LedgerEntry`` (stage reached, status, reason, pipeline version, attempts, timestamps).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from schemas import LedgerEntry, pr_key
from streams import metrics
from streams.sinks import RecordSink
from streams.topics import LEDGER


def utcnow() -> datetime:
    return datetime.now(UTC)


def next_entry(
    *,
    repo: str,
    number: int,
    stage: str,
    status: str,
    reason: str | None,
    pipeline_version: int,
    previous: LedgerEntry | None = None,
    now: datetime,
) -> LedgerEntry:
    """The ledger value after a transition; attempts count repeats of the same stage."""
    same_stage = previous is not None and previous.stage == stage
    return LedgerEntry.model_validate(
        {
            "pipeline_version": pipeline_version,
            "repo": repo,
            "number": number,
            "stage": stage,
            "status": status,
            "reason": reason,
            "attempts": previous.attempts + 1 if same_stage and previous else 1,
            "first_seen_at": previous.first_seen_at if previous else now,
            "updated_at": now,
        }
    )


class Ledger:
    """Writes transitions to ``swe.ledger`` through any ``RecordSink``."""

    def __init__(
        self,
        sink: RecordSink,
        pipeline_version: int,
        clock: Callable[[], datetime] = utcnow,
    ):
        self.sink = sink
        self.pipeline_version = pipeline_version
        self.clock = clock

    async def record(
        self,
        repo: str,
        number: int,
        *,
        stage: str,
        status: str,
        reason: str | None = None,
        previous: LedgerEntry | None = None,
    ) -> LedgerEntry:
        entry = next_entry(
            repo=repo,
            number=number,
            stage=stage,
            status=status,
            reason=reason,
            pipeline_version=self.pipeline_version,
            previous=previous,
            now=self.clock(),
        )
        await self.sink.send(LEDGER.name, pr_key(repo, number).encode(), entry.to_json())
        metrics.LEDGER_WRITES.labels(stage=stage, status=status).inc()
        return entry
