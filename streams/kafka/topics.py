"""The topic catalog: the single source of truth for every topic's name, partitions, key,
value model and configs. Nothing else in the code spells a topic name.

Every PR-level topic is keyed ``owner/repo#number`` and has the same partition count
(``kafka.partitions``), so a stage's ledger lookups stay partition-local.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from schemas import (
    ClassifiedPullRequest,
    DeadLetter,
    DeadLetterReplay,
    EnrichedPullRequest,
    ExportedTask,
    HarnessRequest,
    HarnessResult,
    HourLedgerEntry,
    IngestDeadLetter,
    LedgerEntry,
    PatchSet,
    PullRequestCandidate,
    RawPullRequestEvent,
    Record,
    RememberedRecipe,
    ScoredTask,
    ValidatedTask,
)

PR_KEY = "owner/repo#number"
HOUR_KEY = "YYYY-MM-DD-H (GH Archive hour, UTC)"
DLQ_SUFFIX = ".dlq"

COMPACT = {"cleanup.policy": "compact"}
# The processed-PR ledger in production (README, "The ledger's topic"): compacted to each PR's
# latest entry per version, which is what a worker restores its ledger table from; a segment
# rolls daily (or at 100 MB) so that the cleaner gets yesterday's transitions instead of Kafka's
# week; a transition stays a day before it may be compacted away (``ledger show`` has a day of
# history, a run's summary its whole funnel); no tombstones: a PR once processed stays so.
LEDGER_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.ms": str(24 * 3600 * 1000),
    "segment.bytes": str(100 * 1024 * 1024),
    "min.compaction.lag.ms": str(24 * 3600 * 1000),
}
# Dead letters wait for a human: keep them 30 days.
DLQ_CONFIGS = {"cleanup.policy": "delete", "retention.ms": str(30 * 24 * 3600 * 1000)}


@dataclass(frozen=True)
class TopicSpec:
    """One topic. ``partitions=None`` means the shared PR-level partition count."""

    name: str
    value_model: type[Record]
    description: str
    key: str = PR_KEY
    partitions: int | None = None
    configs: Mapping[str, str] = field(default_factory=dict)
    has_dlq: bool = False  # True for topics a stage consumes
    # other records the topic holds beside its values (a DLQ: the marks of `dlq replay`)
    also_holds: tuple[type[Record], ...] = ()

    @property
    def compacted(self) -> bool:
        return "compact" in self.configs.get("cleanup.policy", "")

    @property
    def dlq_name(self) -> str:
        if not self.has_dlq:
            raise KeyError(f"topic {self.name} is consumed by no stage and has no DLQ")
        return self.name + DLQ_SUFFIX

    def partition_count(self, pr_partitions: int) -> int:
        return self.partitions if self.partitions is not None else pr_partitions

    def configs_on(self, replication: Replication) -> dict[str, str]:
        """The topic's configs on a cluster replicating as ``replication``: its own, and how
        many copies must have a write before it is acknowledged (``acks=all``)."""
        configs = dict(self.configs)
        if replication.factor > 1:
            configs["min.insync.replicas"] = str(replication.min_in_sync)
        return configs


@dataclass(frozen=True)
class Replication:
    """How many brokers keep each partition of the catalog's topics, and how many of them
    must have a write before it counts."""

    factor: int
    min_in_sync: int


def replication_for(
    brokers: int, factor: int | None = None, min_in_sync: int | None = None
) -> Replication:
    """The catalog's replication on a cluster of ``brokers``: three copies, two of them in sync
    (one broker may die or restart without a write refused or lost) where there are three or
    more brokers; one copy per broker on fewer (the embedded broker, a single node). A
    ``factor`` or ``min_in_sync`` set in the settings wins."""
    chosen = factor or min(3, max(1, brokers))
    in_sync = min_in_sync or max(1, min(2, chosen - 1))
    return Replication(chosen, min(in_sync, chosen))


SINGLE_COPY = Replication(1, 1)  # the embedded broker, a single node


def _dlq(source: TopicSpec) -> TopicSpec:
    return TopicSpec(
        name=source.dlq_name,
        value_model=DeadLetter,
        description=f"records from {source.name} that failed its schema or its stage, with "
        "error; and a mark for each one `dlq replay` sent back",
        key=f"{source.key} (the source record's key)",
        configs=DLQ_CONFIGS,
        also_holds=(DeadLetterReplay,),
    )


# The stream graph, in order (see README.md and streams/runtime/topology.py).
GHARCHIVE_HOURS = TopicSpec(
    "gharchive.hours",
    HourLedgerEntry,
    "hour ledger: one entry per GH Archive hour (done / partial / failed)",
    key=HOUR_KEY,
    partitions=1,
    configs=COMPACT,
)
GHARCHIVE_DLQ = TopicSpec(
    "gharchive.dlq",
    IngestDeadLetter,
    "samples of GH Archive lines ingest could not use (file, line number, error)",
    key=HOUR_KEY,
    partitions=1,
    configs=DLQ_CONFIGS,
)
PULL_REQUEST_EVENTS = TopicSpec(
    "gharchive.pull-request-events",
    RawPullRequestEvent,
    "every PullRequestEvent of GH Archive, normalised (full and slim payloads): the raw log",
    has_dlq=True,
)
CANDIDATES = TopicSpec(
    "pr.candidates",
    PullRequestCandidate,
    "merged (or maybe-merged) PRs past the bot / org / repo filters",
    has_dlq=True,
)
ENRICHED = TopicSpec(
    "pr.enriched",
    EnrichedPullRequest,
    "candidates with GitHub API data: PR, files, repository, linked issues",
    has_dlq=True,
)
CLASSIFIED = TopicSpec(
    "pr.classified",
    ClassifiedPullRequest,
    "enriched PRs with a difficulty (easy / medium / hard) and score",
    has_dlq=True,
)
PATCHES = TopicSpec(
    "pr.patches",
    PatchSet,
    "the PR's diff split into patch (source) and test_patch (tests), with base commit",
    has_dlq=True,
)
VALIDATED = TopicSpec(
    "tasks.validated",
    ValidatedTask,
    "tasks whose FAIL_TO_PASS / PASS_TO_PASS were proven by running them in Docker",
    has_dlq=True,
)
SCORED = TopicSpec(
    "tasks.scored",
    ScoredTask,
    "validated tasks with a quality score and accept / reject decision",
    has_dlq=True,
)
EXPORTED = TopicSpec(
    "tasks.exported",
    ExportedTask,
    "tasks written to disk (task dir + dataset.jsonl line), with content hash",
    has_dlq=True,
)
HARNESS_REQUESTS = TopicSpec(
    "harness.requests",
    HarnessRequest,
    "requests to evaluate a coding agent on a task",
    key="instance_id",
    has_dlq=True,
)
HARNESS_RESULTS = TopicSpec(
    "harness.results",
    HarnessResult,
    "one graded evaluation per request (resolved, unresolved, agent_error, ...)",
    key="instance_id",
)
LEDGER = TopicSpec(
    "swe.ledger",
    LedgerEntry,
    "processed-PR ledger: each PR's latest stage, status and reason, per pipeline version",
    key=f"{PR_KEY}@v<pipeline_version> (on the partition of {PR_KEY})",
    configs=LEDGER_CONFIGS,
)
RECIPES = TopicSpec(
    "recipes.memory",
    RememberedRecipe,
    "recipe memory: the install recipe that worked per repository and dependency-file hash",
    key="owner/repo@<dependency fingerprint>",
    partitions=1,  # every worker reads all of it: a repository's PRs land on any partition
    configs=COMPACT,
)

PRIMARY_TOPICS: tuple[TopicSpec, ...] = (
    GHARCHIVE_HOURS,
    GHARCHIVE_DLQ,
    PULL_REQUEST_EVENTS,
    CANDIDATES,
    ENRICHED,
    CLASSIFIED,
    PATCHES,
    VALIDATED,
    SCORED,
    EXPORTED,
    HARNESS_REQUESTS,
    HARNESS_RESULTS,
    LEDGER,
    RECIPES,
)
DLQ_TOPICS: tuple[TopicSpec, ...] = tuple(_dlq(t) for t in PRIMARY_TOPICS if t.has_dlq)
ALL_TOPICS: tuple[TopicSpec, ...] = PRIMARY_TOPICS + DLQ_TOPICS

_BY_NAME = {t.name: t for t in ALL_TOPICS}


def topic(name: str) -> TopicSpec:
    """The catalog entry for ``name``; a clear error for a name not in the catalog."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown topic {name!r}; the catalog has: {', '.join(_BY_NAME)}") from None
