"""The recipe memory over Kafka: ``recipes.memory`` (compacted, one partition) behind the
local table (``streams.evaluation.recipes.memory.RecipeTable``).

A worker restores the table from the topic when it starts and reads the topic again every
``validation.recipe_refresh_seconds`` (what other workers learned); every recipe it learns
goes to both. Every worker reads all of it: a repository's PRs land on any partition of the
PR topics. ``swe-stream recipes import`` publishes entries the same way
(``publish_recipes``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol

from aiokafka import AIOKafkaProducer
from pydantic import ValidationError

from schemas import RememberedRecipe
from streams.core import metrics
from streams.kafka.client import read_topic_to_end
from streams.kafka.topics import RECIPES
from streams.pipeline.sinks import RecordSink

log = logging.getLogger("swe_stream.recipes")


async def read_recipes(bootstrap: str) -> list[RememberedRecipe]:
    """Every entry of ``recipes.memory``, oldest first (unreadable ones skipped, logged)."""
    entries = []
    async for record in read_topic_to_end(bootstrap, RECIPES.name):
        if record.value is None:
            continue
        try:
            entries.append(RememberedRecipe.from_json(record.value))
        except (ValidationError, ValueError) as exc:
            log.warning("recipes.memory offset %d unreadable, skipped: %s", record.offset, exc)
    return entries


async def publish_recipes(bootstrap: str, entries: Iterable[RememberedRecipe]) -> int:
    """Send ``entries`` to ``recipes.memory`` (acknowledged by the broker); how many."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        sent = [
            await producer.send(RECIPES.name, entry.to_json(), entry.key.encode())
            for entry in entries
        ]
        for delivery in sent:
            await delivery
    finally:
        await producer.stop()
    return len(sent)


class RecipeStore(Protocol):
    """The local table (``streams.evaluation.recipes.memory.RecipeTable``)."""

    def put(self, entry: RememberedRecipe) -> None: ...

    def load(self, entries: Iterable[RememberedRecipe]) -> int: ...


class RecipeBook:
    """What the validate stage remembers recipes through: the local table (read by the
    validator's threads) written through to ``recipes.memory``."""

    def __init__(self, table: RecipeStore, sink: RecordSink | None = None):
        self.table = table
        self.sink = sink
        self._restored = asyncio.Event()

    async def remember(self, entry: RememberedRecipe) -> None:
        self.table.put(entry)
        metrics.RECIPES_REMEMBERED.labels(source=entry.source).inc()
        if self.sink is not None:
            await self.sink.send(RECIPES.name, entry.key.encode(), entry.to_json())
        log.info(
            "recipes: remembered the %s recipe of %s (%s, %d tests ran)",
            entry.source, entry.repo,
            " ".join(f"{t} {v}" for t, v in entry.toolchain_versions.items()) or "-",
            entry.tests,
        )  # fmt: skip

    async def restore(self, bootstrap: str) -> int:
        """Load the topic into the table; how many entries it had. The stage waits for the
        first restore (``restored``), a failed one included: then it goes on with what the
        local table had."""
        try:
            entries = await read_recipes(bootstrap)
            return await asyncio.to_thread(self.table.load, entries)
        finally:
            self._restored.set()

    async def restored(self, timeout: float = 120.0) -> None:
        try:
            await asyncio.wait_for(self._restored.wait(), timeout)
        except TimeoutError:
            log.warning("recipes: memory not restored after %.0f s; going on without", timeout)
            self._restored.set()

    def mark_restored(self) -> None:
        """No topic to restore from (unit tests, commands without a broker)."""
        self._restored.set()
