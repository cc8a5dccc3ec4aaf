"""The processed-PR ledger API: every stage records a PR's transition here.

``swe.ledger`` is compacted and keyed ``owner/repo#number@v<N>``; its value is the PR's
latest ``LedgerEntry`` in pipeline version N (stage reached, status, reason, attempts,
timestamps). Versions keep separate entries: a replay under N+1 leaves N's decisions alone.
An entry lives on the partition of ``owner/repo#number`` (the PR's records' partition), not
where its own key would hash.

A ``LedgerStore`` is where entries are written and looked up ("seen?"):

- ``TableLedgerStore`` in a worker: a Faust table whose changelog *is* ``swe.ledger``, written
  to the partition of the record being processed. Every PR-level topic is co-partitioned by
  PR key, so that is the PR's partition: on an assignment Faust recovers exactly the entries
  of the PRs this worker now owns, and it is their only writer.
- ``SinkLedgerStore`` in unit tests: a dict plus a sink.

Reading it back: ``read_ledger`` (the topic), ``read_pr_file`` / ``write_pr_file`` (a JSONL
file whose lines swe-forge reads as its ``--pr-file`` and swe-stream restores whole), and
``Funnel`` (counts by stage, status and reason) for ``swe-stream ledger stats`` and ``mine``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from schemas import LedgerEntry, ledger_key
from streams.core import metrics
from streams.kafka.client import KafkaProfile
from streams.kafka.topics import LEDGER
from streams.pipeline.sinks import RecordSink

log = logging.getLogger("swe_stream.ledger")


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

    def __init__(self, table: Any):
        self.table = table

    def get(self, key: str) -> bytes | None:
        value = self.table.get(key.encode())
        return value if isinstance(value, bytes) else None

    async def put(self, key: str, value: bytes) -> None:
        # Sent, and waited for until swe.ledger holds it: Faust's own ``table[key] = value``
        # queues the change in its producer buffer, and the flush before an offset commit gives
        # up after 0.1 s without a send (a busy worker), so the record's offset could commit
        # with its entry still queued, and a worker killed then lost the entry for good (a PR
        # left at an earlier state). The record is acked only after this returns.
        raw = key.encode()
        delivered = self.table.send_changelog(self.table.partition_for_key(raw), raw, value)
        self.table.data[raw] = value  # what ``table[key] = value`` keeps, without a second send
        await delivered


def raw_schema() -> Any:
    """Tables of bytes keys and values: what is stored is exactly what the topic holds."""
    import faust

    return faust.Schema(
        key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
    )


def ledger_table(app: Any, partitions: int) -> Any:
    """The Faust table over ``swe.ledger``. No partitioner: an entry goes to the partition of
    the record being processed, i.e. the PR's partition (``ledger_partition``), whatever its
    versioned key would hash to."""
    changelog = app.topic(
        LEDGER.name,
        key_serializer="raw",
        value_serializer="raw",
        partitions=partitions,
        compacting=True,
        deleting=False,
        # a changelog, as Faust makes its own: no acks, so its monitor does not take it for
        # a stream that stopped ("Stream has not started processing swe.ledger", ERROR every
        # few seconds of a run longer than stream_processing_timeout)
        acks=False,
    )
    return app.Table(
        "swe-ledger",
        default=None,
        schema=raw_schema(),
        key_type=bytes,  # the types, not only the schema, choose how recovery decodes
        value_type=bytes,
        changelog_topic=changelog,
        use_partitioner=False,
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
    detail: str | None = None,
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
            "detail": detail[:4000] if detail else None,
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
        """The PR's latest entry in this pipeline version, or None (never seen, or written
        by an unreadable schema)."""
        raw = self.store.get(ledger_key(repo, number, self.pipeline_version))
        if raw is None:
            return None
        try:
            return LedgerEntry.from_json(raw)
        except ValidationError:
            return None

    def final_entry(self, repo: str, number: int) -> LedgerEntry | None:
        """The PR's entry if it is final for *this* pipeline version (nothing left to do)."""
        entry = self.lookup(repo, number)
        return entry if entry is not None and entry.is_final() else None

    async def record(
        self,
        repo: str,
        number: int,
        *,
        stage: str,
        status: str,
        reason: str | None = None,
        previous: LedgerEntry | None = None,
        detail: str | None = None,
    ) -> LedgerEntry:
        """Write the transition; ``previous`` defaults to the store's current entry."""
        if previous is None:
            previous = self.lookup(repo, number)
        entry = next_entry(
            repo=repo,
            number=number,
            stage=stage,
            status=status,
            reason=reason,
            pipeline_version=self.pipeline_version,
            previous=previous,
            now=self.clock(),
            detail=detail,
        )
        await self.store.put(entry.ledger_key, entry.to_json())
        metrics.LEDGER_WRITES.labels(stage=stage, status=status).inc()
        return entry


# reading the ledger back: the topic, files, the funnel -----------------------------------


async def read_ledger(bootstrap: str) -> list[LedgerEntry]:
    """Every entry of ``swe.ledger`` in topic order (on Apache Kafka, what compaction kept);
    an unreadable value is logged and left out."""
    from streams.kafka.client import read_topic_to_end

    entries = []
    async for record in read_topic_to_end(bootstrap, LEDGER.name):
        try:
            entries.append(LedgerEntry.from_json(record.value))
        except ValidationError:
            log.warning("unreadable swe.ledger value at %d:%d", record.partition, record.offset)
    return entries


def latest(entries: Iterable[LedgerEntry]) -> dict[str, LedgerEntry]:
    """The latest entry of each PR in each pipeline version, by ledger key (what the
    compacted topic converges to)."""
    current: dict[str, LedgerEntry] = {}
    for entry in entries:
        current[entry.ledger_key] = entry
    return current


def of_version(entries: Iterable[LedgerEntry], pipeline_version: int | None) -> list[LedgerEntry]:
    """The entries of one pipeline version (all of them for None)."""
    return [
        e for e in entries if pipeline_version is None or e.pipeline_version == pipeline_version
    ]


def ledger_partition(entry: LedgerEntry, partitions: int) -> int:
    """The partition an entry belongs on: the one Kafka's default partitioner gives the PR's
    own key, where the PR's records are."""
    from aiokafka.partitioner import murmur2

    return (murmur2(entry.key.encode()) & 0x7FFFFFFF) % partitions


def pr_file_line(entry: LedgerEntry) -> str:
    """One line of a ``--pr-file``: swe-forge's ``{"repo", "pr"}`` (all it reads) plus the
    whole ledger entry, so that a swe-stream import restores it exactly."""
    data = {"repo": entry.repo, "pr": entry.number, **entry.model_dump(mode="json")}
    del data["number"]
    return json.dumps(data, ensure_ascii=False)


def decided(entry: LedgerEntry) -> bool:
    """Whether ``entry`` is a verdict on the PR (exported, or rejected with a reason), not a
    failure of the machinery (a service or the engine away, a bug): swe-forge skips every PR
    of its pr-file forever, so a transient failure must not go there."""
    return entry.status in {"exported", "rejected"}


def write_pr_file(path: Path, entries: Iterable[LedgerEntry]) -> int:
    """Write ``entries`` as a ``--pr-file`` (atomically: a temp file renamed over ``path``)."""
    lines = [pr_file_line(entry) + "\n" for entry in entries]
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text("".join(lines), encoding="utf-8")
    os.replace(temporary, path)
    return len(lines)


class PrFileError(ValueError):
    """A ``--pr-file`` line that is neither swe-forge's nor swe-stream's format."""


def read_pr_file(
    path: Path, pipeline_version: int, now: datetime | None = None
) -> list[LedgerEntry]:
    """Ledger entries from a ``--pr-file``: swe-stream lines come back as written; a bare
    swe-forge line ``{"repo": "o/r", "pr": N}`` (a PR it exported) becomes an ``exported``
    entry of stage ``import``. Blank lines are skipped; anything else is a PrFileError
    naming the line."""
    when = now or utcnow()
    entries = []
    # bytes, decoded line by line, so that a line that is not UTF-8 is an error naming it
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw.decode("utf-8"))
                if not isinstance(data, dict) or "repo" not in data or "pr" not in data:
                    raise ValueError('expected a JSON object with "repo" and "pr"')
                fields = {k: v for k, v in data.items() if k not in ("pr",)}
                fields["number"] = data["pr"]
                if "stage" not in fields:  # swe-forge: every line is a PR it exported
                    fields |= {
                        "pipeline_version": pipeline_version,
                        "stage": "import",
                        "status": "exported",
                        "reason": "imported from a swe-forge pr-file",
                        "first_seen_at": when.isoformat(),
                        "updated_at": when.isoformat(),
                    }
                entries.append(LedgerEntry.model_validate(fields))
            # RecursionError: json's decoder recurses once per nesting level
            except (ValueError, ValidationError, RecursionError) as exc:
                raise PrFileError(f"{path}:{number}: {exc}") from None
    return entries


def reason_kind(entry: LedgerEntry) -> str:
    """A reason to count by: a failure's error type (``GitHubNotFound: GET .../1: 404`` ->
    ``GitHubNotFound``), whose message names the PR; a rejection's reason as it is."""
    reason = entry.reason or ""
    if entry.status == "failed":
        return reason.split(":", 1)[0]
    return reason


@dataclass
class Funnel:
    """What the ledger says happened: transitions per stage by status and reason, and the
    PRs by their latest state."""

    transitions: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    prs: Counter[tuple[str, str, str]] = field(default_factory=Counter)

    @classmethod
    def of(cls, entries: list[LedgerEntry]) -> Funnel:
        funnel = cls()
        for entry in entries:
            stage = funnel.transitions.setdefault(entry.stage, Counter())
            stage[(entry.status, reason_kind(entry))] += 1
        for entry in latest(entries).values():
            funnel.prs[(entry.stage, entry.status, reason_kind(entry))] += 1
        return funnel

    def decisions(self, stage: str) -> int:
        return sum(self.transitions.get(stage, Counter()).values())

    def count(self, stage: str, status: str) -> int:
        return sum(n for (s, _), n in self.transitions.get(stage, Counter()).items() if s == status)

    def lines(self, order: Sequence[str] = ()) -> list[str]:
        """A plain-text report: stages in ``order`` first, then any others."""
        stages = [s for s in order if s in self.transitions]
        stages += sorted(set(self.transitions) - set(stages))
        out = ["transitions by stage (status: count; reasons):"]
        for stage in stages:
            counter = self.transitions[stage]
            out.append(f"  {stage}: {self.decisions(stage)}")
            for status in sorted({s for s, _ in counter}):
                reasons = sorted(
                    ((r, n) for (s, r), n in counter.items() if s == status and r),
                    key=lambda item: (-item[1], item[0]),
                )
                detail = ", ".join(f"{r} {n}" for r, n in reasons)
                out.append(
                    f"    {status}: {self.count(stage, status)}"
                    + (f" ({detail})" if detail else "")
                )
        total = sum(self.prs.values())
        by_status = Counter[str]()
        for (_, status, _), n in self.prs.items():
            by_status[status] += n
        out.append(
            f"PRs by latest state: {total} ("
            + ", ".join(f"{s} {n}" for s, n in sorted(by_status.items()))
            + ")"
        )
        return out


async def restore_ledger(bootstrap: str, profile: KafkaProfile, entries: list[LedgerEntry]) -> int:
    """Write ``entries`` to ``swe.ledger``, each on its PR's partition (where the workers'
    ledger table writes it and recovers it from)."""
    if not entries:
        return 0
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(**profile.producer_config(), linger_ms=5)
    await producer.start()
    try:
        partitions = len(await producer.partitions_for(LEDGER.name))
        last: dict[int, LedgerEntry] = {}
        sent = []
        for entry in entries:
            partition = ledger_partition(entry, partitions)
            last[partition] = entry
            key = entry.ledger_key.encode()
            sent.append(await producer.send(LEDGER.name, entry.to_json(), key, partition=partition))
        await asyncio.gather(*sent)
        # The embedded broker reports a partition's end as the base offset of its last batch,
        # so a table recovering from swe.ledger would stop short of that batch: end each
        # partition with a batch of one record repeating its last entry (a no-op for the
        # table), and every entry lies before the reported end.
        for partition, entry in last.items():
            await producer.send_and_wait(
                LEDGER.name, entry.to_json(), entry.ledger_key.encode(), partition=partition
            )
    finally:
        await producer.stop()
    return len(entries)
