"""One stage's records this process is handling or has handled, so that a record delivered
again is not handled twice, and one PR's records are handled one at a time.

Kafka delivers at least once, and Faust's rebalance can deliver one record twice to the same
process a second apart: its recovery lets the streams flow before it seeks every partition back
to its committed offset, so the records read in between come again while the first delivery is
still being handled. Seen with three workers on Apache Kafka after the group leader's worker was
killed: a survivor validated one PR twice, both runs in parallel (two images built, two records
in ``tasks.validated``). A second delivery of a (partition, offset) under way waits for the
first and is then skipped; one handled a moment ago is skipped at once. A delivery whose first
run ended without handling the record (cancelled) runs again.

A record's offset identifies it for good (a topic is append-only), so skipping is exact. Only
the last ``remembered`` handled records are kept: a delivery again comes from a seek back to the
committed offset, which trails the handled records by a commit interval, not by thousands.

Two records of one PR (one key) can also come a moment apart: a worker killed after a stage sent
its output, before the offset of its input was committed, leaves the input to the partition's
next owner, which sends the output again. Both go to the PR's partition, so to one worker; were
they handled side by side, both would pass the ledger's check (nothing final yet) and the PR
would be validated twice. ``KeyTurns`` handles them in turn: the second one sees the first's
ledger entry and is skipped.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

Position = tuple[int, int]  # (partition, offset) in the stage's source topic

REMEMBERED = 50_000


class Deliveries:
    """The source records of one stage handled in this process, the ones under way first."""

    def __init__(self, remembered: int = REMEMBERED):
        if remembered < 1:
            raise ValueError("remembered must be at least 1")
        self.remembered = remembered
        self._under_way: dict[Position, asyncio.Future[bool]] = {}
        self._handled: OrderedDict[Position, None] = OrderedDict()

    async def claim(self, partition: int, offset: int) -> bool:
        """True: handle the record, then ``release`` it. False: it was handled here already
        (waiting first for a delivery of it under way)."""
        position = (partition, offset)
        while (first := self._under_way.get(position)) is not None:
            # shielded: a cancelled waiter must not cancel the first delivery's future
            if await asyncio.shield(first):
                return False
        if position in self._handled:
            return False
        self._under_way[position] = asyncio.get_running_loop().create_future()
        return True

    def release(self, partition: int, offset: int, handled: bool) -> None:
        """The claimed record's handling ended: ``handled`` False (cancelled) lets a delivery
        of it again run."""
        position = (partition, offset)
        first = self._under_way.pop(position, None)
        if handled:
            self._handled[position] = None
            if len(self._handled) > self.remembered:
                self._handled.popitem(last=False)
        if first is not None and not first.done():
            first.set_result(handled)


class KeyTurns:
    """One record per key at a time (records without a key are not held)."""

    def __init__(self) -> None:
        self._turns: dict[bytes, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def turn(self, key: bytes | None) -> AsyncIterator[None]:
        """Held while a record of ``key`` is handled; a second one waits for it."""
        if key is None:
            yield
            return
        lock, holders = self._turns.get(key, (asyncio.Lock(), 0))
        self._turns[key] = (lock, holders + 1)
        try:
            async with lock:
                yield
        finally:
            lock, holders = self._turns[key]
            if holders == 1:
                del self._turns[key]  # no one waits: the key is forgotten
            else:
                self._turns[key] = (lock, holders - 1)

    def __len__(self) -> int:
        return len(self._turns)
