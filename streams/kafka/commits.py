"""Commit-stall repair for the Faust worker.

Faust commits a partition only up to the first offset its streams never acked. Right after a
(re)start, its first commits can race its seek to the group's committed offsets: acks of the
records read in between are lost, so the partition's acked offsets start above a hole that no
stream will ever fill. The stage keeps working, but the group's offset stays where it was for
good: lag never drains, and a restart re-reads everything after the hole. Seen on the embedded
broker after SIGKILL restarts (offsets 1 and 2 unacked, 3..24 acked, nothing in flight).

The watch reads each partition's committed offset, acked offsets and in-flight records every
interval. A hole that blocks the commit, with nothing of the partition in flight and nothing
changed over ``checks`` readings in a row, cannot fill by itself: the watch seeks the partition
back to its committed offset, so the hole's records (and the ones after it) are delivered
again. At least once, as Faust promises: a stage skips a PR whose ledger state is already
final, so a re-read costs little.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streams.core import metrics

log = logging.getLogger("swe_stream.commits")


@dataclass(frozen=True)
class PartitionAcks:
    """What the consumer knows of one partition's progress."""

    committed: int | None  # the group's committed offset (the next offset to read)
    acked: tuple[int, ...]  # offsets acked since, not yet committed, sorted
    in_flight: bool  # a record of the partition is being processed


def blocks_commit(acks: PartitionAcks) -> bool:
    """True when Faust will not commit the partition: acked offsets start above a hole.
    (Faust's rule: a gap of more than one offset between the committed offset and the first
    acked one; it lets a gap of one through.)"""
    if not acks.committed or not acks.acked:
        return False
    return acks.acked[0] - acks.committed > 1


class CommitStallWatch:
    """Decides which partitions have a stalled commit, from successive readings."""

    def __init__(self, checks: int = 3):
        if checks < 1:
            raise ValueError("checks must be at least 1")
        self.checks = checks
        self._seen: dict[Any, tuple[PartitionAcks, int]] = {}

    def observe(self, partitions: Mapping[Any, PartitionAcks]) -> dict[Any, int]:
        """One reading; returns the partitions to repair and the offset to seek each to."""
        seen: dict[Any, tuple[PartitionAcks, int]] = {}
        stalled: dict[Any, int] = {}
        for tp, acks in partitions.items():
            if acks.in_flight or not blocks_commit(acks):
                continue
            before, times = self._seen.get(tp, (None, 0))
            times = times + 1 if before == acks else 1
            seen[tp] = (acks, times)
            if times >= self.checks:
                assert acks.committed is not None  # blocks_commit checked it
                stalled[tp] = acks.committed
                del seen[tp]  # a repair starts a new count
        self._seen = seen
        return stalled


def read_faust_acks(consumer: Any) -> dict[Any, PartitionAcks]:
    """The readings from a Faust consumer (its private bookkeeping: faust-streaming 0.15)."""
    in_flight = {message.tp for message in list(consumer.unacked)}
    return {
        tp: PartitionAcks(
            committed=consumer._committed_offset.get(tp),
            acked=tuple(sorted(acked)),
            in_flight=tp in in_flight,
        )
        for tp, acked in list(consumer._acked.items())
        if acked
    }


async def repair_stalled_commits(consumer: Any, watch: CommitStallWatch) -> dict[Any, int]:
    """Read ``consumer``, and seek every partition whose commit stalled back to its committed
    offset; returns what was repaired."""
    stalled = watch.observe(read_faust_acks(consumer))
    for tp, offset in stalled.items():
        log.warning(
            "commit of %s:%d stalled at offset %d (acks above it, nothing in flight): "
            "reading the partition again from there",
            tp.topic,
            tp.partition,
            offset,
        )
        await consumer.seek(tp, offset)
        metrics.COMMIT_STALLS_REPAIRED.labels(topic=tp.topic).inc()
    return stalled


# -- partitions without a committed offset ------------------------------------------------------
#
# While a rebalance's table recovery runs, the consumer already fetches the new stream
# partitions into its buffer, which Faust empties before the streams resume; it then seeks
# each partition to its committed offset (also when it fetched while its flow was stopped:
# ``getmany`` drops those records and seeks back). A partition with none (a new group, or a
# partition whose last owner died before its first commit) is not sought at all, so it resumes
# after what was buffered and dropped: those records are never processed. Seen with three
# workers when one was killed before its first commit (three PRs never validated). Records
# that did reach a stream before the seek (Faust's read offset) are not sent again: the seek
# goes right after them.


def unsought_partitions(
    assigned: Iterable[Any],
    committed: Mapping[Any, int | None],
    delivered: Mapping[Any, int | None],
    streams: Collection[str],
) -> dict[Any, int]:
    """The assigned partitions of ``streams`` (topic names) that a seek to the committed offset
    leaves where they are (no committed offset: not in ``committed``, Faust's record, which
    keeps a committed 0 as None), and where to seek each: right after the last record delivered
    to a stream (``delivered``; it was or is being processed), or to the start when none was.
    A partition committed at 0 (a replay's fresh group) is left to Faust: its records may
    already be flowing, and seeking it would send them twice."""
    unsought = sorted(
        (tp for tp in assigned if tp.topic in streams and tp not in committed),
        key=lambda tp: (tp.topic, tp.partition),
    )
    targets = {}
    for tp in unsought:
        last = delivered.get(tp)
        targets[tp] = 0 if last is None else last + 1
    return targets


def seek_uncommitted_to_start(consumer: Any, streams: Collection[str]) -> None:
    """Make ``consumer.perform_seek`` (Faust's seek after a recovery) also seek the stream
    partitions it would leave alone: to their start, as ``auto_offset_reset=earliest`` means
    for a partition nothing was committed on, or right after the last record this process
    handed to a stream (in this assignment or an earlier one: Faust forgets it at a
    revocation, and a second rebalance before the first commit would send it again)."""
    delivered: dict[Any, int] = {}
    seek_after_recovery = consumer.perform_seek
    revoke = consumer.on_partitions_revoked

    def remember_delivered() -> None:
        for tp, offset in list(consumer._read_offset.items()):
            if offset is not None and tp.topic in streams:
                delivered[tp] = max(offset, delivered.get(tp, -1))

    async def on_partitions_revoked(revoked: Any) -> None:
        remember_delivered()
        await revoke(revoked)

    async def perform_seek() -> None:
        remember_delivered()
        await seek_after_recovery()
        # Faust's own record of the committed offsets it just read (0 is kept as None)
        targets = unsought_partitions(
            consumer.assignment(), consumer._committed_offset, delivered, streams
        )
        for tp, offset in targets.items():
            await consumer.seek(tp, offset)  # below the log start: aiokafka resets to earliest
        if targets:
            log.debug("partitions with nothing committed read from: %s", targets)

    consumer.perform_seek = perform_seek
    consumer.on_partitions_revoked = on_partitions_revoked
