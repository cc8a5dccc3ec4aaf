"""A table recovery stuck on some of its changelog partitions, and its repair.

After a rebalance, Faust reads each table's changelog partitions from where its copy stands
up to their end before any stream resumes. Seen in CI on three Apache Kafka brokers (a worker
of three killed, the survivors taking its partitions over): one survivor's recovery got the
records of two of its four changelog partitions and never one of the other two, old and new
alike (``No event received for active tp ... since recovery start``, for 9 minutes, until the
test gave up). No stream moves while a recovery runs, so the whole group's share of that
worker stood still.

The watch reads the recovery every interval. A changelog partition behind its end that got no
record for ``seconds`` (since the recovery started, its last record, or its last repair) is
sought again to the offset after the last one applied, in the consumer's thread, and taken out
of every pause: the fetcher then asks for it afresh. Reading a changelog again is harmless: a
table applies each record as the latest value of its key. Before each repair, the partition's
standing in the fetcher is logged, so a recurrence says what held it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streams.core import metrics
from streams.kafka.commits import partition_standings, seek_in_consumer_thread

log = logging.getLogger("swe_stream.recovery")


@dataclass(frozen=True)
class RecoveringPartition:
    """One changelog partition a table recovery reads."""

    applied: int  # the last offset applied to the table (-1: none yet)
    last: int  # the partition's last offset the recovery waits for (Faust's highwater)
    last_record_at: float | None  # when it last got a record (monotonic), None if never

    def behind(self) -> bool:
        return self.last > self.applied

    def next_offset(self) -> int:
        """Where reading it again starts: after the last record applied."""
        return max(self.applied + 1, 0)


class RecoveryStallWatch:
    """Decides which recovering changelog partitions stopped getting records."""

    def __init__(self, seconds: float):  # worker.recovery_stall_seconds
        if seconds <= 0:
            raise ValueError("seconds must be positive")
        self.seconds = seconds
        self._repaired_at: dict[Any, float] = {}

    def observe(
        self, recovering: Mapping[Any, RecoveringPartition], started_at: float | None, now: float
    ) -> dict[Any, int]:
        """One reading of a recovery started at ``started_at`` (None: no recovery under way);
        returns the partitions to read again, each with the offset to seek it to."""
        if started_at is None:
            self._repaired_at = {}
            return {}
        stuck = {}
        for tp, partition in recovery_order(recovering):
            if not partition.behind():
                continue
            moved = max(
                started_at,
                partition.last_record_at or started_at,
                self._repaired_at.get(tp, started_at),
            )
            if now - moved >= self.seconds:
                stuck[tp] = partition.next_offset()
                self._repaired_at[tp] = now
        return stuck


def recovery_order(
    recovering: Mapping[Any, RecoveringPartition],
) -> list[tuple[Any, RecoveringPartition]]:
    return sorted(recovering.items(), key=lambda item: (str(item[0].topic), item[0].partition))


def recovering_partitions(recovery: Any) -> tuple[dict[Any, RecoveringPartition], float | None]:
    """A Faust recovery's active changelog partitions and when it started (its private
    bookkeeping of faust-streaming 0.15; a monotonic clock, as Faust's), or no start when it
    is not recovering."""
    if not recovery.in_recovery:
        return {}, None
    received = recovery._active_events_received_at
    partitions = {
        tp: RecoveringPartition(
            applied=stats.offset, last=stats.highwater, last_record_at=received.get(tp)
        )
        for tp, stats in recovery.active_stats().items()
    }
    return partitions, recovery._recovery_started_at


async def repair_stuck_recovery(app: Any, watch: RecoveryStallWatch) -> dict[Any, int]:
    """Read ``app``'s table recovery, and seek every changelog partition it stopped getting
    records of again; returns what was repaired."""
    recovery = app.tables.recovery
    recovering, started_at = recovering_partitions(recovery)
    stuck = watch.observe(recovering, started_at, time.monotonic())
    if not stuck:
        return stuck
    consumer = app.consumer
    standings = partition_standings(consumer)
    for tp, offset in stuck.items():
        standing = standings.get(tp)
        log.warning(
            "table recovery got no record of %s[%d] for %.0f s (applied up to %d of %d; "
            "fetcher: %s; read offset %s): reading it again from offset %d",
            tp.topic,
            tp.partition,
            watch.seconds,
            recovering[tp].applied,
            recovering[tp].last,
            standing.describe() if standing else "not assigned",
            consumer._read_offset.get(tp),
            offset,
        )
        consumer._read_offset.pop(tp, None)  # a read offset past it drops what it fetches
        await seek_in_consumer_thread(consumer, tp, offset)
        metrics.RECOVERY_PARTITIONS_REREAD.labels(topic=tp.topic).inc()
    consumer.resume_partitions(list(stuck))
    return stuck
