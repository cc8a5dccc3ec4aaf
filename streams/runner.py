"""The whole pipeline in one process: what ``mine``, ``run`` and ``demo`` run.

    cluster (the embedded broker unless --bootstrap) -> catalog topics
      -> ledger restored (the output's ledger log, --pr-file) into swe.ledger
      -> the Faust app with every stage, started in this event loop
      -> ingest of the requested hours (a task beside it)
      -> a live funnel until the stop condition -> ledger saved -> summary

Stop conditions: ``max_tasks`` exported; with ``once``, ingest finished and every stage has
finished every record written to its input in this run (read from this process's own
counters, so the check is exact); SIGINT / SIGTERM at any time.

The embedded broker keeps nothing on disk, so ``ledger_log`` (every ledger transition, kept
beside the output) is replayed into ``swe.ledger`` at the start and rewritten at the end: a
second run over the same hours skips what the first one finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY

from agents.ingest import HourReport, HourSelection, ingest_hours
from schemas import ExportedTask, LedgerEntry
from streams.kafka import KafkaProfile, TopicAdmin, detect_profile, read_topic_to_end
from streams.ledger import (
    Funnel,
    latest,
    ledger_partition,
    read_ledger,
    read_pr_file,
    utcnow,
    write_pr_file,
)
from streams.settings import Settings
from streams.stage import Stage
from streams.topics import ALL_TOPICS, EXPORTED, LEDGER, PULL_REQUEST_EVENTS

log = logging.getLogger("swe_stream.runner")

STAGE_ORDER = ("prefilter", "enrich", "classify", "extract", "validate", "score", "export")


@dataclass
class RunPlan:
    """What one run does and when it stops."""

    selection: HourSelection
    once: bool = False
    max_tasks: int | None = None
    pr_file: Path | None = None
    ledger_log: Path | None = None
    force_ingest: bool = False
    live: bool = False
    join_timeout_seconds: float = 120.0


@dataclass
class RunSummary:
    stopped_because: str
    hours: list[HourReport] = field(default_factory=list)
    exported: list[ExportedTask] = field(default_factory=list)
    funnel: Funnel = field(default_factory=Funnel)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0

    def lines(self, output_dir: Path) -> list[str]:
        out = [f"stopped: {self.stopped_because} after {self.seconds:.1f} s"]
        events = sum(h.published for h in self.hours if h.status != "skipped")
        out.append(
            f"hours: {len(self.hours)} ("
            + ", ".join(f"{h.hour} {h.status}" for h in self.hours)
            + f"); PullRequestEvents published: {events}"
        )
        out.append("this run, per stage (in / out / rejected / failed / skipped as final):")
        for stage, c in self.counts.items():
            out.append(
                f"  {stage:9} {c['in']:6} / {c['out']:5} / {c['rejected']:5} / "
                f"{c['failed']:5} / {c['skipped']:5}"
            )
        out += self.funnel.lines(STAGE_ORDER)
        out.append(f"tasks exported: {len(self.exported)} (to {output_dir})")
        out += [f"  {task.instance_id}: {task.export_dir}" for task in self.exported]
        return out


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _labelled_total(name: str, label: str, value: str) -> float:
    """Sum of a counter's samples whose ``label`` is ``value`` (other labels summed over)."""
    total = 0.0
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if sample.name == name and sample.labels.get(label) == value:
                total += sample.value
    return total


class StageCounters:
    """This run's per-stage counts, from the process's own metrics (deltas from the start).

    ``inputs`` says how many records were written to each topic the pipeline is fed from
    outside its stages (ingest's events; a replay's range of its start topic)."""

    def __init__(
        self, stages: list[Stage[Any]], inputs: dict[str, Callable[[], int]] | None = None
    ):
        self.stages = stages
        self.base = {s.name: self._read(s.name) for s in stages}
        self.published_base = _sample("swe_stream_ingest_pull_request_events_total")
        self.inputs = inputs if inputs is not None else {PULL_REQUEST_EVENTS.name: self.published}

    @staticmethod
    def _read(stage: str) -> dict[str, float]:
        return {
            "in": _sample("swe_stream_stage_records_in_total", stage=stage),
            "done": _sample("swe_stream_stage_processing_seconds_count", stage=stage),
            "out": _sample("swe_stream_stage_records_out_total", stage=stage),
            "rejected": _labelled_total("swe_stream_stage_records_rejected_total", "stage", stage),
            "failed": _labelled_total("swe_stream_stage_records_failed_total", "stage", stage),
            "skipped": _labelled_total("swe_stream_stage_records_skipped_total", "stage", stage),
            "other_version": _sample(
                "swe_stream_stage_records_skipped_total",
                stage=stage,
                reason="other_pipeline_version",
            ),
        }

    def now(self) -> dict[str, dict[str, int]]:
        counts = {}
        for stage in self.stages:
            current, base = self._read(stage.name), self.base[stage.name]
            counts[stage.name] = {k: int(current[k] - base[k]) for k in current}
        return counts

    def published(self) -> int:
        return int(_sample("swe_stream_ingest_pull_request_events_total") - self.published_base)

    def pending(self) -> int:
        """Records written to a stage's input in this run that it has not finished. Another
        pipeline version's records, which a stage only skips, do not count as finished work
        (a version running beside this one would otherwise hide this one's pending records)."""
        counts = self.now()
        written: dict[str, int] = {topic: count() for topic, count in self.inputs.items()}
        for stage in self.stages:
            if stage.output is not None:
                written[stage.output.name] = (
                    written.get(stage.output.name, 0) + counts[stage.name]["out"]
                )
        return sum(
            max(
                0,
                written.get(stage.source.name, 0)
                - (counts[stage.name]["done"] - counts[stage.name]["other_version"]),
            )
            for stage in self.stages
        )


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


def app_settings(settings: Settings, profile: KafkaProfile) -> Settings:
    """The settings the in-process app runs with: this cluster, this profile."""
    kafka = settings.kafka.model_copy(
        update={
            "bootstrap": profile.bootstrap,
            "idempotence": "on" if profile.idempotence else "off",
            "rebalance_timeout_seconds": profile.rebalance_timeout_seconds,
            "session_timeout_seconds": profile.session_timeout_seconds,
        }
    )
    # no Faust web server: /metrics is served by the command, and a fixed web port would
    # collide with a worker on the same machine
    worker = settings.worker.model_copy(update={"web_port": 0})
    return settings.model_copy(update={"kafka": kafka, "worker": worker})


class LiveFunnel:
    """A rich table of the per-stage counts, redrawn in place (stderr)."""

    def __init__(self, enabled: bool):
        self._live: Any = None
        if enabled:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(console=Console(stderr=True), refresh_per_second=2, transient=False)
            self._live.start()

    def update(self, counts: dict[str, dict[str, int]], published: int, exported: int) -> None:
        if self._live is None:
            return
        from rich.table import Table

        table = Table(title=f"swe-stream: {published} PR events in, {exported} tasks exported")
        for column in ("stage", "in", "out", "rejected", "failed", "skipped", "pending"):
            table.add_column(column, justify="left" if column == "stage" else "right")
        for stage, c in counts.items():
            table.add_row(
                stage,
                *(str(c[k]) for k in ("in", "out", "rejected", "failed", "skipped")),
                str(c["in"] - c["done"]),
            )
        self._live.update(table)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()


async def run_pipeline(
    settings: Settings, bootstrap: str, embedded: bool, plan: RunPlan
) -> RunSummary:
    """Run ingest and every stage in this process until the plan's stop condition."""
    from streams.app import create_app
    from streams.topology import pipeline_stages

    started, started_at = time.monotonic(), utcnow()
    if not log.isEnabledFor(logging.DEBUG):
        # the libraries' INFO lines (rebalances, fetches) drown the funnel in one process
        for noisy in ("faust", "aiokafka", "mode"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    profile = await detect_profile(settings.kafka, bootstrap, embedded)
    async with TopicAdmin(bootstrap, settings.kafka) as admin:
        await admin.create(ALL_TOPICS)
    restored = _saved_entries(plan, settings.pipeline_version)
    count = await restore_ledger(bootstrap, profile, restored)
    if count:
        log.info("ledger: %d entries restored into %s", count, LEDGER.name)

    stages: list[Stage[Any]] = []

    def capture(run_settings: Settings, resources: Any) -> list[Stage[Any]]:
        stages.extend(pipeline_stages(run_settings, resources))
        return stages

    app = create_app(app_settings(settings, profile), stages=capture)
    app.finalize()
    stop = asyncio.Event()
    reason = "stopped"

    def on_signal() -> None:
        nonlocal reason
        reason = "interrupted"
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    counters = StageCounters(stages)
    live = LiveFunnel(plan.live)
    ingest: asyncio.Task[list[HourReport]] | None = None
    hours: list[HourReport] = []
    await app.start()
    try:
        await joined(app, plan.join_timeout_seconds)
        ingest = asyncio.create_task(
            ingest_hours(
                plan.selection,
                settings.gharchive,
                profile.producer_config(),
                bootstrap,
                pipeline_version=settings.pipeline_version,
                force=plan.force_ingest,
            )
        )
        settled = 0
        last_report = 0.0
        while not stop.is_set():
            await asyncio.sleep(0.5)
            counts = counters.now()
            exported = counts.get("export", {}).get("out", 0)
            live.update(counts, counters.published(), exported)
            if not plan.live and time.monotonic() - last_report > 10:
                last_report = time.monotonic()
                log.info("funnel: %s", _one_line(counts))
            if app.crashed:
                reason = f"the stream processor crashed: {app.crash_reason!r}"
                break
            if plan.max_tasks is not None and exported >= plan.max_tasks:
                reason = f"{exported} task(s) exported (--max-tasks {plan.max_tasks})"
                break
            if ingest.done():
                if ingest.exception() is not None:
                    reason = f"ingest failed: {ingest.exception()}"
                    break
                if plan.once:
                    # twice in a row with nothing pending: nothing is between two stages
                    settled = settled + 1 if counters.pending() == 0 else 0
                    if settled >= 2:
                        reason = "the requested hours are drained (--once)"
                        break
        final_counts = counters.now()
    finally:
        live.close()
        if ingest is not None:
            if ingest.done() and ingest.exception() is None:
                hours = ingest.result()
            else:
                ingest.cancel()
                with contextlib.suppress(BaseException):
                    await ingest
        await app.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    entries = await read_ledger(bootstrap)
    _save_entries(plan, entries)
    exported_tasks = [
        ExportedTask.from_json(record.value)
        async for record in read_topic_to_end(bootstrap, EXPORTED.name)
    ]
    this_run = [e for e in entries if e.updated_at >= started_at]
    return RunSummary(
        stopped_because=reason,
        hours=hours,
        exported=exported_tasks,
        funnel=Funnel.of(this_run),
        counts=final_counts,
        seconds=time.monotonic() - started,
    )


async def joined(app: Any, timeout: float) -> None:
    """Wait until the consumer group has given this process its partitions."""
    deadline = time.monotonic() + timeout
    while not app.consumer.assignment() or app.rebalancing:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the consumer group did not assign partitions in {timeout:.0f} s")
        await asyncio.sleep(0.2)


def _one_line(counts: dict[str, dict[str, int]]) -> str:
    return "; ".join(
        f"{stage} in={c['in']} out={c['out']} rej={c['rejected']} fail={c['failed']}"
        for stage, c in counts.items()
    )


def _saved_entries(plan: RunPlan, pipeline_version: int) -> list[LedgerEntry]:
    """The ledger log, then the pr-file's entries it does not already hold."""
    entries: list[LedgerEntry] = []
    seen: set[bytes] = set()
    for path in (plan.ledger_log, plan.pr_file):
        if path is not None and path.exists():
            for entry in read_pr_file(path, pipeline_version):
                value = entry.to_json()
                if value not in seen:
                    seen.add(value)
                    entries.append(entry)
    return entries


def _save_entries(plan: RunPlan, entries: list[LedgerEntry]) -> None:
    if plan.ledger_log is not None:
        write_pr_file(plan.ledger_log, entries)
    if plan.pr_file is not None:
        final = [e for e in latest(entries).values() if e.is_final()]
        write_pr_file(plan.pr_file, final)


def interactive() -> bool:
    return sys.stderr.isatty()
