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
same. On Apache Kafka the wait is ``kafka.fetch_max_wait_ms``, 100 ms unless set: an idle
worker then asks each broker ten times a second (measured idle: the worker 1.4% of a core and
the broker 3.7%, against 0.6% and 2.2% at 1.5 s). The embedded broker keeps Faust's 1.5 s unless
set: it answers each fetch at a higher cost (at 100 ms, 5.7% of a core per idle worker against
0.7%), and a test suite runs many idle workers on it at once.
"""

from __future__ import annotations

from typing import Any

KAFKA_FETCH_MAX_WAIT_MS = 100  # unless kafka.fetch_max_wait_ms says otherwise


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
