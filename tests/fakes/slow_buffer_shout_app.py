"""The shout app on a busy worker: Faust's producer buffer hands each queued message (a table's
changelog write: the ledger's) to the producer ``SLOW_BUFFER_SECONDS`` late, as its task does
when the event loop is starved. The flush Faust runs before an offset commit gives up after
0.1 s without a send, so on this app a commit can come before the records' ledger entries
are sent, unless the ledger waits for them."""

from __future__ import annotations

import asyncio
from typing import Any

from faust.transport import producer as faust_producer

from tests.fakes.shout_app import app

SLOW_BUFFER_SECONDS = 0.5

_send_pending = faust_producer.ProducerBuffer._send_pending


async def _send_pending_late(self: Any, fut: Any) -> None:
    await asyncio.sleep(SLOW_BUFFER_SECONDS)
    await _send_pending(self, fut)


faust_producer.ProducerBuffer._send_pending = _send_pending_late  # type: ignore[method-assign]

__all__ = ["app"]
