"""Dead letters: a record a stage cannot handle goes to ``<input topic>.dlq`` with the error
and its original bytes, so nothing is lost; ``swe-stream dlq replay`` sends them back to their
source topic once the cause is fixed, marked with the attempt they failed at, so that a record
failing again returns to the DLQ with ``attempts`` one higher.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from schemas import DeadLetter
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


def identity(letter: DeadLetter) -> str:
    """The record a dead letter holds (its key and bytes), whatever attempt failed."""
    digest = hashlib.sha256(letter.original_value()).hexdigest()
    return f"{letter.source_topic}\0{letter.key}\0{digest}"


def current_letters(letters: Iterable[DeadLetter]) -> list[DeadLetter]:
    """One dead letter per record: its latest attempt (the one to replay)."""
    latest: dict[str, DeadLetter] = {}
    for letter in letters:
        known = latest.get(identity(letter))
        if known is None or letter.attempts >= known.attempts:
            latest[identity(letter)] = letter
    return list(latest.values())


def select_letters(
    letters: Iterable[DeadLetter],
    *,
    stages: Iterable[str] = (),
    keys: Iterable[str] = (),
    since: datetime | None = None,
) -> list[DeadLetter]:
    """The letters of one of ``stages`` (any when empty), of one of ``keys`` (``owner/repo#N``;
    any when empty), that failed at or after ``since``: what ``dlq replay`` sends back."""
    wanted_stages, wanted_keys = set(stages), set(keys)
    return [
        letter
        for letter in letters
        if (not wanted_stages or letter.stage in wanted_stages)
        and (not wanted_keys or letter.key in wanted_keys)
        and (since is None or letter.failed_at >= since)
    ]


async def read_dead_letters(bootstrap: str, dlq_topic: str) -> list[tuple[int, int, Any]]:
    """``(partition, offset, DeadLetter or the error)`` for every record of ``dlq_topic``."""
    from streams.kafka.client import read_topic_to_end

    letters: list[tuple[int, int, Any]] = []
    async for record in read_topic_to_end(bootstrap, dlq_topic):
        try:
            letters.append((record.partition, record.offset, DeadLetter.from_json(record.value)))
        except ValidationError as exc:
            letters.append((record.partition, record.offset, exc))
    return letters


async def replay_dead_letters(
    producer_config: dict[str, Any], letters: Iterable[DeadLetter]
) -> int:
    """Send each letter's original record back to its source topic, key and bytes as they
    were, with the attempt it failed at (the next failure writes ``attempts + 1``). A letter
    that kept only the first bytes of a large record sends the record itself, read back from
    its source topic and checked against the digest in the letter's error; a tombstone's
    letter sends a tombstone."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    producer = AIOKafkaProducer(**producer_config)
    consumer: AIOKafkaConsumer | None = None
    await producer.start()
    sent = 0
    try:
        for letter in letters:
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
            await producer.send_and_wait(
                letter.source_topic,
                value,
                letter.key.encode() if letter.key is not None else None,
                headers=[(ATTEMPT_HEADER, str(letter.attempts + 1).encode())],
            )
            sent += 1
    finally:
        await producer.stop()
        if consumer is not None:
            await consumer.stop()
    return sent


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
