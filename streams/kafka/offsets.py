"""Consumer-group offsets: where a group stands on a topic, and moving it (``swe-stream
offsets``, ``swe-stream replay``).

Two behaviours of the embedded broker (Tansu) shape this module, both checked here rather
than assumed:

- ListOffsets by *time* is not implemented faithfully there: it answers the first batch for
  any timestamp, even one in the future. ``offsets_at_time`` asks the broker for a timestamp
  far in the future first: a broker that answers anything but "no such record" cannot be
  trusted, and the offsets are found by scanning the records' timestamps instead.
- ListOffsets for the *end* lags behind (the base offset of the last batch), so the end of a
  partition is taken from a fetch's high watermark (``high_watermarks``).

Kafka itself refuses an offset commit for a group that has members, and so does this module,
before asking: ``reset_offsets`` raises ``GroupActive`` while ``DescribeGroups`` lists any.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import OffsetAndMetadata

from streams.kafka.client import partitions_of, patiently, started_consumer

log = logging.getLogger("swe_stream.offsets")

FAR_FUTURE_MS = 4_102_444_800_000  # 2100-01-01: no record is stamped at or after it


class OffsetsError(RuntimeError):
    """An offsets request that cannot be done as asked (unknown topic, bad partition)."""


class GroupActive(OffsetsError):
    """The group has live members: its offsets belong to them until they leave."""


@dataclass(frozen=True)
class PartitionPosition:
    """One partition of a topic as one group sees it."""

    partition: int
    start: int  # the log start offset (first record kept)
    end: int  # the high watermark (one past the last record)
    committed: int | None  # the group's committed offset; None = never committed

    @property
    def lag(self) -> int | None:
        return None if self.committed is None else max(0, self.end - self.committed)


@contextlib.asynccontextmanager
async def _consumer(bootstrap: str, group: str | None = None) -> AsyncIterator[AIOKafkaConsumer]:
    consumer = await started_consumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        yield consumer
    finally:
        await consumer.stop()


async def topic_partitions(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    partitions = await partitions_of(consumer, topic)
    if not partitions:
        raise OffsetsError(f"topic {topic} does not exist (or has no partitions)")
    return partitions


async def high_watermarks(
    consumer: AIOKafkaConsumer, partitions: list[TopicPartition], timeout: float = 10.0
) -> dict[TopicPartition, int]:
    """Each partition's high watermark, as a fetch reports it (the consumer is assigned
    ``partitions`` and left positioned near their ends)."""
    consumer.assign(partitions)
    starts = await consumer.beginning_offsets(partitions)
    listed = await consumer.end_offsets(partitions)
    for tp in partitions:
        consumer.seek(tp, max(starts[tp], listed[tp] - 1))
    deadline = time.monotonic() + timeout
    ends: dict[TopicPartition, int] = {}
    while len(ends) < len(partitions):
        await consumer.getmany(*partitions, timeout_ms=200, max_records=1)
        for tp in partitions:
            known = consumer.highwater(tp)
            if known is not None:
                ends[tp] = max(known, listed[tp])
            elif listed[tp] == starts[tp]:
                ends[tp] = listed[tp]  # empty: a fetch may never answer with a watermark
        if time.monotonic() > deadline:
            missing = sorted(tp.partition for tp in partitions if tp not in ends)
            raise OffsetsError(f"no high watermark for partitions {missing} in {timeout} s")
    return ends


async def topic_bounds(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """``partition -> (log start, high watermark)``."""
    async with _consumer(bootstrap) as consumer:
        partitions = await topic_partitions(consumer, topic)
        starts = await consumer.beginning_offsets(partitions)
        ends = await high_watermarks(consumer, partitions)
    return {tp.partition: (starts[tp], ends[tp]) for tp in partitions}


async def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int | None]:
    """The group's committed offset per partition of ``topic`` (None where it has none)."""
    return {p.partition: p.committed for p in await positions(bootstrap, group, topic)}


async def positions(bootstrap: str, group: str, topic: str) -> list[PartitionPosition]:
    """Start, end and the group's committed offset of every partition of ``topic``."""
    return (await group_positions(bootstrap, group, [topic]))[topic]


async def group_positions(
    bootstrap: str, group: str, topics: Iterable[str]
) -> dict[str, list[PartitionPosition]]:
    """``positions`` of several topics, read with one consumer and one admin client for all
    of them: a caller that follows a group's progress every second (a run waiting for its
    workers to drain) would otherwise connect three clients per topic each time.

    The committed offsets are read before the ends: a committed offset equal to its end then
    means nothing was left to do at that moment. (Ends first, a record a stage took and
    finished in between, its output sent past the end already read and its input committed,
    would make a pipeline with work left look drained.)"""
    names = list(dict.fromkeys(topics))
    async with _consumer(bootstrap) as consumer:
        partitions = [tp for name in names for tp in await topic_partitions(consumer, name)]
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            # partitions named: the embedded broker drops the connection on "all of them"
            listed = await patiently(
                lambda: admin.list_consumer_group_offsets(group, partitions=partitions),
                f"offsets of group {group}",
            )
        finally:
            await admin.close()
        starts = await consumer.beginning_offsets(partitions)
        ends = await high_watermarks(consumer, partitions)
    found: dict[str, list[PartitionPosition]] = {name: [] for name in names}
    for tp in sorted(partitions):
        done = listed.get(tp)
        committed = done.offset if done is not None and done.offset >= 0 else None
        found[tp.topic].append(PartitionPosition(tp.partition, starts[tp], ends[tp], committed))
    return found


REBALANCING = ("PreparingRebalance", "CompletingRebalance")


async def group_members(bootstrap: str, group: str, settled: bool = False) -> list[str]:
    """The member ids ``DescribeGroups`` lists for ``group`` (none for an unknown group);
    ``settled``: none while the group rebalances (a member that joined is listed before it has
    partitions: Apache Kafka waits for the others to join again, which took 29 s in a CI run)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        replies = await patiently(
            lambda: admin.describe_consumer_groups([group]), f"members of group {group}"
        )
    finally:
        await admin.close()
    members: list[str] = []
    for reply in replies:
        for described in reply.groups:
            _error, name, state, *_rest, listed = described
            if name == group and state not in ("Empty", "Dead", ""):
                if settled and state in REBALANCING:
                    continue
                members += [member[0] for member in listed]
    return members


async def offsets_at_time(bootstrap: str, topic: str, when_ms: int) -> tuple[dict[int, int], str]:
    """The offset of the first record stamped at or after ``when_ms`` in each partition (the
    high watermark where there is none), and how it was found: ``"lookup"`` (the broker's
    ListOffsets by time) or ``"scan"`` (the records' timestamps, read from the start)."""
    async with _consumer(bootstrap) as consumer:
        partitions = await topic_partitions(consumer, topic)
        ends = await high_watermarks(consumer, partitions)
        if await _time_lookup_trustworthy(consumer, partitions, ends):
            found = await consumer.offsets_for_times(dict.fromkeys(partitions, when_ms))
            result = {
                tp.partition: (found[tp].offset if found.get(tp) is not None else ends[tp])
                for tp in partitions
            }
            return result, "lookup"
        return await _scan_for_time(consumer, partitions, ends, when_ms), "scan"


async def _time_lookup_trustworthy(
    consumer: AIOKafkaConsumer, partitions: list[TopicPartition], ends: dict[TopicPartition, int]
) -> bool:
    """A faithful broker has no record at or after 2100 in any partition."""
    starts = await consumer.beginning_offsets(partitions)
    filled = [tp for tp in partitions if ends[tp] > starts[tp]]
    if not filled:
        return True  # nothing to find either way
    try:
        answer = await consumer.offsets_for_times(dict.fromkeys(filled, FAR_FUTURE_MS))
    except Exception as exc:  # an old or partial broker: UnsupportedVersion & co
        log.info("ListOffsets by time failed (%s): scanning timestamps instead", exc)
        return False
    wrong = [tp.partition for tp in filled if answer.get(tp) is not None]
    if wrong:
        log.info(
            "the broker answers ListOffsets by time with records stamped before the asked "
            "time (partitions %s): scanning timestamps instead",
            wrong,
        )
    return not wrong


async def _scan_for_time(
    consumer: AIOKafkaConsumer,
    partitions: list[TopicPartition],
    ends: dict[TopicPartition, int],
    when_ms: int,
) -> dict[int, int]:
    """First offset stamped at or after ``when_ms`` per partition, reading from the start.
    Timestamps need not grow with offsets (producers may set them), so every record is read
    until one qualifies."""
    consumer.assign(partitions)
    await consumer.seek_to_beginning(*partitions)
    found: dict[TopicPartition, int] = {}
    open_partitions = {tp for tp in partitions if await consumer.position(tp) < ends[tp]}
    for tp in set(partitions) - open_partitions:
        found[tp] = ends[tp]
    while open_partitions:
        batch = await consumer.getmany(*open_partitions, timeout_ms=500)
        for tp, records in batch.items():
            for record in records:
                if tp in open_partitions and record.timestamp >= when_ms:
                    found[tp] = record.offset
                    open_partitions.discard(tp)
        for tp in list(open_partitions):
            if await consumer.position(tp) >= ends[tp]:
                found[tp] = ends[tp]
                open_partitions.discard(tp)
    return {tp.partition: found[tp] for tp in partitions}


async def commit_offsets(
    bootstrap: str, group: str, topic: str, offsets: Mapping[int, int]
) -> None:
    """Commit ``offsets`` (partition -> next offset to read) for ``group``, as a consumer
    outside the group's generation: Kafka accepts that only while the group has no members."""
    if not offsets:
        return
    async with _consumer(bootstrap, group) as consumer:
        known = {tp.partition for tp in await topic_partitions(consumer, topic)}
        unknown = sorted(set(offsets) - known)
        if unknown:
            raise OffsetsError(f"topic {topic} has no partition(s) {unknown}")
        chosen = {TopicPartition(topic, p): OffsetAndMetadata(o, "") for p, o in offsets.items()}
        consumer.assign(list(chosen))
        await consumer.commit(chosen)


async def reset_offsets(
    bootstrap: str, group: str, topic: str, offsets: Mapping[int, int]
) -> list[PartitionPosition]:
    """Move ``group`` on ``topic`` to ``offsets`` (clamped to each partition's start and end);
    refuses with ``GroupActive`` while the group has members. Returns the new positions."""
    members = await group_members(bootstrap, group)
    if members:
        raise GroupActive(
            f"group {group} has {len(members)} live member(s) ({', '.join(members[:3])}"
            + (", ..." if len(members) > 3 else "")
            + "): stop its workers first; their commits would overwrite the reset"
        )
    bounds = await topic_bounds(bootstrap, topic)
    unknown = sorted(set(offsets) - set(bounds))
    if unknown:
        raise OffsetsError(f"topic {topic} has no partition(s) {unknown}")
    clamped = {p: min(max(o, bounds[p][0]), bounds[p][1]) for p, o in offsets.items()}
    await commit_offsets(bootstrap, group, topic, clamped)
    return await positions(bootstrap, group, topic)


def parse_time_ms(value: str) -> int:
    """An ISO-8601 time (``2026-11-23T08:00:00Z``, an offset, or naive = UTC) or ``now`` as
    milliseconds since the epoch; ValueError with the expected form."""
    if value.strip().lower() == "now":
        return int(time.time() * 1000)
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"bad time {value!r}: expected ISO-8601 such as 2026-11-23T08:00:00Z, or now"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def parse_partition_offsets(values: list[str]) -> dict[int, int]:
    """``["0:15", "2:7"]`` -> ``{0: 15, 2: 7}``; ValueError naming a bad item."""
    result: dict[int, int] = {}
    for value in values:
        for item in value.split(","):
            partition, sep, offset = item.strip().partition(":")
            try:
                if not sep:
                    raise ValueError
                p, o = int(partition), int(offset)
                if p < 0 or o < 0:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"bad partition offset {item!r}: expected PARTITION:OFFSET, e.g. 0:15"
                ) from None
            if p in result:
                raise ValueError(f"partition {p} is given twice")
            result[p] = o
    return result
