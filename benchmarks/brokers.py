"""The brokers a benchmark measures on, side by side in one run: the embedded broker (Tansu,
memory only) and Apache Kafka (one KRaft node from Maven Central's jars, the optimising JIT
as in production: ``streams.kafka.apache``), each with the client settings the project uses on
it (``KafkaProfile``: idempotent producer and acks=all on Kafka)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from streams.core.settings import KafkaSettings
from streams.kafka.apache import KafkaCluster
from streams.kafka.broker import EmbeddedBroker
from streams.kafka.client import KafkaProfile

BROKERS = ("embedded", "kafka")
NAMES = {"embedded": "embedded broker (Tansu)", "kafka": "Apache Kafka (one node)"}


def parse_brokers(text: str) -> list[str]:
    """``--brokers embedded,kafka``: the brokers named, in that order; a clear error else."""
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(BROKERS))
    if unknown or not chosen:
        raise ValueError(f"--brokers takes {', '.join(BROKERS)} (comma-separated), not {text!r}")
    return chosen


@contextlib.contextmanager
def started(kind: str) -> Iterator[str]:
    """A fresh broker of ``kind`` for the block: its bootstrap."""
    if kind == "embedded":
        with EmbeddedBroker() as broker:
            yield broker.bootstrap
        return
    with KafkaCluster(quick=False, heap_mb=1024) as cluster:
        yield cluster.bootstrap


def profile(kind: str, bootstrap: str) -> KafkaProfile:
    """The client settings the project's producers and consumers use on this broker."""
    return KafkaProfile.resolve(KafkaSettings(), bootstrap, embedded=kind == "embedded")
