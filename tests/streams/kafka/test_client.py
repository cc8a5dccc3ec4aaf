"""Client behaviour per broker kind: the embedded broker vs Apache Kafka."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streams.core.settings import KafkaSettings
from streams.kafka.client import (
    IdempotenceUnsupported,
    KafkaProfile,
    broker_supports_idempotence,
    detect_profile,
)


@pytest.mark.unit
def test_auto_profile_per_broker_kind() -> None:
    embedded = KafkaProfile.resolve(KafkaSettings(), "127.0.0.1:1", embedded=True)
    assert not embedded.idempotence
    assert embedded.rebalance_timeout_seconds == 3.0
    assert "enable_idempotence" not in embedded.producer_config()
    assert embedded.consumer_config("g")["rebalance_timeout_ms"] == 3000

    cluster = KafkaProfile.resolve(KafkaSettings(), "kafka:9092", embedded=False)
    assert cluster.idempotence
    assert cluster.producer_config()["enable_idempotence"] is True
    assert cluster.producer_config()["acks"] == "all"
    assert "rebalance_timeout_ms" not in cluster.consumer_config("g")  # library defaults


@pytest.mark.unit
def test_explicit_settings_win_over_detection() -> None:
    forced = KafkaSettings(idempotence="off", rebalance_timeout_seconds=20)
    profile = KafkaProfile.resolve(forced, "kafka:9092", embedded=False)
    assert not profile.idempotence and profile.rebalance_timeout_seconds == 20
    assert KafkaProfile.resolve(KafkaSettings(idempotence="on"), "x:1", embedded=True).idempotence


@pytest.mark.integration
async def test_probe_detects_that_the_embedded_broker_has_no_idempotence(
    embedded_bootstrap: str,
) -> None:
    assert await broker_supports_idempotence(embedded_bootstrap) is False


@pytest.mark.integration
async def test_each_brokers_profile_produces_and_consumes(bootstrap: str, broker_kind: str) -> None:
    profile = await detect_profile(KafkaSettings(), bootstrap, embedded=broker_kind == "embedded")
    assert profile.idempotence is (broker_kind == "kafka")
    producer = AIOKafkaProducer(**profile.producer_config())
    await producer.start()
    try:
        for i in range(10):
            await producer.send_and_wait("profile.check", key=b"k", value=str(i).encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer("profile.check", **profile.consumer_config("profile-check"))
    await consumer.start()
    try:
        seen: list[bytes] = []
        async with asyncio.timeout(60):
            while len(seen) < 10:
                batch = await consumer.getmany(timeout_ms=1000)
                seen += [m.value for msgs in batch.values() for m in msgs]
        assert seen == [str(i).encode() for i in range(10)]
    finally:
        await consumer.stop()


@pytest.mark.integration
async def test_auto_detection_asks_the_broker_for_a_producer_id(
    bootstrap: str, broker_kind: str
) -> None:
    """Kafka, asked right after it started (its transaction coordinator still loading, which
    answers COORDINATOR_NOT_AVAILABLE), has idempotence: the production profile, Faust's own
    timeouts. The embedded broker has none: a development profile, or a refusal with ``on``."""
    profile = await detect_profile(KafkaSettings(), bootstrap, embedded=False)
    if broker_kind == "kafka":
        assert profile.idempotence
        assert profile.rebalance_timeout_seconds is profile.session_timeout_seconds is None
        forced = await detect_profile(KafkaSettings(idempotence="on"), bootstrap, embedded=False)
        assert forced.idempotence and forced.producer_config()["enable_idempotence"] is True
        assert forced.replication.factor == 1  # one broker: one copy
        return
    assert not profile.idempotence
    assert profile.rebalance_timeout_seconds == 3.0
    with pytest.raises(IdempotenceUnsupported, match="cannot give an idempotent producer"):
        await detect_profile(KafkaSettings(idempotence="on"), bootstrap, embedded=False)
    # "off" with the replication given never contacts the broker
    given = KafkaSettings(idempotence="off", replication_factor=1)
    forced_off = await detect_profile(given, "unreachable:1", False)
    assert not forced_off.idempotence and forced_off.replication.factor == 1
