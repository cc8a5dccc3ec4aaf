"""The topic value models, in stream-graph order (the catalog: streams/kafka/topics.py)."""

from __future__ import annotations

from schemas.base import Record
from schemas.dead_letter import DeadLetter, DeadLetterReplay
from schemas.gharchive import HourLedgerEntry, IngestDeadLetter, RawPullRequestEvent
from schemas.harness import HarnessRequest, HarnessResult
from schemas.ledger import LedgerEntry
from schemas.pull_requests import (
    ClassifiedPullRequest,
    EnrichedPullRequest,
    PatchSet,
    PullRequestCandidate,
)
from schemas.recipes import RememberedRecipe
from schemas.tasks import ExportedTask, ScoredTask, ValidatedTask

__all__ = ["ALL_RECORD_MODELS"]

ALL_RECORD_MODELS: tuple[type[Record], ...] = (
    RawPullRequestEvent,
    HourLedgerEntry,
    PullRequestCandidate,
    EnrichedPullRequest,
    ClassifiedPullRequest,
    PatchSet,
    ValidatedTask,
    ScoredTask,
    ExportedTask,
    HarnessRequest,
    HarnessResult,
    LedgerEntry,
    RememberedRecipe,
    DeadLetter,
    DeadLetterReplay,
    IngestDeadLetter,
)
