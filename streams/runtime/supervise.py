"""The one supervise loop of every in-process run (``mine``, ``run``, ``demo``, ``replay``).

    signals -> app.start -> wait for partitions -> started() (mine: the ingest task)
      -> every 0.5 s: this run's counts -> live view / a log line every 10 s
           -> no change for a minute with records pending: one WARNING saying what it waits for
           -> stop when the app crashed, a signal came, ``stop_when`` names a reason,
              or ``settled_when`` names one on two polls in a row
      -> stopping() -> app.stop -> signal handlers restored

``settled_when`` is checked twice because one poll can fall between a stage's output and the
next stage's input: two polls in a row with nothing pending mean nothing is between stages.
The counts are this process's own metrics (``StageCounters``), so the checks are exact.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import REGISTRY

from schemas import ExportedTask
from streams.core.progress import PROGRESS
from streams.kafka.topics import PULL_REQUEST_EVENTS
from streams.pipeline.ledger import Funnel
from streams.pipeline.stage import Stage
from streams.runtime.live import LiveView
from streams.runtime.stalls import StallWatch
from streams.runtime.topology import STAGE_ORDER

log = logging.getLogger("swe_stream.supervise")

Counts = dict[str, dict[str, int]]
POLL_SECONDS = 0.5
LOG_EVERY_SECONDS = 10.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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

    def pending(self, counts: Counts | None = None) -> int:
        """Records written to a stage's input in this run that it has not finished. Another
        pipeline version's records, which a stage only skips, do not count as finished work
        (a version running beside this one would otherwise hide this one's pending records).
        ``counts``: this poll's ``now()``, not read again."""
        counts = self.now() if counts is None else counts
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


class LiveFunnel:
    """The run's per-stage counts, given to the progress registry at every poll, and the live
    view (``streams.runtime.live``: funnel, hours, image builds, tasks) on stderr while the
    run lasts, when ``enabled``."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._view = LiveView(enabled).start()

    def update(self, counts: dict[str, dict[str, int]], published: int, exported: int) -> None:
        PROGRESS.set_funnel(counts, published, exported)

    def close(self) -> None:
        self._view.stop()


async def joined(app: Any, timeout: float) -> None:
    """Wait until the consumer group has given this process its partitions."""
    deadline = time.monotonic() + timeout
    while not app.consumer.assignment() or app.rebalancing:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the consumer group did not assign partitions in {timeout:.0f} s")
        await asyncio.sleep(0.2)


def quiet_libraries() -> None:
    """Keep the libraries' INFO lines (rebalances, fetches) out of a one-process run's output,
    where they would drown the funnel; DEBUG shows them again."""
    if not logging.getLogger("swe_stream").isEnabledFor(logging.DEBUG):
        # httpx logs every request at INFO: one line per PR and API call
        for noisy in ("faust", "aiokafka", "mode", "httpx", "httpcore"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


@dataclass
class Session:
    """What one supervised run shares: the started app, its stages' counters, how it is shown,
    and when it stops."""

    app: Any
    counters: StageCounters
    live: LiveFunnel
    # the reason to stop now (max tasks reached, ingest failed), or None
    stop_when: Callable[[Counts], str | None] = lambda counts: None
    # the reason to stop once it has held on two polls in a row (drained), or None
    settled_when: Callable[[Counts], str | None] = lambda counts: None
    describe: Callable[[Counts], str] = field(default=lambda counts: one_line(counts))
    records_in: Callable[[], int] | None = None  # the live table's title (default: ingest's)
    started: Callable[[], None] = lambda: None  # once the group has assigned partitions
    stopping: Callable[[], Awaitable[None]] | None = None  # before the app stops
    join_timeout_seconds: float = 120.0
    stalls: StallWatch = field(default_factory=StallWatch)  # says what a stopped run waits for


async def supervise(session: Session) -> tuple[str, Counts]:
    """Run ``session.app`` until it should stop; returns why, and this run's counts."""
    app, counters = session.app, session.counters
    stop = asyncio.Event()
    reason = "stopped"

    def on_signal() -> None:
        nonlocal reason
        reason = "interrupted"
        stop.set()

    loop = asyncio.get_running_loop()
    # the loop's remove_signal_handler puts back the default, not what was there (asyncio.run's
    # own Ctrl-C handler): keep it, and put it back
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    records_in = session.records_in or counters.published
    await app.start()
    try:
        await joined(app, session.join_timeout_seconds)
        session.started()
        # the first funnel line a period in: one at once would mostly say the records are
        # on their way; a run shorter than that has its final line alone
        settled, last_report, last_line = 0, time.monotonic(), ""
        while not stop.is_set():
            await asyncio.sleep(POLL_SECONDS)
            counts = counters.now()
            session.live.update(counts, records_in(), counts.get("export", {}).get("out", 0))
            if not session.live.enabled and time.monotonic() - last_report > LOG_EVERY_SECONDS:
                line = session.describe(counts)
                if funnel_moved(counts, line, last_line):
                    last_report, last_line = time.monotonic(), line
                    log.info("%s", line)
            session.stalls.observe(app, counts, counters.pending(counts))
            if app.crashed:
                reason = f"the stream processor crashed: {app.crash_reason!r}"
                break
            now = session.stop_when(counts)
            if now is not None:
                reason = now
                break
            drained = session.settled_when(counts)
            settled = settled + 1 if drained is not None else 0
            if drained is not None and settled >= 2:
                reason = drained
                break
        final = counters.now()
        line = session.describe(final)
        if not session.live.enabled and funnel_moved(final, line, last_line):
            # the last change, which the period may have held back: the log ends with the
            # run's real funnel
            log.info("%s", line)
        return reason, final
    finally:
        session.live.close()
        if session.stopping is not None:
            await session.stopping()
        await app.stop()
        for sig, handler in previous.items():
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
                signal.signal(sig, handler)


def funnel_moved(counts: Counts, line: str, last_line: str) -> bool:
    """Whether the funnel ``line`` is worth logging: a line only when something moved since
    ``last_line``, and none before any record came in (a line of zeros says nothing)."""
    return line != last_line and any(c.get("in", 0) for c in counts.values())


def one_line(counts: Counts) -> str:
    """The funnel as a log line: per stage in, out, rejected and failed."""
    return "funnel: " + "; ".join(
        f"{stage} in={c['in']} out={c['out']} rej={c['rejected']} fail={c['failed']}"
        for stage, c in counts.items()
    )


def outcome_lines(
    counts: Counts, funnel: Funnel, exported: list[ExportedTask], export_dir: object
) -> list[str]:
    """The end of a run's summary: its per-stage counts, the funnel of its ledger entries and
    the tasks it exported."""
    out = [
        f"  {stage:9} {c['in']:6} / {c['out']:5} / {c['rejected']:5} / "
        f"{c['failed']:5} / {c['skipped']:5}"
        for stage, c in counts.items()
        # a stage that mines nothing (the harness's) only when it had work: a row of zeros
        # in every mining run says nothing
        if stage in STAGE_ORDER or c["in"]
    ]
    out += funnel.lines(STAGE_ORDER)
    out.append(f"tasks exported: {len(exported)} (to {export_dir})")
    out += [f"  {task.instance_id}: {task.export_dir}" for task in exported]
    return out
