"""``swe-stream replay``: re-derive the pipeline from one of its topics under a pipeline
version, as a fresh consumer group, without touching what came before that topic.

    --from-topic pr.enriched --pipeline-version 2
      -> the stages downstream of pr.enriched (classify, extract, ..., export), or --stages
      -> a fresh group (swe-stream-v2-replay-<time>) whose committed offsets are set before
         it starts: the start topic at --from-beginning / --from-offset / --from-time, every
         later topic at its current end (this replay reads only what it writes there)
      -> the Faust app with those stages, in this process, until the start topic's range is
         done and nothing is pending between stages; then the funnel of this version

Stages before the start topic do not run, so a replay from ``pr.enriched`` makes no GitHub
API call and downloads no GH Archive hour. The stages reading the start topic take records
of any pipeline version (they re-derive them) and stamp their outputs and ledger entries with
this one; ledger entries are per version (``owner/repo#N@vN``) and version N exports to its
own directory (``Settings.export_dir``), so an older version's results stay as they were.

``--until-time`` ends the range: start-topic records stamped at or after it are skipped
(counted as ``after_until_time``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from schemas import ExportedTask
from streams.core.settings import Settings
from streams.kafka.client import TopicAdmin, detect_profile, read_topic_to_end
from streams.kafka.offsets import (
    OffsetsError,
    commit_offsets,
    committed_offsets,
    group_members,
    offsets_at_time,
    topic_bounds,
)
from streams.kafka.topics import ALL_TOPICS, EXPORTED
from streams.pipeline.ledger import Funnel, of_version, read_ledger, utcnow
from streams.pipeline.stage import Stage
from streams.runtime import supervise as supervision
from streams.runtime.app import app_settings, app_with_stages

log = logging.getLogger("swe_stream.replay")


class ReplayError(ValueError):
    """A replay that cannot run as asked (unknown topic or stage, a busy group, ...)."""


@dataclass
class ReplayPlan:
    """What to replay: the start topic, where in it to start and stop, which stages."""

    from_topic: str
    from_offsets: dict[int, int] | None = None  # partitions not named are not replayed
    from_time_ms: int | None = None
    until_time_ms: int | None = None
    stages: list[str] = field(default_factory=list)  # empty: every stage downstream
    group: str | None = None  # empty: <worker.app_id>-replay-<UTC time>
    live: bool = False
    join_timeout_seconds: float = 120.0

    def start_description(self) -> str:
        if self.from_offsets is not None:
            return "offsets " + ",".join(f"{p}:{o}" for p, o in sorted(self.from_offsets.items()))
        if self.from_time_ms is not None:
            return "time " + _iso(self.from_time_ms)
        return "the beginning"


@dataclass
class ReplaySummary:
    stopped_because: str
    group: str
    stages: list[str]
    start: dict[int, int]
    end: dict[int, int]
    time_lookup: str | None
    counts: dict[str, dict[str, int]]
    funnel: Funnel
    exported: list[ExportedTask]
    seconds: float

    def lines(self, plan: ReplayPlan, pipeline_version: int, export_dir: Any) -> list[str]:
        records = sum(self.end[p] - self.start[p] for p in self.start)
        found = f" (found by {self.time_lookup})" if self.time_lookup else ""
        out = [
            f"stopped: {self.stopped_because} after {self.seconds:.1f} s",
            f"replay of {plan.from_topic} from {plan.start_description()}{found}"
            + (f" until {_iso(plan.until_time_ms)}" if plan.until_time_ms is not None else "")
            + f" as pipeline version {pipeline_version}, group {self.group}",
            f"records in range: {records} ("
            + ", ".join(f"p{p} {self.start[p]}..{self.end[p]}" for p in sorted(self.start))
            + ")",
            "stages: " + ", ".join(self.stages),
            "this replay, per stage (in / out / rejected / failed / skipped):",
        ]
        return out + supervision.outcome_lines(self.counts, self.funnel, self.exported, export_dir)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def replay_stages(
    stages: list[Stage[Any]], from_topic: str, names: list[str], until_ms: int | None
) -> list[Stage[Any]]:
    """The stages a replay from ``from_topic`` runs: every stage fed, directly or through
    other stages, by ``from_topic`` (or only ``names`` of them). Those reading ``from_topic``
    accept any pipeline version's records and stop at ``until_ms``."""
    if not any(stage.source.name == from_topic for stage in stages):
        readable = sorted({stage.source.name for stage in stages})
        raise ReplayError(f"no stage reads {from_topic}; a replay can start from {readable}")
    reached, chosen = {from_topic}, []
    for stage in stages:  # graph order: a stage's input is written by an earlier stage
        if stage.source.name in reached:
            chosen.append(stage)
            if stage.output is not None:
                reached.add(stage.output.name)
    if names:
        known = {stage.name for stage in chosen}
        outside = sorted(set(names) - known)
        if outside:
            raise ReplayError(
                f"stage(s) {outside} are not downstream of {from_topic}: choose from "
                f"{[stage.name for stage in chosen]}"
            )
        chosen = [stage for stage in chosen if stage.name in names]
        if not any(stage.source.name == from_topic for stage in chosen):
            raise ReplayError(f"none of the stages {names} reads {from_topic}")
    return [
        dataclasses.replace(stage, any_version=True, until_ms=until_ms)
        if stage.source.name == from_topic
        else stage
        for stage in chosen
    ]


def fresh_group(settings: Settings, now: datetime | None = None) -> str:
    stamp = (now or utcnow()).strftime("%Y%m%dT%H%M%SZ")
    return f"{settings.worker.app_id}-replay-{stamp}"


async def start_offsets(
    bootstrap: str, plan: ReplayPlan
) -> tuple[dict[int, int], dict[int, int], str | None]:
    """``(start, end, how a time was looked up)`` per partition of the start topic."""
    try:
        bounds = await topic_bounds(bootstrap, plan.from_topic)
    except OffsetsError as exc:
        raise ReplayError(str(exc)) from None
    end = {p: high for p, (_, high) in bounds.items()}
    method = None
    if plan.from_offsets is not None:
        unknown = sorted(set(plan.from_offsets) - set(bounds))
        if unknown:
            raise ReplayError(f"{plan.from_topic} has no partition(s) {unknown}")
        start = dict(end)  # a partition not named is not replayed
        for p, offset in plan.from_offsets.items():
            low, high = bounds[p]
            start[p] = min(max(offset, low), high)
    elif plan.from_time_ms is not None:
        start, method = await offsets_at_time(bootstrap, plan.from_topic, plan.from_time_ms)
    else:
        start = {p: low for p, (low, _) in bounds.items()}
    return start, end, method


async def replay_pipeline(settings: Settings, bootstrap: str, plan: ReplayPlan) -> ReplaySummary:
    """Run the replay in this process until its range is done (or a signal)."""
    started, started_at = time.monotonic(), utcnow()
    supervision.quiet_libraries()
    group = plan.group or fresh_group(settings, started_at)
    profile = await detect_profile(settings.kafka, bootstrap, embedded=False)
    async with TopicAdmin(bootstrap, settings.kafka) as admin:
        await admin.create(ALL_TOPICS)
    members = await group_members(bootstrap, group)
    if members:
        raise ReplayError(f"group {group} has live members {members}: a replay needs its own")
    start, end, method = await start_offsets(bootstrap, plan)

    every = settings.model_copy(
        update={"worker": settings.worker.model_copy(update={"stages": []})}
    )
    run_settings = app_settings(every, profile)
    run_settings.worker.app_id = group
    app, stages = app_with_stages(
        run_settings,
        lambda built: replay_stages(built, plan.from_topic, plan.stages, plan.until_time_ms),
    )
    # the fresh group's starting points, committed before it joins
    await _commit_fresh(bootstrap, group, plan.from_topic, start)
    for topic in sorted({s.source.name for s in stages} - {plan.from_topic}):
        bounds = await topic_bounds(bootstrap, topic)
        await _commit_fresh(bootstrap, group, topic, {p: high for p, (_, high) in bounds.items()})

    in_range = sum(end[p] - start[p] for p in start)
    counters = supervision.StageCounters(stages, inputs={plan.from_topic: lambda: in_range})
    first = [s.name for s in stages if s.source.name == plan.from_topic]
    log.info(
        "replay of %s (%d records) as pipeline version %d, group %s, stages %s",
        plan.from_topic,
        in_range,
        settings.pipeline_version,
        group,
        [s.name for s in stages],
    )

    def settled_when(counts: supervision.Counts) -> str | None:
        range_done = all(counts[name]["done"] >= in_range for name in first)
        done = range_done and counters.pending(counts) == 0
        return "the replayed range is done" if done else None

    session = supervision.Session(
        app,
        counters,
        supervision.LiveFunnel(plan.live),
        settled_when=settled_when,
        describe=lambda counts: (
            "replay: " + "; ".join(f"{k} done={v['done']}" for k, v in counts.items())
        ),
        records_in=lambda: in_range,
        join_timeout_seconds=plan.join_timeout_seconds,
    )
    reason, final_counts = await supervision.supervise(session)
    entries = of_version(await read_ledger(bootstrap), settings.pipeline_version)
    started_ms = int(started_at.timestamp() * 1000)
    exported = []
    async for record in read_topic_to_end(bootstrap, EXPORTED.name):
        task = ExportedTask.from_json(record.value)
        if record.timestamp >= started_ms and task.pipeline_version == settings.pipeline_version:
            exported.append(task)
    return ReplaySummary(
        stopped_because=reason,
        group=group,
        stages=[s.name for s in stages],
        start=start,
        end=end,
        time_lookup=method,
        counts=final_counts,
        funnel=Funnel.of([e for e in entries if e.updated_at >= started_at]),
        exported=exported,
        seconds=time.monotonic() - started,
    )


async def _commit_fresh(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit a starting point, refusing to move a group that already read ``topic``."""
    committed = await committed_offsets(bootstrap, group, topic)
    used = {p: o for p, o in committed.items() if o is not None and o != offsets.get(p)}
    if used:
        raise ReplayError(
            f"group {group} already has offsets on {topic} ({used}); a replay starts a fresh "
            "group: leave --group out, or move it with `swe-stream offsets reset`"
        )
    await commit_offsets(bootstrap, group, topic, offsets)
