"""Dead letters: a record a stage cannot handle goes to ``<input topic>.dlq`` with the error
and its original bytes, so nothing is lost; ``swe-stream dlq replay`` sends them back to their
source topic once the cause is fixed, marked with the attempt they failed at, so that a record
failing again returns to the DLQ with ``attempts`` one higher. Each letter it sends back gets a
replay mark in the DLQ topic (a ``DeadLetterReplay`` with the ``swe-stream-replay-of`` header),
so that ``dlq show`` tells which letters were replayed and when, and a second ``dlq replay``
sends none of them again unless told to.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from schemas import DeadLetter, DeadLetterReplay
from streams.core import metrics
from streams.kafka.topics import topic
from streams.pipeline.sinks import RecordSink

log = logging.getLogger("swe_stream.dlq")

# A pathological error message (a whole record echoed back) must not make a huge dead letter.
MAX_ERROR_CHARS = 4000
# A dead letter must fit in one Kafka message (about 1 MB: Kafka's message.max.bytes, the
# producer's max_request_size), and base64 adds a third: a record larger than this keeps only
# its first bytes in the letter, whose error gives the whole record's size and sha256 (the
# record itself stays in its source topic, at the letter's partition and offset). Without the
# cut, sending the letter fails, the stage crashes and the record is lost without a trace.
MAX_VALUE_BYTES = 600_000
# how such letters' errors start (``dlq replay`` recognises them)
CUT_PREFIX = "value cut to its first "
TOMBSTONE_PREFIX = "null value (a tombstone)"


async def send_to_dlq(
    sink: RecordSink,
    *,
    source_topic: str,
    partition: int,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    error: BaseException,
    stage: str,
    pipeline_version: int,
    attempts: int = 1,
    dlq_topic: str | None = None,
) -> DeadLetter:
    """Write the dead letter for ``value`` to ``dlq_topic`` (default: the catalog's DLQ of
    ``source_topic``), keyed like the source record; returns it. A null value (a tombstone)
    has no bytes to keep, and a value over ``MAX_VALUE_BYTES`` keeps only its first bytes:
    the letter's error says so."""
    original = value if value is not None else b""
    letter = DeadLetter.capture(
        source_topic=source_topic,
        source_partition=partition,
        source_offset=offset,
        key=key.decode("utf-8", errors="replace") if key is not None else None,
        value=original[:MAX_VALUE_BYTES],
        exc=error,
        stage=stage,
        pipeline_version=pipeline_version,
        attempts=attempts,
    )
    letter.error = letter.error[:MAX_ERROR_CHARS] or repr(error)[:MAX_ERROR_CHARS]
    if value is None:
        letter.error = f"{TOMBSTONE_PREFIX}: {letter.error}"[:MAX_ERROR_CHARS]
    elif len(original) > MAX_VALUE_BYTES:
        digest = hashlib.sha256(original).hexdigest()
        letter.error = (
            f"{CUT_PREFIX}{MAX_VALUE_BYTES} of {len(original)} bytes "
            f"(sha256 of the whole: {digest}): {letter.error}"
        )[:MAX_ERROR_CHARS]
    await sink.send(dlq_topic or topic(source_topic).dlq_name, key, letter.to_json())
    metrics.DLQ_RECORDS.labels(topic=source_topic).inc()
    return letter


ATTEMPT_HEADER = "swe-stream-attempt"  # on a record sent back by `dlq replay`: its attempt


def replay_attempt(headers: Mapping[str, bytes] | Iterable[tuple[str, bytes]] | None) -> int:
    """The attempt a record is on: 1, or what ``dlq replay`` wrote in its header."""
    pairs = headers.items() if isinstance(headers, Mapping) else (headers or [])
    for name, value in pairs:
        if name == ATTEMPT_HEADER:
            try:
                return max(1, int(value))
            except ValueError:
                return 1
    return 1


REPLAY_OF_HEADER = "swe-stream-replay-of"  # on a replay mark: the letter's partition:offset


@dataclass(frozen=True)
class StoredLetter:
    """A dead letter where it lies in its DLQ topic, with the marks of its replays."""

    topic: str
    partition: int
    offset: int
    letter: DeadLetter
    replays: tuple[DeadLetterReplay, ...] = ()

    @property
    def last_replay(self) -> DeadLetterReplay | None:
        return max(self.replays, key=lambda mark: mark.replayed_at, default=None)


@dataclass
class DeadLetterQueue:
    """What a DLQ topic holds: its letters (each with its replay marks), the records that are
    neither a letter nor a mark, and how many marks it holds."""

    topic: str
    letters: list[StoredLetter]
    unreadable: list[tuple[int, int, ValidationError]]
    marks: int


Letter = TypeVar("Letter", DeadLetter, StoredLetter)


def _letter(item: DeadLetter | StoredLetter) -> DeadLetter:
    return item.letter if isinstance(item, StoredLetter) else item


def identity(letter: DeadLetter) -> str:
    """The record a dead letter holds (its key and bytes), whatever attempt failed."""
    digest = hashlib.sha256(letter.original_value()).hexdigest()
    return f"{letter.source_topic}\0{letter.key}\0{digest}"


def current_letters(letters: Iterable[Letter]) -> list[Letter]:
    """One dead letter per record: its latest attempt (the one to replay)."""
    latest: dict[str, Letter] = {}
    for item in letters:
        name = identity(_letter(item))
        known = latest.get(name)
        if known is None or _letter(item).attempts >= _letter(known).attempts:
            latest[name] = item
    return list(latest.values())


def select_letters(
    letters: Iterable[Letter],
    *,
    stages: Iterable[str] = (),
    keys: Iterable[str] = (),
    since: datetime | None = None,
) -> list[Letter]:
    """The letters of one of ``stages`` (any when empty), of one of ``keys`` (``owner/repo#N``;
    any when empty), that failed at or after ``since``: what ``dlq replay`` sends back."""
    wanted_stages, wanted_keys = set(stages), set(keys)
    return [
        item
        for item in letters
        if (not wanted_stages or _letter(item).stage in wanted_stages)
        and (not wanted_keys or _letter(item).key in wanted_keys)
        and (since is None or _letter(item).failed_at >= since)
    ]


async def read_dead_letter_queue(bootstrap: str, dlq_topic: str) -> DeadLetterQueue:
    """Every record of ``dlq_topic``: its dead letters, each with the replay marks that name
    it (a record with the ``swe-stream-replay-of`` header, or shaped as a mark), and what is
    neither."""
    from streams.kafka.client import read_topic_to_end

    found: list[tuple[int, int, DeadLetter]] = []
    marks: dict[tuple[int, int], list[DeadLetterReplay]] = {}
    unreadable: list[tuple[int, int, ValidationError]] = []
    async for record in read_topic_to_end(bootstrap, dlq_topic):
        where = (record.partition, record.offset)
        parsed = _parse(record.value, _is_mark(record.headers))
        if isinstance(parsed, DeadLetterReplay):
            marks.setdefault(parsed.position, []).append(parsed)
        elif isinstance(parsed, DeadLetter):
            found.append((*where, parsed))
        else:
            unreadable.append((*where, parsed))
    letters = [
        StoredLetter(
            dlq_topic, partition, offset, letter, tuple(marks.get((partition, offset), ()))
        )
        for partition, offset, letter in found
    ]
    count = sum(len(found_marks) for found_marks in marks.values())
    return DeadLetterQueue(dlq_topic, letters, unreadable, count)


def _is_mark(headers: Iterable[tuple[str, bytes]] | None) -> bool:
    return any(name == REPLAY_OF_HEADER for name, _ in headers or ())


def _parse(value: bytes | None, mark: bool) -> DeadLetter | DeadLetterReplay | ValidationError:
    """A DLQ record as a mark (when its header says so) or a letter, else the letter's error."""
    models: tuple[type[DeadLetter] | type[DeadLetterReplay], ...] = (
        (DeadLetterReplay,) if mark else (DeadLetter, DeadLetterReplay)
    )
    first: ValidationError | None = None
    for model in models:
        try:
            return model.from_json(value or b"")
        except ValidationError as exc:
            first = first or exc
    assert first is not None
    return first


async def replay_dead_letters(
    producer_config: dict[str, Any], letters: Iterable[DeadLetter | StoredLetter]
) -> int:
    """Send each letter's original record back to its source topic, key and bytes as they
    were, with the attempt it failed at (the next failure writes ``attempts + 1``). A letter
    that kept only the first bytes of a large record sends the record itself, read back from
    its source topic and checked against the digest in the letter's error; a tombstone's
    letter sends a tombstone. A letter read from its DLQ topic (a ``StoredLetter``) gets a
    replay mark there once its record is sent: ``dlq show`` says it was replayed and the next
    ``dlq replay`` leaves it alone."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    producer = AIOKafkaProducer(**producer_config)
    consumer: AIOKafkaConsumer | None = None
    await producer.start()
    sent = 0
    try:
        for item in letters:
            letter = _letter(item)
            value: bytes | None = letter.original_value()
            if letter.error.startswith(TOMBSTONE_PREFIX):
                value = None
            elif letter.error.startswith(CUT_PREFIX):
                if consumer is None:
                    consumer = AIOKafkaConsumer(
                        bootstrap_servers=producer_config["bootstrap_servers"], group_id=None
                    )
                    await consumer.start()
                try:
                    value = await _whole_record(consumer, letter)
                except RecordGone as exc:
                    log.warning("%s", exc)
                    continue
            key = letter.key.encode() if letter.key is not None else None
            placed = await producer.send_and_wait(
                letter.source_topic,
                value,
                key,
                headers=[(ATTEMPT_HEADER, str(letter.attempts + 1).encode())],
            )
            sent += 1
            if isinstance(item, StoredLetter):
                await _mark_replayed(producer, item, placed.partition, placed.offset)
    finally:
        await producer.stop()
        if consumer is not None:
            await consumer.stop()
    return sent


async def _mark_replayed(producer: Any, item: StoredLetter, partition: int, offset: int) -> None:
    """The replay mark of ``item``, in its DLQ topic under its key."""
    letter = item.letter
    mark = DeadLetterReplay(
        pipeline_version=letter.pipeline_version,
        replay_of=f"{item.partition}:{item.offset}",
        source_topic=letter.source_topic,
        key=letter.key,
        attempt=letter.attempts + 1,
        sent_partition=partition,
        sent_offset=offset,
        replayed_at=datetime.now(UTC),
    )
    await producer.send_and_wait(
        item.topic,
        mark.to_json(),
        letter.key.encode() if letter.key is not None else None,
        headers=[(REPLAY_OF_HEADER, mark.replay_of.encode())],
    )


class RecordGone(RuntimeError):
    """A cut dead letter whose whole record is no longer in its source topic."""


async def _whole_record(consumer: Any, letter: DeadLetter) -> bytes:
    from aiokafka import TopicPartition

    tp = TopicPartition(letter.source_topic, letter.source_partition)
    consumer.assign([tp])
    consumer.seek(tp, letter.source_offset)
    batch = await consumer.getmany(tp, timeout_ms=10_000, max_records=1)
    records = batch.get(tp, [])
    expected = letter.error.split("sha256 of the whole: ", 1)[-1].split(")", 1)[0]
    if (
        not records
        or records[0].offset != letter.source_offset
        or records[0].value is None
        or hashlib.sha256(records[0].value).hexdigest() != expected
    ):
        raise RecordGone(
            f"{letter.source_topic}@{letter.source_partition}:{letter.source_offset} no longer "
            "holds the record this dead letter cut (retention?): not replayed"
        )
    return bytes(records[0].value)
