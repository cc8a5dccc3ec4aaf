"""What a run that stopped moving is waiting for, said once per stall.

A run with records pending whose counts have not changed for ``STALL_SECONDS`` logs one
WARNING naming what the stream processor is doing: a table still recovering from its changelog
(and how far behind, per partition), the partitions it owns, the services that do not answer.
Faust's own recovery lines are INFO, which a quiet run hides: without this, a recovery that
never ends looks like a run that does nothing.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from streams.kafka.commits import in_flight_records, partition_standings
from streams.pipeline.outages import OUTAGES

log = logging.getLogger("swe_stream.supervise")

STALL_SECONDS = 60.0


def stall_report(app: Any) -> str:
    """A line on what ``app`` (a Faust app) is waiting for; best effort, never raises."""
    parts = []
    try:
        recovery = app.tables.recovery
        if recovery.in_recovery:
            behind = {
                f"{tp.topic}[{tp.partition}]": f"{stats.offset}/{stats.highwater}"
                for tp, stats in recovery.active_stats().items()
            }
            parts.append(
                f"table recovery in progress, {recovery.active_remaining_total()} changelog "
                f"records to read (offset/highwater: {behind or 'none reported'})"
            )
        else:
            parts.append("table recovery done")
    except Exception as error:  # an app without tables, or Faust's internals moved
        parts.append(f"table recovery unknown ({type(error).__name__})")
    try:
        assigned = app.consumer.assignment()
        parts.append(f"{len(assigned)} partition(s) assigned")
    except Exception as error:
        parts.append(f"assignment unknown ({type(error).__name__})")
    try:
        behind = {
            f"{tp.topic}[{tp.partition}]": standing.describe()
            for tp, standing in sorted(partition_standings(app.consumer).items())
            if standing.behind() and app.topics.acks_enabled_for(tp.topic)  # a stream's
        }
        if behind:
            parts.append(
                "not committed: " + "; ".join(f"{tp} {line}" for tp, line in behind.items())
            )
    except Exception as error:
        parts.append(f"partition standings unknown ({type(error).__name__})")
    try:
        in_flight = sorted(
            f"{m.tp.topic}[{m.tp.partition}]@{m.offset}" for m in in_flight_records(app.consumer)
        )
        if in_flight:
            parts.append(f"in flight: {', '.join(in_flight[:10])}")
    except Exception as error:
        parts.append(f"records in flight unknown ({type(error).__name__})")
    if getattr(app, "rebalancing", False):
        parts.append("the group is rebalancing")
    down = OUTAGES.down()
    if down:
        parts.append("waiting for " + ", ".join(sorted(down)))
    return "; ".join(parts)


class StallWatch:
    """Says once per stall that a run with pending records stopped moving, and why."""

    def __init__(self, seconds: float = STALL_SECONDS):
        self.seconds = seconds
        self._last: object = None
        self._since = time.monotonic()
        self._said = False

    def observe(self, app: Any, counts: object, pending: int) -> bool:
        """Call at every poll with the run's counts; True when it logged a stall now."""
        now = time.monotonic()
        if counts != self._last or pending == 0:
            self._last, self._since, self._said = counts, now, False
            return False
        if self._said or now - self._since < self.seconds:
            return False
        self._said = True
        log.warning(
            "no progress for %.0f s with %d record(s) pending: %s",
            now - self._since,
            pending,
            stall_report(app),
        )
        return True
