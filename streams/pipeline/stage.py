"""What every stage shares: a stage's logic is a plain async function from one input record to
an ``Outcome``; ``StageRunner`` does the rest, identically for every stage:

    bytes --decode--> record --ledger: final?--> skipped (counted; no work at all)
      |                 |
      |                 +--logic--> Outcome --> outputs (output topic) + ledger transition
      |                 |
      +-- schema error  +-- exception  --> <input topic>.dlq (error + original bytes), counted
                        +-- ServiceUnavailable --> wait (backoff), the same record again

``register_stage`` is the thin Faust wiring: one agent per stage, raw bytes in, so that a record
that fails its schema reaches the DLQ instead of crashing the consumer; a record Faust delivers
again while this process handles or just handled it is skipped (``Deliveries``).

The log is sized for a real hour (thousands of PRs, most ending at prefilter or enrich): a
screening stage's rejections are DEBUG lines (``--verbose``) and its failures of one kind a
WARNING line now and then (``FailureLines``); the funnel counts them and the ledger keeps each.
A PR reaching validate leaves one INFO line with its verdict and why (``ending_line``).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from schemas import Record
from streams.core import metrics
from streams.core.errors import DependencyError, ServiceUnavailable
from streams.kafka.topics import TopicSpec
from streams.pipeline.deliveries import Deliveries, KeyTurns
from streams.pipeline.dlq import replay_attempt, send_to_dlq
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.outages import OUTAGES, Outages
from streams.pipeline.sinks import FaustSink, RecordSink

log = logging.getLogger("swe_stream.stage")

In = TypeVar("In", bound=Record)


@dataclass(frozen=True)
class Outcome:
    """A stage's decision for one record: what to emit and what to write to the ledger."""

    outputs: Sequence[Record] = ()
    status: str | None = None  # ledger status; None = this stage writes no ledger entry
    reason: str | None = None
    detail: str | None = None  # for people: what the reason does not say (log tails, counts)

    @classmethod
    def accept(cls, *outputs: Record, status: str | None = "accepted") -> Outcome:
        return cls(tuple(outputs), status, None)

    @classmethod
    def reject(cls, reason: str, detail: str | None = None) -> Outcome:
        """Dropped for good (final in the ledger for this pipeline version)."""
        return cls((), "rejected", reason, detail)

    @classmethod
    def ignore(cls, reason: str) -> Outcome:
        """Dropped for now: this record does not qualify, a later one of the PR may."""
        return cls((), "ignored", reason)


Handler = Callable[[In], Awaitable[Outcome]]


@dataclass(frozen=True)
class Stage(Generic[In]):
    """One named step of the stream graph."""

    name: str
    source: TopicSpec
    output: TopicSpec | None
    handle: Handler[In]
    concurrency: int = 1
    skip_final: bool = True  # skip PRs the ledger holds in a final state for this version
    # the stages at or after this one in the graph (the topology sets it): a record of a PR
    # the ledger holds as accepted by one of them is a delivery again of one handled already
    # (after a crash or a rebalance, before its offset commit) and is skipped: the ledger
    # entry is written once the outputs are in their topic, so nothing is lost, and a
    # validation is never run twice for one PR
    done_at: frozenset[str] = frozenset()
    # False: records another pipeline version wrote are skipped (its own group reads the
    # topic from the start); True for a stage fed from outside the pipeline (raw events,
    # harness requests), whose input any version may consume
    any_version: bool = False
    # replay --until-time: input records stamped at or after this (ms since the epoch) are
    # skipped, counted as after_until_time
    until_ms: int | None = None
    # a stage that screens PRs before validate (prefilter, enrich, classify, extract) ends
    # most of an hour's thousands: a line each would bury the rest of the log, so its
    # rejections are DEBUG and its failures of one kind sampled (``FailureLines``)
    screening: bool = False
    # why this stage accepted a PR, for the INFO line of its verdict (validate: the tests that
    # prove the task); None: an acceptance leaves no line (the funnel counts it)
    accepted_because: Callable[[Outcome], str] | None = None


def ending_line(stage: Stage[Any], key: str, outcome: Outcome) -> tuple[int, str] | None:
    """The line ``outcome`` leaves in the log at ``stage``, with its level, or None: a
    rejection's reason and the first line of its detail (the ledger keeps the whole), at
    DEBUG from a screening stage; an acceptance's verdict and why, when the stage says why."""
    if outcome.status == "rejected":
        first = (outcome.detail or "").strip().splitlines()[:1]
        shown = f" ({first[0][:300]})" if first else ""
        level = logging.DEBUG if stage.screening else logging.INFO
        return level, f"{stage.name}: {key} rejected: {outcome.reason}{shown}"
    if stage.accepted_because is None or outcome.status in (None, "ignored"):
        return None
    return logging.INFO, f"{stage.name}: {key} {outcome.status}: {stage.accepted_because(outcome)}"


@dataclass
class FailureLines:
    """Which of a screening stage's per-PR failures (a dependency's answer: a 404, a rate
    limit) are WARNING lines: the first of each kind (the error's type), then one every
    ``every_seconds`` saying how many of that kind were DEBUG lines since. Without a token
    the GitHub API fails an hour's PRs by the hundred: one line says so, not one per PR."""

    every_seconds: float = 600.0
    _shown: dict[str, float] = field(default_factory=dict)
    _muted: Counter[str] = field(default_factory=Counter)

    def level(self, kind: str, now: float) -> tuple[int, int]:
        """The level of a failure of ``kind`` at ``now`` (monotonic seconds), and how many
        failures of that kind were muted since its last WARNING line (0 for a DEBUG one)."""
        last = self._shown.get(kind)
        if last is not None and now - last < self.every_seconds:
            self._muted[kind] += 1
            return logging.DEBUG, 0
        self._shown[kind] = now
        return logging.WARNING, self._muted.pop(kind, 0)

    def note(self, stage: str, kind: str, muted: int) -> str:
        """What a WARNING line adds: the failures of its kind it stands for."""
        if muted:
            return f" (and {muted} more {kind} at {stage} since the last such line: at DEBUG)"
        every = f"{self.every_seconds / 60:g} min"
        return f" (more {kind} at {stage}: a line every {every}, each at log level debug)"


def record_key(record: Record) -> bytes | None:
    """The Kafka key of an output record: its ``key`` property (``owner/repo#number``)."""
    key = getattr(record, "key", None)
    return str(key).encode() if key is not None else None


class StageRunner(Generic[In]):
    """Runs one stage's logic on raw Kafka records. Never raises for a bad record."""

    def __init__(
        self,
        stage: Stage[In],
        sink: RecordSink,
        pipeline_version: int,
        ledger: Ledger | None = None,
        outages: Outages = OUTAGES,
    ):
        self.stage = stage
        self.outages = outages
        self.sink = sink
        self.pipeline_version = pipeline_version
        self.ledger = ledger or Ledger(SinkLedgerStore(sink), pipeline_version)
        self.failure_lines = FailureLines()
        self.turns = KeyTurns()

    async def process(
        self,
        key: bytes | None,
        value: bytes,
        partition: int,
        offset: int,
        attempt: int = 1,
        timestamp_ms: int | None = None,
    ) -> Outcome | None:
        """Handle one record; returns the outcome, or None when it went to the DLQ.
        ``attempt``: 1, or one more than the dead letter a ``dlq replay`` sent it back from;
        ``timestamp_ms``: the record's Kafka timestamp (checked against ``until_ms``)."""
        stage = self.stage.name
        metrics.STAGE_RECORDS_IN.labels(stage=stage).inc()
        started = time.perf_counter()
        try:
            until = self.stage.until_ms
            if until is not None and timestamp_ms is not None and timestamp_ms >= until:
                metrics.STAGE_RECORDS_SKIPPED.labels(stage=stage, reason="after_until_time").inc()
                return Outcome()
            try:
                record = self.stage.source.value_model.from_json(value)
            except ValidationError as exc:
                await self._dead_letter(key, value, partition, offset, exc, "schema", attempt)
                return None
            version = getattr(record, "pipeline_version", self.pipeline_version)
            if not self.stage.any_version and version != self.pipeline_version:
                metrics.STAGE_RECORDS_SKIPPED.labels(
                    stage=stage, reason="other_pipeline_version"
                ).inc()
                return Outcome()
            # one record of a PR at a time: a second one (sent again by a worker that died
            # before its commit) waits, then finds the first one's ledger entry
            async with self.turns.turn(key):
                return await self._decide(record, key, value, partition, offset, attempt)
        finally:
            metrics.STAGE_PROCESSING_SECONDS.labels(stage=stage).observe(
                time.perf_counter() - started
            )

    async def _decide(
        self,
        record: Record,
        key: bytes | None,
        value: bytes,
        partition: int,
        offset: int,
        attempt: int,
    ) -> Outcome | None:
        """The ledger's check, the stage's logic and its emission, for one decoded record."""
        stage = self.stage.name
        # a dead letter sent back (attempt > 1) is an explicit retry of a failed PR
        done = self._done_by_ledger(record, attempt)
        if done is not None:
            metrics.STAGE_RECORDS_SKIPPED.labels(stage=stage, reason=done).inc()
            return Outcome()
        try:
            outcome = await self._handle_through_outages(record)
        except Exception as exc:  # the stage's bug or a dependency's failure: keep going
            # a service that answered with an error (404, exhausted retries, no such
            # commit) is explained by its message: one line, not a traceback
            if isinstance(exc, DependencyError):
                self._log_failure(key, exc)
            else:
                log.exception("stage %s failed on %s@%d:%d", stage, key, partition, offset)
            await self._dead_letter(key, value, partition, offset, exc, "logic", attempt)
            await self._ledger(record, "failed", f"{type(exc).__name__}: {exc}"[:500])
            return None
        # another worker may have done this PR's work while this one did it: the partition
        # was revoked and given to it mid-way (a rebalance), and it began where the commit
        # was. Its ledger entry, in first, stands; a second output would be a duplicate.
        done = self._done_by_ledger(record, attempt)
        if done is not None:
            metrics.STAGE_RECORDS_SKIPPED.labels(stage=stage, reason="done_meanwhile").inc()
            log.info("stage %s: %s was done elsewhere meanwhile (%s): not emitted again",
                     stage, key.decode(errors="replace") if key else "?", done)  # fmt: skip
            return Outcome()
        try:
            await self._emit(record, outcome)
        except Exception as exc:  # an outcome that does not serialise: the record is kept
            # (a crash here would end the agent's actor and lose the record unrecorded)
            log.exception("stage %s could not emit its outcome for %s", stage, key)
            await self._dead_letter(key, value, partition, offset, exc, "emit", attempt)
            await self._ledger(record, "failed", f"{type(exc).__name__}: {exc}"[:500])
            return None
        return outcome

    async def _handle_through_outages(self, record: Record) -> Outcome:
        """The stage's outcome for ``record``, tried again (with backoff, for as long as it
        takes) while a service it needs does not answer: an outage is not a verdict, and the
        record's offset stays uncommitted meanwhile, so a restart resumes at it too."""
        waited: set[str] = set()
        attempt = 0
        while True:
            attempt += 1
            try:
                outcome = await self.stage.handle(record)  # type: ignore[arg-type]
            except ServiceUnavailable as down:
                waited.add(down.service)
                await self.outages.wait(self.stage.name, down, attempt)
                continue
            self.outages.answered(self.stage.name, waited)
            return outcome

    def _done_by_ledger(self, record: Record, attempt: int) -> str | None:
        """``_already_done`` for a first delivery (a dead letter sent back, attempt > 1, is
        an explicit retry of a failed PR) of a stage that skips final PRs."""
        return self._already_done(record) if attempt == 1 and self.stage.skip_final else None

    def _already_done(self, record: Record) -> str | None:
        """Why the ledger says this PR needs nothing of this stage (``already_final``,
        ``already_done``: accepted here or later), or None."""
        repo, number = getattr(record, "repo", None), getattr(record, "number", None)
        if not (isinstance(repo, str) and isinstance(number, int)):
            return None
        entry = self.ledger.lookup(repo, number)
        if entry is None:
            return None
        if entry.is_final():
            return "already_final"
        if entry.status == "accepted" and entry.stage in self.stage.done_at:
            return "already_done"
        return None

    async def _emit(self, record: Record, outcome: Outcome) -> None:
        stage = self.stage.name
        if outcome.outputs:
            if self.stage.output is None:
                raise RuntimeError(f"stage {stage} has no output topic but emitted records")
            for output in outcome.outputs:
                await self.sink.send(self.stage.output.name, record_key(output), output.to_json())
            metrics.STAGE_RECORDS_OUT.labels(stage=stage).inc(len(outcome.outputs))
        if outcome.status in ("rejected", "ignored"):
            metrics.STAGE_RECORDS_REJECTED.labels(stage=stage, reason=outcome.reason or "").inc()
        line = ending_line(self.stage, str(getattr(record, "key", "?")), outcome)
        if line is not None:
            log.log(line[0], "%s", line[1])
        if outcome.status is not None and not self._overtaken(record):
            await self._ledger(record, outcome.status, outcome.reason, outcome.detail)

    def _overtaken(self, record: Record) -> bool:
        """Whether a later stage already wrote this PR's ledger entry: it read this stage's
        outputs, which are in their topic before this stage's entry is written, and was
        quicker. This stage's entry, written after it, would make the ledger's latest state go
        back a stage (an accepted PR that is in fact rejected further on)."""
        repo, number = getattr(record, "repo", None), getattr(record, "number", None)
        if not (isinstance(repo, str) and isinstance(number, int)):
            return False
        entry = self.ledger.lookup(repo, number)
        return (
            entry is not None
            and entry.stage != self.stage.name
            and entry.stage in self.stage.done_at
        )

    def _log_failure(self, key: bytes | None, exc: DependencyError) -> None:
        """A dependency's failure on one PR, explained by its message: one line, no traceback
        (sampled at a screening stage)."""
        shown = key.decode(errors="replace") if key is not None else "?"
        stage, note = self.stage.name, ""
        level = logging.WARNING
        if self.stage.screening:
            kind = type(exc).__name__
            level, muted = self.failure_lines.level(kind, time.monotonic())
            note = self.failure_lines.note(stage, kind, muted) if level > logging.DEBUG else ""
        log.log(level, "stage %s failed on %s: %s%s", stage, shown, exc, note)

    async def _ledger(
        self, record: Record, status: str, reason: str | None, detail: str | None = None
    ) -> None:
        repo, number = getattr(record, "repo", None), getattr(record, "number", None)
        if isinstance(repo, str) and isinstance(number, int):
            await self.ledger.record(
                repo, number, stage=self.stage.name, status=status, reason=reason, detail=detail
            )

    async def _dead_letter(
        self,
        key: bytes | None,
        value: bytes,
        partition: int,
        offset: int,
        error: BaseException,
        kind: str,
        attempt: int = 1,
    ) -> None:
        metrics.STAGE_RECORDS_FAILED.labels(stage=self.stage.name, error=kind).inc()
        await send_to_dlq(
            self.sink,
            source_topic=self.stage.source.name,
            partition=partition,
            offset=offset,
            key=key,
            value=value,
            error=error,
            stage=self.stage.name,
            pipeline_version=self.pipeline_version,
            attempts=attempt,
            dlq_topic=self.stage.source.dlq_name,
        )


def register_stage(app: Any, stage: Stage[Any], ledger: Ledger) -> Any:
    """Wire ``stage`` into the Faust ``app`` as an agent reading raw bytes from its source."""
    channel = app.topic(stage.source.name, key_serializer="raw", value_serializer="raw")
    runner: StageRunner[Any] = StageRunner(stage, FaustSink(app), ledger.pipeline_version, ledger)

    deliveries = Deliveries()

    async def run_stage(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            partition, offset = message.partition, message.offset
            if not await deliveries.claim(partition, offset):
                metrics.STAGE_RECORDS_IN.labels(stage=stage.name).inc()
                metrics.STAGE_RECORDS_SKIPPED.labels(
                    stage=stage.name, reason="delivered_again"
                ).inc()
                continue
            handled = False
            try:
                timestamp = message.timestamp  # seconds, as Faust gives it
                await runner.process(
                    event.key,
                    event.value,
                    partition,
                    offset,
                    replay_attempt(event.headers),
                    timestamp_ms=round(timestamp * 1000) if timestamp is not None else None,
                )
                handled = True
            finally:
                deliveries.release(partition, offset, handled)

    run_stage.__name__ = run_stage.__qualname__ = stage.name.replace("-", "_").replace(".", "_")
    return app.agent(channel, name=stage.name, concurrency=stage.concurrency)(run_stage)
