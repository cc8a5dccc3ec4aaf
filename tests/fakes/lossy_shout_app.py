"""The shout app with lost acks: the first two acks of records whose text is ``LOST_ACK_TEXT``
are dropped, as Faust's start-up race drops acks (streams.kafka.commits). The records were handled;
only their acks are gone, so the partition's commit stalls behind them. (Two: Faust alone
commits past a hole of one offset; the worker's hold does not, but a wider hole shows more.)
Run it with ``NO_CYTHON=1``: Faust's compiled stream iterator
records acks without calling ``Consumer.ack``."""

from __future__ import annotations

from typing import Any

from faust.transport import consumer as faust_consumer

from tests.fakes.shout_app import app
from tests.fakes.shout_stage import LOST_ACK_TEXT

_ack = faust_consumer.Consumer.ack
_lost: list[tuple[Any, int]] = []


def _ack_but_lose_two(self: Any, message: Any) -> bool:
    if len(_lost) < 2 and LOST_ACK_TEXT.encode() in (message.value or b""):
        _lost.append((message.tp, message.offset))
        message.acked = True  # marked acked, never recorded: the commit cannot pass it
        return False
    result: bool = _ack(self, message)
    return result


faust_consumer.Consumer.ack = _ack_but_lose_two  # type: ignore[method-assign]

__all__ = ["app"]
