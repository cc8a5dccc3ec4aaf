"""Pydantic models of every Kafka topic value, and their JSON Schemas (see ``schemas.generate``)."""

from schemas.base import (
    PR_KEY_RE,
    PRNumber,
    PullRequestRecord,
    Record,
    RepoName,
    SubRecord,
    gharchive_hour,
    instance_id_for,
    ledger_key,
    parse_gharchive_hour,
    parse_pr_key,
    pr_key,
)
from schemas.dead_letter import DeadLetter, DeadLetterReplay
from schemas.gharchive import HourLedgerEntry, IngestDeadLetter, RawPullRequestEvent
from schemas.harness import AgentSpec, HarnessRequest, HarnessResult
from schemas.ledger import LedgerEntry
from schemas.pull_requests import (
    ChangedFile,
    ClassifiedPullRequest,
    EnrichedPullRequest,
    LinkedIssue,
    PatchSet,
    PullRequestCandidate,
    RepositoryInfo,
)
from schemas.recipes import RecipeSource, RememberedRecipe, recipe_key
from schemas.registry import ALL_RECORD_MODELS
from schemas.swebench import SWEBENCH_FIELDS, SWEBenchInstance
from schemas.tasks import ExportedTask, InstallConfig, ScoredTask, ValidatedTask, ValidationReport
from schemas.workspace import TaskWorkspace

__all__ = [
    "ALL_RECORD_MODELS",
    "PR_KEY_RE",
    "SWEBENCH_FIELDS",
    "AgentSpec",
    "ChangedFile",
    "ClassifiedPullRequest",
    "DeadLetter",
    "DeadLetterReplay",
    "EnrichedPullRequest",
    "ExportedTask",
    "HarnessRequest",
    "HarnessResult",
    "HourLedgerEntry",
    "IngestDeadLetter",
    "InstallConfig",
    "LedgerEntry",
    "LinkedIssue",
    "PRNumber",
    "PatchSet",
    "PullRequestCandidate",
    "PullRequestRecord",
    "RawPullRequestEvent",
    "RecipeSource",
    "Record",
    "RememberedRecipe",
    "RepoName",
    "RepositoryInfo",
    "SWEBenchInstance",
    "ScoredTask",
    "SubRecord",
    "TaskWorkspace",
    "ValidatedTask",
    "ValidationReport",
    "gharchive_hour",
    "instance_id_for",
    "ledger_key",
    "parse_gharchive_hour",
    "parse_pr_key",
    "pr_key",
    "recipe_key",
]
