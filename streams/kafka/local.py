"""The broker a command starts for itself when no cluster is named (``--bootstrap``).

``mine``, the demo, ``worker`` and ``ingest`` start the embedded broker: memory only, a second
to start, gone with the command, which is what a one-shot run or a test wants. ``run`` is
always-on: a restart of the machine or of the process must lose nothing, and the embedded
broker keeps nothing (its Tansu build has no storage engine but memory, Postgres and S3). So
``run`` starts one Apache Kafka node (``streams.kafka.apache``) with its storage in
``worker.data_dir/kafka`` when Java is here: the production engine, with compaction of the
ledger and the idempotent producer. Without Java it runs on the embedded broker and says that
nothing survives (``kafka.local_broker=apache`` makes that an error instead).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from streams.core.settings import KafkaSettings
from streams.kafka.apache import KafkaCluster
from streams.kafka.apache_install import KafkaInstallError, find_java
from streams.kafka.broker import EmbeddedBroker

log = logging.getLogger("swe_stream.kafka")

LocalBroker = Literal["embedded", "apache"]


class LocalBrokerUnavailable(RuntimeError):
    """``kafka.local_broker=apache`` on a machine that cannot run it."""


def local_broker_for(setting: str, durable: bool, java_missing: str | None) -> LocalBroker:
    """Which broker a command starts: ``setting`` (kafka.local_broker) for a command that
    wants its topics kept (``durable``: run) or not, where Java is missing for the reason
    ``java_missing`` (None: it is here)."""
    if setting == "embedded":
        return "embedded"
    if setting == "apache":
        if java_missing:
            raise LocalBrokerUnavailable(f"kafka.local_broker=apache, but {java_missing}")
        return "apache"
    return "apache" if durable and not java_missing else "embedded"


def java_missing(version: str) -> str | None:
    """Why Apache Kafka ``version`` cannot run here, or None."""
    try:
        find_java(version)
    except KafkaInstallError as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def kafka_for_command(
    settings: KafkaSettings, data_dir: Path, durable: bool = False
) -> Iterator[tuple[str, bool]]:
    """Yield ``(bootstrap, embedded)``: the named cluster, or the broker this command starts
    (see the module's text), stopped when the block ends (a kept node shuts down cleanly)."""
    if settings.bootstrap:
        yield settings.bootstrap, False
        return
    missing = java_missing(settings.apache_version) if settings.local_broker != "embedded" else None
    kind = local_broker_for(settings.local_broker, durable, missing)
    if kind == "embedded":
        if durable:
            log.warning(
                "run on the embedded broker (%s): nothing survives the process; production "
                "runs name a cluster with --bootstrap",
                missing or "kafka.local_broker=embedded",
            )
        with EmbeddedBroker(port=settings.embedded_port) as broker:
            yield broker.bootstrap, True
        return
    storage = data_dir / "kafka"
    cluster = KafkaCluster(
        version=settings.apache_version, data_dir=storage, quick=False, heap_mb=1024
    )
    cluster.start()
    log.info(
        "Apache Kafka %s on %s, its topics kept in %s", settings.apache_version,
        cluster.bootstrap, storage,
    )  # fmt: skip
    try:
        yield cluster.bootstrap, False
    finally:
        cluster.stop()
