"""Where stage output goes: a ``RecordSink`` sends (topic, key, value) bytes.

Stages, the ledger and the DLQ helper write through this one small interface, so the same
code runs inside a Faust agent (``FaustSink``) and in unit tests (``MemorySink``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class RecordSink(Protocol):
    async def send(self, topic: str, key: bytes | None, value: bytes) -> None: ...


class FaustSink:
    """Sends through the Faust app's producer, and returns once the record is in its topic:
    a stage writes its ledger entry after its outputs, so an entry that says a stage is done
    means its outputs are there (a crash between the two redoes the record, never loses its
    outputs behind an entry that says they were sent)."""

    def __init__(self, app: Any):
        self.app = app
        self._topics: dict[str, Any] = {}

    async def send(self, topic: str, key: bytes | None, value: bytes) -> None:
        channel = self._topics.get(topic)
        if channel is None:
            channel = self._topics[topic] = self.app.topic(
                topic, key_serializer="raw", value_serializer="raw"
            )
        delivered = await channel.send(key=key, value=value)
        await delivered


@dataclass
class MemorySink:
    """Collects what was sent, for unit tests of stage logic (no broker)."""

    sent: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)

    async def send(self, topic: str, key: bytes | None, value: bytes) -> None:
        self.sent.append((topic, key, value))

    def on(self, topic: str) -> list[tuple[bytes | None, bytes]]:
        return [(k, v) for t, k, v in self.sent if t == topic]
