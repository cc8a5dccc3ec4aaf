"""The processed-PR ledger API: every stage records a PR's transition here.

``swe.ledger`` is compacted and keyed ``owner/repo#number``; its value is the PR's latest
``LedgerEntry`` (stage reached, status, reason, pipeline version, attempts, timestamps).

A ``LedgerStore`` is where entries are written and looked up ("seen?"):

- ``TableLedgerStore`` in a worker: a Faust table whose changelog *is* ``swe.ledger``. On a
  partition assignment Faust recovers the table from the topic, and since every PR-level topic
  is co-partitioned by key, the worker owning a PR's partition is the only writer of its
  ledger key: the table is always current for the PRs this worker handles.
- ``SinkLedgerStore`` everywhere else (unit tests, one-shot tools): a dict plus a sink.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import ValidationError

from schemas import LedgerEntry, pr_key
from streams import metrics
from streams.sinks import RecordSink
from streams.topics import LEDGER


def utcnow() -> datetime:
    return datetime.now(UTC)


class LedgerStore(Protocol):
    """Latest ledger value per PR key: read locally, written through to ``swe.ledger``."""

    def get(self, key: str) -> bytes | None: ...

    async def put(self, key: str, value: bytes) -> None: ...


class SinkLedgerStore:
    """A dict of the entries written through this store, each also sent to ``sink``."""

    def __init__(self, sink: RecordSink):
        self.sink = sink
        self.entries: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self.entries.get(key)

    async def put(self, key: str, value: bytes) -> None:
        await self.sink.send(LEDGER.name, key.encode(), value)
        self.entries[key] = value


class TableLedgerStore:
    """A Faust table (bytes keys and values) whose changelog topic is ``swe.ledger``."""

    def __init__(self, table: MutableMapping[bytes, bytes]):
        self.table = table

    def get(self, key: str) -> bytes | None:
        return self.table.get(key.encode())

    async def put(self, key: str, value: bytes) -> None:
        # Faust sends the change to the changelog (swe.ledger) and buffers it until the
        # source offsets commit, like every other output of the stage.
        self.table[key.encode()] = value


def raw_schema() -> Any:
    """Tables of bytes keys and values: what is stored is exactly what the topic holds."""
    import faust

    return faust.Schema(
        key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
    )


def ledger_table(app: Any, partitions: int) -> Any:
    """The Faust table over ``swe.ledger``; the producer's partitioner places each entry,
    so the table's writes land where the stages' direct writes would."""
    changelog = app.topic(
        LEDGER.name,
        key_serializer="raw",
        value_serializer="raw",
        partitions=partitions,
        compacting=True,
        deleting=False,
    )
    return app.Table(
        "swe-ledger",
        default=None,
        schema=raw_schema(),
        changelog_topic=changelog,
        use_partitioner=True,
        partitions=partitions,
        help="the processed-PR ledger (swe.ledger), for 'seen?' lookups",
    )


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
    first_seen = previous.first_seen_at if previous and previous.first_seen_at <= now else now
    return LedgerEntry.model_validate(
        {
            "pipeline_version": pipeline_version,
            "repo": repo,
            "number": number,
            "stage": stage,
            "status": status,
            "reason": reason,
            "attempts": previous.attempts + 1 if same_stage and previous else 1,
            "first_seen_at": first_seen,
            "updated_at": now,
        }
    )


class Ledger:
    """Writes transitions to ``swe.ledger`` and answers "what do we know of this PR?"."""

    def __init__(
        self,
        store: LedgerStore,
        pipeline_version: int,
        clock: Callable[[], datetime] = utcnow,
    ):
        self.store = store
        self.pipeline_version = pipeline_version
        self.clock = clock

    def lookup(self, repo: str, number: int) -> LedgerEntry | None:
        """The PR's latest entry, or None (never seen, or written by an unreadable schema)."""
        raw = self.store.get(pr_key(repo, number))
        if raw is None:
            return None
        try:
            return LedgerEntry.from_json(raw)
        except ValidationError:
            return None

    def final_entry(self, repo: str, number: int) -> LedgerEntry | None:
        """The PR's entry if it is final for *this* pipeline version (nothing left to do)."""
        entry = self.lookup(repo, number)
        if (
            entry is not None
            and entry.is_final()
            and entry.pipeline_version == self.pipeline_version
        ):
            return entry
        return None

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
        """Write the transition; ``previous`` defaults to the store's current entry."""
        if previous is None:
            previous = self.lookup(repo, number)
            if previous is not None and previous.pipeline_version != self.pipeline_version:
                previous = None  # a new pipeline version starts the PR's history afresh
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
        await self.store.put(entry.key, entry.to_json())
        metrics.LEDGER_WRITES.labels(stage=stage, status=status).inc()
        return entry
