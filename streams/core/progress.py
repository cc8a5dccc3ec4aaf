"""What this process has in flight, for the live view and the plain progress lines.

One registry per process (``PROGRESS``), updated by the engine from any thread and read as a
``Snapshot`` by the views (``streams.runtime.live``):

* the **funnel**: the per-stage counts of the supervised run (``set_funnel``);
* **hours** of GH Archive being ingested (``hour_started`` / ``hour_finished``);
* **image builds**: layer, tag, current step and when it started (``build_started``,
  ``build_step``, ``build_output``, ``build_finished``);
* **tasks** of the harness: how many were planned, how many are done, with which status
  (``tasks_planned`` / ``task_done``), from which an ETA follows.

Without a terminal the registry's own log lines (logger ``swe_stream.progress``) say the same:
a line when an image build ends (its start at DEBUG: most builds take seconds, and a long one
says it runs by its step lines), a step line at most every ``STEP_LINE_SECONDS`` of a long
build, a line per task done with the ETA. The live view mutes INFO lines while it is drawn,
so they never clutter it. No rich here: the views are a layer up.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace

log = logging.getLogger("swe_stream.progress")

STEP_LINE_SECONDS = 10.0  # at most one step line a build this often (plain lines)
_OUTPUT_CHARS = 200


@dataclass(frozen=True)
class BuildState:
    """An image build in flight."""

    layer: str  # env, instance, tools
    tag: str
    steps: int
    started: float  # time.monotonic()
    step: int = 0  # 0: copying files, before the first step
    command: str = ""
    step_started: float = 0.0
    output: str = ""  # the step's last line of output

    def elapsed(self, now: float) -> float:
        return max(0.0, now - self.started)


@dataclass(frozen=True)
class TasksState:
    """Tasks planned and done (the harness's evaluations), with their statuses."""

    label: str
    total: int
    started: float
    done: int = 0
    statuses: tuple[tuple[str, int], ...] = ()

    def eta_seconds(self, now: float) -> float | None:
        """Seconds left at the rate so far (None before the first task is done)."""
        if self.done <= 0 or now <= self.started:
            return None
        return max(0, self.total - self.done) * (now - self.started) / self.done


@dataclass(frozen=True)
class Snapshot:
    """Everything in flight at ``now`` (``time.monotonic()``)."""

    now: float
    started: float
    funnel: dict[str, dict[str, int]] = field(default_factory=dict)
    records_in: int = 0
    exported: int = 0
    hours_in_flight: tuple[tuple[str, float], ...] = ()  # (hour, started)
    hours_done: int = 0
    builds: tuple[BuildState, ...] = ()  # oldest first
    tasks: TasksState | None = None


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0, int(seconds + 0.5))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"


def tasks_line(tasks: TasksState, now: float) -> str:
    """``harness: 3/10 tasks done (resolved 2, unresolved 1), ETA 2 min 10 s``."""
    statuses = ", ".join(f"{status} {count}" for status, count in tasks.statuses)
    eta = tasks.eta_seconds(now)
    return (
        f"{tasks.label}: {tasks.done}/{tasks.total} tasks done"
        + (f" ({statuses})" if statuses else "")
        + (f", ETA {format_seconds(eta)}" if eta is not None and tasks.done < tasks.total else "")
    )


class Progress:
    """The registry (thread-safe): the engine writes, the views read ``snapshot()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new run in the same process; tests)."""
        with self._lock:
            self._started = time.monotonic()
            self._funnel: dict[str, dict[str, int]] = {}
            self._records_in = self._exported = 0
            self._hours: dict[str, float] = {}
            self._hours_done = 0
            self._builds: dict[int, BuildState] = {}
            self._build_lines: dict[int, float] = {}  # when each build's last plain line was
            self._tasks: TasksState | None = None
            self._statuses: Counter[str] = Counter()

    # ---- the funnel and the hours ----

    def set_funnel(self, counts: dict[str, dict[str, int]], records_in: int, exported: int) -> None:
        with self._lock:
            self._funnel = {stage: dict(c) for stage, c in counts.items()}
            self._records_in, self._exported = records_in, exported

    def hour_started(self, hour: str) -> None:
        with self._lock:
            self._hours[hour] = time.monotonic()

    def hour_finished(self, hour: str) -> None:
        with self._lock:
            if self._hours.pop(hour, None) is not None:
                self._hours_done += 1

    # ---- image builds ----

    def build_started(self, layer: str, tag: str, steps: int) -> int:
        """A new build in flight; its id, for the calls that follow."""
        now = time.monotonic()
        with self._lock:
            build_id = next(self._ids)
            self._builds[build_id] = BuildState(layer, tag, steps, now, step_started=now)
            self._build_lines[build_id] = now
        # DEBUG: one INFO line a build (its end) keeps a real hour's log readable
        log.debug("image build started: %s %s (%d steps)", layer, tag, steps)
        return build_id

    def build_step(self, build_id: int, step: int, command: str) -> None:
        self._update_build(build_id, step=step, command=command, output="", fresh_step=True)

    def build_output(self, build_id: int, line: str) -> None:
        """The step's latest line of output (a plain step line at most every few seconds)."""
        self._update_build(build_id, output=line.strip()[:_OUTPUT_CHARS])

    def _update_build(self, build_id: int, fresh_step: bool = False, **changes: object) -> None:
        now = time.monotonic()
        with self._lock:
            build = self._builds.get(build_id)
            if build is None:
                return
            if fresh_step:
                changes["step_started"] = now
            build = self._builds[build_id] = replace(build, **changes)  # type: ignore[arg-type]
            due = now - self._build_lines.get(build_id, now) >= STEP_LINE_SECONDS
            if due:
                self._build_lines[build_id] = now
        if due:
            log.info(
                "image build: %s %s step %d/%d at %s: %s",
                build.layer,
                build.tag,
                build.step,
                build.steps,
                format_seconds(build.elapsed(now)),
                (build.output or build.command)[:_OUTPUT_CHARS],
            )

    def build_finished(self, build_id: int, ok: bool = True) -> None:
        now = time.monotonic()
        with self._lock:
            build = self._builds.pop(build_id, None)
            self._build_lines.pop(build_id, None)
        if build is None:
            return
        if ok:
            log.info("image built: %s %s in %.1f s", build.layer, build.tag, build.elapsed(now))
        else:
            log.info(
                "image build failed: %s %s at step %d/%d after %.1f s",
                build.layer,
                build.tag,
                build.step,
                build.steps,
                build.elapsed(now),
            )

    # ---- tasks ----

    def tasks_planned(self, count: int, label: str = "harness") -> None:
        """``count`` more tasks to do (added to those planned before, done or not)."""
        with self._lock:
            if self._tasks is None:
                self._tasks = TasksState(label, count, time.monotonic())
            else:
                self._tasks = replace(self._tasks, total=self._tasks.total + count)

    def task_done(self, status: str, name: str = "") -> None:
        """A task is done (``name``: which, for the plain line)."""
        with self._lock:
            if self._tasks is None:
                return
            self._statuses[status] += 1
            self._tasks = replace(
                self._tasks,
                done=self._tasks.done + 1,
                statuses=tuple(sorted(self._statuses.items())),
            )
            tasks = self._tasks
        log.info("%s%s", tasks_line(tasks, time.monotonic()), f": {name} {status}" if name else "")

    # ---- reading ----

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(
                now=time.monotonic(),
                started=self._started,
                funnel={stage: dict(c) for stage, c in self._funnel.items()},
                records_in=self._records_in,
                exported=self._exported,
                hours_in_flight=tuple(sorted(self._hours.items(), key=lambda h: h[1])),
                hours_done=self._hours_done,
                builds=tuple(sorted(self._builds.values(), key=lambda b: b.started)),
                tasks=self._tasks,
            )


PROGRESS = Progress()
