"""The dead-letter helper: a record a stage cannot handle goes to ``<input topic>.dlq``
with the error and its original bytes, so nothing is lost and it can be replayed later.
"""

from __future__ import annotations

from schemas import DeadLetter
from streams import metrics
from streams.sinks import RecordSink
from streams.topics import topic

# A pathological error message (a whole record echoed back) must not make a huge dead letter.
MAX_ERROR_CHARS = 4000


async def send_to_dlq(
    sink: RecordSink,
    *,
    source_topic: str,
    partition: int,
    offset: int,
    key: bytes | None,
    value: bytes,
    error: BaseException,
    stage: str,
    pipeline_version: int,
    attempts: int = 1,
    dlq_topic: str | None = None,
) -> DeadLetter:
    """Write the dead letter for ``value`` to ``dlq_topic`` (default: the catalog's DLQ of
    ``source_topic``), keyed like the source record; returns it."""
    letter = DeadLetter.capture(
        source_topic=source_topic,
        source_partition=partition,
        source_offset=offset,
        key=key.decode("utf-8", errors="replace") if key is not None else None,
        value=value,
        exc=error,
        stage=stage,
        pipeline_version=pipeline_version,
        attempts=attempts,
    )
    letter.error = letter.error[:MAX_ERROR_CHARS] or repr(error)[:MAX_ERROR_CHARS]
    await sink.send(dlq_topic or topic(source_topic).dlq_name, key, letter.to_json())
    metrics.DLQ_RECORDS.labels(topic=source_topic).inc()
    return letter
