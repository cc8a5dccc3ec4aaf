"""How long a Faust worker's fetches wait at the broker.

Faust builds its aiokafka consumer with ``fetch_max_wait_ms=1500``, fixed. aiokafka keeps one
fetch in flight per broker, and sends it for the partitions whose fetched records are used up:
when those have nothing new (a partition drained, a quiet topic), the broker holds the fetch for
the whole wait, and the partitions whose records the streams were still working through cannot
be fetched again until it returns. Seen in ``benchmarks/stream.py`` on Apache Kafka: the
pass-through worker's output stopped for 1.0-1.3 s one to three times per 10,000 records (once
partitions of uneven sizes were read to their ends); with a 500 ms wait (Kafka's default) for up
to 0.3 s, as the plain aiokafka loop beside it did for 0.35-0.42 s; with 100 ms, never for more
than 0.15 s in three runs. A worker mining a backlog over partitions of uneven sizes meets the
same. The wait is ``kafka.fetch_max_wait_ms`` instead, 100 ms by default: an idle worker then
asks each broker ten times a second, a small price for never holding back records it could
have.
"""

from __future__ import annotations

from typing import Any


def limit_fetch_wait(consumer: Any, wait_ms: int) -> None:
    """Make the aiokafka consumer a Faust ``consumer`` creates (at its start, in its consumer
    thread: faust-streaming 0.15) wait at most ``wait_ms`` per fetch."""
    thread = consumer._thread
    create = thread._create_consumer

    def create_waiting_less(*args: Any, **kwargs: Any) -> Any:
        client = create(*args, **kwargs)
        client._fetch_max_wait_ms = wait_ms  # read when the client starts its fetcher
        return client

    thread._create_consumer = create_waiting_less
