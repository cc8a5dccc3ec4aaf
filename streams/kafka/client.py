"""Kafka client settings that work on both the embedded broker and Apache Kafka, and topic
administration from the catalog.

Embedded broker (Tansu): no idempotent producer (InitProducerId answers UnknownError), and a
consumer group joins faster with short rebalance timeouts. Apache Kafka: idempotent producer
on (``acks=all``), Faust's default timeouts.

``kafka.idempotence=auto`` detects: the embedded broker is known; any other cluster is asked
for a producer id (InitProducerId), and one that cannot give it is treated as a development
broker (idempotence off, short timeouts), with a warning. ``on`` refuses to start on such a
broker instead of failing on the first send; ``off`` never asks.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.protocol.transaction import InitProducerIdRequest

from streams.core.settings import KafkaSettings
from streams.kafka.topics import TopicSpec

log = logging.getLogger("swe_stream.kafka")

TOPIC_ALREADY_EXISTS = 36
EMBEDDED_REBALANCE_TIMEOUT = 3.0
EMBEDDED_SESSION_TIMEOUT = 10.0


@dataclass(frozen=True)
class KafkaProfile:
    """The resolved client behaviour for one cluster."""

    bootstrap: str
    embedded: bool
    idempotence: bool
    rebalance_timeout_seconds: float | None  # None = the client library's default
    session_timeout_seconds: float | None

    @classmethod
    def resolve(
        cls, settings: KafkaSettings, bootstrap: str, embedded: bool, dev_broker: bool = False
    ) -> KafkaProfile:
        """``dev_broker``: a cluster that proved unable to give idempotent producers an id."""
        if settings.idempotence == "auto":
            idempotence = not (embedded or dev_broker)
        else:
            idempotence = settings.idempotence == "on"
        rebalance = settings.rebalance_timeout_seconds
        session = settings.session_timeout_seconds
        if embedded or dev_broker:
            rebalance = rebalance or EMBEDDED_REBALANCE_TIMEOUT
            session = session or EMBEDDED_SESSION_TIMEOUT
        return cls(bootstrap, embedded, idempotence, rebalance, session)

    def producer_config(self) -> dict[str, Any]:
        """Keyword arguments for ``aiokafka.AIOKafkaProducer``."""
        config: dict[str, Any] = {"bootstrap_servers": self.bootstrap, "acks": "all"}
        if self.idempotence:
            config["enable_idempotence"] = True
        return config

    def consumer_config(self, group_id: str | None) -> dict[str, Any]:
        """Keyword arguments for ``aiokafka.AIOKafkaConsumer``."""
        config: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap,
            "group_id": group_id,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
        }
        if self.rebalance_timeout_seconds:
            config["rebalance_timeout_ms"] = int(self.rebalance_timeout_seconds * 1000)
        if self.session_timeout_seconds:
            config["session_timeout_ms"] = int(self.session_timeout_seconds * 1000)
            config["heartbeat_interval_ms"] = int(self.session_timeout_seconds * 1000 / 4)
        return config


async def broker_supports_idempotence(bootstrap: str) -> bool:
    """Ask the cluster for a producer id, as an idempotent producer's first step does."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        reply = await admin._send_request(
            InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
        )
    finally:
        await admin.close()
    return bool(reply.error_code == 0 and reply.producer_id >= 0)


class IdempotenceUnsupported(RuntimeError):
    """``kafka.idempotence=on`` but the broker cannot give a producer id."""


async def detect_profile(settings: KafkaSettings, bootstrap: str, embedded: bool) -> KafkaProfile:
    """Resolve the profile, asking a non-embedded cluster whether it supports idempotence."""
    if embedded or settings.idempotence == "off":
        return KafkaProfile.resolve(settings, bootstrap, embedded)
    if await broker_supports_idempotence(bootstrap):
        return KafkaProfile.resolve(settings, bootstrap, embedded)
    if settings.idempotence == "on":
        raise IdempotenceUnsupported(
            f"the broker at {bootstrap} cannot give an idempotent producer an id; "
            "set kafka.idempotence=off or auto (SWE_STREAM_KAFKA_IDEMPOTENCE)"
        )
    log.warning(
        "the broker at %s has no idempotent producers (a development broker such as Tansu?): "
        "idempotence off, short rebalance timeouts",
        bootstrap,
    )
    return KafkaProfile.resolve(settings, bootstrap, embedded, dev_broker=True)


async def read_topic_to_end(bootstrap: str, topic: str) -> AsyncIterator[Any]:
    """Every record of ``topic`` from its beginning to its end as of now, without a group.

    "The end" is each partition's high watermark as the Fetch responses report it: the
    embedded broker's ListOffsets answers lag behind (it reports a batch's base offset), so
    ``end_offsets`` alone would stop early there.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        if not partitions:
            return
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        listed = await consumer.end_offsets(partitions)
        while True:
            batch = await consumer.getmany(*partitions, timeout_ms=500)
            for records in batch.values():
                for record in records:
                    yield record
            if await _at_high_watermarks(consumer, partitions, listed):
                return
    finally:
        await consumer.stop()


async def _at_high_watermarks(
    consumer: AIOKafkaConsumer, partitions: list[TopicPartition], listed: dict[Any, int]
) -> bool:
    for tp in partitions:
        end = consumer.highwater(tp)  # None until a fetch for tp has answered
        if end is None or await consumer.position(tp) < max(end, listed[tp]):
            return False
    return True


@dataclass
class TopicState:
    """One catalog topic as the cluster has it."""

    spec: TopicSpec
    wanted_partitions: int
    exists: bool = False
    partitions: int | None = None
    configs: dict[str, str] = field(default_factory=dict)
    action: str = ""  # created / exists / mismatch

    @property
    def problems(self) -> list[str]:
        found = []
        if self.exists and self.partitions != self.wanted_partitions:
            found.append(f"has {self.partitions} partitions, catalog says {self.wanted_partitions}")
        for key, value in self.spec.configs.items():
            if self.exists and self.configs and self.configs.get(key) != value:
                found.append(f"{key}={self.configs.get(key)!r}, catalog says {value!r}")
        return found


class TopicAdmin:
    """Create and inspect the catalog's topics. ``create`` is idempotent."""

    def __init__(self, bootstrap: str, settings: KafkaSettings):
        self.bootstrap = bootstrap
        self.settings = settings
        self._admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)

    async def __aenter__(self) -> TopicAdmin:
        await self._admin.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._admin.close()

    async def partitions(self) -> dict[str, int]:
        """Partition count of every topic the cluster has."""
        described = await self._admin.describe_topics()
        return {t["topic"]: len(t["partitions"]) for t in described if t["error_code"] == 0}

    async def configs(self, names: Iterable[str]) -> dict[str, dict[str, str]]:
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        if not resources:
            return {}
        found: dict[str, dict[str, str]] = {}
        for response in await self._admin.describe_configs(resources):
            for error_code, _message, _type, name, entries in response.resources:
                if error_code == 0:
                    found[name] = {entry[0]: entry[1] for entry in entries}
        return found

    async def describe(self, specs: Iterable[TopicSpec]) -> list[TopicState]:
        specs = list(specs)
        existing = await self.partitions()
        present = [s.name for s in specs if s.name in existing]
        configs = await self.configs(present)
        states = []
        for spec in specs:
            state = TopicState(spec, spec.partition_count(self.settings.partitions))
            if spec.name in existing:
                state.exists = True
                state.partitions = existing[spec.name]
                state.configs = configs.get(spec.name, {})
            states.append(state)
        return states

    async def create(self, specs: Iterable[TopicSpec]) -> list[TopicState]:
        """Create the missing topics; report those that exist, and any that disagree."""
        states = await self.describe(specs)
        missing = [s for s in states if not s.exists]
        if missing:
            response = await self._admin.create_topics(
                [
                    NewTopic(
                        s.spec.name,
                        s.wanted_partitions,
                        self.settings.replication_factor,
                        topic_configs=dict(s.spec.configs),
                    )
                    for s in missing
                ]
            )
            errors = {name: (code, msg) for name, code, msg in _topic_errors(response)}
            for state in missing:
                code, message = errors.get(state.spec.name, (0, None))
                if code not in (0, TOPIC_ALREADY_EXISTS):
                    raise RuntimeError(f"creating {state.spec.name} failed: [{code}] {message}")
                state.action = "created" if code == 0 else "exists"
        for state in states:
            if not state.action:
                state.action = "mismatch" if state.problems else "exists"
        # Re-read what the cluster now holds, so the report shows facts, not intentions.
        actual = {s.spec.name: s for s in await self.describe(s.spec for s in states)}
        for state in states:
            state.exists = actual[state.spec.name].exists
            state.partitions = actual[state.spec.name].partitions
            state.configs = actual[state.spec.name].configs
        return states


def _topic_errors(response: Any) -> list[tuple[str, int, str | None]]:
    """(topic, error_code, message) from any CreateTopicsResponse version."""
    rows = []
    for entry in response.topic_errors:
        name, code = entry[0], entry[1]
        message = entry[2] if len(entry) > 2 else None
        rows.append((name, code, message))
    return rows


def format_configs(configs: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(configs.items())) or "-"


class LagProbe:
    """Consumer lag of one group: each partition's end offset minus the group's committed
    offset (``swe_stream_consumer_lag``). Keeps its two clients between calls."""

    def __init__(self, bootstrap: str, group: str):
        self.bootstrap = bootstrap
        self.group = group
        self._admin: AIOKafkaAdminClient | None = None
        self._consumer: AIOKafkaConsumer | None = None

    async def lag(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The lag of ``partitions`` (named: the embedded broker cannot list them all)."""
        if not partitions:
            return {}
        if self._admin is None or self._consumer is None:
            self._admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await self._admin.start()
            self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None)
            await self._consumer.start()
        committed = await self._admin.list_consumer_group_offsets(self.group, partitions=partitions)
        offsets = {tp: meta.offset for tp, meta in committed.items() if meta.offset >= 0}
        if not offsets:
            return {}
        ends = await self._consumer.end_offsets(list(offsets))
        return {tp: max(0, ends[tp] - offset) for tp, offset in offsets.items()}

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
        if self._admin is not None:
            await self._admin.close()
        self._admin = self._consumer = None
