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
import time
from dataclasses import dataclass, field
from pathlib import Path

from agents.ingest import HourReport, HourSelection, ingest_hours
from schemas import ExportedTask, LedgerEntry
from streams.core.settings import Settings
from streams.kafka.client import KafkaProfile, TopicAdmin, detect_profile, read_topic_to_end
from streams.kafka.topics import ALL_TOPICS, EXPORTED, LEDGER
from streams.pipeline.ledger import (
    Funnel,
    latest,
    read_ledger,
    read_pr_file,
    restore_ledger,
    utcnow,
    write_pr_file,
)
from streams.runtime.app import app_settings, app_with_stages
from streams.runtime.supervise import (
    Counts,
    LiveFunnel,
    Session,
    StageCounters,
    outcome_lines,
    quiet_libraries,
    supervise,
)

log = logging.getLogger("swe_stream.runner")


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
        return out + outcome_lines(self.counts, self.funnel, self.exported, output_dir)

    def brief_lines(self, output_dir: Path) -> list[str]:
        """Why it stopped, and how many tasks it exported: the summary beside a live view,
        whose funnel holds the per-stage counts."""
        return [
            f"stopped: {self.stopped_because} after {self.seconds:.1f} s",
            f"tasks exported: {len(self.exported)} (to {output_dir})",
        ]


async def run_pipeline(
    settings: Settings, bootstrap: str, embedded: bool, plan: RunPlan
) -> RunSummary:
    """Run ingest and every stage in this process until the plan's stop condition."""
    started, started_at = time.monotonic(), utcnow()
    quiet_libraries()
    profile = await detect_profile(settings.kafka, bootstrap, embedded)
    async with TopicAdmin(bootstrap, settings.kafka) as admin:
        await admin.create(ALL_TOPICS)
    restored = _saved_entries(plan, settings.pipeline_version)
    count = await restore_ledger(bootstrap, profile, restored)
    if count:
        log.info("ledger: %d entries restored into %s", count, LEDGER.name)
    app, stages = app_with_stages(app_settings(settings, profile))
    ingest = IngestTask(plan, settings, profile, bootstrap)

    def stop_when(counts: Counts) -> str | None:
        exported = counts.get("export", {}).get("out", 0)
        if plan.max_tasks is not None and exported >= plan.max_tasks:
            return f"{exported} task(s) exported (--max-tasks {plan.max_tasks})"
        return ingest.failure()

    def settled_when(counts: Counts) -> str | None:
        drained = plan.once and ingest.finished() and counters.pending(counts) == 0
        return "the requested hours are drained (--once)" if drained else None

    counters = StageCounters(stages)
    session = Session(
        app,
        counters,
        LiveFunnel(plan.live),
        stop_when=stop_when,
        settled_when=settled_when,
        started=ingest.start,
        stopping=ingest.stop,
        join_timeout_seconds=plan.join_timeout_seconds,
    )
    reason, final_counts = await supervise(session)
    entries = await read_ledger(bootstrap)
    _save_entries(plan, entries)
    exported_tasks = [
        ExportedTask.from_json(record.value)
        async for record in read_topic_to_end(bootstrap, EXPORTED.name)
    ]
    this_run = [e for e in entries if e.updated_at >= started_at]
    return RunSummary(
        stopped_because=reason,
        hours=ingest.reports,
        exported=exported_tasks,
        funnel=Funnel.of(this_run),
        counts=final_counts,
        seconds=time.monotonic() - started,
    )


class IngestTask:
    """The plan's hours ingested beside the stages, as a task of this event loop."""

    def __init__(self, plan: RunPlan, settings: Settings, profile: KafkaProfile, bootstrap: str):
        self.plan, self.settings, self.profile, self.bootstrap = plan, settings, profile, bootstrap
        self.task: asyncio.Task[list[HourReport]] | None = None
        self.reports: list[HourReport] = []

    def start(self) -> None:
        self.task = asyncio.create_task(
            ingest_hours(
                self.plan.selection,
                self.settings.gharchive,
                self.profile.producer_config(),
                self.bootstrap,
                pipeline_version=self.settings.pipeline_version,
                force=self.plan.force_ingest,
            )
        )

    def finished(self) -> bool:
        return self.task is not None and self.task.done() and self.task.exception() is None

    def failure(self) -> str | None:
        if self.task is not None and self.task.done() and self.task.exception() is not None:
            return f"ingest failed: {self.task.exception()}"
        return None

    async def stop(self) -> None:
        """Keep the hours' reports, or cancel an ingest still running."""
        if self.task is None:
            return
        if self.finished():
            self.reports = self.task.result()
            return
        self.task.cancel()
        with contextlib.suppress(BaseException):
            await self.task


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
