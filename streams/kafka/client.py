"""Kafka client settings that work on both the embedded broker and Apache Kafka, and topic
administration from the catalog.

Embedded broker (Tansu): no idempotent producer (InitProducerId answers UnknownError), and a
consumer group joins faster with short rebalance timeouts. Apache Kafka: idempotent producer
on (``acks=all``), Faust's default timeouts.

``kafka.idempotence=auto`` detects: the embedded broker is known; any other cluster is asked
for a producer id (InitProducerId), and one that cannot give it is treated as a development
broker (idempotence off, short timeouts), with a warning. ``on`` refuses to start on such a
broker instead of failing on the first send; ``off`` never asks. The cluster's size decides the
catalog's replication (``topics.replication_for``).

What Apache Kafka answers that the embedded broker never does is handled here once: retriable
errors of a cluster that has just started or whose coordinator moves (``patiently``), metadata
that names no topic until asked for all of them (``partitions_of``), and every config of a topic
with its defaults (``TopicAdmin.configs`` keeps those the catalog sets).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka import errors as kafka_errors
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.protocol.transaction import InitProducerIdRequest

from streams.core.settings import KafkaSettings
from streams.kafka.topics import SINGLE_COPY, Replication, TopicSpec, replication_for

log = logging.getLogger("swe_stream.kafka")

T = TypeVar("T")

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
    replication: Replication = SINGLE_COPY  # of the catalog's topics and Faust's

    @classmethod
    def resolve(
        cls,
        settings: KafkaSettings,
        bootstrap: str,
        embedded: bool,
        dev_broker: bool = False,
        brokers: int = 1,
    ) -> KafkaProfile:
        """``dev_broker``: a cluster that proved unable to give idempotent producers an id;
        ``brokers``: how many the cluster has (the catalog's replication follows)."""
        if settings.idempotence == "auto":
            idempotence = not (embedded or dev_broker)
        else:
            idempotence = settings.idempotence == "on"
        rebalance = settings.rebalance_timeout_seconds
        session = settings.session_timeout_seconds
        if embedded or dev_broker:
            rebalance = rebalance or EMBEDDED_REBALANCE_TIMEOUT
            session = session or EMBEDDED_SESSION_TIMEOUT
        replication = replication_for(
            brokers, settings.replication_factor, settings.min_insync_replicas
        )
        return cls(bootstrap, embedded, idempotence, rebalance, session, replication)

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


async def broker_supports_idempotence(bootstrap: str, patience_seconds: float = 60.0) -> bool:
    """Ask the cluster for a producer id, as an idempotent producer's first step does.

    A retriable answer is asked again (for up to ``patience_seconds``): a Kafka cluster that
    has just started answers COORDINATOR_NOT_AVAILABLE while its transaction state topic is
    made, which is no verdict on idempotence (taken for one, every fresh cluster ran without
    it). The embedded broker's UnknownServerError is not retriable: no idempotence there."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    deadline = time.monotonic() + patience_seconds
    try:
        while True:
            reply = await admin._send_request(
                InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
            )
            if reply.error_code == 0:
                return bool(reply.producer_id >= 0)
            error = kafka_errors.for_code(reply.error_code)
            if not error.retriable or time.monotonic() > deadline:
                log.debug("InitProducerId at %s answered %s", bootstrap, error.__name__)
                return False
            await asyncio.sleep(0.2)
    finally:
        await admin.close()


class IdempotenceUnsupported(RuntimeError):
    """``kafka.idempotence=on`` but the broker cannot give a producer id."""


async def detect_profile(settings: KafkaSettings, bootstrap: str, embedded: bool) -> KafkaProfile:
    """Resolve the profile, asking a non-embedded cluster whether it supports idempotence and
    how many brokers it has."""
    if embedded:
        return KafkaProfile.resolve(settings, bootstrap, embedded)
    # the cluster's size decides the catalog's replication, unless the settings give it
    brokers = 1 if settings.replication_factor else await broker_count(bootstrap)
    if settings.idempotence == "off" or await broker_supports_idempotence(bootstrap):
        return KafkaProfile.resolve(settings, bootstrap, embedded, brokers=brokers)
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
    return KafkaProfile.resolve(settings, bootstrap, embedded, dev_broker=True, brokers=brokers)


async def broker_count(bootstrap: str) -> int:
    """How many brokers the cluster's metadata lists."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        cluster = await admin.describe_cluster()
    finally:
        await admin.close()
    return len(cluster.get("brokers", ())) or 1


async def patiently(
    call: Callable[[], Awaitable[T]], what: str, patience_seconds: float = 60.0
) -> T:
    """``call()``, made again while it fails with a retriable Kafka error, for up to
    ``patience_seconds``: Apache Kafka answers a group request COORDINATOR_NOT_AVAILABLE
    until ``__consumer_offsets`` exists (the first group request of a new cluster creates it)
    or while a coordinator moves to another broker, and NOT_LEADER while a partition's
    leader does. The embedded broker never answers so; code written against it gave up."""
    deadline = time.monotonic() + patience_seconds
    delay = 0.1
    while True:
        try:
            return await call()
        except kafka_errors.KafkaError as exc:
            if not exc.retriable or time.monotonic() + delay > deadline:
                raise
            log.debug("%s: %s; asking again in %.1f s", what, type(exc).__name__, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


async def started_consumer(**config: Any) -> AIOKafkaConsumer:
    """An ``AIOKafkaConsumer`` of ``config``, started. It yields to the loop once: a consumer
    without a group stopped before its first step raises CancelledError from ``stop()`` (its
    commit-reset task, cancelled before it ever ran), as a read of an empty or unknown topic
    on Apache Kafka did."""
    consumer = AIOKafkaConsumer(**config)
    await consumer.start()
    await asyncio.sleep(0)
    return consumer


async def partitions_of(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    """The partitions of ``topic`` (none when the cluster has no such topic). A client that
    subscribed to nothing knows no topic on Apache Kafka, whose metadata answer to "no topics"
    names none (the embedded broker names all): ask the cluster for every topic's."""
    known = consumer.partitions_for_topic(topic)
    if not known:
        cluster = await consumer._client.fetch_all_metadata()
        known = cluster.partitions_for_topic(topic)
    return [TopicPartition(topic, p) for p in sorted(known or ())]


async def read_topic_to_end(bootstrap: str, topic: str) -> AsyncIterator[Any]:
    """Every record of ``topic`` from its beginning to its end as of now, without a group.

    "The end" is each partition's high watermark as the Fetch responses report it: the
    embedded broker's ListOffsets answers lag behind (it reports a batch's base offset), so
    ``end_offsets`` alone would stop early there.
    """
    consumer = await started_consumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    try:
        partitions = await partitions_of(consumer, topic)
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
    wanted_configs: dict[str, str] = field(default_factory=dict)
    exists: bool = False
    partitions: int | None = None
    configs: dict[str, str] = field(default_factory=dict)
    action: str = ""  # created / exists / mismatch

    @property
    def problems(self) -> list[str]:
        found = []
        if self.exists and self.partitions != self.wanted_partitions:
            found.append(f"has {self.partitions} partitions, catalog says {self.wanted_partitions}")
        for key, value in self.wanted_configs.items():
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

    async def replication(self) -> Replication:
        """The catalog's replication on this cluster (its broker count, or the settings)."""
        cluster = await self._admin.describe_cluster()
        return replication_for(
            len(cluster.get("brokers", ())) or 1,
            self.settings.replication_factor,
            self.settings.min_insync_replicas,
        )

    async def configs(self, wanted: Mapping[str, Iterable[str]]) -> dict[str, dict[str, str]]:
        """The values the cluster has for the ``wanted`` configs of each topic (name -> config
        names). Only those: Apache Kafka lists every config of a topic (over 30, defaults
        included), the embedded broker only what was set, each calling its values defaults."""
        keys = {name: set(names) for name, names in wanted.items()}
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in keys]
        if not resources:
            return {}
        found: dict[str, dict[str, str]] = {}
        for response in await self._admin.describe_configs(resources):
            for error_code, _message, _type, name, entries in response.resources:
                if error_code == 0:
                    found[name] = {e[0]: e[1] for e in entries if e[0] in keys.get(name, ())}
        return found

    async def describe(
        self, specs: Iterable[TopicSpec], replication: Replication | None = None
    ) -> list[TopicState]:
        replication = replication or await self.replication()
        existing = await self.partitions()
        states = [
            TopicState(
                spec,
                spec.partition_count(self.settings.partitions),
                spec.configs_on(replication),
            )
            for spec in specs
        ]
        configs = await self.configs(
            {s.spec.name: s.wanted_configs for s in states if s.spec.name in existing}
        )
        for state in states:
            if state.spec.name in existing:
                state.exists = True
                state.partitions = existing[state.spec.name]
                state.configs = configs.get(state.spec.name, {})
        return states

    async def create(self, specs: Iterable[TopicSpec]) -> list[TopicState]:
        """Create the missing topics; report those that exist, and any that disagree."""
        replication = await self.replication()
        states = await self.describe(specs, replication)
        missing = [s for s in states if not s.exists]
        if missing:
            response = await self._admin.create_topics(
                [
                    NewTopic(
                        s.spec.name,
                        s.wanted_partitions,
                        replication.factor,
                        topic_configs=s.wanted_configs,
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
        # Re-read what the cluster now holds, so the report shows facts, not intentions. A
        # broker answers CreateTopics before its metadata has the new topics (seen on the 3.9
        # line: every topic read back as missing): wait a little for them to show
        actual = await self._settled(states, replication)
        for state in states:
            state.exists = actual[state.spec.name].exists
            state.partitions = actual[state.spec.name].partitions
            state.configs = actual[state.spec.name].configs
        return states

    async def _settled(
        self, states: list[TopicState], replication: Replication, wait_seconds: float = 15.0
    ) -> dict[str, TopicState]:
        """What the cluster holds of ``states``' topics, once every one created shows (or
        ``wait_seconds`` have passed)."""
        created = {s.spec.name for s in states if s.action == "created"}
        deadline = asyncio.get_running_loop().time() + wait_seconds
        while True:
            described = await self.describe((s.spec for s in states), replication)
            actual = {s.spec.name: s for s in described}
            shown = all(actual[name].exists and actual[name].partitions for name in created)
            if shown or asyncio.get_running_loop().time() >= deadline:
                return actual
            await asyncio.sleep(0.2)


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
        admin = self._admin
        committed = await patiently(
            lambda: admin.list_consumer_group_offsets(self.group, partitions=partitions),
            f"offsets of group {self.group}",
            patience_seconds=10,
        )
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
