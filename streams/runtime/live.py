"""The live view on a terminal: what the process has in flight, redrawn in place on stderr.

    funnel (per stage: in, out, rejected, failed, skipped, pending)
    hours of GH Archive in flight
    image builds (layer, step x/y, elapsed, tag, the step's last output)
    tasks done / total and the ETA

All of it is read from the progress registry (``streams.core.progress``), which the engine
updates; ``render`` is a pure function of a snapshot. One view per process: a view opened
while another is drawn adds nothing (the demo's view spans its pipeline run, whose own view
is then the same). While a view is drawn, log lines go above it and only warnings and errors
are shown, except the stages' per-record lines, which the funnel counts; without a terminal
(or with ``--no-live``) nothing is drawn and the registry's plain lines are logged instead.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from streams.core.progress import PROGRESS, BuildState, Snapshot, format_seconds, tasks_line

MAX_BUILDS_SHOWN = 3
FUNNEL_COLUMNS = (
    ("in", "in"),
    ("out", "out"),
    ("rej", "rejected"),
    ("fail", "failed"),
    ("skip", "skipped"),
)
PER_RECORD_LOGGER = "swe_stream.stage"  # a line per record: the funnel counts them


def render(
    snapshot: Snapshot, since: float | None = None, title: str = "swe-stream"
) -> RenderableType:
    """The view of ``snapshot``: the funnel (when a pipeline runs), the hours in flight, the
    image builds and the tasks; ``since`` is when the view started (the elapsed time)."""
    now = snapshot.now
    elapsed = format_seconds(now - (snapshot.started if since is None else since))
    parts: list[RenderableType] = []
    if snapshot.funnel:
        parts.append(
            Text(
                f"{title}: {snapshot.records_in} PR events in, tasks exported "
                f"{snapshot.exported}, {elapsed}",
                style="bold",
                no_wrap=True,
                overflow="ellipsis",
            )
        )
        parts.append(_funnel_table(snapshot.funnel))
    else:
        parts.append(Text(f"{title}: {elapsed}", style="bold"))
    if snapshot.hours_in_flight or snapshot.hours_done:
        flying = ", ".join(
            f"{hour} ({format_seconds(now - at)})" for hour, at in snapshot.hours_in_flight
        )
        parts.append(
            _line(f"hours: {snapshot.hours_done} done", f"; in flight: {flying}" if flying else "")
        )
    for build in snapshot.builds[:MAX_BUILDS_SHOWN]:
        parts.append(_build_line(build, now))
    hidden = len(snapshot.builds) - MAX_BUILDS_SHOWN
    if hidden > 0:
        parts.append(_line(f"image: and {hidden} more build(s)", ""))
    if snapshot.tasks is not None:
        parts.append(_line(tasks_line(snapshot.tasks, now), ""))
    return Group(*parts)


def _funnel_table(funnel: dict[str, dict[str, int]]) -> Table:
    table = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("stage")
    for header, _ in FUNNEL_COLUMNS:
        table.add_column(header, justify="right")
    table.add_column("pend", justify="right")
    for stage, counts in funnel.items():
        pending = counts.get("in", 0) - counts.get("done", counts.get("in", 0))
        table.add_row(
            stage, *(str(counts.get(key, 0)) for _, key in FUNNEL_COLUMNS), str(max(0, pending))
        )
    return table


def _build_line(build: BuildState, now: float) -> Text:
    name = build.tag.rsplit(":", 1)[-1] if ":" in build.tag else build.tag
    if len(name) > 36:
        name = name[:35] + "…"
    step = f"step {build.step}/{build.steps}" if build.step else "copying files"
    return _line(
        f"image: {build.layer} {step} {format_seconds(build.elapsed(now))}",
        f" {name} {build.output or build.command}",
    )


def _line(head: str, rest: str) -> Text:
    text = Text(head, style="bold", no_wrap=True, overflow="ellipsis")
    text.append(rest, style="dim")
    return text


class _QuietWhileLive(logging.Filter):
    """Warnings and errors only (the view shows the rest), and no per-record stage lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == PER_RECORD_LOGGER or record.name.startswith(PER_RECORD_LOGGER + "."):
            return record.levelno >= logging.ERROR
        return record.levelno >= logging.WARNING


class LiveView:
    """The live view of this process, drawn on stderr between ``start()`` and ``stop()`` (or
    as a ``with`` block) when ``enabled``; a no-op otherwise, or inside another view."""

    _depth = 0  # views open in this process (only the outermost one draws)

    def __init__(self, enabled: bool, title: str = "swe-stream"):
        self.enabled = enabled
        self.title = title
        self._live: Any = None
        self._drawing = False
        self._since = time.monotonic()
        self._handlers: list[tuple[logging.StreamHandler[Any], Any]] = []
        self._filter = _QuietWhileLive()

    def start(self) -> LiveView:
        if not self.enabled or self._drawing:
            return self
        self._drawing = True
        LiveView._depth += 1
        if LiveView._depth > 1:
            return self
        from rich.live import Live

        self._since = time.monotonic()
        self._live = Live(
            get_renderable=lambda: render(PROGRESS.snapshot(), self._since, self.title),
            console=Console(stderr=True),
            refresh_per_second=2,
            transient=False,
            redirect_stderr=True,
            # printed lines go above the view, unless they go to a file of their own
            redirect_stdout=sys.stdout.isatty(),
        )
        self._live.start()
        self._route_logging()
        return self

    def _route_logging(self) -> None:
        """Log lines to stderr go above the view (through the proxy rich put on sys.stderr),
        quieted; put back in ``stop()``."""
        original = getattr(sys.stderr, "rich_proxied_file", sys.stderr)
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream in (
                original,
                sys.__stderr__,
            ):
                self._handlers.append((handler, handler.stream))
                handler.setStream(sys.stderr)
                handler.addFilter(self._filter)

    def stop(self) -> None:
        if not self._drawing:
            return
        self._drawing = False
        LiveView._depth -= 1
        if self._live is None:
            return
        for handler, stream in self._handlers:
            handler.removeFilter(self._filter)
            handler.setStream(stream)
        self._handlers.clear()
        self._live.stop()
        self._live = None

    def __enter__(self) -> LiveView:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
