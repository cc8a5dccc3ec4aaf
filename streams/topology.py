"""The stream graph in one place: which stage reads which topic and writes which.

    GH Archive hours -ingest-> gharchive.pull-request-events -prefilter-> pr.candidates
      -enrich-> pr.enriched -classify-> pr.classified -extract-> pr.patches
      -validate (+ agentic testgen)-> tasks.validated -score-> tasks.scored
      -export-> tasks.exported (+ task dirs, dataset.jsonl) -harness-> harness.results
    every stage -> swe.ledger (compacted; the processed-PR ledger)
    every stage -> <its input topic>.dlq (records it could not handle, with the error)

Each stage lives in its own module in ``agents/`` and is listed in ``pipeline_stages``; the
topics come from ``streams.topics``. Ingest is a producer, not a Faust agent (it reads GH
Archive, not Kafka).
"""

from __future__ import annotations

from typing import Any

from streams.settings import Settings
from streams.stage import Stage


def pipeline_stages(settings: Settings) -> list[Stage[Any]]:
    """The stages a worker runs, in graph order. Stages register here as they are built."""
    return []
