"""Where the Faust worker's stream partitions stand, and the repairs of what Faust can leave
stuck: a commit stalled behind lost acks, records fetched that no stream got, partitions its
seek after a recovery leaves alone (each section below says when it was seen).

Faust commits a partition only up to the first offset its streams never acked (with a hole of
one let through, which ``hold_commits_at_unprocessed_records`` closes). Right after a
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


async def seek_in_consumer_thread(consumer: Any, tp: Any, offset: int) -> None:
    """Seek ``tp`` of a Faust ``consumer`` to ``offset``, and count from there as read, as its
    ``seek`` does, but in the thread its aiokafka consumer runs in: Faust's ``seek`` on aiokafka
    moves the fetch position from the calling thread while the consumer thread may be handing out
    the same partition's fetched records (seen in CI: a KeyError in aiokafka's
    ``fetched_records`` crashed a worker right after a rebalance's seeks). A Faust consumer
    without that thread (another driver) seeks as it does."""
    thread = getattr(consumer, "_thread", None)
    if thread is None or not hasattr(thread, "call_thread"):
        await consumer.seek(tp, offset)
        return
    await thread.call_thread(thread._ensure_consumer().seek, tp, offset)
    consumer._read_offset[tp] = offset if offset else None


def in_flight_records(consumer: Any) -> list[Any]:
    """The records a Faust ``consumer``'s streams took and have not acked. Not its ``unacked``
    set as such: Faust marks a record below the committed offset acked without taking it out
    of that set (a record delivered again after a rebalance or a repair's seek, which the stage
    skips and acks), so the set keeps it for good. Seen in CI on Apache Kafka: three such
    records made the consumer look busy forever, and the lost-fetch repair never ran for a
    partition whose last 7 records reached no stream."""
    return [message for message in list(consumer.unacked) if not message.acked]


@dataclass(frozen=True)
class PartitionAcks:
    """What the consumer knows of one partition's progress."""

    committed: int | None  # the group's committed offset (the next offset to read)
    acked: tuple[int, ...]  # offsets acked since, not yet committed, sorted
    in_flight: bool  # a record of the partition is being processed
    log_start: int = 0  # the partition's first offset, where a group with no commit starts

    @property
    def next_to_process(self) -> int:
        """The first offset not yet committed: the committed one, or the log's start when
        there is none (Faust keeps a committed 0 as None)."""
        return self.committed or self.log_start


def blocks_commit(acks: PartitionAcks) -> bool:
    """True when the partition's commit cannot move: acked offsets start above a hole (the
    committed offset, or the log's start with none, is the next one to read, so a first ack
    above it leaves that record unacked; ``hold_commits_at_unprocessed_records`` makes Faust
    wait for it)."""
    if not acks.acked:
        return False
    return acks.acked[0] > acks.next_to_process


# -- a commit past a record not processed ------------------------------------------------------
#
# Faust commits a partition's first run of consecutive acked offsets unless it starts more than
# one above the committed offset: it lets a hole of exactly one through. But the committed
# offset is the next record to read, so that hole is a record no stream acked: one still being
# processed (a stage with concurrency: acked out of order), or one a rebalance took from a
# stream's hands. The commit passes it, and a worker killed before it is done loses it: the
# next owner starts after it. Seen in CI on the embedded broker after SIGKILL restarts: three
# PRs of 316 stopped at enrich or classify, their next stage's record committed, never
# processed. With nothing committed yet, Faust commits from wherever the acked offsets start:
# past the partition's first records when no stream acked them (seen in CI, then in 1 run of 1
# here, on the embedded broker after SIGKILL restarts: pr.enriched[0] committed at 3, its
# record at offset 0 never classified). There the first record to process is the log's start
# (0 unless retention deleted older ones: ``PartitionAcks.log_start``, read by the stall
# watch when acks start above 0).
#
# Nor does a jump of the fetch position count as processed. Faust takes the offsets between two
# records it reads that are not consecutive for a gap in the log (a compacted topic's, a
# transaction marker's) and commits across them. A stage input has neither: every offset is a
# record, and a jump means records were skipped (seen in a full run on the embedded broker after
# SIGKILL restarts: 10-11 records of three partitions right below the offset the group then
# had committed, never processed: 26 PRs of 316 with no ledger entry). The jump leaves a hole
# that holds the commit, and ``repair_stalled_commits`` reads the partition again from it.


def commit_passes_unprocessed(
    committed: int | None, first_acked: int, in_flight: Iterable[int], log_start: int = 0
) -> bool:
    """Whether committing the acked run that starts at ``first_acked`` passes a record not
    processed: the one at ``committed`` (the next offset to read; Faust keeps a committed 0
    as None, and with none the first is the log's start), or one in flight below the run."""
    floor = committed or log_start
    if first_acked > floor:
        return True
    return any(floor <= offset < first_acked for offset in in_flight)


def log_starts_of(consumer: Any) -> dict[Any, int]:
    """The log starts the stall watch read for ``consumer``'s partitions (kept on it by
    ``hold_commits_at_unprocessed_records``; a partition not read starts at 0)."""
    starts: dict[Any, int] = consumer.__dict__.setdefault("_swe_log_starts", {})
    return starts


def hold_commits_at_unprocessed_records(consumer: Any, streams: Collection[str]) -> None:
    """Make a Faust ``consumer`` commit a partition of ``streams`` (topic names: stage inputs,
    never compacted, so every offset is a record) only up to its first record not processed
    (see above; faust-streaming 0.15's ``Consumer._new_offset`` and ``_add_gap``). A hole no
    stream will fill (a lost ack, a lost fetch, a jump) then holds the commit until
    ``repair_stalled_commits`` reads the partition again from it."""
    new_offset, add_gap = consumer._new_offset, consumer._add_gap
    log_starts = log_starts_of(consumer)

    async def add_gap_unless_a_stream(tp: Any, offset_from: int, offset_to: int) -> None:
        if tp.topic not in streams:
            await add_gap(tp, offset_from, offset_to)
            return
        # a jump from a read offset older than the commit skips nothing: said only otherwise
        skipped_from = max(offset_from, consumer._committed_offset.get(tp) or 0)
        if skipped_from < offset_to:
            log.warning(
                "%s[%d]: the fetch jumped to offset %d past records from offset %d: they are "
                "not counted as processed, and are read again",
                tp.topic,
                tp.partition,
                offset_to,
                skipped_from,
            )

    def new_offset_after_processed_records(tp: Any) -> int | None:
        acked = consumer._acked.get(tp)
        if acked and tp.topic in streams:
            in_flight = [m.offset for m in in_flight_records(consumer) if m.tp == tp]
            committed = consumer._committed_offset.get(tp)
            start = log_starts.get(tp, 0)
            if commit_passes_unprocessed(committed, min(acked), in_flight, start):
                return None
        result: int | None = new_offset(tp)
        return result

    consumer._new_offset = new_offset_after_processed_records
    consumer._add_gap = add_gap_unless_a_stream


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
                stalled[tp] = acks.next_to_process
                del seen[tp]  # a repair starts a new count
        self._seen = seen
        return stalled


def read_faust_acks(consumer: Any) -> dict[Any, PartitionAcks]:
    """The readings from a Faust consumer (its private bookkeeping: faust-streaming 0.15)."""
    in_flight = {message.tp for message in in_flight_records(consumer)}
    log_starts = log_starts_of(consumer)
    return {
        tp: PartitionAcks(
            committed=consumer._committed_offset.get(tp),
            acked=tuple(sorted(acked)),
            in_flight=tp in in_flight,
            log_start=log_starts.get(tp, 0),
        )
        for tp, acked in list(consumer._acked.items())
        if acked
    }


async def read_log_starts(consumer: Any, readings: Mapping[Any, PartitionAcks]) -> None:
    """Read the log start of each partition with nothing committed whose acks start above
    the start known so far (0): with retention, a group's first record may be past 0, and
    the commit is held until it is known (``log_starts_of``)."""
    unknown = [
        tp
        for tp, acks in readings.items()
        if not acks.committed and blocks_commit(acks) and tp not in log_starts_of(consumer)
    ]
    if unknown:
        earliest = await consumer.earliest_offsets(*unknown)
        log_starts_of(consumer).update({tp: offset or 0 for tp, offset in earliest.items()})


async def repair_stalled_commits(consumer: Any, watch: CommitStallWatch) -> dict[Any, int]:
    """Read ``consumer``, and seek every partition whose commit stalled back to its committed
    offset (or its log's start, with none); returns what was repaired."""
    await read_log_starts(consumer, read_faust_acks(consumer))
    stalled = watch.observe(read_faust_acks(consumer))
    for tp, offset in stalled.items():
        log.warning(
            "commit of %s:%d stalled at offset %d (acks above it, nothing in flight): "
            "reading the partition again from there",
            tp.topic,
            tp.partition,
            offset,
        )
        await seek_in_consumer_thread(consumer, tp, offset)
        metrics.COMMIT_STALLS_REPAIRED.labels(topic=tp.topic).inc()
    return stalled


# -- where each partition stands, for a run that stopped moving ---------------------------------


@dataclass(frozen=True)
class PartitionStanding:
    """Where one assigned partition stands, from the consumer's own bookkeeping."""

    committed: int | None  # Faust's record of the committed offset (a committed 0 is None)
    read: int | None  # the last offset handed to a stream (Faust's read offset)
    position: int | None  # the next offset the fetcher hands out (aiokafka)
    highwater: int | None  # the partition's end, as the last fetch saw it
    paused: bool  # the fetcher holds it (a recovery, a full stream buffer)
    in_flight: int  # records a stream took and has not acked
    acked: int = 0  # records acked since the last commit

    def behind(self) -> bool:
        """Records the group has not committed: the end is past the committed offset."""
        return self.highwater is not None and self.highwater > (self.committed or 0)

    def describe(self) -> str:
        return (
            f"committed {self.committed}, read {self.read}, position {self.position}, "
            f"end {self.highwater}, {self.in_flight} in flight"
            + (", paused" if self.paused else "")
        )


def partition_standings(consumer: Any) -> dict[Any, PartitionStanding]:
    """Every assigned partition's standing, read from a Faust consumer on aiokafka (private
    bookkeeping of faust-streaming 0.15 and aiokafka 0.12; a field it cannot read is None)."""
    in_flight: dict[Any, int] = {}
    for message in in_flight_records(consumer):
        in_flight[message.tp] = in_flight.get(message.tp, 0) + 1
    try:
        assignment = consumer._thread._ensure_consumer()._subscription.subscription.assignment
    except Exception:  # not started, or between assignments
        assignment = None
    standings = {}
    for tp in consumer.assignment():
        position = highwater = None
        paused = False
        try:
            state = assignment.state_value(tp) if assignment is not None else None
        except Exception:
            state = None
        if state is not None:
            position = state.position if state.has_valid_position else None
            highwater, paused = state.highwater, state.paused
        standings[tp] = PartitionStanding(
            committed=consumer._committed_offset.get(tp),
            read=consumer._read_offset.get(tp),
            position=position,
            highwater=highwater,
            paused=paused,
            in_flight=in_flight.get(tp, 0),
            acked=len(consumer._acked.get(tp) or ()),
        )
    return standings


# -- records fetched that no stream got ---------------------------------------------------------
#
# A record the fetcher handed out can still miss every stream: Faust cancels the delivery of
# the record in hand when a rebalance stops the flow (and counts it read), and after the
# recovery aiokafka seeks only partitions committed above 0 — a replay's fresh group starting
# at offset 0, or a partition nothing was committed on, resumes after it. Seen in CI: a
# replay's one record at pr.classified[2] offset 0, position 1, never processed; the replay
# waited out its deadline. The watch looks for what only that leaves: a stream partition whose
# fetch position is past its committed offset with nothing of it acked or in flight, while
# the whole consumer is idle (flow on, no rebalance or recovery, no record in flight, every
# stream's buffer empty), unchanged over ``checks`` readings: it is read again from its
# committed offset. A record merely waiting its turn sits in a buffer, so the consumer is not
# idle; at worst a record is processed twice, as at least once allows.


def fetched_not_processed(standing: PartitionStanding) -> bool:
    """The fetcher is past records of the partition that no stream has, acked or holds."""
    return (
        standing.position is not None
        and standing.position > (standing.committed or 0)
        and standing.in_flight == 0
        and standing.acked == 0
        and not standing.paused
    )


class LostFetchWatch:
    """Decides which stream partitions lost fetched records, from successive readings."""

    def __init__(self, checks: int = 3):
        if checks < 1:
            raise ValueError("checks must be at least 1")
        self.checks = checks
        self._seen: dict[Any, tuple[PartitionStanding, int]] = {}
        self._repaired: dict[Any, PartitionStanding] = {}

    def observe(self, standings: Mapping[Any, PartitionStanding], idle: bool) -> dict[Any, int]:
        """One reading of the stream partitions; returns the partitions to read again and the
        offset to seek each to (the committed one; 0, the start, when Faust has none). A
        partition repaired once is not repaired again for the same standing (the records
        may be gone: compacted, or past the retention)."""
        if not idle:
            self._seen = {}
            return {}
        seen: dict[Any, tuple[PartitionStanding, int]] = {}
        lost: dict[Any, int] = {}
        for tp, standing in standings.items():
            if not fetched_not_processed(standing) or self._repaired.get(tp) == standing:
                continue
            before, times = self._seen.get(tp, (None, 0))
            times = times + 1 if before == standing else 1
            if times >= self.checks:
                lost[tp] = standing.committed or 0
                self._repaired[tp] = standing
            else:
                seen[tp] = (standing, times)
        self._seen = seen
        return lost


def consumer_idle(app: Any) -> bool:
    """A Faust app's consumer has nothing under way: flow on, no rebalance or table recovery,
    no record taken and not acked, every stream's buffer empty."""
    consumer = app.consumer
    if not consumer.flow_active or not app.flow_control.is_active() or app.rebalancing:
        return False
    if app.tables.recovery.in_recovery or in_flight_records(consumer):
        return False
    return all(channel.queue.empty() for channel in list(app.topics._topics))


async def repair_lost_fetches(
    app: Any, watch: LostFetchWatch, streams: Collection[str]
) -> dict[Any, int]:
    """Read ``app``'s consumer, and seek every stream partition that lost fetched records back
    to its committed offset; returns what was repaired."""
    consumer = app.consumer
    standings = {
        tp: standing
        for tp, standing in partition_standings(consumer).items()
        if tp.topic in streams
    }
    lost = watch.observe(standings, consumer_idle(app))
    for tp, offset in lost.items():
        log.warning(
            "%s[%d]: records fetched up to offset %s reached no stream: reading the partition "
            "again from offset %d",
            tp.topic,
            tp.partition,
            standings[tp].position,
            offset,
        )
        await seek_in_consumer_thread(consumer, tp, offset)
        metrics.LOST_FETCHES_REREAD.labels(topic=tp.topic).inc()
    return lost


# -- partitions without a committed offset ------------------------------------------------------
#
# While a rebalance's table recovery runs, the consumer already fetches the new stream
# partitions into its buffer, which Faust empties before the streams resume; it then seeks
# each partition to its committed offset (also when it fetched while its flow was stopped:
# ``getmany`` drops those records and seeks back). A partition with none (a new group, or a
# partition whose last owner died before its first commit) is not sought at all, so it resumes
# after what was buffered and dropped: those records are never processed. Seen with three
# workers when one was killed before its first commit (three PRs never validated). Such a
# partition is read from its start; the records this process handled already are skipped by
# the stage (``streams.pipeline.deliveries``), and acked, so the partition's commit moves.
# (Not from right after "the last record handed to a stream", Faust's read offset: after a seek
# it holds the next offset to read, not the last one read. Seen with three workers on Apache
# Kafka: a partition of 73 records committed at 74, past its end; the next owner's read offset
# then stood at 74 and it dropped every record of the partition as read.)


def unsought_partitions(
    assigned: Iterable[Any], committed: Mapping[Any, int | None], streams: Collection[str]
) -> dict[Any, int]:
    """The assigned partitions of ``streams`` (topic names) that a seek to the committed offset
    leaves where they are (no committed offset: not in ``committed``, Faust's record, which
    keeps a committed 0 as None), each with the offset to seek it to: its start. A partition
    committed at 0 (a replay's fresh group) is left to Faust: its records may already be
    flowing."""
    unsought = sorted(
        (tp for tp in assigned if tp.topic in streams and tp not in committed),
        key=lambda tp: (tp.topic, tp.partition),
    )
    return {tp: 0 for tp in unsought}


async def commit_before_revocation(consumer: Any) -> None:
    """Commit what the streams acked while this member still owns its partitions: Faust forgets
    the acks it has not committed when partitions are revoked, and commits nothing there.
    Seen with three workers, one killed: a record exported a second before the rebalance stayed
    uncommitted for good (the seek below skips what this process already handled). Twice: a
    commit already running makes Faust's return at once without committing."""
    for _ in range(2):
        try:
            await consumer.commit()
        except Exception as error:  # the group moved on already: those records come again
            log.info("could not commit before a revocation: %s", error)
            return


def seek_uncommitted_to_start(consumer: Any, streams: Collection[str]) -> None:
    """Make ``consumer.perform_seek`` (Faust's seek after a recovery) also seek the stream
    partitions it would leave alone to their start, as ``auto_offset_reset=earliest`` means
    for a partition nothing was committed on; and commit what the streams acked before a
    revocation makes Faust forget it."""
    seek_after_recovery = consumer.perform_seek
    revoke = consumer.on_partitions_revoked

    async def on_partitions_revoked(revoked: Any) -> None:
        await commit_before_revocation(consumer)
        await revoke(revoked)

    async def perform_seek() -> None:
        # Faust's seek records the group's committed offsets of the partitions that have one;
        # a record older than this assignment (a failed commit's, see below) must not stand in
        # for "none"
        for tp in consumer.assignment():
            if tp.topic in streams:
                consumer._committed_offset.pop(tp, None)
        await seek_after_recovery()
        # Faust's own record of the committed offsets it just read (0 is kept as None)
        targets = unsought_partitions(consumer.assignment(), consumer._committed_offset, streams)
        for tp, offset in targets.items():
            # below the log start: aiokafka resets to earliest
            await seek_in_consumer_thread(consumer, tp, offset)
        if targets:
            log.debug("partitions with nothing committed read from their start: %s", targets)

    consumer.perform_seek = perform_seek
    consumer.on_partitions_revoked = on_partitions_revoked


# -- a commit that did not go through -----------------------------------------------------------
#
# Faust records a commit's offsets as committed whether the commit went through or not
# (faust-streaming 0.15's ``Consumer._commit_offsets``), and a commit the group refused (the
# member was dropped while busy: IllegalGeneration, UnknownMemberId) fails without a word from
# Faust. The revocation that follows a refusal forgets the record, but the refusal's answer can
# come back after the revocation ran (the consumer's thread rejoins while the main loop still
# waits for the answer): the record outlives it. The partition, assigned to the same member
# again with nothing committed on the broker, is then taken for committed up to there: Faust's
# seek leaves a partition with nothing committed alone and so does ``perform_seek`` above (it
# is not "unsought"), its records come again and their acks are dropped as below the commit,
# and the stall watches see nothing behind. Seen in CI with three workers, one killed:
# pr.patches[2] stayed uncommitted (none of 3 records) for ten minutes, no stall reported.


def keep_commit_record_true(consumer: Any) -> None:
    """Make a Faust ``consumer`` record a commit's offsets as committed only when the commit
    went through: a failed one leaves the record as it was, or forgets it when a revocation
    ran meanwhile (see above)."""
    commit_offsets, revoke = consumer._commit_offsets, consumer.on_partitions_revoked
    revocations = [0]

    async def on_partitions_revoked(revoked: Any) -> None:
        revocations[0] += 1
        await revoke(revoked)

    async def commit_offsets_recorded_when_made(
        offsets: Mapping[Any, int], *args: Any, **kwargs: Any
    ) -> bool:
        revocations_before = revocations[0]
        record = consumer._committed_offset
        before = {tp: record[tp] for tp in offsets if tp in record}
        made = bool(await commit_offsets(offsets, *args, **kwargs))
        if not made:
            for tp in offsets:
                if tp in before and revocations[0] == revocations_before:
                    record[tp] = before[tp]
                else:
                    record.pop(tp, None)
        return made

    consumer._commit_offsets = commit_offsets_recorded_when_made
    consumer.on_partitions_revoked = on_partitions_revoked
