"""The shout app with a lost fetch: the first record whose text is ``LOST_FETCH_TEXT`` is
handed out by the fetcher and never reaches the stream, as Faust drops the record in hand
when a rebalance stops its flow (streams.kafka.commits). Nothing of it is acked or in flight;
the fetch position is past it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from faust.transport import consumer as faust_consumer

from tests.fakes.shout_app import app
from tests.fakes.shout_stage import LOST_FETCH_TEXT

_getmany = faust_consumer.Consumer.getmany
_lost: list[tuple[Any, int]] = []


async def _getmany_losing_one(self: Any, timeout: float) -> AsyncIterator[tuple[Any, Any]]:
    async for tp, message in _getmany(self, timeout):
        if not _lost and LOST_FETCH_TEXT.encode() in (message.value or b""):
            _lost.append((tp, message.offset))
            continue  # fetched, never delivered
        yield tp, message


faust_consumer.Consumer.getmany = _getmany_losing_one  # type: ignore[method-assign]

__all__ = ["app"]
