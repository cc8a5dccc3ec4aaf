"""streams.kafka.publisher: records published in per-partition batches to the embedded broker,
read back; refused and undelivered batches counted, never dropped."""

from __future__ import annotations

import signal
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as aiokafka_murmur2
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.kafka.broker import EmbeddedBroker
from streams.kafka.client import read_topic_to_end
from streams.kafka.publisher import BatchPublisher, PublishOutcome, key_partition, murmur2

PARTITIONS = 3


async def new_topic(bootstrap: str, partitions: int = PARTITIONS) -> str:
    name = f"publisher.{uuid.uuid4().hex[:12]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()
    return name


def pr_records(count: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    """Keyed like ingest's records; several records share a key, values of varied sizes."""
    return [
        (f"owner-{i % 7}/repo-{i % 13}#{i % 41 + 1}".encode(), f"{i}:".encode() + b"x" * (i % 900))
        for i in range(start, start + count)
    ]


async def read_back(bootstrap: str, topic: str) -> dict[int, list[tuple[bytes, bytes]]]:
    by_partition: dict[int, list[tuple[bytes, bytes]]] = defaultdict(list)
    async for record in read_topic_to_end(bootstrap, topic):
        by_partition[record.partition].append((record.key, record.value))
    return dict(by_partition)


@pytest.mark.integration
async def test_every_record_once_in_order_in_the_partition_send_picks(bootstrap: str) -> None:
    topic, reference = await new_topic(bootstrap), await new_topic(bootstrap)
    # small batches: a few dozen, several per partition per add()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_batch_size=8 << 10)
    await producer.start()
    try:
        publisher = BatchPublisher(producer, topic)
        records = pr_records(600)
        for i in range(0, len(records), 70):
            await publisher.add(records[i : i + 70])
        assert await publisher.outcome() == PublishOutcome(600, 0, None)
        assert await publisher.outcome() == PublishOutcome(0, 0, None)  # nothing twice
        # where producer.send() puts each key (same partition count): the expectation
        partition_of = {}
        for key in {key for key, _ in records}:
            sent = await producer.send_and_wait(reference, b"", key)
            partition_of[key] = sent.partition
    finally:
        await producer.stop()
    expected: dict[int, list[tuple[bytes, bytes]]] = defaultdict(list)
    for key, value in records:
        expected[partition_of[key]].append((key, value))
    assert len(expected) == PARTITIONS
    assert await read_back(bootstrap, topic) == expected


@pytest.mark.integration
async def test_a_refused_batch_is_counted_as_failed(bootstrap: str) -> None:
    topic = await new_topic(bootstrap)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_batch_size=8 << 10)
    await producer.start()
    publisher = BatchPublisher(producer, topic)
    first, then = pr_records(100), pr_records(80, start=100)
    try:
        await publisher.add(first)
        await publisher.flush()
    finally:
        await producer.stop()  # delivers what it was given, then refuses
    await publisher.add(then)
    outcome = await publisher.outcome()
    assert (outcome.published, outcome.failed) == (100, 80)
    assert type(outcome.error).__name__ == "ProducerClosed"
    published = await read_back(bootstrap, topic)
    assert sorted(r for records in published.values() for r in records) == sorted(first)


def frozen(pid: int, timeout: float = 10.0) -> bool:
    """Whether the process is stopped by a signal (state T) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
            return True
        time.sleep(0.01)
    return False


@pytest.mark.integration
async def test_an_undelivered_batch_is_counted_as_failed() -> None:
    with EmbeddedBroker() as broker:  # its own broker: this test freezes it
        assert broker.process is not None
        topic = await new_topic(broker.bootstrap)
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, max_batch_size=8 << 10, request_timeout_ms=1000
        )
        await producer.start()
        try:
            publisher = BatchPublisher(producer, topic)
            await publisher.add(pr_records(50))
            assert await publisher.outcome() == PublishOutcome(50, 0, None)
            broker.process.send_signal(signal.SIGSTOP)
            try:
                assert frozen(broker.process.pid)  # kill() returns before the stop takes hold
                await publisher.add(pr_records(60, start=50))
                outcome = await publisher.outcome()
            finally:
                broker.process.send_signal(signal.SIGCONT)
        finally:
            await producer.stop()
        assert (outcome.published, outcome.failed) == (0, 60)
        assert outcome.error is not None


@pytest.mark.unit
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=80), st.integers(min_value=1, max_value=64))
def test_murmur2_and_the_partition_are_aiokafkas(key: bytes, partitions: int) -> None:
    assert murmur2(key) == aiokafka_murmur2(key)
    every = list(range(partitions))
    assert key_partition(key, every, every) == DefaultPartitioner()(key, every, every)


@pytest.mark.unit
def test_murmur2_of_known_keys() -> None:
    # Kafka's own test vectors (org.apache.kafka.common.utils.UtilsTest#testMurmur2)
    vectors = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
               b"a-little-bit-longer-string": -1486304829, b"lkjh234lh9fiuh90y23oiuhsafujhadof229"
               b"phr9h19h89h8": -58897971, b"abc": 479470107}  # fmt: skip
    for key, signed in vectors.items():
        assert murmur2(key) == signed & 0xFFFFFFFF
